#include "timeline_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace dorm::deploy_sim {
namespace {

// Geometry, in SVG user units (pixels). 50 sessions make a 400-unit panel: each lane is
// readable and a whole run of three rows still fits a laptop screen scrolled twice.
constexpr double kWidth = 1100;
constexpr double kLeft = 70;  // lane labels
constexpr double kRight = 20;
constexpr double kLaneHeight = 8;
constexpr double kPanelTitle = 34;  // title line and the deploy labels under it
constexpr double kAxis = 28;        // tick labels under a panel
constexpr double kPanelGap = 24;
constexpr double kLegend = 46;
constexpr double kLegendCharWidth = 6.6;  // a 12-unit sans-serif character, on average

struct Colour {
  const char* cls;
  const char* fill;
  const char* label;
};
constexpr Colour kColours[] = {
    {"answered", "#2e7d32", "answered normally"},
    {"failed", "#e65100", "failed fast (an error response)"},
    {"hung", "#9e9e9e", "hung (no outcome by the client's timeout)"},
};

// A pending call cannot be drawn (a row ends when every call has its outcome); grey if one were.
const Colour& colour(testing::OutcomeKind kind) {
  switch (kind) {
    case testing::OutcomeKind::answered:
      return kColours[0];
    case testing::OutcomeKind::failed:
      return kColours[1];
    case testing::OutcomeKind::hung:
    case testing::OutcomeKind::pending:
      break;
  }
  return kColours[2];
}

std::string num(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f", v);
  return out;
}

// A tick step of 1, 2 or 5 times a power of ten seconds giving at most ~10 ticks.
double tick_step_ms(double span_ms) {
  double raw = std::max(span_ms / 10.0, 1.0);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

std::string legend() {
  std::string out = "<g class=\"legend\" font-size=\"12\">\n";
  double x = kLeft;
  for (const auto& c : kColours) {
    out += "<rect x=\"" + num(x) + "\" y=\"30\" width=\"14\" height=\"10\" fill=\"" + c.fill +
           "\"/><text x=\"" + num(x + 19) + "\" y=\"39\">" + xml_escape(c.label) + "</text>\n";
    x += 19 + kLegendCharWidth * static_cast<double>(std::strlen(c.label)) + 24;
  }
  out += "<line x1=\"" + num(x) + "\" y1=\"28\" x2=\"" + num(x) +
         "\" y2=\"42\" stroke=\"#c62828\" stroke-width=\"2\"/><text x=\"" + num(x + 6) +
         "\" y=\"39\">deploy (SIGKILL or SIGTERM sent)</text>\n</g>\n";
  return out;
}

std::string call_title(const SimCall& c) {
  const auto& r = c.record;
  char out[96];
  std::snprintf(out, sizeof out, "session %d, call %d, deploy %d: %s after %.2f s", c.session + 1,
                c.slot + 1, c.round + 1, std::string(testing::to_string(r.outcome.kind)).c_str(),
                static_cast<double>(r.end_ms - r.start_ms) / 1000.0);
  std::string text = out;
  if (!r.outcome.reason.empty()) text += " (" + r.outcome.reason + ")";
  return text;
}

struct Panel {
  double top;
  double span_ms;
  double lanes_top() const { return top + kPanelTitle; }
  double x(double ms) const { return kLeft + (kWidth - kLeft - kRight) * ms / span_ms; }
  double x(std::int64_t ms) const { return x(static_cast<double>(ms)); }
};

std::string lanes(const RowRun& row, const Panel& p) {
  std::string out;
  double slot_height = (kLaneHeight - 2) / std::max(row.calls_per_session, 1);
  for (int s = 0; s < row.sessions; ++s) {
    double y = p.lanes_top() + s * kLaneHeight;
    out += "<g class=\"lane\" data-session=\"" + std::to_string(s + 1) + "\">";
    if (s % 2 == 0)
      out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(y) + "\" width=\"" +
             num(kWidth - kLeft - kRight) + "\" height=\"" + num(kLaneHeight) +
             "\" fill=\"#f3f3f3\"/>";
    if (s % 5 == 0 || s + 1 == row.sessions)
      out += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + kLaneHeight - 1) +
             "\" font-size=\"9\" text-anchor=\"end\">s" + std::to_string(s + 1) + "</text>";
    out += "\n";
    for (const auto& c : row.calls) {
      if (c.session != s) continue;
      const auto& col = colour(c.record.outcome.kind);
      double x0 = p.x(c.record.start_ms);
      // One unit short of the end, so a call that starts where another ended stays apart.
      double w = std::max(p.x(c.record.end_ms) - x0 - 1, 1.0);
      out += "<rect class=\"call " + std::string(col.cls) + "\" x=\"" + num(x0) + "\" y=\"" +
             num(y + 1 + c.slot * slot_height) + "\" width=\"" + num(w) + "\" height=\"" +
             num(std::max(slot_height - 0.5, 0.5)) + "\" fill=\"" + col.fill + "\"><title>" +
             xml_escape(call_title(c)) + "</title></rect>\n";
    }
    out += "</g>\n";
  }
  return out;
}

std::string axis_and_deploys(const RowRun& row, const Panel& p) {
  std::string out;
  double bottom = p.lanes_top() + row.sessions * kLaneHeight;
  double step = tick_step_ms(p.span_ms);
  for (double t = 0; t <= p.span_ms + 0.5; t += step) {
    out += "<line x1=\"" + num(p.x(t)) + "\" y1=\"" + num(bottom) + "\" x2=\"" + num(p.x(t)) +
           "\" y2=\"" + num(bottom + 4) + "\" stroke=\"#444\"/><text x=\"" + num(p.x(t)) +
           "\" y=\"" + num(bottom + 16) + "\" font-size=\"10\" text-anchor=\"middle\">" +
           num(t / 1000.0) + " s</text>\n";
  }
  for (std::size_t i = 0; i < row.deploys_ms.size(); ++i) {
    double x = p.x(row.deploys_ms[i]);
    out += "<line class=\"deploy\" x1=\"" + num(x) + "\" y1=\"" + num(p.lanes_top() - 4) +
           "\" x2=\"" + num(x) + "\" y2=\"" + num(bottom) +
           "\" stroke=\"#c62828\" stroke-width=\"1.5\"/><text x=\"" + num(x + 3) + "\" y=\"" +
           num(p.lanes_top() - 6) + "\" font-size=\"10\" fill=\"#c62828\">deploy " +
           std::to_string(i + 1) + "</text>\n";
  }
  return out;
}

double panel_height(const RowRun& row) {
  return kPanelTitle + row.sessions * kLaneHeight + kAxis;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string timeline_svg(const std::vector<RowRun>& rows, std::string_view title) {
  double height = kLegend;
  for (const auto& r : rows) height += panel_height(r) + kPanelGap;
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
      num(kWidth) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " +
      num(height) + "\" font-family=\"sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + num(kLeft) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" +
         xml_escape(title) + "</text>\n" + legend();
  double top = kLegend;
  for (const auto& row : rows) {
    Panel p{top, std::max(static_cast<double>(row.end_ms), 1.0)};
    char heading[160];
    std::snprintf(
        heading, sizeof heading,
        "%s, %s: retry %lld ms, restart gap %lld ms (%d sessions x %d calls)",
        row.key.variant.c_str(), row.key.mode.c_str(), static_cast<long long>(row.key.retry_ms),
        static_cast<long long>(row.key.restart_gap_ms), row.sessions, row.calls_per_session);
    out += "<g class=\"row\">\n<text x=\"" + num(kLeft) + "\" y=\"" + num(top + 12) +
           "\" font-size=\"12\" font-weight=\"bold\">" + xml_escape(heading) + "</text>\n";
    out += lanes(row, p) + axis_and_deploys(row, p) + "</g>\n";
    top += panel_height(row) + kPanelGap;
  }
  return out + "</svg>\n";
}

}  // namespace dorm::deploy_sim
