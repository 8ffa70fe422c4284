#include "dorm/mcp/prompt_registry.hpp"

#include <rapidjson/document.h>

#include "guarded_call.hpp"
#include "json_out.hpp"
#include "json_text.hpp"
#include "paging.hpp"

namespace dorm::mcp {
namespace {

using detail::JsonOut;

// Names are cursor keys; 128 bytes is what tool names allow too.
constexpr std::size_t kMaxPromptNameBytes = 128;

Error bad_prompt(std::string_view name, std::string_view why) {
  return Error{ErrorCode::invalid_argument,
               "prompt '" + std::string(name) + "': " + std::string(why)};
}

void write_prompt(JsonOut& out, const PromptSpec& p) {
  out.writer().StartObject();
  out.member("name", p.name);
  out.optional_member("title", p.title);
  out.optional_member("description", p.description);
  if (!p.arguments.empty()) {
    out.key("arguments");
    out.writer().StartArray();
    for (const auto& a : p.arguments) {
      out.writer().StartObject();
      out.member("name", a.name);
      out.optional_member("title", a.title);
      out.optional_member("description", a.description);
      out.key("required");
      out.writer().Bool(a.required);
      out.writer().EndObject();
    }
    out.writer().EndArray();
  }
  out.writer().EndObject();
}

// The arguments of a prompts/get, checked against what `prompt` declares.
Result<PromptArguments> read_arguments(const PromptSpec& prompt, std::string_view json) {
  PromptArguments arguments;
  if (!json.empty()) {
    rapidjson::Document doc;
    if (detail::parse_json(json, doc) || !doc.IsObject()) {
      return bad_prompt(prompt.name, "arguments must be a JSON object");
    }
    // Through a const reference: clang in C++20 mode warns that RapidJSON 1.1's mutable
    // member iterators compare ambiguously.
    const rapidjson::Value& object = doc;
    for (const auto& member : object.GetObject()) {
      std::string name(member.name.GetString(), member.name.GetStringLength());
      if (!member.value.IsString()) {
        return bad_prompt(prompt.name, "argument '" + name + "' must be a string");
      }
      arguments[name] = std::string(member.value.GetString(), member.value.GetStringLength());
    }
  }
  for (const auto& declared : prompt.arguments) {
    if (declared.required && !arguments.contains(declared.name)) {
      return bad_prompt(prompt.name, "missing required argument '" + declared.name + "'");
    }
  }
  return arguments;
}

bool is_prompt_result(std::string_view json) {
  rapidjson::Document doc;
  return !detail::parse_json(json, doc) && doc.IsObject() && doc.HasMember("messages") &&
         doc["messages"].IsArray();
}

}  // namespace

std::string prompt_result(const std::vector<PromptMessage>& messages,
                          std::string_view description) {
  JsonOut out;
  out.writer().StartObject();
  out.optional_member("description", description);
  out.key("messages");
  out.writer().StartArray();
  for (const auto& m : messages) {
    out.writer().StartObject();
    out.member("role", m.role == PromptMessage::Role::user ? "user" : "assistant");
    out.raw_member("content", m.content.to_json());
    out.writer().EndObject();
  }
  out.writer().EndArray();
  out.writer().EndObject();
  return out.text();
}

PromptRegistry::PromptRegistry() = default;
PromptRegistry::~PromptRegistry() = default;

Result<void> PromptRegistry::add(PromptSpec spec) {
  if (spec.name.empty() || spec.name.size() > kMaxPromptNameBytes) {
    return bad_prompt(spec.name, "a name is 1-128 bytes");
  }
  if (find(spec.name)) return bad_prompt(spec.name, "already registered");
  for (std::size_t i = 0; i < spec.arguments.size(); ++i) {
    const std::string& name = spec.arguments[i].name;
    if (name.empty()) return bad_prompt(spec.name, "an argument has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (spec.arguments[j].name == name) {
        return bad_prompt(spec.name, "argument '" + name + "' is declared twice");
      }
    }
  }
  if (!spec.handler) return bad_prompt(spec.name, "no handler");
  prompts_.push_back(std::move(spec));
  return {};
}

Result<PromptRegistry::Page> PromptRegistry::list(std::optional<std::string_view> cursor,
                                                  std::size_t page_size) const {
  JsonOut out;
  out.writer().StartArray();
  auto key = [&](std::size_t i) -> std::optional<std::string_view> { return prompts_[i].name; };
  auto write = [&](std::size_t i) { write_prompt(out, prompts_[i]); };
  auto next = detail::walk_page(prompts_.size(), cursor, page_size, key, write);
  if (!next) return std::move(next).error();
  out.writer().EndArray();
  return Page{out.text(), std::move(*next)};
}

Result<std::string> PromptRegistry::get(std::string_view name, std::string_view arguments_json,
                                        ToolStorage& storage, PromptInput* input) const {
  const PromptSpec* prompt = find(name);
  if (!prompt) return Error{ErrorCode::invalid_argument, "unknown prompt: " + std::string(name)};
  auto arguments = read_arguments(*prompt, arguments_json);
  if (!arguments) return std::move(arguments).error();
  auto result =
      detail::guarded_call<std::string>("the handler of prompt '" + prompt->name + "'", [&] {
        return prompt->handler(PromptGet{prompt->name, *arguments, storage, input});
      });
  if (result && !is_prompt_result(*result)) {
    return Error{ErrorCode::internal, "the handler of prompt '" + prompt->name +
                                          "' returned no GetPromptResult (a JSON object with "
                                          "a messages array)"};
  }
  return result;
}

Result<std::vector<std::string>> PromptRegistry::complete(
    std::string_view name, std::string_view argument, std::string_view value,
    const CompletionArguments& context) const {
  const PromptSpec* prompt = find(name);
  if (!prompt) return Error{ErrorCode::invalid_argument, "unknown prompt: " + std::string(name)};
  for (const auto& a : prompt->arguments) {
    if (a.name != argument) continue;
    if (!a.complete) return std::vector<std::string>{};
    return detail::guarded_call<std::vector<std::string>>(
        "the completer of argument '" + a.name + "'", [&] { return a.complete(value, context); });
  }
  return bad_prompt(name, "no argument '" + std::string(argument) + "'");
}

const PromptSpec* PromptRegistry::find(std::string_view name) const {
  for (const auto& p : prompts_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace dorm::mcp
