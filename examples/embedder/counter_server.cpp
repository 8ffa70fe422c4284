// counter_server: MCP served on the example's own storage backend, with tools backed by
// its own durable object class.
//
//   counter_server [HOST:PORT] [LOG-FILE] [WINDOW-MS]
//     (default 127.0.0.1:8808, ./counter-store.log, 60000)
//
// Sessions, their event logs and in-flight journal, and every Counter live in one
// AppendLogBackend file, so a restart (even after SIGKILL) finds them all, and the reaper
// answers calls the dead process left open. Serves until SIGTERM or SIGINT, then drains.
#include <rapidjson/document.h>

#include <dorm/runtime/log.hpp>
#include <dorm/runtime/runtime.hpp>
#include <dorm/server/server.hpp>

#include <cstdlib>
#include <string>

#include "append_log_backend.hpp"
#include "counter.hpp"

namespace {

// Asks counter `name` (from the call's arguments) with `message` and finishes the call with
// `answer(reply)`. The reply arrives on a runtime thread; post() brings it back into the
// session, where the call may be finished.
template <class Answer, class... Ts>
void ask_counter(dorm::Runtime& runtime, const std::shared_ptr<dorm::mcp::ToolContext>& call,
                 Answer answer, Ts... message) {
  rapidjson::Document args;  // checked against the tool's input schema already
  args.Parse(call->arguments().c_str());
  std::string name = args["name"].GetString();
  auto handle = runtime.get(runtime.id_from_name(example::kCounterNamespace, name));
  if (!handle) return call->finish(dorm::mcp::ToolResult::error(handle.error().message));
  runtime.request(
      *handle,
      [call, answer](caf::expected<caf::message> reply) {
        call->post([call, answer, reply = std::move(reply)] {
          if (!reply) {
            return call->finish(dorm::mcp::ToolResult::error("the counter failed: " +
                                                             caf::to_string(reply.error())));
          }
          call->finish(answer(*reply));
        });
      },
      message...);
}

}  // namespace

int main(int argc, char** argv) {
  dorm::log::configure(dorm::log::LogFormat::text, spdlog::level::info);  // to stderr
  std::string listen = argc > 1 ? argv[1] : "127.0.0.1:8808";
  std::string log_file = argc > 2 ? argv[2] : "counter-store.log";
  std::int64_t window_ms = argc > 3 ? std::atoll(argv[3]) : 60'000;

  auto store = example::AppendLogBackend::open(log_file, dorm::storage::Durability::process);
  if (!store) {
    dorm::log::error("storage_open_failed", {{"error", store.error().describe()}});
    return 1;
  }
  dorm::server::ServerOptions options;
  options.listen = listen;
  options.name = "counter-server";
  options.version = "1.0.0";
  dorm::server::Server server(options);
  server.use_storage(**store);

  // The runtime exists only while run() runs: the counter namespace is registered on it
  // there, and the tools find it through this pointer.
  dorm::Runtime* runtime = nullptr;
  server.on_runtime_started([&runtime, window_ms](dorm::Runtime& started) {
    runtime = &started;
    return example::register_counter(started, window_ms);
  });

  dorm::mcp::ToolSpec add;
  add.name = "counter_add";
  add.description = "Adds `by` to the named counter's open window; returns the window's count.";
  add.input_schema = R"({"type":"object","required":["name","by"],"properties":{
      "name":{"type":"string","minLength":1,"maxLength":200},
      "by":{"type":"integer","minimum":-1e12,"maximum":1e12}}})";
  add.handler = [&runtime](std::shared_ptr<dorm::mcp::ToolContext> call) {
    rapidjson::Document args;
    args.Parse(call->arguments().c_str());
    ask_counter(
        *runtime, call,
        [](const caf::message& reply) {
          return dorm::mcp::ToolResult::text(std::to_string(reply.get_as<std::int64_t>(0)));
        },
        example::add_atom::value, args["by"].GetInt64());
  };
  dorm::mcp::ToolSpec read;
  read.name = "counter_read";
  read.description = "The named counter: the open window's count, the last closed window's "
                     "count, and how many windows have closed.";
  read.input_schema = R"({"type":"object","required":["name"],"properties":{
      "name":{"type":"string","minLength":1,"maxLength":200}}})";
  read.handler = [&runtime](std::shared_ptr<dorm::mcp::ToolContext> call) {
    ask_counter(
        *runtime, call,
        [](const caf::message& reply) {
          return dorm::mcp::ToolResult::of({}, false, reply.get_as<std::string>(0));
        },
        example::read_atom::value);
  };
  for (auto* spec : {&add, &read}) {
    if (auto added = server.tools().add(std::move(*spec)); !added) {
      dorm::log::error("bad_tool", {{"error", added.error().message}});
      return 1;
    }
  }
  return server.run();
}
