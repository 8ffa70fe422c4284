// libFuzzer target: parse_body never crashes and never accepts what it cannot write back.
// Properties checked for every input:
//  - a failure is -32700 or -32600 with a message, and the error response built from it
//    parses back as an error response to the same id;
//  - a success holds 1 message (or 1..kMaxBatchMessages for a batch); each message's
//    params are empty or a JSON object/array, result and error re-parse as JSON, and
//    to_json(message) parses back to exactly that message; a batch written back as an
//    array parses back to the same batch; every id survives to_key/from_key.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "dorm/mcp/jsonrpc.hpp"

using namespace dorm::mcp;

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

bool json_value(const std::string& text, bool container_only) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag | rapidjson::kParseIterativeFlag>(text.data(),
                                                                                 text.size());
  if (doc.HasParseError()) return false;
  return !container_only || doc.IsObject() || doc.IsArray();
}

ParsedBody must_parse(std::variant<ParsedBody, ParseFailure> r) {
  require(std::holds_alternative<ParsedBody>(r));
  return std::get<ParsedBody>(std::move(r));
}

void check_message(const Message& m) {
  switch (m.kind) {
    case Message::Kind::request:
      require(m.id.has_value());
      [[fallthrough]];
    case Message::Kind::notification:
      require(m.kind == Message::Kind::request || !m.id);
      require(m.params.empty() || json_value(m.params, /*container_only=*/true));
      require(m.result.empty() && m.error.empty());
      break;
    case Message::Kind::result_response:
      require(m.id.has_value() && json_value(m.result, false));
      require(m.method.empty() && m.params.empty() && m.error.empty());
      break;
    case Message::Kind::error_response:
      require(json_value(m.error, /*container_only=*/true));
      require(m.method.empty() && m.params.empty() && m.result.empty());
      break;
  }
  if (m.id) {
    auto back = RequestId::from_key(m.id->to_key());
    require(back && *back == *m.id);
  }
  ParsedBody again = must_parse(parse_body(to_json(m)));
  require(!again.batch && again.messages.size() == 1 && again.messages[0] == m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto result = parse_body(body);

  if (auto* failure = std::get_if<ParseFailure>(&result)) {
    require(failure->code == kParseError || failure->code == kInvalidRequest);
    require(!failure->message.empty());
    ParsedBody answer =
        must_parse(parse_body(error_response(failure->id, failure->code, failure->message)));
    require(answer.messages.size() == 1);
    require(answer.messages[0].kind == Message::Kind::error_response);
    require(answer.messages[0].id == failure->id);
    return 0;
  }

  const ParsedBody& parsed = std::get<ParsedBody>(result);
  require(!parsed.messages.empty());
  require(parsed.batch ? parsed.messages.size() <= kMaxBatchMessages : parsed.messages.size() == 1);
  for (const Message& m : parsed.messages) check_message(m);

  if (parsed.batch) {
    std::string array = "[";
    for (const Message& m : parsed.messages) {
      if (array.size() > 1) array += ',';
      array += to_json(m);
    }
    array += ']';
    ParsedBody again = must_parse(parse_body(array));
    require(again.batch && again.messages == parsed.messages);
  }
  return 0;
}
