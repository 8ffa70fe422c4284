#include "object_cache.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <iterator>
#include <utility>

namespace dorm {
namespace {

std::size_t range_bytes(const std::string& lower, const std::optional<std::string>& upper) {
  return ObjectCache::kRangeBytes + lower.size() + (upper ? upper->size() : 0);
}

}  // namespace

std::unique_ptr<ObjectCache> ObjectCache::make(storage::Backend& backend, std::string_view root,
                                               std::size_t max_bytes,
                                               const UncachedPrefixes* uncached) {
  // root_bytes_ is the last member: the root fits in the padding after it and beyond.
  void* memory = ::operator new(sizeof(ObjectCache) + root.size());
  auto* cache = new (memory) ObjectCache(backend, root.size(), max_bytes, uncached);
  std::memcpy(cache->root_bytes_, root.data(), root.size());
  return std::unique_ptr<ObjectCache>(cache);
}

ObjectCache::ObjectCache(storage::Backend& backend, std::size_t root_size, std::size_t max_bytes,
                         const UncachedPrefixes* uncached)
    : backend_(backend),
      uncached_(uncached),
      max_bytes_(max_bytes),
      root_size_(static_cast<std::uint32_t>(root_size)) {}

ObjectCache::~ObjectCache() { clear(); }

ObjectCache::Entry* ObjectCache::Entry::create(std::string_view key,
                                               std::optional<std::string_view> value) {
  static_assert(std::is_standard_layout_v<Entry>, "an entry is sized with offsetof");
  const std::size_t size = offsetof(Entry, bytes) + key.size() + (value ? value->size() : 0);
  auto* entry = new (::operator new(size)) Entry;
  entry->key_size = static_cast<std::uint32_t>(key.size());
  entry->value_size = value ? static_cast<std::uint32_t>(value->size()) : kAbsent;
  std::memcpy(entry->bytes, key.data(), key.size());
  if (value) std::memcpy(entry->bytes + key.size(), value->data(), value->size());
  return entry;
}

void ObjectCache::Entry::destroy(Entry* entry) {
  entry->~Entry();
  ::operator delete(entry);
}

std::optional<std::string> ObjectCache::relative(std::string_view key) const {
  // Every key in [root, successor of root) begins with root, and no other key does.
  if (!key.starts_with(root())) return std::nullopt;
  return std::string(key.substr(root_size_));
}

bool ObjectCache::relative_bounds(const storage::ScanOptions::Bounds& bounds, std::string& lower,
                                  End& upper) const {
  auto rel_lower = relative(bounds.lower);
  if (!rel_lower) return false;
  lower = std::move(*rel_lower);
  upper.reset();
  if (root_size_ == 0) {
    upper = bounds.upper;
    return true;
  }
  if (!bounds.upper) return false;  // the scan runs past the object's keys
  if ((upper = relative(*bounds.upper))) return true;
  // bounds.upper lies past the object's keys: only their end itself keeps the scan inside.
  auto end = storage::ScanOptions::prefix_successor(root());
  return end && *bounds.upper == *end;
}

UncachedPrefixes::UncachedPrefixes(std::vector<std::string> prefixes) {
  for (auto& prefix : prefixes) {
    auto end = storage::ScanOptions::prefix_successor(prefix);
    ranges_.push_back({std::move(prefix), std::move(end)});
  }
}

bool UncachedPrefixes::holds(std::string_view key) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [key](const Range& r) { return key.starts_with(r.prefix); });
}

bool UncachedPrefixes::reached_by(const std::string& lower, const std::optional<std::string>& upper) const {
  // [prefix, end) and [lower, upper) overlap.
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const Range& r) {
    return (!r.end || lower < *r.end) && (!upper || r.prefix < *upper);
  });
}

bool ObjectCache::uncached(std::string_view key) const { return uncached_ && uncached_->holds(key); }

bool ObjectCache::reaches_uncached(const std::string& lower, const End& upper) const {
  return uncached_ && uncached_->reached_by(lower, upper);
}

// ---- reads ----

Result<std::optional<std::string>> ObjectCache::get(const std::string& key) {
  auto rel = enabled() ? relative(key) : std::nullopt;
  if (!rel || uncached(*rel)) return backend_.get(key);
  if (auto ok = prefetch(); !ok) return std::move(ok).error();
  if (auto it = slots_.find(std::string_view(*rel), EntryLess{}); it != slots_.end()) {
    touch(*it);
    if (!it->present()) return std::optional<std::string>{};
    return std::optional<std::string>(it->value());
  }
  if (in_complete(*rel)) return std::optional<std::string>{};
  auto value = backend_.get(key);
  if (!value) return value;
  remember(*rel, *value);
  trim();
  return value;
}

Result<std::vector<storage::KeyValue>> ObjectCache::scan(const storage::ScanOptions& options) {
  if (!enabled()) return backend_.scan(options);
  if (auto ok = options.validate(); !ok) return std::move(ok).error();
  auto bounds = options.bounds();
  if (bounds.empty()) return std::vector<storage::KeyValue>{};
  std::string lower;
  End upper;
  if (!relative_bounds(bounds, lower, upper)) return backend_.scan(options);
  if (auto ok = prefetch(); !ok) return std::move(ok).error();
  if (!reaches_uncached(lower, upper) && covered(lower, upper)) return from_memory(options, lower, upper);
  auto rows = backend_.scan(options);
  if (!rows) return rows;
  learn_scan(options, *rows, lower, upper);
  trim();
  return rows;
}

Result<void> ObjectCache::prefetch() {
  if (prefetched_) return {};
  storage::ScanOptions all;
  all.start = std::string(root());
  all.end = storage::ScanOptions::prefix_successor(root());
  all.limit = kPrefetchEntries;
  auto rows = backend_.scan(all);
  if (!rows) return std::move(rows).error();
  prefetched_ = true;
  learn_scan(all, *rows, std::string(), std::nullopt);
  trim();
  return {};
}

std::vector<storage::KeyValue> ObjectCache::from_memory(const storage::ScanOptions& options,
                                                        const std::string& lower,
                                                        const End& upper) {
  std::vector<storage::KeyValue> out;
  auto first = slots_.lower_bound(std::string_view(lower), EntryLess{});
  auto last = upper ? slots_.lower_bound(std::string_view(*upper), EntryLess{}) : slots_.end();
  auto take = [&](Slots::iterator it) {
    if (!it->present()) return true;  // known absent
    touch(*it);
    std::string key;
    key.reserve(root_size_ + it->key_size);
    key.append(root()).append(it->key());
    out.push_back({std::move(key), std::string(it->value())});
    return options.limit == 0 || out.size() < options.limit;
  };
  if (!options.reverse) {
    for (auto it = first; it != last && take(it); ++it) {
    }
  } else {
    for (auto it = last; it != first && take(std::prev(it)); --it) {
    }
  }
  return out;
}

void ObjectCache::learn_scan(const storage::ScanOptions& options,
                             const std::vector<storage::KeyValue>& rows, const std::string& lower,
                             const End& upper) {
  // The range first: remembering a row too large to keep drops the range around it.
  if (options.limit == 0 || rows.size() < options.limit) {
    add_complete(lower, upper);
  } else if (!rows.empty()) {
    // A limited scan saw everything between its start and its last row.
    std::string last = rows.back().key.substr(root_size_);
    if (options.reverse) {
      add_complete(std::move(last), upper);
    } else {
      add_complete(lower, last + '\0');  // the smallest key after `last`
    }
  }
  for (const auto& kv : rows) {
    auto rel = std::string_view(kv.key).substr(root_size_);
    if (!uncached(rel)) remember(rel, kv.value);
  }
}

bool ObjectCache::known_absent(std::string_view key) const {
  auto rel = enabled() ? relative(key) : std::nullopt;
  if (!rel || uncached(*rel)) return false;
  if (auto it = slots_.find(std::string_view(*rel), EntryLess{}); it != slots_.end()) {
    return !it->present();
  }
  return in_complete(*rel);
}

// ---- writes ----

void ObjectCache::apply(const storage::WriteBatch& batch) {
  if (!enabled()) return;
  for (const auto op : batch) {
    switch (op.kind) {
      case storage::WriteBatch::Kind::put:
        if (auto rel = relative(op.key); rel && !uncached(*rel)) remember(*rel, op.value);
        break;
      case storage::WriteBatch::Kind::del:
        if (auto rel = relative(op.key); rel && !uncached(*rel)) {
          if (!in_complete(*rel)) {
            remember(*rel, std::nullopt);
          } else if (auto it = slots_.find(std::string_view(*rel), EntryLess{}); it != slots_.end()) {
            erase_slot(it);  // the range says it is absent
          }
        }
        break;
      case storage::WriteBatch::Kind::delete_range:
        apply_range_delete(op.key, op.value);
        break;
    }
  }
  trim();
}

void ObjectCache::apply_range_delete(std::string_view begin, std::string_view end) {
  // The part of [begin, end) among the object's keys is empty now, and known to be.
  std::string lower;
  End upper;
  if (root_size_ == 0) {
    lower = begin;
    upper = std::string(end);
  } else {
    if (begin < root()) {
      lower.clear();  // from the object's first key
    } else if (auto rel = relative(begin)) {
      lower = std::move(*rel);
    } else {
      return;  // begins past the object's keys
    }
    upper = relative(end);  // none: it ends past them
    if (!upper && end <= root()) return;  // it ends before them
  }
  if (upper && *upper <= lower) return;
  auto it = slots_.lower_bound(std::string_view(lower), EntryLess{});
  while (it != slots_.end() && (!upper || it->key() < *upper)) it = erase_slot(it);
  add_complete(std::move(lower), std::move(upper));
}

void ObjectCache::clear() {
  slots_.clear_and_dispose(&Entry::destroy);
  count_ = 0;
  complete_.reset();
  whole_ = false;
  bytes_ = 0;
  prefetched_ = false;
}

// ---- entries ----

void ObjectCache::remember(std::string_view key, std::optional<std::string_view> value) {
  const std::size_t cost = Entry::cost_of(key.size(), value ? value->size() : 0);
  auto it = slots_.lower_bound(key, EntryLess{});
  const bool found = it != slots_.end() && it->key() == key;
  if (cost > max_bytes_ / 4) {
    // One entry must not push out most of the others: it is forgotten instead, and so is
    // the complete range around it (which would otherwise call it absent).
    if (found) erase_slot(it);
    drop_complete_at(key);
    return;
  }
  // A new allocation even for a known key: its size follows the value's.
  if (found) it = erase_slot(it);
  Entry* entry = Entry::create(key, value);
  slots_.insert_before(it, *entry);
  ++count_;
  touch(*entry);
  bytes_ += cost;
}

ObjectCache::Slots::iterator ObjectCache::erase_slot(Slots::iterator it) {
  bytes_ -= it->cost();
  --count_;
  return slots_.erase_and_dispose(it, &Entry::destroy);
}

void ObjectCache::touch(Entry& entry) {
  if (clock_ == std::numeric_limits<std::uint32_t>::max()) {
    // The stamps ran out: number the entries again in the same order, from 1.
    clock_ = 0;
    for (auto* e : by_age()) e->used = ++clock_;
  }
  entry.used = ++clock_;
}

std::vector<ObjectCache::Entry*> ObjectCache::by_age() {
  std::vector<Entry*> out;
  out.reserve(count_);
  for (auto& entry : slots_) out.push_back(&entry);
  std::sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) { return a->used < b->used; });
  return out;
}

void ObjectCache::trim() {
  if (bytes_ <= max_bytes_) return;
  // Least recently used first, until an eighth of the bound is free: one sort serves many
  // later inserts.
  const std::size_t target = max_bytes_ - max_bytes_ / 8;
  for (auto* entry : by_age()) {
    if (bytes_ <= target) return;
    // A present key leaving a complete range leaves a hole the range cannot describe.
    if (entry->present()) drop_complete_at(entry->key());
    erase_slot(slots_.iterator_to(*entry));
  }
  if (bytes_ > target) drop_all_complete();  // only ranges are left (many empty listings)
}

// ---- complete ranges ----

bool ObjectCache::in_complete(std::string_view key) const {
  if (uncached(key)) return false;
  if (whole_) return true;
  if (!complete_) return false;
  auto it = complete_->upper_bound(key);
  if (it == complete_->begin()) return false;
  --it;
  return !it->second || key < *it->second;
}

bool ObjectCache::covered(const std::string& lower, const End& upper) const {
  if (whole_) return true;
  if (!complete_) return false;
  auto it = complete_->upper_bound(lower);
  if (it == complete_->begin()) return false;
  --it;
  if (!it->second) return true;
  return lower < *it->second && upper && *upper <= *it->second;
}

void ObjectCache::add_complete(std::string lower, End upper) {
  if (whole_ || (upper && *upper <= lower)) return;
  if (lower.empty() && !upper) {
    drop_all_complete();
    whole_ = true;
    return;
  }
  if (!complete_) complete_ = std::make_unique<Ranges>();
  auto& ranges = *complete_;
  // Merge with every range it overlaps or touches, so ranges stay disjoint.
  auto it = ranges.upper_bound(lower);
  if (it != ranges.begin()) {
    auto prev = std::prev(it);
    if (!prev->second || *prev->second >= lower) it = prev;
  }
  while (it != ranges.end() && (!upper || it->first <= *upper)) {
    if (it->first < lower) lower = it->first;
    if (upper && (!it->second || *it->second > *upper)) upper = it->second;
    bytes_ -= range_bytes(it->first, it->second);
    it = ranges.erase(it);
  }
  bytes_ += range_bytes(lower, upper);
  ranges.emplace(std::move(lower), std::move(upper));
}

void ObjectCache::drop_complete_at(std::string_view key) {
  if (whole_) {
    whole_ = false;
    return;
  }
  if (!complete_) return;
  auto it = complete_->upper_bound(key);
  if (it == complete_->begin()) return;
  --it;
  if (it->second && key >= *it->second) return;
  bytes_ -= range_bytes(it->first, it->second);
  complete_->erase(it);
}

void ObjectCache::drop_all_complete() {
  whole_ = false;
  if (!complete_) return;
  for (const auto& [lower, upper] : *complete_) bytes_ -= range_bytes(lower, upper);
  complete_.reset();
}

}  // namespace dorm
