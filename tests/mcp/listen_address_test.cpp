#include "dorm/mcp/listen_address.hpp"

#include <doctest/doctest.h>

using dorm::mcp::parse_listen_address;

TEST_CASE("listen address: host and port") {
  auto a = parse_listen_address("127.0.0.1:8808");
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 8808);
  CHECK(a->to_string() == "127.0.0.1:8808");

  auto any_port = parse_listen_address("localhost:0");
  REQUIRE(any_port.ok());
  CHECK(any_port->port == 0);
}

TEST_CASE("listen address: bracketed IPv6") {
  auto a = parse_listen_address("[::1]:9000");
  REQUIRE(a.ok());
  CHECK(a->host == "::1");
  CHECK(a->port == 9000);
  CHECK(a->to_string() == "[::1]:9000");
}

TEST_CASE("listen address: malformed input is rejected with a reason") {
  for (const char* bad : {"", "8808", "host:", ":8808", "host:65536", "host:-1", "host:80x",
                          "::1:80", "[::1]80", "[::1", "ho st:80", "host:+80", "[[1]:0",
                          "[]:80", "a]b:80"}) {
    CAPTURE(bad);
    auto r = parse_listen_address(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == dorm::ErrorCode::invalid_argument);
    CHECK(r.error().message.find("invalid listen address") == 0);
  }
}
