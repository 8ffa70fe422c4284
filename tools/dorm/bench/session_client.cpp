#include "session_client.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <variant>

#include "bench_stats.hpp"
#include "dorm/actors/namespaces.hpp"

namespace dorm::bench::execute {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// Where a call's answer lands: the Responder's callback fills it, or (a streamed answer)
// the stream's wake-ups do, as a connection's I/O thread would. `done` is set once, with
// the arrival time taken when the last bytes were in.
struct Arrival {
  std::mutex mutex;
  int status = 0;
  std::string body;
  bool over = false;
  bool aborted = false;
  Clock::time_point at;
  std::promise<void> done;

  void finish_plain(mcp::HttpResponse r) {
    {
      std::lock_guard lock(mutex);
      status = r.status;
      body = std::move(r.body);
      over = true;
      at = Clock::now();
    }
    done.set_value();
  }
  // Runs on whichever thread wrote to the stream; wake-ups may overlap.
  void read(mcp::StreamBody& stream) {
    {
      std::lock_guard lock(mutex);
      if (over) return;
      auto pending = stream.take();
      body += pending.bytes;
      stream.sent(pending.bytes.size());
      if (!pending.end && !pending.abort) return;
      over = true;
      aborted = pending.abort;
      at = Clock::now();
    }
    stream.close();  // as the connection does once the response is over
    done.set_value();
  }
};

}  // namespace

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what);
}

void must(Result<void> r, const char* what) {
  if (!r) fail(std::string(what) + ": " + r.error().describe());
}

std::string compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  v.Accept(w);
  return buffer.GetString();
}

std::string json_string(const std::string& text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(text.c_str(), static_cast<rapidjson::SizeType>(text.size()));
  return buffer.GetString();
}

// `prefix` followed by `n`. (Built in two steps: `"x" + std::to_string(n)` trips GCC 12's
// false -Wrestrict in release builds.)
std::string numbered(const char* prefix, long n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// "[a,b]"
std::string pair_json(long a, long b) {
  std::string s = numbered("[", a);
  s += ',';
  s += std::to_string(b);
  s += ']';
  return s;
}

void SessionClient::initialize(const std::string& session) {
  // No elicitation capability: a tool that needs approval pauses the execution.
  std::string body =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
      R"("capabilities":{},"clientInfo":{"name":"dorm-bench","version":"1"}}})";
  Reply r = call(mcp::SessionCall::Kind::initialize, session, body, 0);
  if (!r.message.HasMember("result")) fail("initialize of " + session + " answered " + r.body);
}

Reply SessionClient::call_tool(const std::string& session, const std::string& tool,
                               const std::string& arguments_json) {
  std::int64_t id = ++next_id_;
  std::string body = numbered(R"({"jsonrpc":"2.0","id":)", id) +
                     R"(,"method":"tools/call","params":{"name":)" + json_string(tool) +
                     R"(,"arguments":)" + arguments_json + "}}";
  Reply r = call(mcp::SessionCall::Kind::post, session, body, id);
  if (!r.message.HasMember("result") || !r.message["result"].IsObject()) {
    fail("tools/call " + tool + " in " + session + " answered " + r.body);
  }
  return r;
}

void SessionClient::notify(const std::string& session, const std::string& method) {
  std::string body = R"({"jsonrpc":"2.0","method":)" + json_string(method) + "}";
  Reply r;
  int status = send(mcp::SessionCall::Kind::post, session, body, r);
  if (status != 202) fail(numbered("HTTP ", status) + " for " + body + ": " + r.body);
}

Reply SessionClient::call(mcp::SessionCall::Kind kind, const std::string& session,
                          const std::string& body, std::int64_t id) {
  Reply out;
  int status = send(kind, session, body, out);
  if (status != 200) fail(numbered("HTTP ", status) + " for " + body + ": " + out.body);
  // The SSE events' data lines; the one answering `id` is the reply.
  std::size_t at = 0;
  while ((at = out.body.find("data: ", at)) != std::string::npos) {
    auto end = out.body.find('\n', at);
    std::string data =
        out.body.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
    at = end;
    if (data.empty()) continue;  // a priming event
    rapidjson::Document doc;
    doc.Parse(data.c_str());
    if (doc.HasParseError() || !doc.IsObject())
      fail("unparsable event in the answer to " + body + ": " + data);
    if (doc.HasMember("id") && doc["id"].IsInt64() && doc["id"].GetInt64() == id) {
      out.message = std::move(doc);
      return out;
    }
  }
  fail(numbered("no response to request ", id) + " in: " + out.body);
}

int SessionClient::send(mcp::SessionCall::Kind kind, const std::string& session,
                        const std::string& body, Reply& out) {
  auto parsed = mcp::parse_body(body);
  if (!std::holds_alternative<mcp::ParsedBody>(parsed))
    fail("the benchmark built a bad body: " + body);
  mcp::SessionCall c;
  c.kind = kind;
  c.session_id = session;
  c.caller = mcp::Identity{"bench", "dorm"};
  c.messages = std::get<mcp::ParsedBody>(parsed).messages;
  auto arrival = std::make_shared<Arrival>();
  auto arrived = arrival->done.get_future();
  c.responder = std::make_shared<mcp::Responder>([arrival](mcp::HttpResponse r) {
    if (!r.stream) return arrival->finish_plain(std::move(r));
    {
      std::lock_guard lock(arrival->mutex);
      arrival->status = r.status;
    }
    // The wake-up runs only inside the stream's own calls, so the raw pointer is live.
    mcp::StreamBody* stream = r.stream.get();
    stream->attach([arrival, stream] { arrival->read(*stream); });
  });
  auto handle = must(runtime_.get(runtime_.id_from_name(actors::kMcpSessionNamespace, session)),
                     "session handle");
  auto sent = Clock::now();
  runtime_.send(handle, std::move(c));
  if (arrived.wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
    give_up_waiting(("no answer in 2 minutes to " + body).c_str());
  }
  std::lock_guard lock(arrival->mutex);
  out.ms = ms_between(sent, arrival->at);
  out.body = arrival->body;
  if (arrival->aborted) fail("stream aborted for " + body + ": " + out.body);
  return arrival->status;
}

const rapidjson::Value& structured(const Reply& r, const char* what) {
  const auto& result = r.message["result"];
  if (result.HasMember("isError") && result["isError"].IsTrue())
    fail(std::string(what) + " failed: " + r.body);
  if (!result.HasMember("structuredContent") || !result["structuredContent"].IsObject()) {
    fail(std::string(what) + " answered without structuredContent: " + r.body);
  }
  return result["structuredContent"];
}

// An execution that completed with `expected` (compact JSON) as its value.
void expect_completed(const Reply& r, const std::string& expected, const char* what) {
  const auto& s = structured(r, what);
  if (!s.HasMember("status") || !s["status"].IsString() ||
      std::string(s["status"].GetString()) != "completed" || !s.HasMember("result") ||
      compact(s["result"]) != expected) {
    fail(std::string(what) + ": expected completed with " + expected + ", got " + r.body);
  }
}

// An execution paused for approval; returns its id.
std::string expect_paused(const Reply& r, const char* what) {
  const auto& s = structured(r, what);
  if (!s.HasMember("status") || !s["status"].IsString() ||
      std::string(s["status"].GetString()) != "waiting_for_interaction" ||
      !s.HasMember("executionId") || !s["executionId"].IsString()) {
    fail(std::string(what) + ": expected waiting_for_interaction, got " + r.body);
  }
  return s["executionId"].GetString();
}

void expect_echo(const Reply& r, const std::string& text) {
  const auto& result = r.message["result"];
  bool ok = !(result.HasMember("isError") && result["isError"].IsTrue()) &&
            result.HasMember("content") && result["content"].IsArray() &&
            result["content"].Size() == 1 && result["content"][0].HasMember("text") &&
            result["content"][0]["text"].IsString() &&
            text == result["content"][0]["text"].GetString();
  if (!ok) fail("echo of " + text + " answered " + r.body);
}

}  // namespace dorm::bench::execute
