// Completion — suggestions for a prompt's arguments and a resource template's variables
// (MCP `completion/complete`).
//
// A prompt argument or a template variable may have a Completer: given what the user has
// typed so far and the values already chosen for the other arguments (2025-06-18's
// `context.arguments`), it returns the candidate values, best first. One response lists
// at most kMaxCompletionValues of them, with the total and whether there were more, so a
// completer may return every match and leave the cut to this layer. Completers run
// inside a session's turn, called concurrently by different sessions: they must be
// thread-safe and quick.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::mcp {

class PromptRegistry;
class ResourceRegistry;

// MCP caps `completion.values` at 100 per response.
inline constexpr std::size_t kMaxCompletionValues = 100;

// Argument (or variable) name → value.
using CompletionArguments = std::map<std::string, std::string, std::less<>>;

// (the partial value, the other arguments already chosen) → candidates, best first.
using Completer = std::function<std::vector<std::string>(std::string_view value,
                                                         const CompletionArguments& context)>;

// Answers completion/complete. `params_json` is the request's params:
//   {"ref":{"type":"ref/prompt","name":N} or {"type":"ref/resource","uri":TEMPLATE},
//    "argument":{"name":A,"value":V}, "context":{"arguments":{NAME:VALUE,…}}?}
// and the result is {"completion":{"values":[…],"total":T,"hasMore":B}}: the first
// kMaxCompletionValues candidates of the completer of argument A of prompt N (or of
// variable A of the template whose text is TEMPLATE), T of them in all, B when some were
// cut. No completer: no values. A null registry has nothing in it.
// Errors: invalid_argument (-32602) for params that do not have this shape (saying which
// member is missing or of the wrong type), an unknown prompt or template, an argument it
// does not have; internal (-32603) when a completer throws.
Result<std::string> complete(const ResourceRegistry* resources, const PromptRegistry* prompts,
                             std::string_view params_json);

}  // namespace dorm::mcp
