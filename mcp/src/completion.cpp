#include "dorm/mcp/completion.hpp"

#include <rapidjson/document.h>

#include <algorithm>

#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "json_out.hpp"
#include "json_text.hpp"

namespace dorm::mcp {
namespace {

Error bad_params(std::string_view why) {
  return Error{ErrorCode::invalid_argument, "completion/complete: " + std::string(why)};
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* key) {
  return object.IsObject() && object.HasMember(key) ? &object[key] : nullptr;
}

std::string_view view(const rapidjson::Value& s) {
  return std::string_view(s.GetString(), s.GetStringLength());
}

// The string at object.key, or an error naming `path` (e.g. "params.ref.name").
Result<std::string_view> string_at(const rapidjson::Value& object, const char* key,
                                   std::string_view path) {
  const rapidjson::Value* v = member(object, key);
  if (!v || !v->IsString()) return bad_params(std::string(path) + " must be a string");
  return view(*v);
}

// 2025-06-18's params.context.arguments: the values already chosen, all strings.
Result<CompletionArguments> context_arguments(const rapidjson::Value& params) {
  CompletionArguments out;
  const rapidjson::Value* context = member(params, "context");
  if (!context) return out;
  if (!context->IsObject()) return bad_params("params.context must be an object");
  const rapidjson::Value* arguments = member(*context, "arguments");
  if (!arguments) return out;
  if (!arguments->IsObject()) return bad_params("params.context.arguments must be an object");
  for (const auto& m : arguments->GetObject()) {
    std::string name(view(m.name));
    if (!m.value.IsString()) {
      return bad_params("params.context.arguments." + name + " must be a string");
    }
    out[name] = std::string(view(m.value));
  }
  return out;
}

std::string completion_result(const std::vector<std::string>& candidates) {
  std::size_t shown = std::min(candidates.size(), kMaxCompletionValues);
  detail::JsonOut out;
  auto& w = out.writer();
  w.StartObject();
  out.key("completion");
  w.StartObject();
  out.key("values");
  w.StartArray();
  for (std::size_t i = 0; i < shown; ++i) out.string(candidates[i]);
  w.EndArray();
  out.key("total");
  w.Uint64(candidates.size());
  out.key("hasMore");
  w.Bool(candidates.size() > shown);
  w.EndObject();
  w.EndObject();
  return out.text();
}

}  // namespace

Result<std::string> complete(const ResourceRegistry* resources, const PromptRegistry* prompts,
                             std::string_view params_json) {
  rapidjson::Document params;
  if (params_json.empty() || detail::parse_json(params_json, params) || !params.IsObject()) {
    return bad_params("params must be an object");
  }
  const rapidjson::Value* ref = member(params, "ref");
  if (!ref || !ref->IsObject()) return bad_params("params.ref must be an object");
  const rapidjson::Value* argument = member(params, "argument");
  if (!argument || !argument->IsObject()) return bad_params("params.argument must be an object");
  auto type = string_at(*ref, "type", "params.ref.type");
  if (!type) return std::move(type).error();
  auto name = string_at(*argument, "name", "params.argument.name");
  if (!name) return std::move(name).error();
  auto value = string_at(*argument, "value", "params.argument.value");
  if (!value) return std::move(value).error();
  auto context = context_arguments(params);
  if (!context) return std::move(context).error();
  static const PromptRegistry kNoPrompts;
  static const ResourceRegistry kNoResources;
  Result<std::vector<std::string>> candidates = std::vector<std::string>{};
  if (*type == "ref/prompt") {
    auto prompt = string_at(*ref, "name", "params.ref.name");
    if (!prompt) return std::move(prompt).error();
    candidates = (prompts ? *prompts : kNoPrompts).complete(*prompt, *name, *value, *context);
  } else if (*type == "ref/resource") {
    auto uri = string_at(*ref, "uri", "params.ref.uri");
    if (!uri) return std::move(uri).error();
    candidates = (resources ? *resources : kNoResources).complete(*uri, *name, *value, *context);
  } else {
    return bad_params("params.ref.type must be \"ref/prompt\" or \"ref/resource\"");
  }
  if (!candidates) return std::move(candidates).error();
  return completion_result(*candidates);
}

}  // namespace dorm::mcp
