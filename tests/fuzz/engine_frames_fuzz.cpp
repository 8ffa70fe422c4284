// Fuzz target: the engine's frame reader and decoder, which read what a sandboxed (and
// possibly compromised) worker sends. Never crashes or over-allocates; every frame it accepts
// encodes back to exactly the bytes it came from, so nothing is silently reinterpreted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dorm/engine/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dorm::engine::wire;
  // Small frames cap, so the fuzzer also meets the cap.
  FrameReader reader(1 << 16);
  // Feed in two pieces to exercise frames split across reads.
  std::size_t half = size / 2;
  reader.feed(data, half);
  reader.feed(data + half, size - half);
  for (;;) {
    auto next = reader.next();
    if (!next || !next->has_frame) break;
    auto message = decode(next->body);
    if (!message) continue;
    std::string again;
    encode(*message, again);
    if (again.size() != next->body.size() + 4 ||
        again.compare(4, std::string::npos, reinterpret_cast<const char*>(next->body.data()),
                      next->body.size()) != 0) {
      std::abort();
    }
  }
  // The same bytes as a stored journal.
  auto journal = decode_journal(std::span<const std::uint8_t>(data, size));
  if (journal) {
    std::string again;
    encode_journal(*journal, again);
    if (again.size() != size || again.compare(0, size, reinterpret_cast<const char*>(data), size) != 0) std::abort();
  }
  return 0;
}
