#include "dorm/mcp/dns_rebinding.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace dorm::mcp;

TEST_CASE("host: the loopback names with any port are built in") {
  const std::vector<std::string> none;
  for (std::string_view ok : {"localhost", "localhost:8808", "LOCALHOST:1", "127.0.0.1",
                              "127.0.0.1:65535", "[::1]", "[::1]:3000", "localhost:0"}) {
    CAPTURE(ok);
    CHECK(host_allowed(ok, none));
  }
  for (std::string_view no : {"",
                              "evil.example.com",
                              "evil.example.com:8808",
                              "localhost.",
                              "localhost.evil.com",
                              "127.0.0.2",
                              "::1",
                              "[::2]:80",
                              "[0::1]",
                              "localhost:",
                              "localhost:65536",
                              "localhost:123456",
                              "localhost:-1",
                              "localhost:8x",
                              "localhost:80:80",
                              "user@localhost",
                              "localhost/path",
                              "local host",
                              "[::1",
                              "[::1]x",
                              "[]:80",
                              "[::1]:",
                              "localhost, evil.com",
                              "%6cocalhost",
                              "[::1%eth0]"}) {
    CAPTURE(no);
    CHECK_FALSE(host_allowed(no, none));
  }
}

TEST_CASE("host: operator entries, with or without a port") {
  const std::vector<std::string> allowed{"mcp.example.com", "Internal.Example:8443",
                                         "[2001:db8::1]:9000", "not a host", "10.0.0.5"};
  CHECK(host_allowed("mcp.example.com", allowed));
  CHECK(host_allowed("MCP.example.com:443", allowed));
  CHECK(host_allowed("internal.example:8443", allowed));
  CHECK_FALSE(host_allowed("internal.example", allowed));
  CHECK_FALSE(host_allowed("internal.example:8444", allowed));
  CHECK(host_allowed("[2001:DB8::1]:9000", allowed));
  CHECK_FALSE(host_allowed("[2001:db8::1]", allowed));
  CHECK(host_allowed("10.0.0.5:1234", allowed));
  CHECK_FALSE(host_allowed("not a host", allowed));
  CHECK_FALSE(host_allowed("example.com", allowed));
  CHECK_FALSE(host_allowed("sub.mcp.example.com", allowed));
}

TEST_CASE("origin: loopback origins under http and https are built in") {
  const std::vector<std::string> none;
  for (std::string_view ok :
       {"http://localhost", "http://localhost:5173", "https://localhost", "HTTP://LOCALHOST:80",
        "http://127.0.0.1:8808", "https://[::1]:3000", "http://[::1]"}) {
    CAPTURE(ok);
    CHECK(origin_allowed(ok, none));
  }
  for (std::string_view no :
       {"", "null", "http://evil.example.com", "http://localhost.evil.com", "ws://localhost",
        "file://localhost", "localhost", "//localhost", "http://localhost/", "http://localhost/x",
        "http://localhost:", "http://user@localhost", "http:/localhost", "http://",
        "http://localhost:99999", "1http://localhost", "http://localhost, http://evil.com"}) {
    CAPTURE(no);
    CHECK_FALSE(origin_allowed(no, none));
  }
}

TEST_CASE("origin: operator entries match exactly, default ports normalized") {
  const std::vector<std::string> allowed{"https://app.example.com", "http://tool.example:8080",
                                         "https://Port.Example:443", "garbage"};
  CHECK(origin_allowed("https://app.example.com", allowed));
  CHECK(origin_allowed("HTTPS://APP.EXAMPLE.COM", allowed));
  CHECK(origin_allowed("https://app.example.com:443", allowed));
  CHECK_FALSE(origin_allowed("http://app.example.com", allowed));
  CHECK_FALSE(origin_allowed("https://app.example.com:8443", allowed));
  CHECK_FALSE(origin_allowed("https://evil.app.example.com", allowed));
  CHECK(origin_allowed("http://tool.example:8080", allowed));
  CHECK_FALSE(origin_allowed("http://tool.example", allowed));
  CHECK(origin_allowed("https://port.example", allowed));
  CHECK_FALSE(origin_allowed("garbage", allowed));
}

TEST_CASE("allowed entries are checked at start-up") {
  CHECK(check_allowed_host_entry("mcp.example.com").ok());
  CHECK(check_allowed_host_entry("mcp.example.com:8808").ok());
  CHECK(check_allowed_host_entry("[::1]:8808").ok());
  for (std::string_view bad : {"", "a b", "host:", "host:99999", "http://host", "[::1"}) {
    CAPTURE(bad);
    auto r = check_allowed_host_entry(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == dorm::ErrorCode::invalid_argument);
    CHECK(r.error().message.find("invalid allowed host '" + std::string(bad) + "'") == 0);
  }
  CHECK(check_allowed_origin_entry("https://app.example.com").ok());
  CHECK(check_allowed_origin_entry("http://localhost:5173").ok());
  for (std::string_view bad : {"", "app.example.com", "https://app.example.com/", "null"}) {
    CAPTURE(bad);
    auto r = check_allowed_origin_entry(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("invalid allowed origin '" + std::string(bad) + "'") == 0);
  }
}
