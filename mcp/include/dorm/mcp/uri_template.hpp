// UriTemplate — RFC 6570 URI templates, levels 1 and 2, for MCP resource templates.
//
// A template is literal text with expressions in braces, each naming one variable:
// `{var}` (simple: the value is percent-encoded except for unreserved characters),
// `{+var}` (reserved: reserved characters and percent-escapes pass through as they are) and
// `{#var}` (fragment: like `{+var}`, after a "#" that appears only when the variable is
// defined). An undefined variable expands to nothing. Level 3 and 4 syntax (several
// variables in one expression, the operators . / ; ? &, the modifiers :N and *) is
// refused at parse time, so a template either means exactly what it says or is rejected.
//
// match() runs a template backwards, to find which template a resources/read URI
// belongs to and with which variables: `test://template/{id}/data` matches
// `test://template/123/data` with id = "123". A simple variable never spans "/", "?" or
// "#" (expansion would have encoded them); reserved and fragment variables span anything.
// Matched values are percent-decoded, so match(expand(v)) == v for every value a simple
// variable can hold. Where several splits fit, the earlier variable takes the longest.
// Two expressions side by side (`{a}{b}`), which could be split anywhere, are refused at
// parse time, except a fragment expression, which starts at its "#"; so is a variable
// used twice (RFC 6570 allows it, but matching would then have to compare values).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::mcp {

// Variable name → value.
using UriVariables = std::map<std::string, std::string, std::less<>>;

class UriTemplate {
 public:
  // Parses `text`. Errors (invalid_argument, quoting the template and saying what and at
  // which offset): an unclosed "{" or a stray "}", an empty expression, a bad variable
  // name (names are of [A-Za-z0-9_] and percent-escapes, dot-separated), level 3 or 4
  // syntax, two expressions side by side, a variable used twice, a literal character a
  // URI cannot hold (space, control characters, " ' < > \ ^ ` |), a "%" that does not
  // start a percent-escape, and a template longer than kMaxTemplateBytes.
  static Result<UriTemplate> parse(std::string_view text);

  // Templates longer than this are refused: a template is a registry key that cursors
  // name (see paging.hpp), and none of the lengths in use comes close.
  static constexpr std::size_t kMaxTemplateBytes = 2048;

  // The template as parsed.
  const std::string& text() const { return text_; }
  // The variables, in order of first appearance, each once.
  std::vector<std::string> variables() const;
  bool has_variable(std::string_view name) const;

  // The URI for `values`; variables not in `values` are undefined (expand to nothing).
  std::string expand(const UriVariables& values) const;

  // The variables for which expand() gives `uri`, or nullopt if there are none. A fragment
  // variable
  // whose "#" is absent is left out of the result (undefined). A URI longer than
  // kMaxMatchBytes, or with a "%" that starts no percent-escape, matches nothing.
  std::optional<UriVariables> match(std::string_view uri) const;

  // Matching costs time and memory in proportion to the template's parts times the URI's
  // length; resource URIs are short, so 8 KiB bounds the work without refusing a real one.
  static constexpr std::size_t kMaxMatchBytes = 8192;

 private:
  struct Part {
    enum class Kind { literal, simple, reserved, fragment };
    Kind kind;
    std::string text;  // the literal, or the variable's name
  };
  struct Matcher;
  UriTemplate() = default;

  std::string text_;
  std::vector<Part> parts_;
};

}  // namespace dorm::mcp
