// ExecutionOutcome — how the code-mode `execute` and `resume` tools report back
// (docs/architecture.md#the-engine).
//
// The model writes JavaScript; the engine runs it in a sandbox and hands back what happened:
// the value the code returned or the error it threw, the values it passed to emit() (meant
// for the user, not the model), and its console lines. An execution can also pause when the
// code calls a tool that needs the user's approval; it then waits, for a limited window,
// for a `resume` call. The functions here only turn those outcomes into CallToolResults,
// replicating the original TypeScript host's formatMcpExecutionOutcome, so a model sees the
// same text and structured content from dorm as from it. They are pure: no clock, no
// engine, no storage.
//
// Text for the model follows JavaScript: a non-string value is shown as
// JSON.stringify(value, null, 2) prints it (2-space indent, "[]" and "{}" when empty,
// integral numbers without ".0", JavaScript's number and escape spellings). Lengths and
// truncation count Unicode code points, not UTF-16 units as JavaScript does, and never split
// a UTF-8 sequence; for text outside the Basic Multilingual Plane a cut may therefore keep a
// few more characters than the original would.
//
// JSON given as text (a result, an emitted value, arguments) is parsed as dorm parses
// untrusted JSON (mcp/src/json_text.hpp: valid UTF-8, nesting at most 128 deep). Text that
// does not parse is never fatal: it is used as if it were a JSON string holding that raw
// text, so the model still sees what the code produced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/tool.hpp"

namespace dorm::mcp {

// A returned value's text (and an error's, logs included) is cut after this many characters:
// the model's context is the scarce resource, and code that needs more should narrow the
// value in code. The original host's MAX_PREVIEW_CHARS.
inline constexpr std::size_t kMaxResultTextChars = 30'000;
// An emitted value shown as text (a text file, a plain value) is cut after this many
// characters. Emitted items are for the user, so they get more room than a result; the
// original host's TEXT_FILE_CONTENT_MAX_CHARS.
inline constexpr std::size_t kMaxEmittedTextChars = 64'000;

// How a finished execution ended.
struct ExecutionOutcome {
  enum class Status { completed, error };
  Status status = Status::completed;
  // completed: the returned value as JSON text; none when the code returned nothing
  // (`undefined`).
  std::optional<std::string> result_json;
  // error: the message.
  std::string error;
  // Each value the code passed to emit(), in order, as JSON text.
  std::vector<std::string> emitted_json;
  // Console lines, each already "[level] text".
  std::vector<std::string> logs;
};

// The CallToolResult for a finished execution:
// {"content":[…],"isError":…,"structuredContent":{…}}.
//
// Content: first each emitted value, rendered as
//   - itself, when it is a valid MCP content block (text, image, audio, resource or
//     resource_link with the fields MCP requires);
//   - for a file, {"type":"file","name","mimeType","data" (base64) or "text"}: a text block
//     "File output: NAME (MIME, N bytes)", then an image block (image/*), an audio block
//     (audio/*), a text block (text given, or a textual MIME type whose data is decoded),
//     or else an embedded resource {"uri":"file:///NAME","mimeType","blob"} (NAME
//     percent-encoded as encodeURIComponent does);
//   - a text block with the string, for a JSON string;
//   - a text block with its JSON (as above), for any other value;
// with text capped at kMaxEmittedTextChars. Then one text block for the model:
//   - completed: the returned string itself, or the value's JSON, capped at
//     kMaxResultTextChars with "\n... [truncated N chars]"; "(no result)" when the code
//     returned nothing, null or ""; "(no return value; N items emitted to the user)" (or
//     "1 item") when it returned nothing but emitted;
//   - error: "Error: MESSAGE", the whole text (logs included) capped at kMaxResultTextChars;
// followed, when there are console lines, by "\n\nLogs:\n" and the lines joined by "\n".
// isError is true for an error.
//
// structuredContent: {"status":"completed","result":VALUE or null,["emitted":[VALUES],]
// "logs":[LINES]} or {"status":"error","error":MESSAGE,["emitted":[VALUES],]"logs":[LINES]},
// "emitted" only when something was emitted.
ToolResult format_execution_outcome(const ExecutionOutcome& outcome);

// An execution waiting for the user's approval of a tool call its code made.
struct PausedExecution {
  std::string execution_id;  // "exec_<uuid>"
  std::int64_t now_ms = 0;   // when it paused; it may be resumed until now_ms + ttl_ms
  std::int64_t ttl_ms = 0;
  std::string message;       // what the user is asked, e.g. "Approve calling counter_increment?"
  std::string instructions;  // how to continue (call resume with …)
  std::string address;       // the tool the code called, e.g. "counter_increment"
  std::string args_json;     // its arguments (a JSON value)
  std::string requested_schema_json;  // the elicitation form's schema (a JSON object)
  std::optional<std::string> approval_url;
};

// The CallToolResult for a paused execution (isError false). One text block, a line each:
//   Execution paused: MESSAGE
//   executionId: ID
//   tool: ADDRESS
//   args: ARGS (compact, as JSON.stringify writes it)
//   resumeDeadline: 2026-12-01T20:42:41.000Z (4 minutes approval window)
//   instructions: INSTRUCTIONS
//   approvalUrl: URL                                    (only with an approval URL)
// structuredContent: {"status":"waiting_for_interaction","executionId","expiresAt","ttlMs",
// "interaction":{"kind":"form","message","instructions","address","args","requestedSchema"}
// [,"approvalUrl"]}. A schema that is not a JSON object is sent as {} and the text says so.
ToolResult format_paused_execution(const PausedExecution& paused);

// The approval window in words, as the original's formatTtlDuration: the milliseconds
// rounded to whole seconds (at least 1), then "4 minutes" / "1 minute" when that is a whole
// number of minutes, else "90 seconds" / "1 second".
std::string format_ttl(std::int64_t ttl_ms);

// The time in ISO 8601 UTC with milliseconds, as JavaScript's Date.toISOString writes it:
// "2026-12-01T20:42:41.000Z". Times before year 0000 or after 9999 are clamped to that
// range, which keeps the text in this one fixed shape.
std::string iso8601_utc(std::int64_t unix_ms);

// Why `resume` could not continue an execution.
enum class ResumeUnavailable {
  execution_not_found,        // the id cannot be looked up (no directory to ask)
  execution_expired,          // its approval window passed
  execution_forbidden,        // it belongs to another user
  execution_already_settled,  // it finished already; its result is not kept for replay
};

// "execution_not_found", "execution_expired", …: the status in structuredContent.
std::string_view to_string(ResumeUnavailable why);

// The CallToolResult for a resume that cannot continue (isError true): one text block,
// "Cannot resume ID: STATUS. " and a sentence saying what to do (re-run the code with
// execute; for execution_forbidden, that the execution belongs to another user).
// structuredContent: {"status":STATUS,"executionId":ID[,"ttlMs":TTL][,"recovery":"re_execute"]},
// ttlMs for execution_expired only, recovery for all but execution_forbidden.
ToolResult format_resume_unavailable(ResumeUnavailable why, std::string_view execution_id,
                                     std::int64_t ttl_ms);

// The CallToolResult for a failure inside dorm itself (isError true). It names only a
// correlation id, which the caller logs with the real cause, so nothing internal reaches the
// model: text "Error: Internal tool error [ID]", structuredContent
// {"status":"error","error":"Internal tool error [ID]"}.
ToolResult format_internal_error(std::string_view correlation_id);

}  // namespace dorm::mcp
