// ToolRegistry — every tool a server offers, in registration order.
//
// A tool has a name, an optional title, a description, an input schema and an optional
// output schema (JSON text, stored and listed byte for byte as registered), optional
// annotations (a JSON object, listed as given), an asynchronous handler, whether a
// person must approve each call, and where it is exposed: to MCP clients, to `execute`
// code, or both. Arguments are validated against the input schema with RapidJSON's
// validator, which implements JSON Schema draft-04: keywords of later drafts (such as
// 2020-12's `prefixItems` or `$defs` references) are listed verbatim but not enforced.
//
// A tool with an output schema is held to it: check_structured() validates the
// structuredContent of its results with the same draft-04 validator.
//
// Filled once at start-up, then read from every session concurrently: add() is not
// thread-safe, everything const is.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/tool.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

enum class Exposure { clients, code, both };

// Whether a call of the tool may run as a task (the io.modelcontextprotocol/tasks
// extension of MCP 2026-07-28: the client polls tasks/get instead of holding the request
// open). `optional`: a call from a request that declared the extension becomes a task
// once its first turn ends with the tool still working (a tool that finishes or asks for
// input in its first turn answers the request itself). `required`: a request that did not
// declare the extension is refused (-32021). Sessions of the 2025 revisions never make
// tasks.
enum class TaskSupport { forbidden, optional, required };

struct ToolSpec {
  std::string name;         // 1-128 of [A-Za-z0-9_.-]
  std::string title;        // optional
  std::string description;
  std::string input_schema = R"({"type":"object"})";  // a JSON object
  std::string output_schema;                           // optional JSON object
  std::string annotations;                             // optional JSON object
  bool requires_approval = false;
  Exposure exposure = Exposure::both;
  ToolHandler handler;
  // Last, so aggregate initialisers written before it existed still compile.
  TaskSupport task_support = TaskSupport::forbidden;
};

class ToolRegistry {
 public:
  ToolRegistry();
  ~ToolRegistry();
  ToolRegistry(const ToolRegistry&) = delete;
  ToolRegistry& operator=(const ToolRegistry&) = delete;

  // Adds a tool. Errors (invalid_argument, naming the tool and the problem): a bad or
  // taken name, no handler, a schema or annotations that are not a JSON object, an
  // input schema RapidJSON cannot compile.
  Result<void> add(ToolSpec spec);

  struct Entry;
  // The tool named `name`, if registered and exposed to `audience`.
  const Entry* find(std::string_view name, Exposure audience = Exposure::clients) const;
  const ToolSpec& spec(const Entry& entry) const;
  // Checks `arguments_json` (a JSON object) against the tool's input schema. Errors:
  // invalid_argument saying where and why the arguments do not fit.
  Result<void> validate_arguments(const Entry& entry, std::string_view arguments_json) const;
  // Checks a call's result against the tool's output schema: a tool with an outputSchema
  // must return structuredContent that fits it (MCP 2025-11-25); an error result
  // (isError: true) need not. A tool without an output schema always passes. Errors:
  // invalid_argument naming the tool and saying what is missing or where it does not
  // fit; the session turns that into an isError result and logs it.
  Result<void> check_structured(const Entry& entry, const ToolResult& result) const;

  struct Page {
    std::string tools_json;                 // a JSON array of Tool objects
    std::optional<std::string> next_cursor;  // more to come
  };
  // One page of the tools exposed to `audience`, starting at `cursor` (none: the first).
  // Errors: invalid_argument for a cursor this registry did not hand out.
  Result<Page> list(std::optional<std::string_view> cursor, std::size_t page_size,
                    Exposure audience = Exposure::clients) const;

  std::size_t size() const;

 private:
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace dorm::mcp
