// The browser approval page of code mode (docs/code-mode.md#the-approval-page).
//
// A pause result carries `approvalUrl`: `<base>/approve/<executionId>?token=<token>`. The
// token is random, single use and valid until the execution's deadline; the session keeps
// only its SHA-256 and compares in constant time. GET shows the tool call the execution
// waits on (plain HTML, no script) with Approve and Deny buttons; they POST the token and
// the action back. The answer continues the execution at once, as `resume` would; the
// next `resume` of the id answers its outcome.
//
// The page asks the directory which session owns the execution and asks that session;
// the HTTP thread never waits (replies come back as callbacks).
#pragma once

#include <string_view>

#include "dorm/mcp/http_server.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

inline constexpr std::string_view kApprovalPathPrefix = "/approve/";

class ApprovalPage {
 public:
  explicit ApprovalPage(Runtime& runtime) : runtime_(runtime) {}
  // GET or POST /approve/<executionId>: answers through `respond` (on some thread).
  void handle(const mcp::HttpRequest& request, mcp::Respond respond) const;

 private:
  Runtime& runtime_;
};

}  // namespace dorm::actors
