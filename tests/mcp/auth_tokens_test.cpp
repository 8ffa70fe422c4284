#include "dorm/mcp/auth_tokens.hpp"

#include <doctest/doctest.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.hpp"

using namespace dorm::mcp;
using dorm::ErrorCode;

namespace {

std::string sha256_hex(std::string_view token, bool upper = false) {
  unsigned char digest[32];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::string entry(std::string_view token, std::string_view user, std::string_view org = {}) {
  std::string e = R"({"sha256":")" + sha256_hex(token) + R"(","user":")" + std::string(user) + "\"";
  if (!org.empty()) e += R"(,"org":")" + std::string(org) + "\"";
  return e + "}";
}

void write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string parse_error(std::string_view json) {
  auto r = TokenSet::parse(json);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::invalid_argument);
  CHECK(r.error().message.starts_with("auth tokens: "));
  return r.error().message;
}

}  // namespace

TEST_CASE("auth tokens: a token authenticates as its entry's identity") {
  auto set = TokenSet::parse("[" + entry("alpha-token", "alice", "acme") + "," +
                             entry("beta-token", "bob") + "]");
  REQUIRE(set.ok());
  CHECK(set->size() == 2);
  CHECK(set->authenticate("alpha-token") == Identity{"alice", "acme"});
  CHECK(set->authenticate("beta-token") == Identity{"bob", ""});
  CHECK_FALSE(set->authenticate("gamma-token"));
  CHECK_FALSE(set->authenticate("alpha-toke"));
  CHECK_FALSE(set->authenticate("alpha-token "));
  CHECK_FALSE(set->authenticate(""));
  // The file holds hashes: presenting a hash is not presenting the token.
  CHECK_FALSE(set->authenticate(sha256_hex("alpha-token")));
}

TEST_CASE("auth tokens: hex in either case, whitespace around JSON, an empty list") {
  std::string upper = R"([ {"user": "u", "sha256": ")" + sha256_hex("t", true) + R"("} ])";
  auto set = TokenSet::parse("\n " + upper + "\n");
  REQUIRE(set.ok());
  CHECK(set->authenticate("t") == Identity{"u", ""});

  auto empty = TokenSet::parse("[]");
  REQUIRE(empty.ok());
  CHECK(empty->size() == 0);
  CHECK_FALSE(empty->authenticate("t"));

  // An empty token can never match, even if the file lists SHA-256("").
  auto with_empty = TokenSet::parse("[" + entry("", "nobody") + "]");
  REQUIRE(with_empty.ok());
  CHECK_FALSE(with_empty->authenticate(""));

  // Unicode user names are fine.
  auto unicode = TokenSet::parse("[" + entry("t", "J\xc3\xb6rg", "\xe6\x97\xa5") + "]");
  REQUIRE(unicode.ok());
  CHECK(unicode->authenticate("t") == Identity{"J\xc3\xb6rg", "\xe6\x97\xa5"});
}

TEST_CASE("auth tokens: bad files are refused with the entry and field named") {
  const std::string h = sha256_hex("t");
  const std::string h2 = sha256_hex("t2");
  struct Case {
    std::string json;
    const char* says;
  };
  for (const Case& c : {
           Case{"", "not valid JSON"},
           Case{"[", "not valid JSON"},
           Case{"[\"\xff\"]", "not valid JSON"},
           Case{"{}", "must be a JSON array"},
           Case{"null", "must be a JSON array"},
           Case{"[1]", "entry 0: must be a JSON object"},
           Case{"[" + entry("a", "u") + ",[]]", "entry 1: must be a JSON object"},
           Case{R"([{"user":"u"}])", "entry 0: \"sha256\" is missing"},
           Case{R"([{"sha256":")" + h + R"("}])", "entry 0: \"user\" is missing"},
           Case{R"([{"sha256":5,"user":"u"}])", "entry 0: \"sha256\" must be a string"},
           Case{R"([{"sha256":")" + h.substr(1) + R"(","user":"u"}])", "got 63 characters)"},
           Case{R"([{"sha256":")" + h + R"(0","user":"u"}])", "got 65 characters)"},
           Case{R"([{"sha256":")" + h.substr(1) + R"(g","user":"u"}])", "not all hex digits"},
           Case{R"([{"sha256":"","user":"u"}])", "64 hex digits"},
           Case{R"([{"sha256":")" + h + R"(","user":""}])", "entry 0: \"user\" must not be empty"},
           Case{R"([{"sha256":")" + h + R"(","user":7}])", "entry 0: \"user\" must be a string"},
           Case{R"([{"sha256":")" + h + R"(","user":null}])", "\"user\" must be a string"},
           Case{R"([{"sha256":")" + h + R"(","user":"a\nb"}])", "\"user\" contains a control"},
           Case{R"([{"sha256":")" + h + R"(","user":"u","org":1}])",
                "entry 0: \"org\" must be a string"},
           Case{R"([{"sha256":")" + h + R"(","user":"u","org":"\u0007"}])",
                "\"org\" contains a control"},
           Case{R"([{"sha256":")" + h + R"(","user":"u","token":"t"}])", "unknown field \"token\""},
           Case{R"([{"sha256":")" + h + R"(","user":"u","User":"v"}])", "unknown field \"User\""},
           Case{R"([{"sha256":")" + h + R"(","user":"u","user":"v"}])",
                "\"user\" appears more than once"},
           Case{R"([{"sha256":")" + h + R"(","sha256":")" + h2 + R"(","user":"u"}])",
                "\"sha256\" appears more than once"},
           Case{"[" + entry("a", "u") + "," + entry("b", "v") + "," + entry("a", "w") + "]",
                "entry 2: the same \"sha256\" as entry 0"},
           // The same hash in another case is the same token.
           Case{"[" + entry("t", "u") + R"(,{"sha256":")" + sha256_hex("t", true) +
                    R"(","user":"v"}])",
                "entry 1: the same \"sha256\" as entry 0"},
       }) {
    CAPTURE(c.json);
    std::string message = parse_error(c.json);
    CAPTURE(message);
    CHECK(message.find(c.says) != std::string::npos);
  }
}

TEST_CASE("auth tokens: load names the path") {
  dorm::testing::TempDir dir;
  auto missing = TokenSet::load(dir / "nope.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::io_error);
  CHECK(missing.error().message.find(dir / "nope.json") != std::string::npos);

  auto directory = TokenSet::load(dir.path().string());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.error().code == ErrorCode::io_error);

  // A FIFO would block a plain open until a writer came (on SIGHUP, in the signal thread).
  REQUIRE(mkfifo((dir / "fifo.json").c_str(), 0600) == 0);
  auto fifo = TokenSet::load(dir / "fifo.json");
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.error().message.find("is not a regular file") != std::string::npos);

  write_file(dir / "bad.json", "[1]");
  auto bad = TokenSet::load(dir / "bad.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::invalid_argument);
  CHECK(bad.error().message.find(dir / "bad.json") != std::string::npos);
  CHECK(bad.error().message.find("entry 0") != std::string::npos);

  write_file(dir / "good.json", "[" + entry("t", "u") + "]");
  auto good = TokenSet::load(dir / "good.json");
  REQUIRE(good.ok());
  CHECK(good->authenticate("t") == Identity{"u", ""});
}

TEST_CASE("auth tokens: reload picks up a new file and keeps the old set on a bad one") {
  dorm::testing::TempDir dir;
  const std::string path = dir / "tokens.json";
  CHECK_FALSE(AuthTokens::open(path).ok());  // no file yet

  write_file(path, "[" + entry("one", "alice") + "]");
  auto opened = AuthTokens::open(path);
  REQUIRE(opened.ok());
  AuthTokens& tokens = **opened;
  CHECK(tokens.path() == path);
  CHECK(tokens.authenticate("one") == Identity{"alice", ""});
  CHECK_FALSE(tokens.authenticate("two"));

  write_file(path, "[" + entry("two", "bob", "org") + "]");
  REQUIRE(tokens.reload().ok());
  CHECK_FALSE(tokens.authenticate("one"));  // revoked
  CHECK(tokens.authenticate("two") == Identity{"bob", "org"});

  std::shared_ptr<const TokenSet> before = tokens.current();
  write_file(path, "[" + entry("three", "carol") + ",");  // truncated mid-write
  auto failed = tokens.reload();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == ErrorCode::invalid_argument);
  CHECK(failed.error().message.find(path) != std::string::npos);
  CHECK(tokens.current() == before);
  CHECK(tokens.authenticate("two") == Identity{"bob", "org"});
  CHECK_FALSE(tokens.authenticate("three"));

  std::filesystem::remove(path);
  auto gone = tokens.reload();
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ErrorCode::io_error);
  CHECK(tokens.authenticate("two") == Identity{"bob", "org"});

  write_file(path, "[]");
  REQUIRE(tokens.reload().ok());
  CHECK_FALSE(tokens.authenticate("two"));
}

TEST_CASE("auth tokens: authenticate runs concurrently with reload") {
  dorm::testing::TempDir dir;
  const std::string path = dir / "tokens.json";
  const std::string both = "[" + entry("stable", "s") + "," + entry("a", "x") + "]";
  const std::string other = "[" + entry("stable", "s") + "," + entry("b", "y") + "]";
  write_file(path, both);
  auto opened = AuthTokens::open(path);
  REQUIRE(opened.ok());
  AuthTokens& tokens = **opened;

  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (tokens.authenticate("stable") != Identity{"s", ""}) ++failures;
      }
    });
  }
  for (int i = 0; i < 50; ++i) {
    write_file(path, i % 2 ? both : other);
    CHECK(tokens.reload().ok());
  }
  stop = true;
  for (auto& r : readers) r.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("auth tokens: the Bearer scheme") {
  CHECK(bearer_token("Bearer abc") == "abc");
  CHECK(bearer_token("bearer abc") == "abc");
  CHECK(bearer_token("BEARER abc") == "abc");
  CHECK(bearer_token("bEaReR abc") == "abc");
  CHECK(bearer_token("Bearer    abc") == "abc");
  CHECK(bearer_token("Bearer abc  \t") == "abc");
  CHECK(bearer_token("  Bearer abc") == "abc");
  CHECK(bearer_token("Bearer a-._~+/=!x") == "a-._~+/=!x");
  for (std::string_view no : {"", "Bearer", "Bearer ", "Bearer    ", "Bearerabc", "Basic abc",
                              "Bearer\tabc", "Bearer a b", "Token abc", "abc", "Bearer a\x01",
                              "Bearer \xc3\xa9", "Bearer a,Bearer b", "Bearer: abc"}) {
    CAPTURE(no);
    CHECK_FALSE(bearer_token(no));
  }
}
