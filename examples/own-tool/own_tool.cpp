// own_tool: one MCP tool of your own, served by dorm's server library.
//   own_tool [HOST:PORT] [STORAGE-URI]   (default 127.0.0.1:8808, rocksdb:./own-tool-data)
// Serves /mcp until SIGTERM or SIGINT, then drains and exits, as `dorm serve` does.
#include <rapidjson/document.h>

#include <dorm/runtime/log.hpp>
#include <dorm/server/server.hpp>

int main(int argc, char** argv) {
  dorm::log::configure(dorm::log::LogFormat::text, spdlog::level::info);  // to stderr
  dorm::server::ServerOptions options;
  if (argc > 1) options.listen = argv[1];
  options.storage = argc > 2 ? argv[2] : "rocksdb:./own-tool-data";
  options.name = "own-tool";
  options.version = "1.0.0";
  dorm::server::Server server(options);

  dorm::mcp::ToolSpec add;
  add.name = "add";
  add.description = "Adds two integers.";
  add.input_schema = R"({"type":"object","required":["a","b"],"properties":{
      "a":{"type":"integer","minimum":-1e12,"maximum":1e12},
      "b":{"type":"integer","minimum":-1e12,"maximum":1e12}}})";
  add.handler = [](std::shared_ptr<dorm::mcp::ToolContext> call) {
    rapidjson::Document args;  // checked against input_schema already
    args.Parse(call->arguments().c_str());
    auto sum = args["a"].GetInt64() + args["b"].GetInt64();
    call->finish(dorm::mcp::ToolResult::text(std::to_string(sum)));
  };
  if (auto added = server.tools().add(std::move(add)); !added) {
    dorm::log::error("bad_tool", {{"error", added.error().message}});
    return 1;
  }
  return server.run();
}
