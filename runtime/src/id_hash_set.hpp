// IdHashSet — a compact set of 64-bit id hashes (open addressing, linear probing).
//
// The runtime remembers which ids it evicted, so that their next activation reports
// `wake` rather than the runtime's start kind. That set grows with every object ever
// evicted, so it stores 8 bytes per id and nothing else (a node-based set would cost
// about five times that): 100k evicted ids take 1 MiB. Two ids with the same 64-bit
// hash would share an entry; with keyed-hash or random ids that is negligible.
#pragma once

#include <cstdint>
#include <vector>

namespace dorm::detail {

class IdHashSet {
 public:
  bool contains(std::uint64_t h) const {
    if (slots_.empty()) return false;
    h = normalize(h);
    for (std::size_t i = index(h);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == h) return true;
      if (slots_[i] == kEmpty) return false;
    }
  }

  void insert(std::uint64_t h) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();  // load factor at most 3/4
    place(normalize(h));
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = 0;
  static std::uint64_t normalize(std::uint64_t h) { return h == kEmpty ? 1 : h; }
  std::size_t index(std::uint64_t h) const {
    return static_cast<std::size_t>(h * 0x9E3779B97F4A7C15ull) & (slots_.size() - 1);
  }
  void place(std::uint64_t h) {
    for (std::size_t i = index(h);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == h) return;
      if (slots_[i] == kEmpty) {
        slots_[i] = h;
        ++size_;
        return;
      }
    }
  }
  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, kEmpty);
    size_ = 0;
    for (auto h : old) {
      if (h != kEmpty) place(h);
    }
  }

  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
};

}  // namespace dorm::detail
