// PromptRegistry — every prompt a server offers: named message templates a client fills
// in with arguments and hands to its model (prompts/list, prompts/get).
//
// A prompt has a name, an optional title and description, the arguments it takes (each
// with a name, optional title and description, whether it is required, and an optional
// completer), and a synchronous handler. prompts/get checks the arguments before the
// handler sees them: every value is a string (MCP's prompt arguments are strings), and
// every required argument is present. Arguments the prompt does not declare are passed on
// as they are. The handler gets them with the session's storage and returns the
// GetPromptResult, built with prompt_result() from messages whose content blocks are
// those of content.hpp (text, image, audio, embedded resource).
//
// Prompts are listed in registration order, a page at a time, with the cursors
// ToolRegistry uses. An empty registry means the server offers no `prompts` capability.
//
// Filled once at start-up, then read from every session concurrently: add() is not
// thread-safe, everything const is; handlers and completers are called concurrently by
// different sessions.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dorm/mcp/completion.hpp"
#include "dorm/mcp/content.hpp"
#include "dorm/mcp/tool.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// Argument name → value.
using PromptArguments = std::map<std::string, std::string, std::less<>>;

struct PromptArgument {
  std::string name;
  std::string title;        // optional
  std::string description;  // optional
  bool required = false;
  Completer complete;  // optional: suggestions for completion/complete
};

// Questions a prompt may put to the client while it is filled in (MCP 2026-07-28,
// `input_required`). Only requests of that revision have one: a 2025 session's prompts/get
// cannot ask, and PromptGet::input is null there.
class PromptInput {
 public:
  virtual ~PromptInput() = default;
  // The client's answer to the question `key` (1 to 64 of [A-Za-z0-9_.-]) — the result of
  // `method` (elicitation/create, sampling/createMessage, roots/list) as JSON — when the
  // request carried one. Otherwise the question is noted and nullopt returned: whatever
  // the handler then returns, the request is answered `input_required` with every
  // question noted, and the client sends it again with the answers. Errors:
  // invalid_argument for a bad key, or a method the request's client did not declare.
  virtual Result<std::optional<std::string>> ask(std::string_view key, std::string_view method,
                                                 std::string_view params_json) = 0;
};

// What a prompt handler is asked for.
struct PromptGet {
  std::string_view name;
  const PromptArguments& arguments;  // checked: strings, required ones present
  ToolStorage& storage;              // the session's storage, valid during the call
  PromptInput* input = nullptr;      // see PromptInput; null: the prompt cannot ask
};

// The GetPromptResult as JSON text, {"description"?, "messages":[…]}: build it with
// prompt_result(). Errors: invalid_argument for arguments the prompt cannot use (the
// client gets -32602 with the message), anything else for a failure (-32603).
using PromptHandler = std::function<Result<std::string>(const PromptGet&)>;

struct PromptSpec {
  std::string name;         // 1-128 bytes
  std::string title;        // optional
  std::string description;  // optional
  std::vector<PromptArgument> arguments;
  PromptHandler handler;
};

// One message of a prompt: who says it, and one content block.
struct PromptMessage {
  enum class Role { user, assistant };
  Role role;
  Content content;

  static PromptMessage user(Content content) { return {Role::user, std::move(content)}; }
  static PromptMessage assistant(Content content) { return {Role::assistant, std::move(content)}; }
};

// {["description":DESCRIPTION,]"messages":[{"role":"user","content":{…}},…]}; the
// description is left out when empty.
std::string prompt_result(const std::vector<PromptMessage>& messages,
                          std::string_view description = {});

class PromptRegistry {
 public:
  PromptRegistry();
  ~PromptRegistry();
  PromptRegistry(const PromptRegistry&) = delete;
  PromptRegistry& operator=(const PromptRegistry&) = delete;

  // Adds a prompt. Errors (invalid_argument, naming the prompt and the problem): a name
  // that is empty, longer than 128 bytes or taken; an argument with no name or a name used
  // twice; no handler.
  Result<void> add(PromptSpec spec);

  struct Page {
    std::string items_json;                  // a JSON array of Prompt objects
    std::optional<std::string> next_cursor;  // more to come
  };
  // One page of prompts ({name, title?, description?, arguments?: [{name, title?,
  // description?, required}]}), starting at `cursor` (none: the first). Errors:
  // invalid_argument "invalid cursor" for a cursor this registry did not hand out.
  Result<Page> list(std::optional<std::string_view> cursor, std::size_t page_size) const;

  // Fills in prompt `name` with `arguments_json` (a JSON object of strings; empty: none)
  // and returns the handler's GetPromptResult. Errors, invalid_argument: "unknown prompt:
  // NAME"; arguments that are not a JSON object; "prompt 'NAME': argument 'ARG' must be a
  // string"; "prompt 'NAME': missing required argument 'ARG'". Then the handler's own
  // errors; internal when it throws or returns something that is not a JSON object with a
  // `messages` array.
  Result<std::string> get(std::string_view name, std::string_view arguments_json,
                          ToolStorage& storage, PromptInput* input = nullptr) const;

  // Candidates for `argument` of prompt `name`, as its completer returns them (no
  // completer: none), uncapped (complete() in completion.hpp cuts). Errors:
  // invalid_argument for an unknown prompt or an argument it does not declare; internal,
  // naming the exception, for a completer that throws.
  Result<std::vector<std::string>> complete(std::string_view name, std::string_view argument,
                                            std::string_view value,
                                            const CompletionArguments& context) const;

  // No prompts: the server announces no `prompts` capability.
  bool empty() const { return prompts_.empty(); }
  std::size_t size() const { return prompts_.size(); }

 private:
  const PromptSpec* find(std::string_view name) const;

  std::vector<PromptSpec> prompts_;
};

}  // namespace dorm::mcp
