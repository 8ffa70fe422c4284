#include "dorm/mcp/feature_methods.hpp"

#include <rapidjson/document.h>

#include <optional>

#include "dorm/mcp/completion.hpp"
#include "json_out.hpp"
#include "json_text.hpp"

namespace dorm::mcp {
namespace {

MethodError invalid_params(std::string message) {
  return MethodError{kInvalidParams, std::move(message), {}};
}

MethodError not_offered(std::string_view method) {
  return MethodError{kMethodNotFound, "Method not found: " + std::string(method), {}};
}

// A registry's error as the JSON-RPC error to answer with: the caller's mistakes are
// -32602, everything else -32603.
MethodError from_error(const Error& error) {
  int code = error.code == ErrorCode::invalid_argument ? kInvalidParams : kInternalError;
  return MethodError{code, error.message, {}};
}

// The request's params: {} when absent. Fails when they are not a JSON object.
std::optional<MethodError> read_params(std::string_view json, rapidjson::Document& params) {
  if (json.empty()) {
    params.SetObject();
    return std::nullopt;
  }
  if (detail::parse_json(json, params) || !params.IsObject()) {
    return invalid_params("params must be an object");
  }
  return std::nullopt;
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* key) {
  return object.HasMember(key) ? &object[key] : nullptr;
}

// The JSON array of a page's items.
const std::string& items_of(const ToolRegistry::Page& page) {
  return page.tools_json;
}
template <class Page>
const std::string& items_of(const Page& page) {
  return page.items_json;
}

// A list method: params.cursor read and checked, `list` asked for the page, the result
// written as {"<items_key>":[…],"nextCursor"?}.
template <class List>
MethodResult page_result(std::string_view params_json, const char* items_key, List&& list) {
  rapidjson::Document params;
  if (auto bad = read_params(params_json, params)) return *bad;
  std::optional<std::string_view> cursor;
  if (const rapidjson::Value* c = member(params, "cursor")) {
    if (!c->IsString()) return invalid_params("params.cursor must be a string");
    cursor = std::string_view(c->GetString(), c->GetStringLength());
  }
  auto page = list(cursor);
  if (!page) return from_error(page.error());
  detail::JsonOut out;
  out.writer().StartObject();
  out.raw_member(items_key, items_of(*page), rapidjson::kArrayType);
  if (page->next_cursor) out.member("nextCursor", *page->next_cursor);
  out.writer().EndObject();
  return out.text();
}

// The params member `key` as a string, or the error naming the method and the member.
std::variant<std::string_view, MethodError> required_string(const rapidjson::Value& params,
                                                            const char* key,
                                                            std::string_view method) {
  const rapidjson::Value* v = member(params, key);
  if (!v || !v->IsString()) {
    return invalid_params(std::string(method) + " needs params." + key + " (a string)");
  }
  return std::string_view(v->GetString(), v->GetStringLength());
}

}  // namespace

std::string to_response(const RequestId& id, const MethodResult& answer) {
  if (const auto* error = std::get_if<MethodError>(&answer)) {
    return error_response(id, error->code, error->message, error->data_json);
  }
  return result_response(id, std::get<std::string>(answer));
}

MethodResult tools_list_result(const ToolRegistry* tools, std::string_view params_json,
                               std::size_t page_size) {
  static const ToolRegistry kNoTools;
  const ToolRegistry& registry = tools ? *tools : kNoTools;
  return page_result(params_json, "tools", [&](std::optional<std::string_view> cursor) {
    return registry.list(cursor, page_size);
  });
}

MethodResult resources_list_result(const ResourceRegistry* resources, std::string_view params_json,
                                   std::size_t page_size) {
  if (!resources || resources->empty()) return not_offered("resources/list");
  return page_result(params_json, "resources", [&](std::optional<std::string_view> cursor) {
    return resources->list(cursor, page_size);
  });
}

MethodResult resources_templates_list_result(const ResourceRegistry* resources,
                                             std::string_view params_json, std::size_t page_size) {
  if (!resources || resources->empty()) return not_offered("resources/templates/list");
  return page_result(params_json, "resourceTemplates", [&](std::optional<std::string_view> cursor) {
    return resources->list_templates(cursor, page_size);
  });
}

MethodResult resources_read_result(const ResourceRegistry* resources, std::string_view params_json,
                                   ToolStorage& storage) {
  if (!resources || resources->empty()) return not_offered("resources/read");
  rapidjson::Document params;
  if (auto bad = read_params(params_json, params)) return *bad;
  auto uri = required_string(params, "uri", "resources/read");
  if (auto* bad = std::get_if<MethodError>(&uri)) return *bad;
  std::string_view u = std::get<std::string_view>(uri);
  auto result = resources->read(u, storage);
  if (result) return std::move(*result);
  if (result.error().code != ErrorCode::not_found) return from_error(result.error());
  detail::JsonOut data;
  data.writer().StartObject();
  data.member("uri", u);
  data.writer().EndObject();
  return MethodError{kResourceNotFound, result.error().message, data.text()};
}

MethodResult prompts_list_result(const PromptRegistry* prompts, std::string_view params_json,
                                 std::size_t page_size) {
  if (!prompts || prompts->empty()) return not_offered("prompts/list");
  return page_result(params_json, "prompts", [&](std::optional<std::string_view> cursor) {
    return prompts->list(cursor, page_size);
  });
}

MethodResult prompts_get_result(const PromptRegistry* prompts, std::string_view params_json,
                                ToolStorage& storage, PromptInput* input) {
  if (!prompts || prompts->empty()) return not_offered("prompts/get");
  rapidjson::Document params;
  if (auto bad = read_params(params_json, params)) return *bad;
  auto name = required_string(params, "name", "prompts/get");
  if (auto* bad = std::get_if<MethodError>(&name)) return *bad;
  std::string arguments;
  if (const rapidjson::Value* a = member(params, "arguments")) {
    if (!a->IsObject()) return invalid_params("params.arguments must be an object");
    arguments = detail::compact(*a);
  }
  auto result = prompts->get(std::get<std::string_view>(name), arguments, storage, input);
  if (!result) return from_error(result.error());
  return std::move(*result);
}

MethodResult completion_complete_result(const ResourceRegistry* resources,
                                        const PromptRegistry* prompts,
                                        std::string_view params_json) {
  bool no_resources = !resources || resources->empty();
  bool no_prompts = !prompts || prompts->empty();
  if (no_resources && no_prompts) return not_offered("completion/complete");
  auto result = complete(resources, prompts, params_json.empty() ? "{}" : params_json);
  if (!result) return from_error(result.error());
  return std::move(*result);
}

}  // namespace dorm::mcp
