// Replays a fuzz target's committed corpus as a doctest case, so the sanitizer test build
// (g++, no libFuzzer) runs every input the fuzzers ever kept. DORM_FUZZ_TARGET and
// DORM_FUZZ_CORPUS are set per target by tests/fuzz/meson.build.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

TEST_CASE("fuzz corpus replays: " DORM_FUZZ_TARGET) {
  std::size_t inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DORM_FUZZ_CORPUS)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CAPTURE(entry.path().string());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    ++inputs;
  }
  CHECK(inputs > 0);  // an empty corpus would replay nothing and prove nothing
}
