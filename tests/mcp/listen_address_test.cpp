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

TEST_CASE("listen address: which hosts only this machine can reach") {
  using dorm::mcp::is_loopback_host;
  for (const char* yes : {"localhost", "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "0::1",
                          "0:0:0:0:0:0:0:1", "[::1]", "[0::1]"}) {
    CAPTURE(yes);
    CHECK(is_loopback_host(yes));
  }
  for (const char* no :
       {"", "0.0.0.0", "::", "128.0.0.1", "10.0.0.1", "::2", "::ffff:127.0.0.1", "localhost.",
        "LOCALHOST.evil", "127.0.0.1.evil", "127.0.0.01", "[127.0.0.1]", "[::1", "example.com"}) {
    CAPTURE(no);
    CHECK_FALSE(is_loopback_host(no));
  }
}

TEST_CASE("listen address: userinfo and IPvFuture are refused") {
  for (const char* bad : {"user@localhost:80", "[v1.x]:80", "[1.2]:80"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_listen_address(bad).ok());
  }
}
