// Test fixtures: tools for test suites and conformance runs, added to a ToolRegistry
// through its public API only (`dorm serve --fixtures testing`).
//
// "testing":
//   echo {text}      returns the text
//   sleep {ms, step_ms?}  finishes after ms; with a progressToken, progress every step_ms
//                    (default 1000)
//   kv_put {key, value} / kv_get {key}   on the session's durable storage
//   spin {ms}        holds its session's turn for ms (busy, synchronous): for scheduling
//                    tests, it shows that other sessions are not held up
//   flood {count, bytes, interval_ms?}   count progress notifications of `bytes` each
//   announce {text}  a notifications/message on the session's standalone (GET) stream
//   ask {method, params?}  sends the client a request (elicitation, sampling, roots,
//                    ping); returns its result as JSON text, or an error result
//   add {a, b, broken?}  {"sum": a+b} as structured content with an output schema;
//                    broken: a sum that does not fit the schema
//   counter_get {name?} / counter_increment {name?}   a durable per-session counter
//                    ("counter" by default); counter_increment requires approval (code mode)
//   tally {text?}    adds 1 to the counter "tally" without approval: counts real runs
//   ledger_append {token} / ledger_read   a durable per-session list of tokens: an append
//                    adds an entry (twice if it runs twice) and returns its token; a read
//                    returns {"tokens": [...]} in append order (`dorm torture` checks with it)
//
// "conformance": every tool, resource, resource template and prompt the official
//   conformance suite's 32 server scenarios use (test_simple_text, test://static-text,
//   test_prompt_with_arguments, ...), plus
//   test_reconnection  closes its connection after the priming event; the result comes
//                      on the client's resume
#pragma once

#include <string>
#include <string_view>

#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/result.hpp"

namespace dorm::actors {

// Where a fixture set goes.
struct FixtureTargets {
  mcp::ToolRegistry& tools;
  mcp::ResourceRegistry& resources;
  mcp::PromptRegistry& prompts;
};

// Registers the fixture set `name`. Errors: invalid_argument for an unknown set (naming
// the known ones), or a registry error (a name already taken).
Result<void> register_fixtures(const FixtureTargets& into, std::string_view name);
// Only the set's tools (for tests that need no resources or prompts).
Result<void> register_fixtures(mcp::ToolRegistry& tools, std::string_view name);

}  // namespace dorm::actors
