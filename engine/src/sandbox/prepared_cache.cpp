#include "prepared_cache.hpp"

namespace dorm::engine::sandbox {

std::optional<std::string> PreparedCache::find(std::string_view source) {
  std::lock_guard lock(mutex_);
  auto found = index_.find(source);
  if (found == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->body;
}

void PreparedCache::insert(std::string_view source, std::string body) {
  std::size_t size = source.size() + body.size();
  if (size > kMaxBytes) return;
  std::lock_guard lock(mutex_);
  if (index_.count(source) != 0) return;  // another slot prepared it meanwhile: same body
  entries_.push_front(Entry{std::string(source), std::move(body)});
  index_.emplace(std::string_view(entries_.front().source), entries_.begin());
  bytes_ += size;
  evict_to_fit();
}

void PreparedCache::evict_to_fit() {
  while (entries_.size() > kMaxEntries || bytes_ > kMaxBytes) {
    Entry& last = entries_.back();
    bytes_ -= last.source.size() + last.body.size();
    index_.erase(std::string_view(last.source));
    entries_.pop_back();
  }
}

std::size_t PreparedCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::size_t PreparedCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace dorm::engine::sandbox
