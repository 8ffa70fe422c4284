// libFuzzer target: UriTemplate::parse and match never crash on any input. The input is a
// template, a newline, then a URI. Properties checked:
//  - the URI matches or not, and what match() returns names only template variables;
//  - expand() of any values gives a URI that match() accepts (the search finds a split
//    whenever one exists), given it is within kMaxMatchBytes;
//  - with one simple variable and nothing else variable, match(expand(v)) == v.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dorm/mcp/uri_template.hpp"

using namespace dorm::mcp;

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto newline = input.find('\n');
  std::string_view text = input.substr(0, newline);
  std::string_view uri = newline == std::string_view::npos ? "" : input.substr(newline + 1);
  auto parsed = UriTemplate::parse(text);
  if (!parsed.ok()) {
    require(!parsed.error().message.empty());
    return 0;
  }
  const UriTemplate& t = *parsed;
  if (auto matched = t.match(uri)) {
    for (const auto& [name, value] : *matched) require(t.has_variable(name));
  }
  UriVariables values;
  for (const auto& name : t.variables()) values[name] = std::string(uri);
  std::string expanded = t.expand(values);
  if (expanded.size() > UriTemplate::kMaxMatchBytes) return 0;
  auto again = t.match(expanded);
  require(again.has_value());
  auto names = t.variables();
  bool one_simple = names.size() == 1 && text.find("{" + names[0] + "}") != std::string::npos &&
                    text.find('{') == text.rfind('{');
  if (one_simple) require(again->at(names[0]) == uri);
  return 0;
}
