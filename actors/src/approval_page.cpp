#include "dorm/actors/approval_page.hpp"

// Boost.URL's definitions are compiled once, in mcp/src/boost_url.cpp.
#include <boost/url/parse.hpp>
#include <boost/url/parse_query.hpp>
#include <rapidjson/document.h>

#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "dorm/actors/namespaces.hpp"
#include "execution_owner.hpp"

namespace dorm::actors {
namespace {

// Text into HTML, for element content and quoted attribute values.
std::string html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

mcp::HttpResponse page(int status, std::string_view title, const std::string& body) {
  std::string text = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                     "<title>" + html(title) + "</title>"
                     "<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}"
                     "pre{background:#f4f4f4;padding:.75rem;overflow:auto}button{font-size:1rem;padding:.5rem 1.25rem;"
                     "margin-right:1rem}</style></head><body><h1>" + html(title) + "</h1>\n" + body + "</body></html>\n";
  // No caching, no framing by other sites, and no script at all on this page.
  return mcp::HttpResponse{status,
                           {{"Content-Type", "text/html; charset=utf-8"},
                            {"Cache-Control", "no-store"},
                            {"X-Frame-Options", "DENY"},
                            {"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"},
                            {"Referrer-Policy", "same-origin"}},
                           std::move(text)};
}

mcp::HttpResponse problem(int status, std::string_view message) {
  return page(status, "Approval unavailable", "<p>" + html(message) + "</p>\n");
}

// The value of `key` in an application/x-www-form-urlencoded text (a query or a body).
std::optional<std::string> form_value(std::string_view text, std::string_view key) {
  auto params = boost::urls::parse_query(text);
  if (!params) return std::nullopt;
  for (auto param : *params) {
    if (param.key.decode() == key) {
      std::string value = param.value.decode();
      for (auto& c : value) {
        if (c == '+') c = ' ';  // form encoding's space
      }
      return value;
    }
  }
  return std::nullopt;
}

struct Reply {
  int status = 500;
  rapidjson::Document doc;
};

// The owner session's JSON answer, or the error it names.
Reply read_reply(const caf::expected<caf::message>& reply) {
  Reply out;
  if (!reply || !reply->match_elements<std::string>()) return out;
  out.doc.Parse(reply->get_as<std::string>(0).c_str());
  if (out.doc.HasParseError() || !out.doc.IsObject()) return out;
  out.status = out.doc.HasMember("status") && out.doc["status"].IsInt() ? out.doc["status"].GetInt() : 200;
  return out;
}

// The form field that carries the link's token back, or nothing for a bearer caller (who
// posts with the same header instead).
std::string hidden_token(const ApprovalCredential& credential) {
  if (credential.bearer) return "";
  return "<input type=\"hidden\" name=\"token\" value=\"" + html(credential.token) + "\">";
}

mcp::HttpResponse unauthorized(std::string_view message) {
  auto response = problem(401, message);
  response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

}  // namespace

// Who an `Authorization` header says the caller is, or the page that refuses it.
std::variant<mcp::Identity, mcp::HttpResponse> ApprovalPage::bearer_identity(std::string_view authorization) const {
  if (tokens_ == nullptr) {
    return unauthorized("This server has no bearer tokens (it runs without --auth-tokens): open the approval link instead.");
  }
  auto token = mcp::bearer_token(authorization);
  if (!token) return unauthorized("The Authorization header must be \"Bearer <token>\".");
  auto identity = tokens_->authenticate(*token);
  if (!identity) return unauthorized("The bearer token is not valid.");
  return std::move(*identity);
}

void ApprovalPage::handle(const mcp::HttpRequest& request, mcp::Respond respond) const {
  auto target = boost::urls::parse_origin_form(request.target);
  if (!target) return respond(problem(400, "This address is malformed."));
  std::string path = target->path();
  if (!path.starts_with(kApprovalPathPrefix)) return respond(problem(404, "Not found."));
  std::string id = path.substr(kApprovalPathPrefix.size());
  if (id.empty() || id.size() > 64 || id.find('/') != std::string::npos) {
    return respond(problem(404, "This approval link names no execution."));
  }
  std::string action;
  std::optional<std::string> token;
  if (request.method == "GET" || request.method == "HEAD") {
    token = form_value(target->encoded_query(), "token");
  } else if (request.method == "POST") {
    token = form_value(request.body, "token");
    action = form_value(request.body, "action").value_or("");
    if (action != "accept" && action != "decline") {
      return respond(problem(400, "The answer must be accept or decline."));
    }
  } else {
    return respond(mcp::HttpResponse{405, {{"Allow", "GET, POST"}}, "method not allowed\n"});
  }
  ApprovalCredential credential;
  if (auto authorization = request.header("authorization"); authorization && oauth_ != nullptr) {
    // An OAuth token may need the authorization server's keys fetched: asynchronous.
    auto token = mcp::bearer_token(*authorization).value_or(std::string_view());
    oauth_->authenticate(token, [this, id, action, respond](mcp::AuthVerdict verdict) {
      if (auto* refusal = std::get_if<mcp::Rejection>(&verdict)) {
        auto response = problem(refusal->http_status, "The bearer token is not accepted.");
        for (const auto& [name, value] : refusal->headers) {
          if (name == "WWW-Authenticate" || name == "Retry-After") response.headers.emplace_back(name, value);
        }
        return respond(std::move(response));
      }
      ApprovalCredential bearer;
      bearer.bearer = std::get<mcp::Identity>(std::move(verdict));
      answer(id, action, std::move(bearer), respond);
    });
    return;
  }
  if (auto authorization = request.header("authorization")) {
    auto identity = bearer_identity(*authorization);
    if (auto* refusal = std::get_if<mcp::HttpResponse>(&identity)) return respond(std::move(*refusal));
    credential.bearer = std::get<mcp::Identity>(std::move(identity));
  } else if (!token || token->empty()) {
    return respond(problem(403, "This approval link has no token."));
  } else {
    credential.token = std::move(*token);
  }
  answer(std::move(id), std::move(action), std::move(credential), std::move(respond));
}

void ApprovalPage::answer(std::string id, std::string action, ApprovalCredential credential,
                          mcp::Respond respond) const {
  auto directory = runtime_.get(runtime_.id_from_name(kExecutionOwnerNamespace, id));
  if (!directory) return respond(problem(500, "The directory is unavailable."));
  Runtime& runtime = runtime_;
  runtime_.request(
      *directory,
      [&runtime, id, credential = std::move(credential), action, respond](caf::expected<caf::message> found) {
        std::optional<OwnerRecord> owner;
        if (found && found->match_elements<std::string>()) owner = OwnerRecord::from_json(found->get_as<std::string>(0));
        if (!owner) return respond(problem(404, "This execution is not waiting for an approval (it finished or expired)."));
        auto session = runtime.parse_id(kMcpSessionNamespace, owner->session_object);
        if (!session) return respond(problem(404, "This execution's session is gone."));
        auto handle = runtime.get(*session);
        if (!handle) return respond(problem(500, "The session is unavailable."));
        if (action.empty()) {
          runtime.request(*handle, [id, credential, respond](caf::expected<caf::message> reply) {
            auto r = read_reply(reply);
            if (r.status != 200) {
              return respond(problem(r.status, r.doc.IsObject() && r.doc.HasMember("error") ? r.doc["error"].GetString()
                                                                                             : "The session could not answer."));
            }
            std::string body = "<p>Code running for you wants to call the tool <strong>" + html(r.doc["tool"].GetString()) +
                               "</strong> with these arguments:</p>\n<pre>" + html(r.doc["args"].GetString()) +
                               "</pre>\n<p>Answer before " + html(r.doc["expiresAt"].GetString()) +
                               " (UTC); after that it is declined.</p>\n"
                               "<form method=\"post\" action=\"/approve/" + html(id) + "\">"
                               + hidden_token(credential) +
                               "<button type=\"submit\" name=\"action\" value=\"accept\">Approve</button>"
                               "<button type=\"submit\" name=\"action\" value=\"decline\">Deny</button></form>\n";
            respond(page(200, "Approve a tool call?", body));
          }, ApprovalView{id, credential});
          return;
        }
        runtime.request(*handle, [respond](caf::expected<caf::message> reply) {
          auto r = read_reply(reply);
          if (r.status != 200) {
            return respond(problem(r.status, r.doc.IsObject() && r.doc.HasMember("error") ? r.doc["error"].GetString()
                                                                                           : "The session could not answer."));
          }
          bool approved = std::string_view(r.doc["decided"].GetString()) == "accept";
          respond(page(200, approved ? "Approved" : "Denied",
                       approved ? "<p>The tool call was approved; the code goes on.</p>\n"
                                : "<p>The tool call was denied; the code was told so.</p>\n"));
        }, ApprovalDecision{id, credential, action});
      },
      OwnerGet{id});
}

}  // namespace dorm::actors
