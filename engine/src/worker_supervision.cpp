// The engine pool's worker processes: spawned, declared ready, watched (heartbeats, the
// ready and hard-kill deadlines), lost — failing exactly the executions the worker held —
// and replaced, with backoff after repeated crashes; a worker that ran
// PoolOptions::recycle_after executions is retired and replaced once it is idle.
// Runs on the pool thread (pool.cpp's loop), except spawn() and stop_worker() at open and
// at destruction.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "dorm/runtime/log.hpp"
#include "pool_impl.hpp"
#include "worker_process.hpp"

namespace dorm::engine::detail {
namespace {

constexpr int kMissedHeartbeats = 5;

}  // namespace

Result<void> PoolImpl::spawn() {
  WorkerCommand command{options_.worker_path, options_.slots_per_worker, options_.address_space_mb,
                        options_.keep_worker_stderr, options_.poll_before_sleep, options_.idle_trim,
                        shared_snapshot_};
  auto process = spawn_worker_process(command);
  if (!process) return process.error();
  pid_t pid = process->pid;
  auto w = std::make_unique<WorkerProc>();
  w->pid = pid;
  w->control.fd = process->fd;
  w->conns.resize(process->slot_fds.size());
  for (std::size_t i = 0; i < w->conns.size(); ++i) w->conns[i].fd = process->slot_fds[i];
  w->took_snapshot = shared_snapshot_ >= 0;
  w->last_heard = w->spawned_at = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    pids_.push_back(pid);
    ++stats_.workers_spawned;
  }
  workers_.push_back(std::move(w));
  return Result<void>();
}

// Closes every socket to the worker.
void PoolImpl::close_all(WorkerProc& w) {
  if (w.control.fd >= 0) close(w.control.fd);
  w.control.fd = -1;
  for (auto& c : w.conns) {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  }
}

void PoolImpl::stop_worker(WorkerProc& w) {
  close_all(w);
  if (w.pid > 0) {
    kill(w.pid, SIGKILL);
    int status = 0;
    waitpid(w.pid, &status, 0);
    std::lock_guard lock(mutex_);
    std::erase(pids_, w.pid);
    if (w.state == WorkerProc::State::ready) --ready_count_;
  }
  w.pid = -1;
}

// Drops a worker that died or misbehaved; its executions fail with engine_crashed (one
// that the pool itself had judged, such as a wall overrun, with that kind).
// The worker's own ready, on its control socket: every slot has made its first context.
bool PoolImpl::on_worker_ready(WorkerProc& w, const wire::Ready& ready) {
  if (w.state != WorkerProc::State::starting || ready.slots != w.conns.size()) {
    return violation(w, "an unexpected ready");
  }
  w.state = WorkerProc::State::ready;
  w.slots = ready.slots;
  for (auto& c : w.conns) c.warm = true;
  consecutive_crashes_ = 0;
  {
    std::lock_guard lock(mutex_);
    ++ready_count_;
  }
  ready_cv_.notify_all();
  dispatch();
  return true;
}

// A worker's own startup snapshot, made before its ready: the first one is kept, sealed, for
// the workers started later (docs/engine.md, "One startup snapshot per pool"). The pool
// never reads the blob; only workers do, and they are sandboxed like the one that made it.
bool PoolImpl::on_worker_snapshot(WorkerProc& w, const wire::Snapshot& snapshot) {
  if (w.state != WorkerProc::State::starting || w.sent_snapshot || w.took_snapshot) {
    return violation(w, "an unexpected startup snapshot");
  }
  w.sent_snapshot = true;
  if (shared_snapshot_ >= 0) return true;
  std::string frame;
  wire::encode(snapshot, frame);
  std::string_view body = std::string_view(frame).substr(4);  // what decode() reads
  int fd = memfd_create("dorm-engine-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  bool written = fd >= 0;
  for (std::size_t done = 0; written && done < body.size();) {
    ssize_t n = write(fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    done += written ? static_cast<std::size_t>(n) : 0;
  }
  written = written && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
  if (!written) {
    // Not fatal: each worker then makes its own, as the first did.
    log::warn("engine_snapshot_not_shared", {{"reason", std::string(std::strerror(errno))}});
    if (fd >= 0) close(fd);
    return true;
  }
  shared_snapshot_ = fd;
  log::info("engine_snapshot_shared", {{"bytes", snapshot.blob.size()}, {"pid", w.pid}});
  return true;
}

// The worker said it is about to exit: it takes no new executions, and its loss counts
// as a loss, not a recycling.
void PoolImpl::on_exiting(WorkerProc& w) {
  w.dying = true;
  if (w.state == WorkerProc::State::ready) {
    w.state = WorkerProc::State::retiring;
    std::lock_guard lock(mutex_);
    --ready_count_;
  }
  lost_ = true;  // reap_lost() starts a replacement
}

void PoolImpl::lose(WorkerProc& w, const std::string& why) {
  if (w.pid < 0) return;
  pid_t pid = w.pid;
  close_all(w);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  w.pid = -1;
  std::string how = why + "; " + describe_status(status);
  bool recycled = w.state == WorkerProc::State::retiring && w.running.empty() && !w.dying;
  if (w.state == WorkerProc::State::starting && w.took_snapshot && shared_snapshot_ >= 0 && !stopping_) {
    // Perhaps the snapshot is what killed it: the next worker makes (and shares) its own.
    close(shared_snapshot_);
    shared_snapshot_ = -1;
    log::warn("engine_snapshot_dropped", {{"pid", pid}});
  }
  {
    std::lock_guard lock(mutex_);
    std::erase(pids_, pid);
    if (w.state == WorkerProc::State::ready) --ready_count_;
    if (!recycled) ++stats_.workers_lost;
  }
  if (!recycled) {
    log::warn("engine_worker_lost",
              {{"pid", pid}, {"executions", w.running.size()}, {"reason", how}});
    ++consecutive_crashes_;
  }
  auto running = std::move(w.running);
  w.running.clear();
  for (auto& c : w.conns) c.exec.reset();
  for (auto& [handle, e] : running) {
    {
      std::lock_guard lock(mutex_);
      exec_pids_.erase(e.get());
    }
    e->worker = nullptr;
    if (e->state != ExecutionImpl::State::running) continue;
    if (e.get() == judged_.get()) {
      finish_failed(*e, judged_kind_, judged_message_);
    } else {
      finish_failed(*e, FailureKind::engine_crashed,
                    "the engine worker running this execution stopped (" + how + ")");
    }
  }
  judged_.reset();
  lost_ = true;
}

// Removes dead workers and starts replacements, with backoff after repeated crashes.
void PoolImpl::reap_lost() {
  if (stopping_) return;
  if (lost_) {
    std::erase_if(workers_, [](const auto& w) { return w->pid < 0; });
    lost_ = false;
  }
  unsigned live = 0;
  for (auto& w : workers_) live += w->state != WorkerProc::State::retiring ? 1 : 0;
  if (live >= options_.workers) {
    respawn_at_ = kNever;
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (respawn_at_ == kNever && consecutive_crashes_ > 1) {
    auto backoff = std::chrono::milliseconds(50 << std::min(consecutive_crashes_ - 1, 7u));
    respawn_at_ = now + backoff;
  }
  if (respawn_at_ != kNever && now < respawn_at_) return;
  respawn_at_ = kNever;
  while (live < options_.workers) {
    if (!spawn()) {
      respawn_at_ = now + std::chrono::seconds(1);
      return;
    }
    ++live;
  }
}

void PoolImpl::check_deadlines() {
  auto now = std::chrono::steady_clock::now();
  for (auto& w : workers_) {
    if (w->control.fd < 0) continue;
    if (w->state == WorkerProc::State::starting && now - w->spawned_at > std::chrono::seconds(60)) {
      lose(*w, "it did not become ready within 60 s");
      continue;
    }
    if (w->state == WorkerProc::State::retiring && w->running.empty() && !w->dying) {
      lose(*w, "it was recycled");
      continue;
    }
    for (auto& [handle, e] : w->running) {
      if (now < e->hard_deadline) continue;
      judged_ = e;
      judged_kind_ = FailureKind::wall_limit;
      judged_message_ = "the execution ran longer than its wall time limit of " +
                        std::to_string(e->request_.limits.wall_ms) +
                        " ms (wall_ms) and did not stop; its engine worker was restarted";
      lose(*w, "it did not stop an execution past its wall time limit");
      break;
    }
    if (w->control.fd < 0) continue;
    if (now - w->last_heard > options_.heartbeat * kMissedHeartbeats) {
      lose(*w, "it missed " + std::to_string(kMissedHeartbeats) + " heartbeats");
    } else if (now - w->last_heard >= options_.heartbeat &&
               w->state != WorkerProc::State::starting) {
      send(*w, wire::Ping{++w->ping_nonce});
    }
  }
}

}  // namespace dorm::engine::detail
