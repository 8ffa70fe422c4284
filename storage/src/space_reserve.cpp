#include "dorm/storage/space_reserve.hpp"

#include <sys/statvfs.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

namespace dorm::storage {
namespace {

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};

// Powers of 1024 throughout: a reserve is about what a filesystem reports, in its units.
constexpr Unit kUnits[] = {
    {"", 1},           {"B", 1},
    {"K", 1ull << 10}, {"KiB", 1ull << 10},
    {"M", 1ull << 20}, {"MiB", 1ull << 20},
    {"G", 1ull << 30}, {"GiB", 1ull << 30},
    {"T", 1ull << 40}, {"TiB", 1ull << 40},
};

Error bad_reserve(std::string_view text, std::string_view why) {
  return Error{ErrorCode::invalid_argument,
               "reserve '" + std::string(text) + "': " + std::string(why) +
                   " (expected a size such as 128MiB or 512K, a percentage of the "
                   "filesystem such as 5%, or 0 for no reserve)"};
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}

}  // namespace

Result<ReserveSpec> ReserveSpec::parse(std::string_view text) {
  if (text.empty()) return bad_reserve(text, "empty value");
  ReserveSpec out;
  if (text.back() == '%') {
    std::string_view number = text.substr(0, text.size() - 1);
    double percent = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), percent);
    if (ec != std::errc{} || end != number.data() + number.size() || number.empty()) {
      return bad_reserve(text, "not a number before '%'");
    }
    if (!(percent > 0 && percent < 100)) {
      return bad_reserve(text, "a percentage must be above 0 and below 100 (reserve=0 turns the reserve off)");
    }
    out.percent = percent;
    return out;
  }
  std::uint64_t count = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (end == text.data()) return bad_reserve(text, "does not start with a number");
  if (ec == std::errc::result_out_of_range) return bad_reserve(text, "too large");
  std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  for (const auto& u : kUnits) {
    if (u.name != unit) continue;
    if (count > std::numeric_limits<std::uint64_t>::max() / u.factor) return bad_reserve(text, "too large");
    out.bytes = count * u.factor;
    return out;
  }
  return bad_reserve(text, "unknown unit '" + std::string(unit) + "' (B, K, KiB, M, MiB, G, GiB, T, TiB)");
}

std::uint64_t ReserveSpec::resolve(std::uint64_t filesystem_bytes) const {
  if (!percent) return bytes;
  return static_cast<std::uint64_t>(std::ceil(static_cast<long double>(filesystem_bytes) * *percent / 100.0L));
}

std::string ReserveSpec::to_string() const {
  if (percent) {
    // The shortest text that parses back to the same double: the URI round-trips.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *percent);
    return std::string(buf, ec == std::errc{} ? end : buf) + "%";
  }
  if (bytes == 0) return "0";
  for (auto [name, factor] : {std::pair<const char*, std::uint64_t>{"TiB", 1ull << 40},
                              {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}}) {
    if (bytes % factor == 0) return std::to_string(bytes / factor) + name;
  }
  return std::to_string(bytes);
}

Result<FilesystemSpace> probe_filesystem(const std::string& path) {
  // The store's directory may not exist yet (a first open creates it): its filesystem is
  // the one of its nearest existing ancestor.
  std::filesystem::path at = path.empty() ? std::filesystem::path(".") : std::filesystem::path(path);
  struct statvfs st {};
  for (;;) {
    if (::statvfs(at.c_str(), &st) == 0) break;
    int err = errno;
    auto parent = at.parent_path();
    if (err != ENOENT || parent.empty() || parent == at) {
      if (err == ENOENT && at.is_relative()) {
        at = ".";
        continue;
      }
      return Error{ErrorCode::io_error, "cannot see the free space of '" + at.string() +
                                            "': " + std::strerror(err)};
    }
    at = parent;
  }
  FilesystemSpace out;
  out.free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  out.total_bytes = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
  return out;
}

std::string format_bytes(std::uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1ull << 20));
  } else if (bytes >= (1ull << 10)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / (1ull << 10));
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

SpaceReserve::SpaceReserve(std::uint64_t reserve_bytes, std::string what, Probe probe, Now now)
    : reserve_(reserve_bytes), what_(std::move(what)), probe_(std::move(probe)), now_(std::move(now)) {}

bool SpaceReserve::stale(std::uint64_t bytes, std::int64_t now) const {
  if (!looked_ || refusing_) return true;
  if (now - looked_at_ >= kRefreshInterval.count()) return true;
  std::uint64_t room = free_ > reserve_ ? free_ - reserve_ : 0;
  return saturating_add(used_, bytes) > room;
}

Result<void> SpaceReserve::admit(std::uint64_t bytes) { return decide(bytes, true); }

Result<void> SpaceReserve::check() { return decide(0, false); }

Result<void> SpaceReserve::decide(std::uint64_t bytes, bool commit) {
  if (reserve_ == 0) return {};
  std::lock_guard lock(mutex_);
  std::int64_t now = now_();
  if (stale(bytes, now)) {
    ++stats_.probes;
    auto space = probe_();
    if (!space) {
      // Unknown: let the commit go to the store, which says what the disk says.
      looked_ = false;
      refusing_ = false;
      return {};
    }
    looked_ = true;
    free_ = space->free_bytes;
    used_ = 0;
    looked_at_ = now;
    stats_.last_free = free_;
  }
  // A check while refusing asks whether the commit refused last would fit now: the
  // reserve stays "full" until it would, so a check never reports room a commit lacks.
  std::uint64_t need = commit ? bytes : (refusing_ ? refused_bytes_ : 0);
  // Refused only on a fresh look (a stale figure was refreshed above).
  if (saturating_add(saturating_add(reserve_, used_), need) > free_) {
    refusing_ = true;
    if (commit) {
      refused_bytes_ = bytes;
      ++stats_.refusals;
    }
    return refusal(need);
  }
  refusing_ = false;
  refused_bytes_ = 0;
  if (commit) used_ += bytes;
  return {};
}

Error SpaceReserve::refusal(std::uint64_t bytes) const {
  std::string message = what_ + " refuses writes: " + format_bytes(free_) +
                        " free on its filesystem";
  if (bytes > 0) message += " (this write: " + format_bytes(bytes) + ")";
  message += ", under the reserve of " + format_bytes(reserve_) +
             " (reserve= in the storage URI). Nothing was written; reads go on, and writes "
             "resume once space is freed";
  return Error{ErrorCode::no_space, std::move(message)};
}

SpaceReserve::Stats SpaceReserve::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace dorm::storage
