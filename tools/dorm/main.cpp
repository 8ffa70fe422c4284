// dorm — the command-line program: serve (and later inspect, bench, deploy-sim).
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "serve.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only lines meant for scripts (the ready line).
  spdlog::set_default_logger(spdlog::stderr_logger_mt("dorm"));

  CLI::App app{"dorm: a durable-object actor runtime and MCP server", "dorm"};
  app.set_version_flag("--version", std::string("dorm ") + dorm::kVersion);
  app.require_subcommand(1);

  dorm::tools::ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "Serve MCP sessions over Streamable HTTP");
  serve_cmd->add_option("--listen", serve.listen, "Address to listen on, HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  serve_cmd->add_option("--storage", serve.storage, "Storage URI")->capture_default_str();
  serve_cmd->add_option("--http-threads", serve.http_threads, "HTTP I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));

  CLI11_PARSE(app, argc, argv);

  if (serve_cmd->parsed()) return dorm::tools::serve(serve);
  return 0;
}
