#include "alarm_window.hpp"

#include <limits>
#include <utility>

namespace dorm::detail {

AlarmWindow::AlarmWindow(std::size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

void AlarmWindow::apply(const AlarmIndexChange& change) {
  if (horizon_ && change.index_key >= *horizon_) return;
  if (change.version) {
    put(change.index_key, *change.version);
  } else {
    entries_.erase(change.index_key);
  }
}

void AlarmWindow::put(const std::string& key, const std::string& version) {
  entries_.insert_or_assign(key, version);
  trim();
}

void AlarmWindow::fill(std::vector<storage::KeyValue> page, bool complete) {
  std::optional<std::string> next_horizon;
  if (!complete) {
    // Just past the page's last key: the next fill starts there. An incomplete page is
    // never empty (the scheduler reads at least one entry), but stay put if it were.
    next_horizon = page.empty() ? horizon_ : std::optional<std::string>(page.back().key + '\0');
  }
  for (auto& kv : page) entries_.insert_or_assign(std::move(kv.key), std::move(kv.value));
  horizon_ = std::move(next_horizon);
  trim();
}

void AlarmWindow::forget(const std::string& key, const std::string& version) {
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second == version) entries_.erase(it);
}

std::optional<std::int64_t> AlarmWindow::horizon_due() const {
  if (!horizon_) return std::nullopt;
  // A horizon shorter than a due time is the start of the index: it is due at once.
  return decode_due(*horizon_).value_or(std::numeric_limits<std::int64_t>::min());
}

void AlarmWindow::trim() {
  while (entries_.size() > capacity_) {
    auto last = std::prev(entries_.end());
    horizon_ = last->first;
    entries_.erase(last);
  }
}

}  // namespace dorm::detail
