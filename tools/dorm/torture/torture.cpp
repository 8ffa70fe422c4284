#include "torture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "crash_loop.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/storage/storage_uri.hpp"
#include "server_process.hpp"

namespace dorm::torture {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kDirPlaceholder = "{dir}";
}  // namespace

Result<std::string> storage_uri_for(std::string_view storage, std::string_view dir) {
  auto bad = [&](const std::string& why) {
    return Error{ErrorCode::invalid_argument, "--storage " + std::string(storage) + ": " + why};
  };
  std::string uri(storage);
  if (uri.find(kDirPlaceholder) == std::string::npos)
    return bad("the template must name the run's directory as {dir}, e.g. rocksdb:{dir}/store");
  for (auto at = uri.find(kDirPlaceholder); at != std::string::npos;
       at = uri.find(kDirPlaceholder, at + dir.size())) {
    uri.replace(at, kDirPlaceholder.size(), dir);
  }
  auto parsed = storage::parse_storage_uri(uri);
  // memory: takes no path, so a template naming {dir} never opens one: every store the
  // check lets through outlives its process.
  if (!parsed) return bad(parsed.error().message);
  return uri;
}

namespace {

struct RunContext {
  const TortureOptions& options;
  fs::path dir;
  std::optional<TortureTotals> totals;
  std::string error;
};

// SIGINT or SIGTERM: the server is killed and reaped, the store removed, and the program
// exits at once with 130 (its coroutines are not unwound: nothing they hold outlives the
// process).
[[noreturn]] void exit_interrupted(RunContext& ctx) {
  int killed = deploy_sim::ServerProcess::kill_all();
  std::error_code ignored;
  fs::remove_all(ctx.dir, ignored);
  log::warn("torture_interrupted", {{"servers_killed", static_cast<std::int64_t>(killed)}});
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(130);
}

void run_on_io_thread(RunContext& ctx, const LoopPlan& plan) {
  asio::io_context io;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) exit_interrupted(ctx);
  });
  asio::co_spawn(io, run_crash_loop(plan, stderr), [&](std::exception_ptr e, TortureTotals totals) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        ctx.error = x.what();
      }
    } else {
      ctx.totals = std::move(totals);
    }
    io.stop();
  });
  io.run();
}

}  // namespace

int run_torture(const TortureOptions& o) {
  auto fail = [](const std::string& what) {
    log::error("torture_failed", {{"error", what}});
    return 1;
  };
  if (o.retry_ms <= 0) return fail("--retry-ms must be positive");
  auto dorm = deploy_sim::server_binary(o.dorm);
  if (!dorm) return fail(dorm.error().message);
  // The template is checked before anything is created.
  if (auto checked = storage_uri_for(o.storage, "/tmp/dorm-torture-check"); !checked)
    return fail(checked.error().message);
  auto dir = deploy_sim::make_temp_dir("dorm-torture");
  if (!dir) return fail(dir.error().message);
  auto uri = storage_uri_for(o.storage, dir->string());
  LoopPlan plan{o, *dorm, *uri};
  RunContext ctx{o, *dir, std::nullopt, {}};
  run_on_io_thread(ctx, plan);

  std::error_code ignored;
  if (!ctx.totals) {
    fs::remove_all(*dir, ignored);
    return fail(ctx.error.empty() ? "the run ended without a report" : ctx.error);
  }
  const auto& totals = *ctx.totals;
  std::string table = o.format == "json" ? format_json(totals) : format_text(totals);
  std::fwrite(table.data(), 1, table.size(), stdout);
  std::fflush(stdout);
  bool failed = totals.violated() || !totals.stopped.empty();
  if (failed) {
    // The store is the evidence: kept for dorm inspect.
    std::fprintf(stderr, "torture: the store is kept at %s (dorm inspect --storage %s)\n",
                 dir->c_str(), uri->c_str());
  } else {
    fs::remove_all(*dir, ignored);
  }
  return failed ? 1 : 0;
}

}  // namespace dorm::torture
