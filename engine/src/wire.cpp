#include "dorm/engine/wire.hpp"

#include <cstring>
#include <limits>
#include <type_traits>

namespace dorm::engine::wire {
namespace {

// Type bytes. Host → worker below 16, worker → host from 16, journal entries from 64, so a
// byte from one space is never valid in another.
enum class Type : std::uint8_t {
  start = 1, tool_result = 2, timer_fired = 3, cancel = 4, ping = 5,
  ready = 16, tool_call = 17, log = 18, emit = 19, timer_set = 20, timer_clear = 21,
  completed = 22, failed = 23, pong = 24, exiting = 25, snapshot = 26,
};
enum class EntryType : std::uint8_t {
  tool_call = 64, tool_result = 65, timer_set = 66, timer_clear = 67, timer_fired = 68,
};

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <class T>
  void integer(T v) {
    using U = std::make_unsigned_t<T>;
    U u = static_cast<U>(v);
    for (std::size_t i = 0; i < sizeof(U); ++i) out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  void boolean(bool b) { integer<std::uint8_t>(b ? 1 : 0); }
  void bytes(std::string_view s) {
    integer<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }

 private:
  std::string& out_;
};

// Reads fields from a body; the first failure sticks and later reads return zeros, so a
// decoder reads all its fields and checks ok() once.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  template <class T>
  T integer() {
    using U = std::make_unsigned_t<T>;
    if (!need(sizeof(U))) return T{};
    U u = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) u |= static_cast<U>(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(U);
    return static_cast<T>(u);
  }
  bool boolean() {
    auto b = integer<std::uint8_t>();
    if (b > 1) fail("a bool byte is " + std::to_string(b));
    return b == 1;
  }
  std::string bytes() {
    auto n = integer<std::uint32_t>();
    if (!need(n)) return {};
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  // A count of items each at least `min_item` bytes long, checked against what is left so
  // a forged count cannot make the decoder reserve memory the frame does not hold.
  std::uint32_t count(std::size_t min_item) {
    auto n = integer<std::uint32_t>();
    if (ok() && static_cast<std::uint64_t>(n) * min_item > in_.size() - pos_) {
      fail("a count of " + std::to_string(n) + " items does not fit in the " +
           std::to_string(in_.size() - pos_) + " bytes left");
      return 0;
    }
    return n;
  }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  bool ok() const { return error_.empty(); }
  bool at_end() const { return pos_ == in_.size(); }
  std::size_t left() const { return in_.size() - pos_; }
  const std::string& error() const { return error_; }

 private:
  bool need(std::size_t n) {
    if (!ok()) return false;
    if (n > in_.size() - pos_) {
      fail("a field of " + std::to_string(n) + " bytes runs past the end (" +
           std::to_string(in_.size() - pos_) + " left)");
      return false;
    }
    return true;
  }
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  std::string error_;
};

void put_limits(Writer& w, const Limits& l) {
  w.integer(l.heap_bytes);
  w.integer(l.cpu_ms);
  w.integer(l.wall_ms);
  w.integer(l.stack_bytes);
  w.integer(l.log_bytes);
  w.integer(l.output_bytes);
  w.integer(l.tool_calls);
  w.integer(l.concurrent_tool_calls);
}

Limits get_limits(Reader& r) {
  Limits l;
  l.heap_bytes = r.integer<std::uint64_t>();
  l.cpu_ms = r.integer<std::uint64_t>();
  l.wall_ms = r.integer<std::uint64_t>();
  l.stack_bytes = r.integer<std::uint64_t>();
  l.log_bytes = r.integer<std::uint64_t>();
  l.output_bytes = r.integer<std::uint64_t>();
  l.tool_calls = r.integer<std::uint32_t>();
  l.concurrent_tool_calls = r.integer<std::uint32_t>();
  return l;
}

void put_tool_result(Writer& w, const ToolResultEntry& e) {
  w.integer(e.seq);
  w.boolean(e.ok);
  w.bytes(e.value_json);
  w.integer(e.time_ms);
}
ToolResultEntry get_tool_result(Reader& r) {
  ToolResultEntry e;
  e.seq = r.integer<std::uint32_t>();
  e.ok = r.boolean();
  e.value_json = r.bytes();
  e.time_ms = r.integer<std::int64_t>();
  return e;
}
void put_timer_fired(Writer& w, const TimerFiredEntry& e) {
  w.integer(e.timer);
  w.integer(e.time_ms);
}
TimerFiredEntry get_timer_fired(Reader& r) {
  TimerFiredEntry e;
  e.timer = r.integer<std::uint32_t>();
  e.time_ms = r.integer<std::int64_t>();
  return e;
}
void put_tool_call(Writer& w, const ToolCallEntry& e) {
  w.integer(e.seq);
  w.bytes(e.path);
  w.bytes(e.args_json);
}
ToolCallEntry get_tool_call(Reader& r) {
  ToolCallEntry e;
  e.seq = r.integer<std::uint32_t>();
  e.path = r.bytes();
  e.args_json = r.bytes();
  return e;
}

void put_entry(Writer& w, const JournalEntry& entry) {
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, ToolCallEntry>) {
          w.integer(static_cast<std::uint8_t>(EntryType::tool_call));
          put_tool_call(w, e);
        } else if constexpr (std::is_same_v<T, ToolResultEntry>) {
          w.integer(static_cast<std::uint8_t>(EntryType::tool_result));
          put_tool_result(w, e);
        } else if constexpr (std::is_same_v<T, TimerSetEntry>) {
          w.integer(static_cast<std::uint8_t>(EntryType::timer_set));
          w.integer(e.timer);
          w.integer(e.delay_ms);
          w.integer(e.time_ms);
        } else if constexpr (std::is_same_v<T, TimerClearEntry>) {
          w.integer(static_cast<std::uint8_t>(EntryType::timer_clear));
          w.integer(e.timer);
        } else {
          w.integer(static_cast<std::uint8_t>(EntryType::timer_fired));
          put_timer_fired(w, e);
        }
      },
      entry);
}

JournalEntry get_entry(Reader& r) {
  auto type = r.integer<std::uint8_t>();
  switch (static_cast<EntryType>(type)) {
    case EntryType::tool_call: return get_tool_call(r);
    case EntryType::tool_result: return get_tool_result(r);
    case EntryType::timer_set: {
      TimerSetEntry e;
      e.timer = r.integer<std::uint32_t>();
      e.delay_ms = r.integer<std::int64_t>();
      e.time_ms = r.integer<std::int64_t>();
      return e;
    }
    case EntryType::timer_clear: return TimerClearEntry{r.integer<std::uint32_t>()};
    case EntryType::timer_fired: return get_timer_fired(r);
  }
  r.fail("unknown journal entry type " + std::to_string(type));
  return TimerClearEntry{};
}

void put_journal(Writer& w, const Journal& j) {
  w.integer(j.start_ms);
  w.integer(j.seed);
  w.integer(static_cast<std::uint32_t>(j.entries.size()));
  for (const auto& e : j.entries) put_entry(w, e);
}

Journal get_journal(Reader& r) {
  Journal j;
  j.start_ms = r.integer<std::int64_t>();
  j.seed = r.integer<std::uint64_t>();
  // The smallest entry (a timer clear) is 5 bytes.
  auto n = r.count(5);
  j.entries.reserve(n);
  for (std::uint32_t i = 0; i < n && r.ok(); ++i) j.entries.push_back(get_entry(r));
  return j;
}

// ---- frame bodies after the type byte, as encode() writes them ----
//
// The simpler ones are read in decode() itself, into braced initializers: those evaluate
// their elements in order, so the fields are read in the order they were written.

std::uint64_t exec_of(Reader& r) { return r.integer<std::uint64_t>(); }

Start get_start_frame(Reader& r) {
  Start m;
  m.exec = r.integer<std::uint64_t>();
  m.id = r.bytes();
  m.source = r.bytes();
  m.limits = get_limits(r);
  m.journal = get_journal(r);
  return m;
}

Log get_log_frame(Reader& r) {
  Log m;
  m.exec = r.integer<std::uint64_t>();
  auto level = r.integer<std::uint8_t>();
  if (level > static_cast<std::uint8_t>(LogLevel::error)) {
    r.fail("unknown log level " + std::to_string(level));
  }
  m.level = static_cast<LogLevel>(level);
  m.text = r.bytes();
  return m;
}

Failed get_failed_frame(Reader& r) {
  Failed m;
  m.exec = r.integer<std::uint64_t>();
  auto kind = r.integer<std::uint8_t>();
  auto known = failure_kind_from_wire(kind);
  if (!known) r.fail("unknown failure kind " + std::to_string(kind));
  m.kind = known.value_or(FailureKind::runtime_error);
  m.message = r.bytes();
  return m;
}

Snapshot get_snapshot_frame(Reader& r) {
  Snapshot m;
  m.hash_seed = r.integer<std::uint64_t>();
  m.preparer_context = r.integer<std::uint32_t>();
  m.has_prelude = r.boolean();
  m.prelude_context = r.integer<std::uint32_t>();
  m.prelude_hooks = r.integer<std::uint32_t>();
  m.blob = r.bytes();
  if (r.ok() && m.blob.empty()) r.fail("an empty startup snapshot");
  return m;
}

Error malformed(const std::string& what) {
  return Error{ErrorCode::invalid_argument, "malformed engine frame: " + what};
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::log: return "log";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
  }
  return "log";
}

void encode(const Message& message, std::string& out) {
  std::size_t at = out.size();
  out.append(4, '\0');  // length, filled in below
  Writer w(out);
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        auto type = [&](Type t) { w.integer(static_cast<std::uint8_t>(t)); };
        if constexpr (std::is_same_v<T, Start>) {
          type(Type::start);
          w.integer(m.exec);
          w.bytes(m.id);
          w.bytes(m.source);
          put_limits(w, m.limits);
          put_journal(w, m.journal);
        } else if constexpr (std::is_same_v<T, ToolResult>) {
          type(Type::tool_result);
          w.integer(m.exec);
          put_tool_result(w, m.result);
        } else if constexpr (std::is_same_v<T, TimerFired>) {
          type(Type::timer_fired);
          w.integer(m.exec);
          put_timer_fired(w, m.fired);
        } else if constexpr (std::is_same_v<T, Cancel>) {
          type(Type::cancel);
          w.integer(m.exec);
        } else if constexpr (std::is_same_v<T, Ping>) {
          type(Type::ping);
          w.integer(m.nonce);
        } else if constexpr (std::is_same_v<T, Ready>) {
          type(Type::ready);
          w.integer(m.slots);
        } else if constexpr (std::is_same_v<T, ToolCall>) {
          type(Type::tool_call);
          w.integer(m.exec);
          put_tool_call(w, m.call);
        } else if constexpr (std::is_same_v<T, Log>) {
          type(Type::log);
          w.integer(m.exec);
          w.integer(static_cast<std::uint8_t>(m.level));
          w.bytes(m.text);
        } else if constexpr (std::is_same_v<T, Emit>) {
          type(Type::emit);
          w.integer(m.exec);
          w.bytes(m.value_json);
        } else if constexpr (std::is_same_v<T, TimerSet>) {
          type(Type::timer_set);
          w.integer(m.exec);
          w.integer(m.timer);
          w.integer(m.delay_ms);
        } else if constexpr (std::is_same_v<T, TimerClear>) {
          type(Type::timer_clear);
          w.integer(m.exec);
          w.integer(m.timer);
        } else if constexpr (std::is_same_v<T, Completed>) {
          type(Type::completed);
          w.integer(m.exec);
          w.bytes(m.result_json);
        } else if constexpr (std::is_same_v<T, Failed>) {
          type(Type::failed);
          w.integer(m.exec);
          w.integer(static_cast<std::uint8_t>(m.kind));
          w.bytes(m.message);
        } else if constexpr (std::is_same_v<T, Pong>) {
          type(Type::pong);
          w.integer(m.nonce);
        } else if constexpr (std::is_same_v<T, Exiting>) {
          type(Type::exiting);
          w.bytes(m.reason);
        } else {
          static_assert(std::is_same_v<T, Snapshot>);
          type(Type::snapshot);
          w.integer(m.hash_seed);
          w.integer(m.preparer_context);
          w.boolean(m.has_prelude);
          w.integer(m.prelude_context);
          w.integer(m.prelude_hooks);
          w.bytes(m.blob);
        }
      },
      message);
  auto length = static_cast<std::uint32_t>(out.size() - at - 4);
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((length >> (8 * i)) & 0xff);
}

Result<Message> decode(std::span<const std::uint8_t> body) {
  Reader r(body);
  auto type = r.integer<std::uint8_t>();
  if (!r.ok()) return malformed("empty frame");
  Message message;
  switch (static_cast<Type>(type)) {
    case Type::start: message = get_start_frame(r); break;
    case Type::tool_result: message = ToolResult{exec_of(r), get_tool_result(r)}; break;
    case Type::timer_fired: message = TimerFired{exec_of(r), get_timer_fired(r)}; break;
    case Type::cancel: message = Cancel{r.integer<std::uint64_t>()}; break;
    case Type::ping: message = Ping{r.integer<std::uint64_t>()}; break;
    case Type::ready: message = Ready{r.integer<std::uint32_t>()}; break;
    case Type::tool_call: message = ToolCall{exec_of(r), get_tool_call(r)}; break;
    case Type::log: message = get_log_frame(r); break;
    case Type::emit: message = Emit{exec_of(r), r.bytes()}; break;
    case Type::timer_set:
      message = TimerSet{exec_of(r), r.integer<std::uint32_t>(), r.integer<std::int64_t>()};
      break;
    case Type::timer_clear: message = TimerClear{exec_of(r), r.integer<std::uint32_t>()}; break;
    case Type::completed: message = Completed{exec_of(r), r.bytes()}; break;
    case Type::failed: message = get_failed_frame(r); break;
    case Type::pong: message = Pong{r.integer<std::uint64_t>()}; break;
    case Type::exiting: message = Exiting{r.bytes()}; break;
    case Type::snapshot: message = get_snapshot_frame(r); break;
    default: return malformed("unknown frame type " + std::to_string(type));
  }
  if (!r.ok()) return malformed(r.error());
  if (!r.at_end()) return malformed(std::to_string(r.left()) + " bytes left after the last field");
  return message;
}

void encode_journal(const Journal& journal, std::string& out) {
  Writer w(out);
  put_journal(w, journal);
}

Result<Journal> decode_journal(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  Journal j = get_journal(r);
  if (!r.ok()) return Error{ErrorCode::corruption, "malformed engine journal: " + r.error()};
  if (!r.at_end()) {
    return Error{ErrorCode::corruption, "malformed engine journal: " + std::to_string(r.left()) +
                                            " bytes after the last entry"};
  }
  return j;
}

void FrameReader::feed(const void* data, std::size_t size) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > (1u << 20) && offset_ * 2 > buffer_.size()) {
    // Compact once the consumed prefix dominates, so a long-lived stream stays bounded.
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(offset_));
    offset_ = 0;
  }
  auto p = static_cast<const std::uint8_t*>(data);
  buffer_.insert(buffer_.end(), p, p + size);
}

Result<FrameReader::Next> FrameReader::next() {
  if (broken_) return malformed("the stream broke earlier");
  std::size_t avail = buffer_.size() - offset_;
  if (avail < 4) return Next{};
  const std::uint8_t* p = buffer_.data() + offset_;
  std::uint32_t length = static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
  if (length == 0 || length > max_frame_) {
    broken_ = true;
    return malformed("frame length " + std::to_string(length) + " is outside 1.." +
                     std::to_string(max_frame_));
  }
  if (avail - 4 < length) return Next{};
  offset_ += 4 + length;
  return Next{true, std::span<const std::uint8_t>(p + 4, length)};
}

}  // namespace dorm::engine::wire
