// The request methods of MCP's server features — tools/list, resources/list,
// resources/templates/list, resources/read, prompts/list, prompts/get and
// completion/complete — as functions from a request's params to its answer, so that the
// session only routes: it passes the params, the registries and its storage, and sends
// back what it gets.
//
// Each function takes the request's `params` as compact JSON text (Message::params; empty
// when the request had none, which counts as {}) and returns either the `result` JSON or
// a MethodError carrying the JSON-RPC code, message and data to answer with. Params are
// checked here, with messages that name the member ("resources/read needs params.uri (a
// string)"). Registries are passed by pointer; null means none is configured, and a
// feature whose registry is null or empty answers -32601, since the server did not
// announce its capability (tools/list excepted: tools are always announced, so it lists
// nothing).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool.hpp"
#include "dorm/mcp/tool_registry.hpp"

namespace dorm::mcp {

// MCP's code for resources/read of a URI the server does not have, with {"uri": URI} as
// the error's data (MCP 2025-11-25, "Resources", error handling).
inline constexpr int kResourceNotFound = -32002;

// What to answer instead of a result.
struct MethodError {
  int code = kInvalidParams;
  std::string message;
  std::string data_json;  // the error's `data` as JSON text; empty: none

  friend bool operator==(const MethodError&, const MethodError&) = default;
};

// The `result` JSON, or the error to answer with.
using MethodResult = std::variant<std::string, MethodError>;

// The response to request `id`: result_response or error_response (jsonrpc.hpp).
std::string to_response(const RequestId& id, const MethodResult& answer);

// tools/list: {"tools":[…],"nextCursor"?}, the tools exposed to clients, `page_size` a
// page. -32602: params not an object, a cursor that is not a string or not ours.
MethodResult tools_list_result(const ToolRegistry* tools, std::string_view params_json,
                               std::size_t page_size);

// resources/list: {"resources":[…],"nextCursor"?}. Errors as tools/list; -32601 without
// resources or templates.
MethodResult resources_list_result(const ResourceRegistry* resources, std::string_view params_json,
                                   std::size_t page_size);

// resources/templates/list: {"resourceTemplates":[…],"nextCursor"?}. Errors as
// resources/list.
MethodResult resources_templates_list_result(const ResourceRegistry* resources,
                                             std::string_view params_json, std::size_t page_size);

// resources/read: {"contents":[…]} (ResourceRegistry::read), the handler called with
// `storage`. -32602: no string params.uri, or the handler's invalid_argument; -32002 with
// {"uri":URI}: nothing has the URI, or the handler says it is not found; -32603: any
// other handler failure; -32601 without resources or templates.
MethodResult resources_read_result(const ResourceRegistry* resources, std::string_view params_json,
                                   ToolStorage& storage);

// prompts/list: {"prompts":[…],"nextCursor"?}. Errors as tools/list; -32601 without prompts.
MethodResult prompts_list_result(const PromptRegistry* prompts, std::string_view params_json,
                                 std::size_t page_size);

// prompts/get: the GetPromptResult (PromptRegistry::get), the handler called with
// `storage`. -32602: no string params.name, params.arguments not an object, an unknown
// prompt, a missing required argument, a value that is not a string, or the handler's
// invalid_argument; -32603: any other handler failure; -32601 without prompts.
MethodResult prompts_get_result(const PromptRegistry* prompts, std::string_view params_json,
                                ToolStorage& storage, PromptInput* input = nullptr);

// completion/complete: {"completion":{…}} (complete() in completion.hpp). -32602: params
// of the wrong shape, an unknown prompt, template or argument; -32603: a completer threw;
// -32601 when there are neither prompts nor resources.
MethodResult completion_complete_result(const ResourceRegistry* resources,
                                        const PromptRegistry* prompts,
                                        std::string_view params_json);

}  // namespace dorm::mcp
