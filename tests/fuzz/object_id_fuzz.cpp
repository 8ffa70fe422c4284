// libFuzzer target: IdCodec::parse never crashes; an accepted id prints back to exactly the
// input and is refused in any other namespace.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dorm/runtime/object_id.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dorm::IdCodec codec =
      std::move(dorm::IdCodec::create(std::string(32, 's'))).value();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = codec.parse("fuzz", text);
  if (!parsed.ok()) return 0;
  if (parsed->to_string() != text) std::abort();
  if (codec.parse("other", text).ok()) std::abort();
  return 0;
}
