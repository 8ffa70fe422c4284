// Object ids: stable names, unique ids, and rejection of forged, truncated and foreign ids.
#include <doctest/doctest.h>

#include "dorm/hex.hpp"
#include "dorm/runtime/object_id.hpp"
#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::testing::RuntimeFixture;

TEST_CASE("ids: id_from_name is stable across a runtime restart over the same backend") {
  RuntimeFixture f;
  std::string before = f.runtime->id_from_name("sessions", "alice").to_string();
  CHECK(before.size() == 64);
  CHECK(f.runtime->id_from_name("sessions", "alice").to_string() == before);
  CHECK(f.runtime->id_from_name("sessions", "bob").to_string() != before);
  CHECK(f.runtime->id_from_name("other", "alice").to_string() != before);
  auto generation = f.runtime->generation();
  f.stop();
  f.start();
  CHECK(f.runtime->generation() == generation + 1);
  CHECK(f.runtime->id_from_name("sessions", "alice").to_string() == before);
  // And a parse of the printed id gives back the same id.
  auto parsed = f.runtime->parse_id("sessions", before);
  REQUIRE(parsed.ok());
  CHECK(*parsed == f.runtime->id_from_name("sessions", "alice"));
}

TEST_CASE("ids: the id and key constructions are fixed (stored data depends on them)") {
  // Known answers computed outside dorm (Python's hmac module): HMAC-SHA256 under the
  // secret of "dorm-id-name" NUL ns NUL name, its first 16 bytes the body; the MAC, the first
  // 16 bytes of HMAC-SHA256 of "dorm-id-mac" NUL ns NUL body. A change here would orphan
  // every object of every existing store.
  auto codec = IdCodec::create(std::string(IdCodec::kSecretBytes, '\x01'));
  REQUIRE(codec.ok());
  CHECK(codec->from_name("mcp-session", "some name").to_string() ==
        "bb05b3b8c54e162ce23b17681fe3cf93e523aec4a0f9f069358e95b06aefd024");
  CHECK(hex_encode(codec->derive_key("purpose")) ==
        "631a224fc6299c761cc674b25d921b8620b8e1fcb076224c0e6af0cdb6f256f7");
  // Copies of a codec share its keyed context, and hash the same.
  IdCodec copy = *codec;
  CHECK(copy.from_name("mcp-session", "some name") == codec->from_name("mcp-session", "some name"));
}

TEST_CASE("ids: another store's secret gives other ids, and rejects ours") {
  RuntimeFixture a, b;
  auto id = a.runtime->id_from_name("sessions", "alice");
  CHECK(b.runtime->id_from_name("sessions", "alice").to_string() != id.to_string());
  CHECK_FALSE(b.runtime->parse_id("sessions", id.to_string()).ok());
}

TEST_CASE("ids: a derived key is 32 bytes, stable over restarts, its own per purpose and per store") {
  RuntimeFixture a, b;
  std::string key = a.runtime->derive_key("mcp.request-state");
  CHECK(key.size() == 32);
  CHECK(a.runtime->derive_key("mcp.request-state") == key);
  CHECK(a.runtime->derive_key("mcp.other") != key);
  CHECK(b.runtime->derive_key("mcp.request-state") != key);
  a.stop();
  a.start();
  CHECK(a.runtime->derive_key("mcp.request-state") == key);
}

TEST_CASE("ids: unique ids differ and parse back") {
  RuntimeFixture f;
  auto a = f.runtime->new_unique_id("sessions");
  auto b = f.runtime->new_unique_id("sessions");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->to_string() != b->to_string());
  auto parsed = f.runtime->parse_id("sessions", a->to_string());
  REQUIRE(parsed.ok());
  CHECK(*parsed == *a);
}

TEST_CASE("ids: forged, truncated, malformed and cross-namespace ids are rejected clearly") {
  RuntimeFixture f;
  std::string good = f.runtime->id_from_name("sessions", "alice").to_string();

  std::string forged = good;
  forged[63] = forged[63] == '0' ? '1' : '0';  // one bit of the MAC
  std::string forged_body = good;
  forged_body[0] = forged_body[0] == '0' ? '1' : '0';  // the body, MAC left as it was

  struct Case {
    std::string text;
    std::string ns;
    std::string message;
  };
  for (const auto& c : {
           Case{forged, "sessions", "not valid in namespace 'sessions'"},
           Case{forged_body, "sessions", "not valid in namespace 'sessions'"},
           Case{good, "other", "not valid in namespace 'other'"},
           Case{good.substr(0, 63), "sessions", "expected 64 hex digits, got 63"},
           Case{good.substr(0, 32), "sessions", "expected 64 hex digits, got 32"},
           Case{good + "0", "sessions", "expected 64 hex digits, got 65"},
           Case{"", "sessions", "expected 64 hex digits, got 0"},
           Case{std::string(64, 'g'), "sessions", "only lower-case hex digits"},
       }) {
    CAPTURE(c.text);
    auto r = f.runtime->parse_id(c.ns, c.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(r.error().message.find(c.message) != std::string::npos);
  }
  std::string upper = good;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (upper != good) CHECK_FALSE(f.runtime->parse_id("sessions", upper).ok());
}

TEST_CASE("ids: a secret file replaces the stored secret, and a bad one is refused") {
  dorm::storage::MemoryBackend backend;
  VirtualClock clock;
  RuntimeOptions options;
  options.virtual_clock = &clock;
  options.secret_file = "/nonexistent/secret";
  auto missing = Runtime::start(backend, options);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("cannot read secret file") != std::string::npos);
}

TEST_CASE("namespaces: names are checked and registered once; unknown ones are refused") {
  RuntimeFixture f;
  struct Nothing : DurableObject {
    caf::behavior behavior() override { return {[](int x) { return x; }}; }
  };
  auto factory = [] { return std::make_unique<Nothing>(); };
  CHECK(f.runtime->register_namespace("ok-name_1.x", factory).ok());
  CHECK_FALSE(f.runtime->register_namespace("ok-name_1.x", factory).ok());
  CHECK_FALSE(f.runtime->register_namespace("Upper", factory).ok());
  CHECK_FALSE(f.runtime->register_namespace("", factory).ok());
  CHECK_FALSE(f.runtime->register_namespace(std::string("a\0b", 3), factory).ok());
  CHECK_FALSE(f.runtime->get(f.runtime->id_from_name("unregistered", "x")).ok());
}
