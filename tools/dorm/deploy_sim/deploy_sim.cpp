#include "deploy_sim.hpp"

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <spdlog/spdlog.h>

#include "dorm/runtime/log.hpp"
#include "dorm/storage/open.hpp"
#include "dorm/storage/storage_uri.hpp"
#include "dorm/storage/write_batch.hpp"
#include "report.hpp"
#include "server_process.hpp"
#include "simulation.hpp"
#include "timeline_svg.hpp"
#include "version.hpp"
#include "virtual_simulation.hpp"

namespace dorm::deploy_sim {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxCallMs = 24LL * 3600 * 1000;

Result<std::int64_t> parse_ms(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < 0 || v > kMaxCallMs)
    return Error{
        ErrorCode::invalid_argument,
        "--call-ms: \"" + std::string(text) + "\" is not a number of milliseconds in 0..86400000"};
  return v;
}

std::vector<std::string> expand(const std::string& choice, std::vector<std::string> all) {
  if (choice == "all") return all;
  return {choice};
}

std::string row_label(const RowKey& k) {
  std::string label = k.variant + ", " + k.mode + ", retry " + std::to_string(k.retry_ms) + " ms";
  if (k.mode != "rolling") label += ", gap " + std::to_string(k.restart_gap_ms) + " ms";
  return label;
}

Error invalid(std::string what) { return Error{ErrorCode::invalid_argument, std::move(what)}; }

}  // namespace

Result<std::string> row_storage(const std::string& given, int nodes) {
  auto uri = storage::parse_storage_uri(given);
  if (!uri) return invalid("--storage: " + uri.error().message);
  if (uri->scheme != storage::Scheme::postgres) {
    return invalid("--storage " + given +
                   ": deploy-sim takes a postgres:// URI here (each row's RocksDB store is "
                   "made in a temporary directory without it)");
  }
  for (const auto& [name, value] : uri->options) {
    if (name == "table" || name == "shared") {
      return invalid("--storage " + given + ": leave out " + name + "=; deploy-sim keeps its rows in "
                     "the table " + kDeploySimTable + (nodes > 1 ? ", shared by the nodes" : ""));
    }
  }
  uri->options.emplace_back("table", kDeploySimTable);
  if (nodes > 1) uri->options.emplace_back("shared", "true");
  return uri->to_string();
}

Result<void> check_options(const DeploySimOptions& o) {
  if (o.virtual_time && (o.nodes > 1 || !o.storage.empty())) {
    return invalid("--virtual runs one node over an in-memory store: it takes neither --nodes "
                   "nor --storage");
  }
  if (o.nodes > 1 && o.storage.empty()) {
    return invalid("--nodes " + std::to_string(o.nodes) +
                   " needs --storage postgres://...: nodes share one PostgreSQL store (a RocksDB "
                   "store belongs to one process)");
  }
  if (o.lease_ms > 0 && o.nodes < 2) return invalid("--lease-ms applies to --nodes 2 and more");
  if (!o.storage.empty()) {
    auto uri = row_storage(o.storage, o.nodes);
    if (!uri) return std::move(uri).error();
  }
  return {};
}

Result<CallRange> parse_call_ms(std::string_view text) {
  auto dash = text.find('-');
  auto low = parse_ms(text.substr(0, dash));
  if (!low) return std::move(low).error();
  auto high = dash == std::string_view::npos ? low : parse_ms(text.substr(dash + 1));
  if (!high) return std::move(high).error();
  if (*low > *high)
    return Error{ErrorCode::invalid_argument,
                 "--call-ms: MIN must not exceed MAX in \"" + std::string(text) + "\""};
  return CallRange{*low, *high};
}

std::vector<RowKey> plan_rows(const DeploySimOptions& o) {
  std::vector<RowKey> rows;
  for (const auto& mode : expand(o.mode, {"kill", "term", "rolling"})) {
    for (const auto& variant : expand(o.variant, {"no-fix", "priming-only", "reaper"})) {
      for (auto retry : o.retry_ms) {
        if (mode == "rolling") {
          rows.push_back(RowKey{variant, mode, retry, 0});
          continue;
        }
        for (auto gap : o.restart_gap_ms) rows.push_back(RowKey{variant, mode, retry, gap});
      }
    }
  }
  return rows;
}

namespace {

RowPlan plan_of(const DeploySimOptions& o, const RowKey& key, const Workload& workload) {
  RowPlan plan;
  plan.key = key;
  plan.sessions = o.sessions;
  plan.calls_per_session = o.calls_per_session;
  plan.workload = &workload;
  plan.client_timeout_s = o.client_timeout_s;
  plan.drain_timeout_s = o.drain_timeout_s;
  return plan;
}

// Removes every key of the PostgreSQL store `uri` names (a row's store: deploy-sim's own
// table), opening it as its only owner, so the next row starts from an empty store.
Result<void> empty_store(const std::string& uri) {
  auto parsed = storage::parse_storage_uri(uri);
  if (!parsed) return std::move(parsed).error();
  std::erase_if(parsed->options, [](const auto& option) { return option.first == "shared"; });
  auto store = storage::open_backend(*parsed);
  if (!store) return std::move(store).error();
  storage::WriteBatch all;
  // Every key the runtime writes sorts below a first byte of 0xff.
  all.delete_range("", std::string(1, '\xff'));
  return (*store)->commit(all);
}

struct RunContext {
  const DeploySimOptions& options;
  std::string dorm;
  std::string storage;  // the rows' PostgreSQL store; empty: RocksDB under each row's dir
  fs::path dir;
  const Workload& workload;
  Progress& progress;
  std::vector<RowRun> runs;
  std::string error;
  bool finished = false;
};

asio::awaitable<void> run_all(RunContext& ctx) {
  const auto& o = ctx.options;
  int n = 0;
  for (const auto& key : plan_rows(o)) {
    RowPlan plan = plan_of(o, key, ctx.workload);
    plan.dorm = ctx.dorm;
    plan.dir = ctx.dir / ("row-" + std::to_string(++n));
    plan.storage = ctx.storage;
    plan.nodes = o.nodes;
    plan.lease_ms = o.lease_ms;
    // Node ids unique to the run and the row: a node of an earlier, killed run may still
    // look alive in dorm_nodes.
    plan.node_prefix = "s" + std::to_string(getpid()) + "-r" + std::to_string(n) + "-";
    ctx.progress.row(row_label(key), o.sessions * o.calls_per_session * o.deploys);
    std::error_code ignored;
    fs::create_directories(plan.dir, ignored);
    if (!ctx.storage.empty()) {
      auto emptied = empty_store(ctx.storage);  // each row starts from an empty store
      if (!emptied) {
        ctx.error = "emptying the store before " + row_label(key) + ": " + emptied.error().message;
        co_return;
      }
    }
    auto run = co_await run_row(plan, ctx.progress);
    fs::remove_all(plan.dir, ignored);  // each row starts from a fresh store
    if (!run) {
      ctx.error = row_label(key) + ": " + run.error().message;
      co_return;
    }
    ctx.runs.push_back(std::move(run).value());
  }
  if (!ctx.storage.empty()) {
    auto emptied = empty_store(ctx.storage);
    if (!emptied) ctx.error = "emptying the store after the last row: " + emptied.error().message;
  }
}

asio::awaitable<void> tick(RunContext& ctx) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  while (!ctx.finished) {
    timer.expires_after(std::chrono::milliseconds(250));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    ctx.progress.tick();
  }
}

ReportHeader header_of(const DeploySimOptions& o, const CallRange& range) {
  return ReportHeader{kVersion,          o.seed,        o.sessions,   o.calls_per_session,
                      o.deploys,         range.min_ms,  range.max_ms, o.client_timeout_s,
                      o.drain_timeout_s, o.virtual_time, o.nodes,
                      o.virtual_time ? "memory" : o.storage.empty() ? "rocksdb" : "postgres"};
}

// SIGINT or SIGTERM: the servers are killed and reaped, the stores removed, and the
// program exits at once with 130 (its coroutines are not unwound: nothing they hold
// outlives the process).
[[noreturn]] void exit_interrupted(RunContext& ctx) {
  ctx.progress.finish();
  int killed = ServerProcess::kill_all();
  std::error_code ignored;
  fs::remove_all(ctx.dir, ignored);
  log::warn("deploy_sim_interrupted", {{"rows_done", static_cast<std::int64_t>(ctx.runs.size())},
                                       {"servers_killed", static_cast<std::int64_t>(killed)}});
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(130);
}

// Runs every row on one I/O thread.
void run_on_io_thread(RunContext& ctx) {
  asio::io_context io;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) exit_interrupted(ctx);
  });
  asio::co_spawn(io, tick(ctx), asio::detached);
  asio::co_spawn(io, run_all(ctx), [&](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        ctx.error = x.what();
      }
    }
    ctx.finished = true;
    io.stop();
  });
  io.run();
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

// Real `dorm serve` processes over a temporary directory, removed at the end.
Result<std::vector<RowRun>> run_processes(const DeploySimOptions& o, const Workload& workload,
                                          Progress& progress) {
  auto dorm = server_binary(o.dorm);
  if (!dorm) return std::move(dorm).error();
  std::string storage;
  if (!o.storage.empty()) {
    auto uri = row_storage(o.storage, o.nodes);
    if (!uri) return std::move(uri).error();
    storage = std::move(uri).value();
  }
  auto dir = make_temp_dir("dorm-deploy-sim");
  if (!dir) return std::move(dir).error();
  RunContext ctx{o, *dorm, storage, *dir, workload, progress, {}, {}, false};
  run_on_io_thread(ctx);
  std::error_code ignored;
  fs::remove_all(*dir, ignored);
  if (!ctx.error.empty()) return Error{ErrorCode::io_error, ctx.error};
  return std::move(ctx.runs);
}

// The in-process node logs what a `dorm serve` of the process mode logs to a pipe nobody
// shows (a reap per session at every restart, each drain): at the default level only its
// errors reach stderr, between the progress lines. --log-level debug or trace shows it all.
class QuietNodeLogs {
 public:
  QuietNodeLogs() : was_(spdlog::get_level()) {
    if (was_ == spdlog::level::info || was_ == spdlog::level::warn)
      spdlog::set_level(spdlog::level::err);
  }
  ~QuietNodeLogs() { spdlog::set_level(was_); }
  QuietNodeLogs(const QuietNodeLogs&) = delete;
  QuietNodeLogs& operator=(const QuietNodeLogs&) = delete;

 private:
  spdlog::level::level_enum was_;
};

Result<std::vector<RowRun>> run_virtual(const DeploySimOptions& o, const Workload& workload,
                                        Progress& progress) {
  QuietNodeLogs quiet;
  std::vector<RowRun> runs;
  for (const auto& key : plan_rows(o)) {
    progress.row(row_label(key), o.sessions * o.calls_per_session * o.deploys);
    auto run = run_virtual_row(plan_of(o, key, workload), progress);
    if (!run) return Error{run.error().code, row_label(key) + ": " + run.error().message};
    runs.push_back(std::move(run).value());
  }
  return runs;
}

}  // namespace

Result<std::vector<RowRun>> run_rows(const DeploySimOptions& o, Progress& progress) {
  auto checked = check_options(o);
  if (!checked) return std::move(checked).error();
  auto range = parse_call_ms(o.call_ms);
  if (!range) return std::move(range).error();
  auto workload = draw_workload(o.seed, o.deploys, o.sessions, o.calls_per_session, range->min_ms,
                                range->max_ms);
  return o.virtual_time ? run_virtual(o, workload, progress) : run_processes(o, workload, progress);
}

int run_deploy_sim(const DeploySimOptions& o) {
  auto fail = [](const std::string& what) {
    log::error("deploy_sim_failed", {{"error", what}});
    return 1;
  };
  auto range = parse_call_ms(o.call_ms);
  if (!range) return fail(range.error().message);
  auto checked = check_options(o);
  if (!checked) return fail(checked.error().message);
  if (!o.svg.empty() && !fs::is_directory(fs::absolute(o.svg).parent_path()))
    return fail("--svg " + o.svg + ": its directory does not exist");

  Progress progress(stderr, isatty(STDERR_FILENO) == 1);
  auto runs = run_rows(o, progress);
  progress.finish();
  if (!runs) return fail(runs.error().message);

  std::vector<RowSummary> rows;
  for (const auto& run : *runs) rows.push_back(summarize(run));
  auto header = header_of(o, *range);
  std::string table = o.format == "json"       ? format_json(header, rows)
                      : o.format == "markdown" ? format_markdown(header, rows)
                                               : format_text(header, rows);
  std::fwrite(table.data(), 1, table.size(), stdout);
  std::fflush(stdout);
  std::string title = "dorm deploy-sim" + std::string(o.virtual_time ? " --virtual" : "") +
                      ", seed " + std::to_string(o.seed);
  if (!o.svg.empty() && !write_file(o.svg, timeline_svg(*runs, title)))
    return fail("--svg " + o.svg + ": cannot write the file");
  return 0;
}

}  // namespace dorm::deploy_sim
