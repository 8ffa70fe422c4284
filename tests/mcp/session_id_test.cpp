#include "dorm/mcp/session_id.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace dorm::mcp;

TEST_CASE("session id: 32 lower-case hex characters, never repeated") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = new_session_id();
    REQUIRE(id.ok());
    CHECK(id->size() == 2 * kSessionIdRandomBytes);
    CHECK(id->find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(plausible_session_id(*id));
    seen.insert(*id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("session id: plausibility bounds length and characters") {
  CHECK(plausible_session_id(std::string(kMinSessionIdLength, 'a')));
  CHECK(plausible_session_id(std::string(kMaxSessionIdLength, '~')));
  CHECK(plausible_session_id("!\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~"));
  CHECK_FALSE(plausible_session_id(""));
  CHECK_FALSE(plausible_session_id(std::string(kMinSessionIdLength - 1, 'a')));
  CHECK_FALSE(plausible_session_id(std::string(kMaxSessionIdLength + 1, 'a')));
  for (char bad : {' ', '\t', '\0', '\x7f', '\x80', '\xff', '\n'}) {
    std::string id(20, 'a');
    id[7] = bad;
    CAPTURE(static_cast<int>(bad));
    CHECK_FALSE(plausible_session_id(id));
  }
}
