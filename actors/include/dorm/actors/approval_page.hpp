// The browser approval page of code mode (docs/code-mode.md#the-approval-page).
//
// A pause result carries `approvalUrl`: `<base>/approve/<executionId>?token=<token>`. The
// token is random, single use and valid until the execution's deadline; the session keeps
// only its SHA-256 and compares in constant time. GET shows the tool call the execution
// waits on (plain HTML, no script) with Approve and Deny buttons; they POST the token and
// the action back. The answer continues the execution at once, as `resume` would; the
// next `resume` of the id answers its outcome.
//
// A program (a dashboard, a script) may answer with the owner's own bearer token instead:
// with `--auth-tokens`, a request with `Authorization: Bearer <token>` is accepted when the
// token's identity owns the execution (403 for another user, 401 for an unknown token).
// Browsers never send that header on their own, so a form posted from another site cannot
// use it. With `--auth oauth` the bearer token is an OAuth access token for this server,
// checked as for /mcp (oauth_resource.hpp); its principal must own the execution. Without
// either there are no bearer tokens and only the link works.
//
// The page asks the directory which session owns the execution and asks that session;
// the HTTP thread never waits (replies come back as callbacks).
#pragma once

#include <string_view>
#include <variant>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/oauth_resource.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

inline constexpr std::string_view kApprovalPathPrefix = "/approve/";

struct ApprovalCredential;  // actors/src/execution_owner.hpp

class ApprovalPage {
 public:
  // `tokens`: the server's bearer tokens, or null in single-user mode; `oauth`: the OAuth
  // resource server with `--auth oauth`, else null. Both outlive the page.
  explicit ApprovalPage(Runtime& runtime, const mcp::AuthTokens* tokens = nullptr,
                        const mcp::OAuthResource* oauth = nullptr)
      : runtime_(runtime), tokens_(tokens), oauth_(oauth) {}
  // GET or POST /approve/<executionId>: answers through `respond` (on some thread).
  void handle(const mcp::HttpRequest& request, mcp::Respond respond) const;

 private:
  std::variant<mcp::Identity, mcp::HttpResponse> bearer_identity(std::string_view authorization) const;
  // The rest of handle() once the caller's credential is known.
  void answer(std::string id, std::string action, ApprovalCredential credential, mcp::Respond respond) const;

  Runtime& runtime_;
  const mcp::AuthTokens* tokens_;
  const mcp::OAuthResource* oauth_;
};

}  // namespace dorm::actors
