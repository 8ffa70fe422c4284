#include "dorm/mcp/protocol_version.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace dorm::mcp;

TEST_CASE("protocol version: supported revisions, latest first") {
  CHECK(kLatestProtocolVersion == "2025-11-25");
  CHECK(is_supported("2025-11-25"));
  CHECK(is_supported("2025-06-18"));
  CHECK(is_supported("2025-03-26"));
  for (std::string_view no : std::initializer_list<std::string_view>{
           "", "2024-11-05", "2026-07-28", "2025-11-25 ", "2025-11-2", "latest",
           std::string_view("2025-06-18\0", 11)}) {
    CAPTURE(no);
    CHECK_FALSE(is_supported(no));
  }
  CHECK(supported_versions_list() == "2025-11-25, 2025-06-18, 2025-03-26");
}

TEST_CASE("protocol version: negotiation answers the request if supported, else the latest") {
  CHECK(negotiate("2025-06-18") == "2025-06-18");
  CHECK(negotiate("2025-03-26") == "2025-03-26");
  CHECK(negotiate("2025-11-25") == "2025-11-25");
  CHECK(negotiate("2024-11-05") == "2025-11-25");
  CHECK(negotiate("2026-07-28") == "2025-11-25");
  CHECK(negotiate("") == "2025-11-25");
  // The answer never points into the caller's buffer.
  std::string requested = "2025-06-18";
  std::string_view answer = negotiate(requested);
  CHECK(answer.data() != requested.data());
}

TEST_CASE("protocol version: batching and priming per revision") {
  CHECK(allows_batch("2025-03-26"));
  CHECK_FALSE(allows_batch("2025-06-18"));
  CHECK_FALSE(allows_batch("2025-11-25"));
  CHECK_FALSE(allows_batch("junk"));

  CHECK(wants_priming("2025-11-25"));
  CHECK_FALSE(wants_priming("2025-06-18"));
  CHECK_FALSE(wants_priming("2025-03-26"));
  CHECK_FALSE(wants_priming("2026-07-28"));  // unsupported: no priming
  CHECK_FALSE(wants_priming("9999"));
}
