// libFuzzer target: what a bearer token or an authorization server can put in front of
// the OAuth resource server. The first byte picks the parser, the rest is its input:
//   0  a token, checked by check_access_token against a fixed JWKS (an Ed25519 and a
//      P-256 key; the corpus holds tokens they really signed, so mutations reach the
//      claim checks). An accepted token names the issuer token_issuer reads, and
//      checking it twice gives the same answer.
//   1  a JWKS document: KeySet::parse refuses only with invalid_argument "JWKS: …", and
//      names every key it skipped that way too.
//   2  an introspection answer: parse_introspection refuses only with invalid_argument;
//      check_introspected accepts only an active token, for a configured issuer.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "dorm/mcp/access_token.hpp"
#include "dorm/mcp/token_introspection.hpp"

using namespace dorm::mcp;

namespace {

constexpr std::string_view kJwks =
    R"({"keys":[{"crv":"Ed25519","x":"kvLIJFKH6pK6ifFTnvVKgLGuAfv707G98xQfX5pqRT8","kty":"OKP","kid":"ed"},)"
    R"({"kty":"EC","x":"6bzYmeXxqrTlFH9K2bIVPqWGOIp8elYyZYbOLe3kTgs","y":"sPAQD7pS9ZvG3A4TLcn_kdxsRKzpanrozRXbELt-l_U",)"
    R"("crv":"P-256","kid":"ec"}]})";
const auto kNow = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));

const KeySet& keys() {
  static const KeySet set = [] {
    auto parsed = KeySet::parse(kJwks);
    if (!parsed.ok() || parsed->size() != 2) std::abort();
    return std::move(parsed).value();
  }();
  return set;
}

void token(std::string_view text) {
  TokenRules rules{"https://as.example", "https://mcp.example/mcp", {"mcp"}, std::chrono::seconds(60), true};
  auto first = check_access_token(text, keys(), rules, kNow);
  auto second = check_access_token(text, keys(), rules, kNow);
  if (first.index() != second.index()) std::abort();
  if (const auto* claims = std::get_if<AccessClaims>(&first)) {
    if (token_issuer(text) != claims->issuer || claims->subject.empty()) std::abort();
    if (!token_key_id(text).has_value()) std::abort();
  } else if (std::get<TokenRefusal>(first).message.empty()) {
    std::abort();
  }
}

void jwks(std::string_view text) {
  auto set = KeySet::parse(text);
  if (!set.ok()) {
    if (set.error().code != dorm::ErrorCode::invalid_argument || !set.error().message.starts_with("JWKS: ")) {
      std::abort();
    }
    return;
  }
  for (const auto& why : set->skipped()) {
    if (!why.starts_with("JWKS: key ")) std::abort();
  }
  (void)set->find("");
}

void introspection(std::string_view text) {
  auto parsed = parse_introspection(text);
  if (!parsed.ok()) {
    if (parsed.error().code != dorm::ErrorCode::invalid_argument) std::abort();
    return;
  }
  IntrospectionRules rules{{"https://as.example"}, "https://mcp.example/mcp", {"mcp"}, std::chrono::seconds(60)};
  auto checked = check_introspected(*parsed, rules, kNow);
  if (const auto* claims = std::get_if<AccessClaims>(&checked)) {
    if (!parsed->active || claims->issuer != "https://as.example" || claims->subject.empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: token(text); break;
    case 1: jwks(text); break;
    default: introspection(text); break;
  }
  return 0;
}
