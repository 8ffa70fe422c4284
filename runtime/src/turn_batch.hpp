// TurnBatch — everything one turn writes, buffered until the turn commits.
//
// A turn's storage calls are synchronous and never interleave with another message's
// (the input gate). Writes go into this batch instead of the backend; reads consult the
// batch first, so a turn sees its own writes, and the committed state only for keys the
// turn has not touched. At the end of the turn the whole batch commits atomically, and
// only then are the turn's replies and outgoing messages released (the output gate).
//
// Keys here are full backend keys; the per-object prefix and the per-key limits are the
// caller's (ObjectStorage's) business. Beneath the turn's writes, reads go to the
// committed state through the object's ObjectCache, which answers from memory what it
// can and asks the backend for the rest.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "object_cache.hpp"

namespace dorm {

class TurnBatch {
 public:
  TurnBatch() = default;
  explicit TurnBatch(ObjectCache& committed) : committed_(&committed) {}
  // Where reads beneath this turn's writes go. A batch in a TurnScratch serves one object
  // after another, so its owner binds it before each use; get() and scan() need one,
  // writes() does without (then it knows nothing about the store).
  void bind(ObjectCache* committed) { committed_ = committed; }

  // The value the key has as seen by this turn.
  Result<std::optional<std::string>> get(const std::string& key);
  // The entries in range as seen by this turn: the committed ones, with this turn's writes
  // applied. Same options and order as Backend::scan.
  Result<std::vector<storage::KeyValue>> scan(const storage::ScanOptions& options);

  void put(std::string key, std::string value);
  void del(std::string key);
  void delete_range(std::string begin, std::string end);

  // The writes the turn asked for, and their key and value bytes: what the batch limits
  // count (StorageLimits), however many of them the commit leaves out.
  bool empty() const { return entries_ == 0; }
  std::size_t entries() const { return entries_; }
  std::size_t bytes() const { return bytes_; }
  // What the commit applies, with the same effect as every write in order: the turn's
  // range deletes, then each key's last write. A delete is left out where a range delete
  // of the turn covers the key or the committed state is known not to hold it (a key
  // written and deleted within one turn, such as a request's journal record when its tool
  // finishes at once). Valid until the next write or clear(); empty if nothing is left.
  const storage::WriteBatch& writes();
  void clear();

 private:
  // True if a range delete of this turn covers `key` and no later write re-created it.
  bool masked(const std::string& key) const;

  ObjectCache* committed_ = nullptr;
  std::map<std::string, std::optional<std::string>> overlay_;  // latest write per key
  std::vector<std::pair<std::string, std::string>> ranges_;    // range deletes of this turn
  std::size_t entries_ = 0;
  std::size_t bytes_ = 0;
  storage::WriteBatch compacted_;  // built by writes()
};

}  // namespace dorm
