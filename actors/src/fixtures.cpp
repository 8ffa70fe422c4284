#include "dorm/actors/fixtures.hpp"

#include "conformance_fixtures.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace dorm::actors {
namespace {

using mcp::ToolContext;
using mcp::ToolResult;
using mcp::ToolSpec;

// The arguments as a document; the registry validated them against the schema already.
rapidjson::Document args(const ToolContext& ctx) {
  rapidjson::Document doc;
  doc.Parse(ctx.arguments().c_str());
  return doc;
}

std::string string_arg(const rapidjson::Document& doc, const char* key) {
  const auto& v = doc[key];
  return std::string(v.GetString(), v.GetStringLength());
}

ToolSpec echo() {
  ToolSpec t;
  t.name = "echo";
  t.title = "Echo";
  t.description = "Returns the text it is given.";
  t.input_schema =
      R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true,"idempotentHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    ctx->finish(ToolResult::text(string_arg(args(*ctx), "text")));
  };
  return t;
}

// One step of sleep: wait at most `step_ms` more, then report progress.
void sleep_step(const std::shared_ptr<ToolContext>& ctx, std::int64_t total_ms, std::int64_t step_ms,
                std::int64_t done_ms) {
  if (done_ms >= total_ms) {
    ctx->finish(ToolResult::text("slept " + std::to_string(total_ms) + " ms"));
    return;
  }
  std::int64_t step = std::min<std::int64_t>(step_ms, total_ms - done_ms);
  ctx->after(std::chrono::milliseconds(step), [ctx, total_ms, step_ms, done = done_ms + step] {
    ctx->progress(static_cast<double>(done), static_cast<double>(total_ms));
    sleep_step(ctx, total_ms, step_ms, done);
  });
}

ToolSpec sleep() {
  ToolSpec t;
  t.name = "sleep";
  t.title = "Sleep";
  t.description =
      "Finishes after `ms` milliseconds; reports progress every `step_ms` (default 1000) when asked.";
  t.input_schema =
      R"({"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":86400000},"step_ms":{"type":"integer","minimum":1,"maximum":86400000}},"required":["ms"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto a = args(*ctx);
    std::int64_t step = a.HasMember("step_ms") ? a["step_ms"].GetInt64() : 1000;
    sleep_step(ctx, a["ms"].GetInt64(), step, 0);
  };
  return t;
}

ToolSpec kv_put() {
  ToolSpec t;
  t.name = "kv_put";
  t.title = "Store a value";
  t.description = "Stores `value` under `key` in this session's durable storage.";
  t.input_schema =
      R"({"type":"object","properties":{"key":{"type":"string","minLength":1,"maxLength":512},"value":{"type":"string"}},"required":["key","value"],"additionalProperties":false})";
  t.annotations = R"({"idempotentHint":true,"destructiveHint":false})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto a = args(*ctx);
    auto key = string_arg(a, "key");
    if (auto ok = ctx->storage().put(key, string_arg(a, "value")); !ok) {
      return ctx->finish(ToolResult::error(ok.error().message));
    }
    ctx->finish(ToolResult::text("stored " + key));
  };
  return t;
}

ToolSpec kv_get() {
  ToolSpec t;
  t.name = "kv_get";
  t.title = "Read a value";
  t.description = "Returns the value stored under `key` in this session's durable storage.";
  t.input_schema =
      R"({"type":"object","properties":{"key":{"type":"string","minLength":1,"maxLength":512}},"required":["key"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto key = string_arg(args(*ctx), "key");
    auto value = ctx->storage().get(key);
    if (!value) return ctx->finish(ToolResult::error(value.error().message));
    if (!*value) return ctx->finish(ToolResult::error("no value stored under '" + key + "'"));
    ctx->finish(ToolResult::text(**value));
  };
  return t;
}

// A durable per-session counter named `name` (in the tools' storage), as a number.
std::int64_t read_counter(ToolContext& ctx, const std::string& name) {
  auto stored = ctx.storage().get("counter/" + name).value_or_throw();
  return stored ? std::stoll(*stored) : 0;
}

std::int64_t bump_counter(ToolContext& ctx, const std::string& name) {
  std::int64_t next = read_counter(ctx, name) + 1;
  ctx.storage().put("counter/" + name, std::to_string(next)).value_or_throw();
  return next;
}

std::string counter_name(const ToolContext& ctx) {
  auto a = args(ctx);
  return a.HasMember("name") ? string_arg(a, "name") : "counter";
}

constexpr const char* kCounterSchema =
    R"({"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":64}},"additionalProperties":false})";

ToolSpec counter_get() {
  ToolSpec t;
  t.name = "counter_get";
  t.title = "Read a counter";
  t.description = "Returns the session's durable counter `name` (default \"counter\"); 0 if never increased.";
  t.input_schema = kCounterSchema;
  t.annotations = R"({"readOnlyHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    ctx->finish(ToolResult::text(std::to_string(read_counter(*ctx, counter_name(*ctx)))));
  };
  return t;
}

ToolSpec counter_increment() {
  ToolSpec t;
  t.name = "counter_increment";
  t.title = "Increase a counter (needs approval)";
  t.description =
      "Adds 1 to the session's durable counter `name` (default \"counter\") and returns the new value. "
      "Each call needs the user's approval.";
  t.input_schema = kCounterSchema;
  t.annotations = R"({"destructiveHint":false,"idempotentHint":false})";
  t.requires_approval = true;
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    ctx->finish(ToolResult::text(std::to_string(bump_counter(*ctx, counter_name(*ctx)))));
  };
  return t;
}

ToolSpec tally() {
  ToolSpec t;
  t.name = "tally";
  t.title = "Count this call";
  t.description =
      "Adds 1 to the session's durable counter \"tally\" and returns the new value, with no approval: "
      "tests count with it how often a tool really ran (read it with counter_get {name: \"tally\"}).";
  t.input_schema = R"({"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":false})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    ctx->finish(ToolResult::text(std::to_string(bump_counter(*ctx, "tally"))));
  };
  return t;
}

// The ledger: a durable per-session list of tokens in the order they were appended, for
// `dorm torture`, which checks after each SIGKILL that every acknowledged append is there
// exactly once. An append takes the next index rather than a key named by its token, so
// an append that ran twice shows up twice instead of overwriting itself.
constexpr const char* kLedgerCount = "ledger/count";

std::string ledger_entry_key(std::int64_t index) {
  char key[48];  // the prefix, 20 characters for any int64 and the NUL
  std::snprintf(key, sizeof key, "ledger/entry/%010lld", static_cast<long long>(index));
  return key;
}

std::int64_t ledger_count(ToolContext& ctx) {
  auto stored = ctx.storage().get(kLedgerCount).value_or_throw();
  return stored ? std::stoll(*stored) : 0;
}

ToolSpec ledger_append() {
  ToolSpec t;
  t.name = "ledger_append";
  t.title = "Append to the ledger";
  t.description =
      "Appends `token` to this session's durable ledger (a list: the same token appended twice "
      "is there twice) and returns it.";
  t.input_schema =
      R"({"type":"object","properties":{"token":{"type":"string","minLength":1,"maxLength":256}},"required":["token"],"additionalProperties":false})";
  t.annotations = R"({"destructiveHint":false,"idempotentHint":false})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto token = string_arg(args(*ctx), "token");
    std::int64_t n = ledger_count(*ctx);
    // One turn: the entry and the count commit in one batch, or neither does.
    ctx->storage().put(ledger_entry_key(n), token).value_or_throw();
    ctx->storage().put(kLedgerCount, std::to_string(n + 1)).value_or_throw();
    ctx->finish(ToolResult::text(token));
  };
  return t;
}

ToolSpec ledger_read() {
  ToolSpec t;
  t.name = "ledger_read";
  t.title = "Read the ledger";
  t.description = "Returns every token of this session's ledger, in the order they were appended.";
  t.input_schema = R"({"type":"object","properties":{},"additionalProperties":false})";
  t.output_schema =
      R"({"type":"object","properties":{"tokens":{"type":"array","items":{"type":"string"}}},"required":["tokens"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true,"idempotentHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    std::int64_t n = ledger_count(*ctx);
    rapidjson::Document out(rapidjson::kObjectType);
    auto& alloc = out.GetAllocator();
    rapidjson::Value tokens(rapidjson::kArrayType);
    for (std::int64_t i = 0; i < n; ++i) {
      auto token = ctx->storage().get(ledger_entry_key(i)).value_or_throw();
      if (!token) {
        return ctx->finish(ToolResult::error("ledger entry " + std::to_string(i) + " of " +
                                             std::to_string(n) + " is missing"));
      }
      tokens.PushBack(rapidjson::Value(token->c_str(), static_cast<rapidjson::SizeType>(token->size()), alloc),
                      alloc);
    }
    out.AddMember("tokens", tokens, alloc);
    ctx->finish(ToolResult::of({}, false, json_of(out)));
  };
  return t;
}

ToolSpec spin() {
  ToolSpec t;
  t.name = "spin";
  t.title = "Spin";
  t.description = "Holds this session's turn for `ms` milliseconds (busy, synchronous).";
  t.input_schema =
      R"({"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000}},"required":["ms"],"additionalProperties":false})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(args(*ctx)["ms"].GetInt64());
    while (std::chrono::steady_clock::now() < until) {
    }
    ctx->finish(ToolResult::text("spun"));
  };
  return t;
}

// A burst of `count` progress notifications, each carrying `bytes` of message text,
// `interval_ms` apart (0: all in one turn): enough output to test a slow reader.
void flood_step(const std::shared_ptr<ToolContext>& ctx, std::int64_t count, std::int64_t bytes,
                std::int64_t interval_ms, std::int64_t done) {
  for (; done < count; ++done) {
    ctx->progress(static_cast<double>(done + 1), static_cast<double>(count),
                  std::string(static_cast<std::size_t>(bytes), 'x'));
    if (interval_ms > 0 && done + 1 < count) {
      ctx->after(std::chrono::milliseconds(interval_ms), [ctx, count, bytes, interval_ms, next = done + 1] {
        flood_step(ctx, count, bytes, interval_ms, next);
      });
      return;
    }
  }
  ctx->finish(ToolResult::text("sent " + std::to_string(count) + " progress notifications"));
}

ToolSpec flood() {
  ToolSpec t;
  t.name = "flood";
  t.title = "Flood";
  t.description = "Sends `count` progress notifications of `bytes` bytes each, `interval_ms` apart.";
  t.input_schema =
      R"({"type":"object","properties":{"count":{"type":"integer","minimum":1,"maximum":1000},"bytes":{"type":"integer","minimum":0,"maximum":65536},"interval_ms":{"type":"integer","minimum":0,"maximum":60000}},"required":["count","bytes"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto a = args(*ctx);
    std::int64_t interval = a.HasMember("interval_ms") ? a["interval_ms"].GetInt64() : 0;
    flood_step(ctx, a["count"].GetInt64(), a["bytes"].GetInt64(), interval, 0);
  };
  return t;
}

ToolSpec announce() {
  ToolSpec t;
  t.name = "announce";
  t.title = "Announce";
  t.description =
      "Sends `text` as a notifications/message on the session's standalone stream (the GET "
      "stream), unrelated to this call.";
  t.input_schema =
      R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    rapidjson::Document params(rapidjson::kObjectType);
    auto& alloc = params.GetAllocator();
    auto a = args(*ctx);
    params.AddMember("level", "info", alloc);
    params.AddMember("logger", "announce", alloc);
    params.AddMember("data", rapidjson::Value(a["text"], alloc), alloc);
    ctx->notify_session("notifications/message", json_of(params));
    ctx->finish(ToolResult::text("announced"));
  };
  return t;
}

ToolSpec ask() {
  ToolSpec t;
  t.name = "ask";
  t.title = "Ask the client";
  t.description =
      "Sends the client a request (`method`: elicitation/create, sampling/createMessage, "
      "roots/list or ping; `params`: its params) and returns the client's result as JSON "
      "text; an error result if the client answers with an error, does not answer in time, "
      "or did not declare the capability the method needs.";
  t.input_schema =
      R"({"type":"object","properties":{"method":{"type":"string"},"params":{"type":"object"}},"required":["method"],"additionalProperties":false})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto a = args(*ctx);
    std::string params = a.HasMember("params") ? json_of(a["params"]) : "{}";
    auto sent = ctx->request(string_arg(a, "method"), params, [ctx](const mcp::ClientReply& reply) {
      if (reply.kind == mcp::ClientReply::Kind::result) return ctx->finish(ToolResult::text(reply.json));
      ctx->finish(ToolResult::error(reply.message));
    });
    if (!sent) ctx->finish(ToolResult::error(sent.error().message));
  };
  return t;
}

ToolSpec add() {
  ToolSpec t;
  t.name = "add";
  t.title = "Add";
  t.description =
      "Adds a and b and returns {\"sum\": a + b} as structured content that its output "
      "schema describes; with broken: true it returns the sum as a string instead, which "
      "does not fit the schema (the server answers with an error result).";
  t.input_schema =
      R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"broken":{"type":"boolean"}},"required":["a","b"],"additionalProperties":false})";
  t.output_schema =
      R"({"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true,"idempotentHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    auto a = args(*ctx);
    double sum = a["a"].GetDouble() + a["b"].GetDouble();
    rapidjson::Document out(rapidjson::kObjectType);
    auto& alloc = out.GetAllocator();
    bool broken = a.HasMember("broken") && a["broken"].GetBool();
    if (broken) {
      out.AddMember("sum", rapidjson::Value(std::to_string(sum).c_str(), alloc), alloc);
    } else {
      out.AddMember("sum", sum, alloc);
    }
    ctx->finish(ToolResult::of({}, false, json_of(out)));
  };
  return t;
}

// The conformance suite's `test_reconnection` (server-sse-polling): after the priming
// event the server closes the POST connection, and the result arrives on the client's
// resume GET.
ToolSpec test_reconnection() {
  ToolSpec t;
  t.name = "test_reconnection";
  t.title = "Reconnection test";
  t.description =
      "Closes its SSE connection right after the priming event and delivers its result on "
      "the client's resumed stream (MCP 2025-11-25 SSE polling).";
  t.input_schema = R"({"type":"object","properties":{}})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    ctx->close_connection();
    ctx->after(std::chrono::milliseconds(100), [ctx] {
      ctx->finish(ToolResult::text("Reconnection test completed successfully"));
    });
  };
  return t;
}

}  // namespace

Result<void> register_fixtures(const FixtureTargets& into, std::string_view name) {
  if (name == "testing") {
    for (auto make : {echo, sleep, kv_put, kv_get, spin, flood, announce, ask, add, counter_get, counter_increment,
                      tally, ledger_append, ledger_read}) {
      if (auto ok = into.tools.add(make()); !ok) return ok;
    }
    return {};
  }
  if (name == "conformance") {
    if (auto ok = into.tools.add(test_reconnection()); !ok) return ok;
    if (auto ok = register_conformance_tools(into.tools); !ok) return ok;
    if (auto ok = register_modern_conformance_tools(into.tools); !ok) return ok;
    if (auto ok = register_conformance_resources(into.resources); !ok) return ok;
    if (auto ok = register_conformance_prompts(into.prompts); !ok) return ok;
    return register_modern_conformance_prompts(into.prompts);
  }
  return Error{ErrorCode::invalid_argument,
               "unknown fixture set '" + std::string(name) + "': known sets are testing, conformance"};
}

Result<void> register_fixtures(mcp::ToolRegistry& tools, std::string_view name) {
  mcp::ResourceRegistry resources;  // left out: see the header
  mcp::PromptRegistry prompts;
  return register_fixtures(FixtureTargets{tools, resources, prompts}, name);
}

}  // namespace dorm::actors
