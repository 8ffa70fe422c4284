// The worker's memory of recent source preparations: source text → prepared body.
//
// Preparing a source (acorn, sucrase: source_prep.hpp) costs 50–150 µs even for `return 1`,
// more than running it. prepare() is a pure function of the source text — no clock, no
// randomness, no state carried between calls — so answering a source seen before with the
// body prepared for it last time is exactly equivalent to preparing it again. Sources do
// repeat: a paused execution resumes by replaying the same source, and models resend code.
//
// Only successful preparations are kept: a SourceError may come from the preparer itself
// failing (terminated, out of heap), which says nothing about the source. Shared by the
// worker's slots; thread-safe. Entries are dropped least recently used first, beyond
// kMaxEntries or kMaxBytes (source plus body), so the cache stays small next to a slot's
// isolate.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace dorm::engine::sandbox {

class PreparedCache {
 public:
  static constexpr std::size_t kMaxEntries = 256;
  // A few large sources, or many small ones; the engine takes sources up to 1 MiB.
  static constexpr std::size_t kMaxBytes = 8u << 20;

  // The body prepared for exactly `source`, if it is still here.
  std::optional<std::string> find(std::string_view source);

  // Remembers `body` as the preparation of `source`. An entry larger than kMaxBytes is not kept.
  void insert(std::string_view source, std::string body);

  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct Entry {
    std::string source;
    std::string body;
  };
  void evict_to_fit();

  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // keys view entries_
  std::size_t bytes_ = 0;
};

}  // namespace dorm::engine::sandbox
