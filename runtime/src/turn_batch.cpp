#include "turn_batch.hpp"

#include <algorithm>

namespace dorm {

void TurnBatch::clear() {
  overlay_.clear();
  ranges_.clear();
  entries_ = 0;
  bytes_ = 0;
  compacted_.clear();
}

bool TurnBatch::masked(const std::string& key) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [&](const auto& r) { return key >= r.first && key < r.second; });
}

void TurnBatch::put(std::string key, std::string value) {
  ++entries_;
  bytes_ += key.size() + value.size();
  overlay_.insert_or_assign(std::move(key), std::move(value));
}

void TurnBatch::del(std::string key) {
  ++entries_;
  bytes_ += key.size();
  overlay_.insert_or_assign(std::move(key), std::nullopt);
}

void TurnBatch::delete_range(std::string begin, std::string end) {
  if (end <= begin) return;
  ++entries_;
  bytes_ += begin.size() + end.size();
  // Earlier writes in the range are gone; later ones will be added to the overlay again.
  overlay_.erase(overlay_.lower_bound(begin), overlay_.lower_bound(end));
  ranges_.emplace_back(std::move(begin), std::move(end));
}

const storage::WriteBatch& TurnBatch::writes() {
  // Applying the range deletes first and then each key's last write is the same as
  // applying every write in order: a write before a range delete that covers it was
  // erased from the overlay by that delete, and one after it is the key's last write.
  compacted_.clear();
  for (const auto& [begin, end] : ranges_) compacted_.delete_range(begin, end);
  for (const auto& [key, value] : overlay_) {
    if (value) {
      compacted_.put(key, *value);
    } else if (!masked(key) && !(committed_ && committed_->known_absent(key))) {
      // (A key written and deleted in the same turn, where the store holds none, costs
      // the store nothing: no write and no tombstone.)
      compacted_.del(key);
    }
  }
  return compacted_;
}

Result<std::optional<std::string>> TurnBatch::get(const std::string& key) {
  if (auto it = overlay_.find(key); it != overlay_.end()) return it->second;
  if (masked(key)) return std::optional<std::string>{};
  return committed_->get(key);
}

Result<std::vector<storage::KeyValue>> TurnBatch::scan(const storage::ScanOptions& options) {
  if (auto ok = options.validate(); !ok) return std::move(ok).error();
  auto bounds = options.bounds();
  std::vector<storage::KeyValue> out;
  if (bounds.empty()) return out;
  auto in_bounds = [&](const std::string& k) {
    return k >= bounds.lower && (!bounds.upper || k < *bounds.upper);
  };

  // This turn's puts in range, in scan order.
  std::vector<storage::KeyValue> mine;
  for (auto it = overlay_.lower_bound(bounds.lower); it != overlay_.end() && in_bounds(it->first);
       ++it) {
    if (it->second) mine.push_back({it->first, *it->second});
  }
  if (options.reverse) std::reverse(mine.begin(), mine.end());

  // Backend entries this turn did not overwrite, delete or mask. With a limit, read pages
  // until `limit` survivors are in hand: any entry not read then lies beyond all of them.
  std::vector<storage::KeyValue> theirs;
  storage::ScanOptions page = options;
  page.limit = options.limit == 0 ? 0 : std::max<std::size_t>(options.limit, 64);
  while (true) {
    auto chunk = committed_->scan(page);
    if (!chunk) return std::move(chunk).error();
    std::string last = chunk->empty() ? std::string() : chunk->back().key;
    for (auto& kv : *chunk) {
      if (overlay_.count(kv.key) || masked(kv.key)) continue;
      theirs.push_back(std::move(kv));
    }
    bool exhausted = page.limit == 0 || chunk->size() < page.limit;
    if (exhausted || theirs.size() >= options.limit) break;
    page.start_after = std::move(last);
  }

  auto before = [&](const storage::KeyValue& a, const storage::KeyValue& b) {
    return options.reverse ? a.key > b.key : a.key < b.key;
  };
  std::merge(std::make_move_iterator(mine.begin()), std::make_move_iterator(mine.end()),
             std::make_move_iterator(theirs.begin()), std::make_move_iterator(theirs.end()),
             std::back_inserter(out), before);
  if (options.limit != 0 && out.size() > options.limit) out.resize(options.limit);
  return out;
}

}  // namespace dorm
