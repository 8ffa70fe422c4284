// AlarmWindow — the earliest entries of the alarm index, held in memory by the scheduler.
//
// The window knows every entry of the "dorm.alarms" index whose key is below its horizon,
// and no entry at or beyond it; index keys start with the due time, so the window is the
// index's earliest part and its first entry is the next alarm due. It starts knowing
// nothing (the horizon is the start of the index) and learns in two ways:
//  - fill(): a page the scheduler read from the store, starting at the horizon. The
//    horizon moves past the page, or away entirely (the window holds the whole index)
//    when the page reached the end of the index.
//  - apply(): a change an object committed (put with its version, or delete). A change
//    at or beyond the horizon is ignored: the store has it, and a later fill finds it.
// It holds at most `capacity` entries: a put beyond that drops the window's last entry,
// which becomes the horizon (everything from it on is again the store's alone). So
// memory is bounded however many alarms are stored, and a change costs O(log capacity)
// with no store access; the store is read only when the horizon itself comes due.
//
// Why a window and not the whole index: a server may hold an alarm per stored session
// (millions), and only the earliest ones can come due soon. Why not only the earliest
// one: a re-arm moves that one later, and the next would then have to be read from the
// store, stepping over the deleted entries of every earlier re-arm.
//
// Changes arrive in commit order per object (one actor sends them after each commit), and
// a fill reads one snapshot of the store: the changes of commits before the snapshot that
// arrive after it only repeat, for each key, a suffix of its history, whose last step is
// the key's state in the store. So the window ends up exact once the messages are in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "alarm_records.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::detail {

class AlarmWindow {
 public:
  using Entries = std::map<std::string, std::string>;  // index key -> version

  explicit AlarmWindow(std::size_t capacity);

  // A committed change (see the class comment).
  void apply(const AlarmIndexChange& change);
  // Adds a page read from the store, in key order, starting at horizon(); `complete`:
  // the read reached the end of the index.
  void fill(std::vector<storage::KeyValue> page, bool complete);
  // Forgets `key` if the window holds it with `version` (a delivered alarm the object
  // cleared, or left stale: the scheduler is done with that version either way).
  void forget(const std::string& key, const std::string& version);
  // Forgets everything and knows nothing again, as at the start: the next fill reads the
  // index from its beginning (scale-out nodes do, to find alarms other nodes set).
  void restart() {
    entries_.clear();
    horizon_ = std::string();
  }
  // Forgets `key` whatever its version (being delivered, or malformed).
  void erase(const std::string& key) { entries_.erase(key); }

  const Entries& entries() const { return entries_; }
  // Where the window's knowledge ends; none: it holds the whole index.
  const std::optional<std::string>& horizon() const { return horizon_; }
  // When the first entry the window does not hold may come due: the horizon's due time
  // (the smallest possible value at first, when nothing is known); none when complete.
  std::optional<std::int64_t> horizon_due() const;
  // How many more entries a fill may bring without the window dropping any.
  std::size_t room() const { return capacity_ > entries_.size() ? capacity_ - entries_.size() : 0; }

 private:
  void put(const std::string& key, const std::string& version);
  void trim();

  std::size_t capacity_;
  Entries entries_;
  std::optional<std::string> horizon_ = std::string();  // the start: nothing known yet
};

}  // namespace dorm::detail
