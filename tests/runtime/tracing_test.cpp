// Tracing: W3C trace context, the recording tracer, the OTLP JSON file tracer, and the
// spans the runtime emits for activations (with the causing message's context as parent).
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "dorm/runtime/otlp_file_tracer.hpp"
#include "dorm/runtime/tracing.hpp"
#include "runtime_fixture.hpp"
#include "temp_dir.hpp"

using namespace dorm;
using namespace dorm::trace;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;

namespace {

using fail_start_atom = caf::atom_constant<caf::atom("failstart")>;

struct Starter : DurableObject {
  static inline bool fail_start = false;
  void on_start(StartReason) override {
    if (fail_start) throw std::runtime_error("on_start refuses");
  }
  caf::behavior behavior() override {
    return {[](int x) { return x + 1; }};
  }
};

}  // namespace

TEST_CASE("trace context: traceparent round-trips; malformed or all-zero headers are ignored") {
  RecordingTracer tracer;
  auto span = tracer.start_span("x");
  auto ctx = span.context();
  REQUIRE(ctx.valid());
  auto header = ctx.traceparent();
  CHECK(header.size() == 55);
  CHECK(header.substr(0, 3) == "00-");
  auto back = TraceContext::from_traceparent(header);
  REQUIRE(back);
  CHECK(*back == ctx);

  auto sample = TraceContext::from_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  REQUIRE(sample);
  CHECK(to_hex(sample->trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(to_hex(sample->span_id) == "00f067aa0ba902b7");
  CHECK_FALSE(sample->sampled);
  // A later version may carry more fields after the four it shares with version 00.
  CHECK(TraceContext::from_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));

  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",         // no flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",    // v00 has 4 fields
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",      // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",      // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",      // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // forbidden version
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
       }) {
    CAPTURE(bad);
    CHECK_FALSE(TraceContext::from_traceparent(bad));
  }
}

TEST_CASE("recording tracer: children share the trace; exceptions set error status; times on the clock") {
  VirtualClock clock;
  RecordingTracer tracer(&clock);
  SpanOptions root_options;
  root_options.attributes = {{"k", std::int64_t{1}}};
  auto parent = tracer.start_span("parent", root_options);
  clock.advance(5);
  {
    SpanOptions options;
    options.parent = parent.context();
    options.links = {{parent.context(), {}}};
    auto child = tracer.start_span("child", options);
    child.set_attribute("k", std::string("v"));
    child.add_event("note", {{"n", 2.5}});
    child.record_exception("dorm.Test", "it broke");
    clock.advance(3);
  }  // ends on destruction
  parent.set_status(SpanStatus::ok, "ignored for ok");
  parent.end();
  parent.end();  // once only

  auto spans = tracer.spans();
  REQUIRE(spans.size() == 2);
  const auto& child = spans[0];
  const auto& root = spans[1];
  CHECK(child.name == "child");
  CHECK(child.context.trace_id == root.context.trace_id);
  CHECK(child.context.span_id != root.context.span_id);
  REQUIRE(child.parent_span_id);
  CHECK(*child.parent_span_id == root.context.span_id);
  CHECK_FALSE(root.parent_span_id);
  CHECK(child.status == SpanStatus::error);
  CHECK(child.status_message == "it broke");
  REQUIRE(child.event("exception"));
  CHECK(std::get<std::string>(child.event("exception")->attributes[0].value) == "dorm.Test");
  CHECK(std::get<std::string>(*child.attribute("k")) == "v");
  CHECK(child.end_unix_nano - child.start_unix_nano == 3'000'000);
  CHECK(root.end_unix_nano - root.start_unix_nano == 8'000'000);
  CHECK(root.status == SpanStatus::ok);
  CHECK(root.status_message.empty());

  Span idle;  // records nothing, never crashes
  idle.set_attribute("a", true);
  idle.record_exception("t", "m");
  idle.end();
  CHECK(tracer.spans().size() == 2);
}

TEST_CASE("OTLP JSON file tracer: one parseable ExportTraceServiceRequest per line") {
  dorm::testing::TempDir dir;
  auto path = dir / "spans.jsonl";
  TraceId trace_id{};
  {
    auto tracer = OtlpJsonFileTracer::open(path, "dorm-test");
    REQUIRE(tracer.ok());
    SpanOptions root_options;
    root_options.attributes = {
        {"s", std::string("x\"y")}, {"i", std::int64_t{-7}}, {"d", 0.5}, {"b", true}};
    auto root = (*tracer)->start_span("root", root_options);
    trace_id = root.context().trace_id;
    SpanOptions options;
    options.parent = root.context();
    options.links = {{root.context(), {{"why", std::string("test")}}}};
    auto child = (*tracer)->start_span("child", options);
    child.record_exception("dorm.Test", "boom");
    child.end();
    root.set_status(SpanStatus::ok);
  }
  std::ifstream in(path);
  std::string line;
  std::vector<rapidjson::Document> docs;
  while (std::getline(in, line)) {
    docs.emplace_back();
    docs.back().Parse(line.c_str());
    REQUIRE_FALSE(docs.back().HasParseError());
  }
  REQUIRE(docs.size() == 2);
  std::string hex_trace = to_hex(trace_id);
  for (auto& doc : docs) {
    const auto& rs = doc["resourceSpans"][0];
    CHECK(std::string(rs["resource"]["attributes"][0]["key"].GetString()) == "service.name");
    CHECK(std::string(rs["resource"]["attributes"][0]["value"]["stringValue"].GetString()) == "dorm-test");
    const auto& span = rs["scopeSpans"][0]["spans"][0];
    CHECK(std::string(span["traceId"].GetString()) == hex_trace);
    CHECK(std::string(span["spanId"].GetString()).size() == 16);
    // 64-bit integers are decimal strings in OTLP JSON.
    REQUIRE(span["startTimeUnixNano"].IsString());
    REQUIRE(span["endTimeUnixNano"].IsString());
    CHECK(std::stoll(span["endTimeUnixNano"].GetString()) >= std::stoll(span["startTimeUnixNano"].GetString()));
    CHECK(span["kind"].GetInt() == 1);
    CHECK(span["attributes"].IsArray());
    CHECK(span["events"].IsArray());
    CHECK(span["links"].IsArray());
    CHECK(span["status"].IsObject());
  }
  const auto& child = docs[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  const auto& root = docs[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK(std::string(child["name"].GetString()) == "child");
  CHECK(std::string(child["parentSpanId"].GetString()) == root["spanId"].GetString());
  CHECK(child["status"]["code"].GetInt() == 2);
  CHECK(std::string(child["status"]["message"].GetString()) == "boom");
  CHECK(std::string(child["events"][0]["name"].GetString()) == "exception");
  CHECK(std::string(child["links"][0]["spanId"].GetString()) == root["spanId"].GetString());
  CHECK_FALSE(root.HasMember("parentSpanId"));
  CHECK(root["status"]["code"].GetInt() == 1);
  const auto& attrs = root["attributes"];
  CHECK(std::string(attrs[0]["value"]["stringValue"].GetString()) == "x\"y");
  CHECK(std::string(attrs[1]["value"]["intValue"].GetString()) == "-7");
  CHECK(attrs[2]["value"]["doubleValue"].GetDouble() == 0.5);
  CHECK(attrs[3]["value"]["boolValue"].GetBool());

  auto bad = OtlpJsonFileTracer::open(dir / "missing/dir/spans.jsonl");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("missing/dir/spans.jsonl") != std::string::npos);
}

TEST_CASE("runtime spans: an activation is a child of the message that caused it") {
  RuntimeFixture f;
  Starter::fail_start = false;
  REQUIRE(f.runtime->register_namespace("starter", [] { return std::make_unique<Starter>(); }).ok());
  RecordingTracer outside;
  auto request_span = outside.start_span("http.request");
  Reply r;
  auto h = f.handle("starter", "a");
  f.runtime->deliver(h, caf::make_message(41), r.handler(), request_span.context());
  f.runtime->run_until_idle();
  CHECK(r.as_int() == 42);
  auto activations = f.tracer.spans_named(kActivationSpan);
  REQUIRE(activations.size() == 1);
  const auto& a = activations[0];
  CHECK(a.context.trace_id == request_span.context().trace_id);
  CHECK(a.parent_span_id == request_span.context().span_id);
  CHECK(a.status == SpanStatus::ok);
  CHECK(std::get<std::string>(*a.attribute(attr::kNamespace)) == "starter");
  CHECK(std::get<std::string>(*a.attribute(attr::kObjectId)) == h.id.to_string());
  CHECK(std::get<std::string>(*a.attribute(attr::kStartReason)) == "first");
  CHECK(std::get<std::int64_t>(*a.attribute(attr::kEpochGeneration)) ==
        static_cast<std::int64_t>(f.runtime->generation()));
  f.expected_active = 1;
}

TEST_CASE("runtime spans: a failing on_start ends its activation span in error, then a reset") {
  RuntimeFixture f;
  Starter::fail_start = true;
  REQUIRE(f.runtime->register_namespace("starter", [] { return std::make_unique<Starter>(); }).ok());
  Reply r;
  f.runtime->request(f.handle("starter", "b"), r.handler(), 1);
  f.runtime->run_until_idle();
  CHECK(r.error_text().find("object_reset") != std::string::npos);
  Starter::fail_start = false;
  auto activations = f.tracer.spans_named(kActivationSpan);
  auto resets = f.tracer.spans_named(kResetSpan);
  REQUIRE(activations.size() == 1);
  REQUIRE(resets.size() == 1);
  CHECK(activations[0].status == SpanStatus::error);
  REQUIRE(activations[0].event("exception"));
  CHECK(std::get<std::string>(activations[0].event("exception")->attributes[0].value) == "dorm.StartFailed");
  CHECK(activations[0].status_message.find("on_start refuses") != std::string::npos);
  CHECK(resets[0].parent_span_id == activations[0].context.span_id);
  CHECK(resets[0].status == SpanStatus::error);
}

namespace {

// Starts a span of its own in on_start and in a handler.
struct SpanningObject : DurableObject {
  void on_start(StartReason) override {
    auto span = start_span("object.start");
    span.set_attribute("step", std::string("start"));
  }
  caf::behavior behavior() override {
    return {[this](int x) {
      start_span("object.handle").set_status(SpanStatus::ok);
      return x + 1;
    }};
  }
};

}  // namespace

TEST_CASE("object spans: start_span in on_start and in a handler is a child of the activation span") {
  RuntimeFixture f;
  REQUIRE(f.runtime->register_namespace("spanning", [] { return std::make_unique<SpanningObject>(); }).ok());
  auto h = f.handle("spanning", "a");
  Reply r;
  f.runtime->request(h, r.handler(), 1);
  f.runtime->run_until_idle();
  CHECK(r.as_int() == 2);
  auto activations = f.tracer.spans_named(kActivationSpan);
  REQUIRE(activations.size() == 1);
  for (const char* name : {"object.start", "object.handle"}) {
    CAPTURE(name);
    auto spans = f.tracer.spans_named(name);
    REQUIRE(spans.size() == 1);
    CHECK(spans[0].context.trace_id == activations[0].context.trace_id);
    REQUIRE(spans[0].parent_span_id);
    CHECK(*spans[0].parent_span_id == activations[0].context.span_id);
    CHECK(std::get<std::string>(*spans[0].attribute(attr::kNamespace)) == "spanning");
    CHECK(std::get<std::string>(*spans[0].attribute(attr::kObjectId)) == h.id.to_string());
    CHECK(std::get<std::int64_t>(*spans[0].attribute(attr::kEpochActivation)) ==
          std::get<std::int64_t>(*activations[0].attribute(attr::kEpochActivation)));
  }
  CHECK(std::get<std::string>(*f.tracer.spans_named("object.start")[0].attribute("step")) == "start");
  f.expected_active = 1;
}

TEST_CASE("object spans: without a tracer start_span records nothing") {
  RuntimeFixture f;
  f.runtime.reset();
  RuntimeOptions untraced;
  untraced.tracer = nullptr;
  // The fixture installs its tracer when none is given: start without one by hand.
  untraced.virtual_clock = &f.clock;
  auto rt = Runtime::start(f.faulty, untraced);
  REQUIRE(rt.ok());
  f.runtime = std::move(rt).value();
  f.tracer.clear();
  REQUIRE(f.runtime->register_namespace("spanning", [] { return std::make_unique<SpanningObject>(); }).ok());
  Reply r;
  f.runtime->request(f.handle("spanning", "a"), r.handler(), 1);
  f.runtime->run_until_idle();
  CHECK(r.as_int() == 2);
  CHECK(f.tracer.spans().empty());
  f.expected_active = 1;
}
