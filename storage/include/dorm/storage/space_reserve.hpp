// SpaceReserve — refuses commits before the disk is full, not after.
//
// A store that runs its filesystem out of space fails in the worst place: RocksDB's
// background flush or its WAL write gets ENOSPC, the database stops taking writes, and
// (before dorm routed RocksDB's info log through its own logger) the process aborted on an
// assertion in RocksDB's log writer. So the RocksDB backend keeps a reserve of free space
// and refuses a commit with no_space, applying nothing, once free space would drop under
// it. The reserve leaves room for what RocksDB writes on its own after the commits we let
// through: flushing both memtables (2 x 64 MiB) is the largest, hence the default of
// 128 MiB. Reads never look at it. docs/storage.md, "Disk full", is the operator's view.
//
// The free space is not asked of the kernel (statvfs) on every commit: a figure is kept
// from the last look, and the commits since are counted against it. The filesystem is
// looked at again when
//   - the room the last look left above the reserve is used up by counted commits,
//   - kRefreshInterval has passed since the last look (RocksDB and other programs write
//     too: flushes, compactions, logs), or
//   - the reserve is refusing: every check looks again, so writes come back as soon as
//     space is freed.
//
// Thread-safe. The filesystem probe and the clock are injected, so tests drive the
// arithmetic with a scripted filesystem and a virtual clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::storage {

// The default reserve: room for RocksDB to flush both of its memtables (64 MiB each, see
// RocksDbBackend::make_options) after the last commit it was given.
inline constexpr std::uint64_t kDefaultReserveBytes = std::uint64_t{128} << 20;

// How much free space to keep, as written in a storage URI's `reserve=` option:
//   SIZE  bytes, with an optional unit: 512K, 64M, 1G (or KiB, MiB, GiB; powers of 1024)
//   P%    a percentage (0 < P < 100, decimals allowed) of the filesystem's size
//   0     no reserve: commits run until the disk refuses them (RocksDB then stops writes
//         until space is freed and the store resumes; see docs/storage.md)
struct ReserveSpec {
  std::uint64_t bytes = kDefaultReserveBytes;  // used when percent is unset
  std::optional<double> percent;

  // Parses `text`. Errors: invalid_argument naming the text and the accepted forms (an
  // empty value, an unknown unit, a size that does not fit 64 bits, a percentage not in
  // (0, 100)).
  static Result<ReserveSpec> parse(std::string_view text);

  // The bytes to keep free on a filesystem of `filesystem_bytes`.
  std::uint64_t resolve(std::uint64_t filesystem_bytes) const;
  bool disabled() const { return !percent && bytes == 0; }

  // The URI form: "0", "64MiB" (exact multiples), "5%", or plain bytes.
  std::string to_string() const;

  friend bool operator==(const ReserveSpec&, const ReserveSpec&) = default;
};

// What a filesystem has: free bytes an unprivileged writer may use, and its size.
struct FilesystemSpace {
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};

// statvfs on `path` (the nearest existing ancestor when `path` does not exist yet).
// Errors: io_error naming the path and the OS error.
Result<FilesystemSpace> probe_filesystem(const std::string& path);

// "1.5 MiB", "312 KiB", "17 B": for messages.
std::string format_bytes(std::uint64_t bytes);

class SpaceReserve {
 public:
  // The longest a free-space figure is trusted while the reserve is not refusing.
  static constexpr std::chrono::milliseconds kRefreshInterval{1000};

  using Probe = std::function<Result<FilesystemSpace>()>;
  // Monotonic milliseconds.
  using Now = std::function<std::int64_t()>;

  // Keeps `reserve_bytes` free on the filesystem `probe` reports; `what` names the store
  // in messages. A reserve of 0 admits everything and never probes.
  SpaceReserve(std::uint64_t reserve_bytes, std::string what, Probe probe, Now now);

  // Whether a commit of about `bytes` may go ahead: success when the free space left after
  // it stays at or above the reserve (by the cached figure, refreshed as described above),
  // no_space otherwise. An admitted commit's bytes are counted against the cached figure.
  // A probe that fails admits (the store itself then reports what the disk says) and is
  // retried at the next check.
  Result<void> admit(std::uint64_t bytes);

  // Whether commits are being refused now, counting nothing: no_space after a refusal
  // until the refused commit would fit (so a check never reports room a commit lacked),
  // and when the free space is under the reserve.
  Result<void> check();

  std::uint64_t reserve_bytes() const { return reserve_; }

  struct Stats {
    std::uint64_t probes = 0;     // times the filesystem was looked at
    std::uint64_t refusals = 0;   // admit() calls answered no_space
    std::uint64_t last_free = 0;  // free bytes at the last look
  };
  Stats stats() const;

 private:
  Result<void> decide(std::uint64_t bytes, bool commit);
  bool stale(std::uint64_t bytes, std::int64_t now) const;
  Error refusal(std::uint64_t bytes) const;

  const std::uint64_t reserve_;
  const std::string what_;
  const Probe probe_;
  const Now now_;
  mutable std::mutex mutex_;
  bool looked_ = false;        // a probe has succeeded at least once
  bool refusing_ = false;      // the last decision was a refusal
  std::uint64_t free_ = 0;     // free bytes at the last look
  std::uint64_t used_ = 0;     // bytes admitted since the last look
  std::uint64_t refused_bytes_ = 0;  // the size of the commit refused last
  std::int64_t looked_at_ = 0;
  Stats stats_;
};

}  // namespace dorm::storage
