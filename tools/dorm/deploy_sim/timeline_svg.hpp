// `dorm deploy-sim --svg FILE`: the runs as a timeline a browser opens as it is.
//
// One panel per row; in it one lane per session (a `<g class="lane">`), each call a bar
// (`<rect class="call OUTCOME">`, OUTCOME being answered, failed or hung) from its POST to
// its outcome, the session's concurrent calls stacked inside the lane, and each deploy a
// vertical line. A bar's tooltip (`<title>`) names the call and its outcome. Text is
// escaped, so the document is well-formed XML whatever the variant names hold.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "outcome.hpp"

namespace dorm::deploy_sim {

std::string timeline_svg(const std::vector<RowRun>& rows, std::string_view title);

// `text` with &, <, >, " and ' written as XML entities.
std::string xml_escape(std::string_view text);

}  // namespace dorm::deploy_sim
