// engine::Pool: executions routed to worker slots, and the pool thread that talks to the
// workers. The worker processes themselves (spawn, loss, replacement, recycling) are kept
// by worker_supervision.cpp; pool_impl.hpp has the types both share.
#include "dorm/engine/pool.hpp"

#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "dorm/runtime/log.hpp"
#include "input_checks.hpp"
#include "pool_impl.hpp"

#include "dorm/engine/poll_before_sleep.hpp"

namespace dorm::engine {
namespace {

constexpr std::size_t kMaxSourceBytes = 1u << 20;

std::uint64_t random_seed() {
  std::uint64_t seed = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&seed), sizeof seed) != 1) {
    seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return seed;
}

}  // namespace

namespace detail {

PoolImpl::PoolImpl(PoolOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) options_.clock = &system_clock_;
  if (options_.workers == 0) options_.workers = std::max(1u, std::thread::hardware_concurrency());
  inbox_->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

PoolImpl::~PoolImpl() {
  post([this] { stopping_ = true; });
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(inbox_->mutex);
    inbox_->closed = true;
    inbox_->commands.clear();
  }
  // Executions still queued or running end now, each with one last word to its owner.
  std::vector<std::shared_ptr<ExecutionImpl>> unfinished(queue_.begin(), queue_.end());
  for (auto& w : workers_) {
    for (auto& [handle, e] : w->running) unfinished.push_back(e);
    stop_worker(*w);
  }
  for (auto& e : unfinished) {
    if (e->state == ExecutionImpl::State::ended) continue;
    finish_failed(*e, FailureKind::engine_crashed,
                  "the engine pool shut down before the execution ended");
  }
  if (inbox_->wake_fd >= 0) close(inbox_->wake_fd);
  if (shared_snapshot_ >= 0) close(shared_snapshot_);
}

Result<void> PoolImpl::open(std::chrono::milliseconds ready_timeout) {
  if (inbox_->wake_fd < 0)
    return Error{ErrorCode::io_error, std::string("eventfd: ") + std::strerror(errno)};
  if (options_.worker_path.empty() || access(options_.worker_path.c_str(), X_OK) != 0) {
    return Error{
        ErrorCode::invalid_argument,
        "the engine worker executable '" + options_.worker_path + "' is missing or not executable"};
  }
  for (unsigned i = 0; i < options_.workers; ++i) {
    auto spawned = spawn();
    if (!spawned) return spawned.error();
  }
  thread_ = std::thread([this] {
    inbox_->loop_thread = std::this_thread::get_id();
    loop();
    inbox_->loop_thread = std::thread::id{};  // an id may be reused by a later thread
  });
  std::unique_lock lock(mutex_);
  bool ready =
      ready_cv_.wait_for(lock, ready_timeout, [&] { return ready_count_ >= options_.workers; });
  if (!ready) {
    return Error{ErrorCode::unavailable, "engine workers did not become ready within " +
                                             std::to_string(ready_timeout.count()) + " ms (" +
                                             std::to_string(ready_count_) + " of " +
                                             std::to_string(options_.workers) + " ready)"};
  }
  return Result<void>();
}

Result<std::shared_ptr<Execution>> PoolImpl::start(ExecutionRequest request,
                                                   std::shared_ptr<ExecutionObserver> observer) {
  if (auto valid = validate(request.limits); !valid) return valid.error();
  if (request.source.size() > kMaxSourceBytes) {
    return Error{ErrorCode::limit_exceeded,
                 "the source is " + std::to_string(request.source.size()) +
                     " bytes; the engine takes at most " + std::to_string(kMaxSourceBytes)};
  }
  if (!observer) return Error{ErrorCode::invalid_argument, "an execution needs an observer"};
  auto e = std::make_shared<ExecutionImpl>(*this, inbox_, std::move(request), std::move(observer));
  if (e->request_.journal) {
    e->journal_ = *e->request_.journal;
    if (auto checked = adopt_journal(*e); !checked) return checked.error();
  } else {
    e->journal_.start_ms = options_.clock->now_ms();
    e->journal_.seed = random_seed();
  }
  {
    std::lock_guard lock(mutex_);
    if (queued_count_ >= options_.max_queued) {
      return Error{ErrorCode::unavailable, "the engine's queue is full (" +
                                               std::to_string(options_.max_queued) +
                                               " executions waiting)"};
    }
    ++queued_count_;
  }
  auto enqueue = [this, e] {
    queue_.push_back(e);
    dispatch();
  };
  bool acted = inbox_->try_run([&] {
    act_for_caller([&] {
      enqueue();
      poll_for_outcome(*e);
    });
  });
  if (!acted) post(enqueue);
  return std::shared_ptr<Execution>(e);
}

// Called for a start the caller dispatched itself. A lone execution on a slot that was
// waiting often ends within ~0.1 ms (`return 1`, code whose answer is at hand); waiting on
// its socket for that long takes its outcome here, with no wake-up of the pool thread to
// read it nor of the observer's thread to hear of it, each 20-70 µs on this project's
// 2-core VM (docs/engine.md, "Polling for the outcome at start"). With a core to spare the
// wait spins, so that not even this thread sleeps; without one it sleeps in ppoll(), since
// spinning took the CPU the execution needed (back-to-back executions were slower). This
// thread and the execution's slot need a core each, and so does every slot still making
// its next context (~0.3 ms of CPU, right after an outcome). The wait ends at the outcome,
// at the first tool call (its answer comes from the caller's side, which is here), or when
// the budget is spent; misses back off (PollBeforeSleep).
void PoolImpl::poll_for_outcome(ExecutionImpl& e) {
  if (e.state != ExecutionImpl::State::running || e.worker == nullptr || lone_active() != &e)
    return;
  const bool spin = warming_count() + 2 <= cores_;
  auto budget = start_poll_policy_.next(true);
  if (budget.count() <= 0) return;
  WorkerProc& w = *e.worker;
  const std::size_t slot = e.slot;
  const auto until = std::chrono::steady_clock::now() + budget;
  bool answered = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || w.pid < 0 || w.conns[slot].fd < 0) break;
    pollfd fd{w.conns[slot].fd, POLLIN, 0};
    int ready = 0;
    if (spin) {
      ready = poll_briefly(&fd, 1, left, /*yield=*/true);
    } else {
      timespec wait{0, static_cast<long>(left.count()) * 1000};
      ready = ::ppoll(&fd, 1, &wait, nullptr);
    }
    if (ready <= 0) break;
    read_from(w, static_cast<int>(slot));
    if (e.state == ExecutionImpl::State::ended || !e.outstanding.empty()) {
      answered = true;
      break;
    }
  }
  start_poll_policy_.record(answered);
}

Pool::Stats PoolImpl::stats() const {
  std::lock_guard lock(mutex_);
  Stats s = stats_;
  s.workers_ready = ready_count_;
  s.slots = ready_count_ * options_.slots_per_worker;
  s.queued = queued_count_;
  return s;
}

std::vector<pid_t> PoolImpl::worker_pids() const {
  std::lock_guard lock(mutex_);
  return pids_;
}

std::optional<pid_t> PoolImpl::worker_of(const Execution& execution) const {
  std::lock_guard lock(mutex_);
  auto found = exec_pids_.find(&execution);
  if (found == exec_pids_.end()) return std::nullopt;
  return found->second;
}

void PoolImpl::deliver(const std::shared_ptr<ExecutionImpl>& e, std::uint32_t seq, bool ok,
                       std::string value) {
  if (e->state != ExecutionImpl::State::running || e->outstanding.erase(seq) == 0) return;
  ToolResultEntry entry{seq, ok, ok ? std::move(value) : json_string(value),
                        options_.clock->now_ms()};
  if (ok && !valid_json(entry.value_json)) {
    entry.ok = false;
    entry.value_json = json_string("the tool's result is not valid JSON");
  }
  e->append(entry);
  send(*e->worker, e->slot, wire::ToolResult{e->handle, std::move(entry)});
  arm_hard_deadline(*e);
}

void PoolImpl::cancel(const std::shared_ptr<ExecutionImpl>& e) {
  if (e->state == ExecutionImpl::State::queued) {
    std::erase(queue_, e);
    {
      std::lock_guard lock(mutex_);
      --queued_count_;
    }
    finish_failed(*e, FailureKind::cancelled, "the execution was cancelled before it started");
  } else if (e->state == ExecutionImpl::State::running) {
    send(*e->worker, e->slot, wire::Cancel{e->handle});
  }
}

// A journal handed in for replay sets what the host expects next: calls numbered after the
// recorded ones, and the calls and timers it left open.
Result<void> PoolImpl::adopt_journal(ExecutionImpl& e) {
  std::uint32_t expected = 1;
  for (const auto& entry : e.journal_.entries) {
    if (auto* call = std::get_if<ToolCallEntry>(&entry)) {
      if (call->seq != expected++) {
        return Error{ErrorCode::invalid_argument,
                     "the journal's tool calls are not numbered 1, 2, 3, ..."};
      }
    } else if (auto* set = std::get_if<TimerSetEntry>(&entry)) {
      e.last_timer = std::max(e.last_timer, set->timer);
    }
  }
  e.next_seq = expected;
  e.calls = expected - 1;
  OpenEffects open = open_effects(e.journal_);
  for (const auto& call : open.calls) e.outstanding.insert(call.seq);
  for (const auto& timer : open.timers) e.timers[timer.timer] = timer.time_ms + timer.delay_ms;
  return Result<void>();
}

// ---- executions ----

void PoolImpl::dispatch() {
  while (!queue_.empty()) {
    WorkerProc* best = nullptr;
    for (auto& w : workers_) {
      if (w->state != WorkerProc::State::ready || w->control.fd < 0) continue;
      if (w->running.size() >= w->slots) continue;
      if (best == nullptr || w->running.size() < best->running.size()) best = w.get();
    }
    if (best == nullptr) return;
    std::size_t slot = pick_slot(*best);
    if (slot == best->conns.size()) return;  // cannot happen: running < slots
    auto e = queue_.front();
    queue_.pop_front();
    {
      std::lock_guard lock(mutex_);
      --queued_count_;
      exec_pids_[e.get()] = best->pid;
    }
    e->state = ExecutionImpl::State::running;
    e->worker = best;
    e->slot = slot;
    best->conns[slot].exec = e;
    best->conns[slot].warm = false;
    e->handle = ++next_handle_;
    best->running[e->handle] = e;
    wire::Start start;
    start.exec = e->handle;
    start.id = e->request_.id;
    start.source = e->request_.source;
    start.limits = e->request_.limits;
    start.journal = e->journal();
    arm_hard_deadline(*e);
    send(*best, slot, start);
    if (++best->started >= options_.recycle_after && best->state == WorkerProc::State::ready) {
      best->state = WorkerProc::State::retiring;
      {
        std::lock_guard lock(mutex_);
        --ready_count_;
      }
      lost_ = true;  // reap_lost() starts its replacement now, off the request path
    }
  }
}

// A free slot of `w` for the next start (conns.size() if none). A slot makes its next
// context right after it reports an outcome and says `ready` on its socket when that is
// done: the first warm slot is preferred (always the same few, whose isolates stay in the
// CPU's caches), else the slot free the longest, which will be warm soonest.
std::size_t PoolImpl::pick_slot(const WorkerProc& w) {
  std::size_t oldest = w.conns.size();
  for (std::size_t i = 0; i < w.conns.size(); ++i) {
    const SlotConn& c = w.conns[i];
    if (c.exec) continue;
    if (c.warm) return i;
    if (oldest == w.conns.size() || c.freed_at < w.conns[oldest].freed_at) oldest = i;
  }
  return oldest;
}

void PoolImpl::arm_hard_deadline(ExecutionImpl& e) {
  e.hard_deadline = e.outstanding.empty()
                        ? std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(e.request_.limits.wall_ms) +
                              options_.hard_kill_grace
                        : kNever;
}

// Fires due timers in due order (ties by id), so the journal records them as a virtual
// clock would order them.
void PoolImpl::fire_timers() {
  std::int64_t now = options_.clock->now_ms();
  for (auto& w : workers_) {
    for (auto& [handle, e] : w->running) {
      std::vector<std::pair<std::int64_t, std::uint32_t>> due;
      for (auto& [id, at] : e->timers) {
        if (at <= now) due.emplace_back(at, id);
      }
      std::sort(due.begin(), due.end());
      for (auto& [at, id] : due) {
        TimerFiredEntry fired{id, now};
        e->timers.erase(id);
        e->append(fired);
        send(*w, e->slot, wire::TimerFired{handle, fired});
      }
    }
  }
}

// A frame about an execution, which must come from the slot that runs it.
bool PoolImpl::handle_execution_frame(WorkerProc& w, int which, wire::Message& message) {
  std::uint64_t handle = std::visit(
      [](const auto& m) -> std::uint64_t {
        if constexpr (requires { m.exec; }) {
          return m.exec;
        } else {
          return 0;
        }
      },
      message);
  // An execution's frames come only from the slot it runs on.
  std::shared_ptr<ExecutionImpl> e =
      which < 0 ? nullptr : w.conns[static_cast<std::size_t>(which)].exec;
  if (!e || e->handle != handle) {
    return violation(
        w, "a frame for execution " + std::to_string(handle) + ", which that slot is not running");
  }
  if (auto* call = std::get_if<wire::ToolCall>(&message)) {
    return on_tool_call(w, *e, call->call);
  } else if (auto* log = std::get_if<wire::Log>(&message)) {
    if (!valid_utf8(log->text)) return violation(w, "a log line that is not UTF-8");
    e->observer_->on_log(log->level, log->text);
  } else if (auto* emit = std::get_if<wire::Emit>(&message)) {
    if (!valid_json(emit->value_json)) return violation(w, "an emitted value that is not JSON");
    e->observer_->on_emit(emit->value_json);
  } else if (auto* set = std::get_if<wire::TimerSet>(&message)) {
    return on_timer_set(w, *e, *set);
  } else if (auto* clear = std::get_if<wire::TimerClear>(&message)) {
    if (e->timers.erase(clear->timer) == 0) return violation(w, "a clear of an unknown timer");
    e->append(TimerClearEntry{clear->timer});
  } else if (auto* done = std::get_if<wire::Completed>(&message)) {
    if (!valid_json(done->result_json)) return violation(w, "a result that is not JSON");
    detach(w, *e);
    finish_completed(*e, done->result_json);
  } else if (auto* failed = std::get_if<wire::Failed>(&message)) {
    if (!valid_utf8(failed->message)) return violation(w, "a failure message that is not UTF-8");
    if (failed->kind == FailureKind::engine_crashed)
      return violation(w, "a worker may not report a crash");
    detach(w, *e);
    finish_failed(*e, failed->kind, failed->message);
  } else {
    return violation(w, "a host-to-worker frame");
  }
  return true;
}

// A tool call, numbered next and within the execution's limits, goes to the observer.
bool PoolImpl::on_tool_call(WorkerProc& w, ExecutionImpl& e, ToolCallEntry& c) {
  if (c.seq != e.next_seq)
    return violation(w, "tool call " + std::to_string(c.seq) + " out of order");
  if (e.calls >= e.request_.limits.tool_calls ||
      e.outstanding.size() >= e.request_.limits.concurrent_tool_calls) {
    return violation(w, "a tool call past the execution's limits");
  }
  if (c.path.empty() || c.path.size() > 1024 || !valid_utf8(c.path) || !valid_json(c.args_json)) {
    return violation(w, "a tool call with a malformed path or arguments");
  }
  ++e.next_seq;
  ++e.calls;
  e.outstanding.insert(c.seq);
  e.hard_deadline = kNever;
  e.append(c);
  e.observer_->on_tool_call(c);
  return true;
}

// Timers are numbered 1, 2, 3, ... per execution; the pool fires them (fire_timers).
bool PoolImpl::on_timer_set(WorkerProc& w, ExecutionImpl& e, const wire::TimerSet& set) {
  if (set.timer != e.last_timer + 1 || set.delay_ms < 0) return violation(w, "a malformed timer");
  e.last_timer = set.timer;
  std::int64_t now = options_.clock->now_ms();
  e.timers[set.timer] = now + set.delay_ms;
  e.append(TimerSetEntry{set.timer, set.delay_ms, now});
  return true;
}

void PoolImpl::detach(WorkerProc& w, ExecutionImpl& e) {
  w.running.erase(e.handle);
  SlotConn& slot = w.conns.at(e.slot);
  slot.exec.reset();
  slot.warm = false;
  slot.freed_at = std::chrono::steady_clock::now();
  e.worker = nullptr;
  std::lock_guard lock(mutex_);
  exec_pids_.erase(&e);
}

void PoolImpl::finish_completed(ExecutionImpl& e, std::string_view json) {
  e.mark_ended();
  {
    std::lock_guard lock(mutex_);
    ++stats_.completed;
  }
  e.observer_->on_completed(json);
  dispatch();
}

void PoolImpl::finish_failed(ExecutionImpl& e, FailureKind kind, std::string_view message) {
  e.mark_ended();
  {
    std::lock_guard lock(mutex_);
    ++stats_.failed;
    ++stats_.failed_by_kind[static_cast<std::size_t>(kind)];
  }
  e.observer_->on_failed(kind, message);
}

// ---- the pool thread ----

void PoolImpl::loop() {
  std::unique_lock state(inbox_->state);
  inbox_->serving = true;
  while (!stopping_) {
    run_commands();
    if (stopping_) break;
    fire_timers();
    check_deadlines();
    reap_lost();
    dispatch();
    std::vector<pollfd> fds;
    fds.push_back({inbox_->wake_fd, POLLIN, 0});
    // Each polled socket: its worker and which socket (-1: control, else the slot).
    std::vector<std::pair<WorkerProc*, int>> polled;
    for (auto& w : workers_) {
      if (w->control.fd < 0) continue;
      auto add = [&](Conn& c, int which) {
        short events = POLLIN;
        if (!c.out.empty()) events |= POLLOUT;
        fds.push_back({c.fd, events, 0});
        polled.emplace_back(w.get(), which);
      };
      add(w->control, -1);
      for (std::size_t i = 0; i < w->conns.size(); ++i) add(w->conns[i], static_cast<int>(i));
    }
    // With one execution running (and not waiting for a tool), its next frame usually comes
    // within microseconds: poll a while before sleeping. If it calls tools, yield between
    // polls: the slot making the next call is usually queued on this thread's CPU (each
    // frame's write woke this thread there), and a poll that does not yield keeps it from
    // running until the budget is spent (docs/engine.md, "Polling before sleeping").
    const ExecutionImpl* lone = lone_active();
    auto budget = poll_policy_.next(lone != nullptr);
    const bool yield = lone != nullptr && lone->calls > 0;
    int timeout = next_timeout_ms();
    loop_wakes_at_ = std::chrono::steady_clock::now() + budget + std::chrono::milliseconds(timeout);
    publish_counts();
    // Others may act on the pool while it waits (Inbox::try_run); they wake it if it must look.
    state.unlock();
    int brief = budget.count() > 0 ? poll_briefly(fds.data(), fds.size(), budget, yield) : 0;
    int rc = brief != 0 ? brief : ::poll(fds.data(), fds.size(), timeout);
    int poll_errno = errno;
    state.lock();
    loop_wakes_at_ = kNever;
    if (budget.count() > 0) poll_policy_.record(brief > 0);
    if (rc < 0 && poll_errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      std::uint64_t count;
      (void)!read(inbox_->wake_fd, &count, sizeof count);
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      auto [w, which] = polled[i];
      short revents = fds[i + 1].revents;
      if (revents == 0 || w->pid < 0) continue;  // or lost while handling an earlier socket
      Conn& c = which < 0 ? w->control : w->conns[static_cast<std::size_t>(which)];
      if (revents & POLLOUT) flush(*w, c);
      if (w->pid >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) read_from(*w, which);
    }
  }
  inbox_->serving = false;
}

void PoolImpl::run_commands() {
  std::vector<std::function<void()>> commands;
  {
    std::lock_guard lock(inbox_->mutex);
    commands.swap(inbox_->commands);
  }
  for (auto& c : commands) c();
}

void PoolImpl::publish_counts() {
  std::size_t running = 0;
  for (const auto& w : workers_) running += w->running.size();
  std::size_t warming = warming_count();
  std::lock_guard lock(mutex_);
  stats_.running = running;
  stats_.warming = warming;
}

std::size_t PoolImpl::warming_count() const {
  std::size_t n = 0;
  for (const auto& w : workers_) {
    if (w->pid < 0) continue;
    for (const auto& c : w->conns) n += !c.exec && !c.warm ? 1 : 0;
  }
  return n;
}

const ExecutionImpl* PoolImpl::lone_active() const {
  const ExecutionImpl* found = nullptr;
  for (const auto& w : workers_) {
    for (const auto& [handle, e] : w->running) {
      if (!e->outstanding.empty()) continue;
      if (found != nullptr) return nullptr;
      found = e.get();
    }
  }
  return found;
}

int PoolImpl::next_timeout_ms() {
  auto now = std::chrono::steady_clock::now();
  SteadyTime next = now + options_.heartbeat;
  std::int64_t now_ms = options_.clock->now_ms();
  std::int64_t timer_wait = -1;
  for (auto& w : workers_) {
    for (auto& [h, e] : w->running) {
      next = std::min(next, e->hard_deadline);
      for (auto& [id, due] : e->timers) {
        std::int64_t wait = std::max<std::int64_t>(0, due - now_ms);
        timer_wait = timer_wait < 0 ? wait : std::min(timer_wait, wait);
      }
    }
  }
  if (respawn_at_ != kNever) next = std::min(next, respawn_at_);
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  if (timer_wait >= 0) wait = std::min<std::int64_t>(wait, timer_wait);
  return static_cast<int>(std::clamp<std::int64_t>(wait + 1, 0, 60'000));
}

// Reads socket `which` of `w` (-1: control, else that slot's).
void PoolImpl::read_from(WorkerProc& w, int which) {
  char buffer[1 << 16];
  for (;;) {
    Conn& c = which < 0 ? w.control : w.conns[static_cast<std::size_t>(which)];
    if (c.fd < 0) return;
    ssize_t n = read(c.fd, buffer, sizeof buffer);
    if (n > 0) {
      c.reader.feed(buffer, static_cast<std::size_t>(n));
      w.last_heard = std::chrono::steady_clock::now();
      if (!handle_frames(w, which)) return;
      if (static_cast<std::size_t>(n) < sizeof buffer) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (acting_for_caller_) {
      loop_must_look_ = true;  // the pool thread finds the socket closed and loses the worker
      return;
    }
    lose(w, "it exited");
    return;
  }
}

// False once the worker was dropped.
bool PoolImpl::handle_frames(WorkerProc& w, int which) {
  for (;;) {
    Conn& c = which < 0 ? w.control : w.conns[static_cast<std::size_t>(which)];
    auto next = c.reader.next();
    if (!next) return violation(w, next.error().message);
    if (!next->has_frame) return true;
    auto message = wire::decode(next->body);
    if (!message) return violation(w, message.error().message);
    if (!handle(w, which, std::move(*message))) return false;
  }
}

// A frame from socket `which` of `w` (-1: control, else that slot's).
bool PoolImpl::handle(WorkerProc& w, int which, wire::Message message) {
  if (auto* ready = std::get_if<wire::Ready>(&message)) {
    if (which < 0) return on_worker_ready(w, *ready);
    // On a slot's socket: its next context is made. It may already run the next
    // execution, started before this arrived; then the word is stale.
    if (ready->slots != 1) return violation(w, "a slot's ready for more than one slot");
    SlotConn& c = w.conns[static_cast<std::size_t>(which)];
    if (!c.exec) c.warm = true;
    return true;
  }
  if (std::holds_alternative<wire::Pong>(message)) {
    return which < 0 || violation(w, "a pong on a slot's socket");
  }
  if (std::holds_alternative<wire::Exiting>(message)) {
    on_exiting(w);
    return true;
  }
  if (auto* snapshot = std::get_if<wire::Snapshot>(&message)) {
    return which < 0 ? on_worker_snapshot(w, *snapshot) : violation(w, "a snapshot on a slot's socket");
  }
  return handle_execution_frame(w, which, message);
}

bool PoolImpl::violation(WorkerProc& w, const std::string& why) {
  log::warn("engine_worker_protocol_violation", {{"pid", w.pid}, {"reason", why}});
  lose(w, "it broke the engine protocol: " + why);
  return false;
}

void PoolImpl::send(WorkerProc& w, Conn& c, const wire::Message& m) {
  if (c.fd < 0) return;
  wire::encode(m, c.out);
  flush(w, c);
}

void PoolImpl::flush(WorkerProc& w, Conn& c) {
  while (!c.out.empty() && c.fd >= 0) {
    ssize_t n = write(c.fd, c.out.data(), c.out.size());
    if (n > 0) {
      c.out.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (acting_for_caller_) loop_must_look_ = true;  // its poll() must ask for POLLOUT
      return;  // poll() tells us when it drains
    } else if (acting_for_caller_) {
      // Observers hear of a lost worker from the pool thread only: it finds the socket
      // broken when it polls it.
      loop_must_look_ = true;
      return;
    } else {
      lose(w, "its socket broke (" + std::string(std::strerror(errno)) + ")");
      return;
    }
  }
}

void ExecutionImpl::deliver_tool_result(std::uint32_t seq, bool ok, std::string value) {
  auto self = shared_from_this();
  // An observer that answers from its callback is already on the pool thread: deliver now
  // rather than wake the loop for it. Another thread delivers itself if the pool thread
  // is waiting (Inbox::try_run).
  if (inbox_->on_loop_thread()) {
    pool_.deliver(self, seq, ok, std::move(value));
    return;
  }
  if (inbox_->try_run(
          [&] { pool_.act_for_caller([&] { pool_.deliver(self, seq, ok, std::move(value)); }); })) {
    return;
  }
  inbox_->post([self, seq, ok, value = std::move(value)]() mutable {
    self->pool_.deliver(self, seq, ok, std::move(value));
  });
}

void ExecutionImpl::cancel() {
  // An owner that cancels what already ended (on hearing of its end, say) needs no wake-up
  // of the pool thread: that was a wake-up on the path of every execution's answer.
  if (ended.load(std::memory_order_acquire)) return;
  auto self = shared_from_this();
  inbox_->post([self] { self->pool_.cancel(self); });
}

}  // namespace detail

std::string format_log_line(wire::LogLevel level, std::string_view text) {
  std::string line = "[";
  line += wire::to_string(level);
  line += "] ";
  line += text;
  return line;
}

std::string default_worker_path() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  // Next to the program (an installed dorm), the build tree's layout, then where
  // `meson install` puts it (for an installed program of one's own, docs/embedding.md).
  for (auto candidate : {self.parent_path() / "dorm-engine-worker",
                         self.parent_path() / ".." / "engine" / "dorm-engine-worker",
                         self.parent_path() / ".." / ".." / "engine" / "dorm-engine-worker",
                         std::filesystem::path(DORM_INSTALLED_WORKER)}) {
    if (std::filesystem::exists(candidate, ec))
      return std::filesystem::weakly_canonical(candidate, ec).string();
  }
  return {};
}

Result<std::unique_ptr<Pool>> Pool::create(PoolOptions options,
                                           std::chrono::milliseconds ready_timeout) {
  if (options.slots_per_worker == 0 || options.slots_per_worker > 64) {
    return Error{ErrorCode::invalid_argument, "slots_per_worker must be between 1 and 64"};
  }
  if (options.recycle_after == 0)
    return Error{ErrorCode::invalid_argument, "recycle_after must be at least 1"};
  if (options.idle_trim.count() < 0 || options.idle_trim > std::chrono::minutes(10)) {
    return Error{ErrorCode::invalid_argument, "idle_trim must be between 0 and 10 minutes; got " +
                                                  std::to_string(options.idle_trim.count()) + " ms"};
  }
  for (auto [name, budget] :
       {std::pair{"poll_before_sleep", options.poll_before_sleep},
        std::pair{"start_polls_for_outcome", options.start_polls_for_outcome}}) {
    if (budget.count() < 0 || budget > PollBeforeSleep::kMaxBudget) {
      return Error{ErrorCode::invalid_argument, std::string(name) +
                                                    " must be between 0 and 10 ms; got " +
                                                    std::to_string(budget.count()) + " µs"};
    }
  }
  auto pool = std::make_unique<detail::PoolImpl>(std::move(options));
  if (auto opened = pool->open(ready_timeout); !opened) return opened.error();
  return std::unique_ptr<Pool>(std::move(pool));
}

}  // namespace dorm::engine
