#include "dorm/actors/fixtures.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <array>
#include <chrono>
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

// One step of sleep: report progress, then wait at most a second more.
void sleep_step(const std::shared_ptr<ToolContext>& ctx, std::int64_t total_ms, std::int64_t done_ms) {
  if (done_ms >= total_ms) {
    ctx->finish(ToolResult::text("slept " + std::to_string(total_ms) + " ms"));
    return;
  }
  std::int64_t step = std::min<std::int64_t>(1000, total_ms - done_ms);
  ctx->after(std::chrono::milliseconds(step), [ctx, total_ms, done = done_ms + step] {
    ctx->progress(static_cast<double>(done), static_cast<double>(total_ms));
    sleep_step(ctx, total_ms, done);
  });
}

ToolSpec sleep() {
  ToolSpec t;
  t.name = "sleep";
  t.title = "Sleep";
  t.description = "Finishes after `ms` milliseconds; reports progress every second when asked.";
  t.input_schema =
      R"({"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":86400000}},"required":["ms"],"additionalProperties":false})";
  t.annotations = R"({"readOnlyHint":true})";
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    sleep_step(ctx, args(*ctx)["ms"].GetInt64(), 0);
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

constexpr std::array<std::string_view, 1> kSets = {"testing"};

}  // namespace

std::span<const std::string_view> fixture_sets() { return kSets; }

Result<void> register_fixtures(mcp::ToolRegistry& registry, std::string_view name) {
  if (name == "testing") {
    for (auto make : {echo, sleep, kv_put, kv_get, spin}) {
      if (auto ok = registry.add(make()); !ok) return ok;
    }
    return {};
  }
  return Error{ErrorCode::invalid_argument,
               "unknown fixture set '" + std::string(name) + "': known sets are testing"};
}

}  // namespace dorm::actors
