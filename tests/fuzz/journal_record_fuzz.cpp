// libFuzzer target: JournalRecord::from_json (a stored in-flight record, read by every
// session start and by the reaper) never crashes on any bytes, and what it accepts
// round-trips: written back and read again, it is the same record.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dorm/mcp/inflight_journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const dorm::mcp::RequestId id(std::int64_t{7});
  auto record = dorm::mcp::JournalRecord::from_json(id, text);
  if (!record) return 0;
  auto again = dorm::mcp::JournalRecord::from_json(id, record->to_json());
  if (!again || again->stream != record->stream || !(again->epoch == record->epoch) ||
      again->to_json() != record->to_json()) {
    std::abort();
  }
  return 0;
}
