// Settings from the command line, DORM_* variables and a TOML file, on a parser shaped like
// dorm serve's: each kind of option it has (text, checked number, unit transform, flag,
// negated flag, comma list) and a program option of the parent app.
#include "settings.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using dorm::ErrorCode;
using dorm::tools::Settings;

namespace {

struct Parsed {
  std::string log_level = "info";
  std::string listen = "127.0.0.1:8808";
  int retry_ms = 500;
  std::int64_t ttl_s = 7 * 86400;
  bool reuse_port = false;
  bool reaper = true;
  std::vector<std::string> fixtures;
};

// A program with a `serve` subcommand, parsed from `args` under `environment`.
struct Program {
  CLI::App app{"test", "dorm"};
  CLI::App* serve = nullptr;
  Parsed v;
  std::unique_ptr<Settings> settings;

  Program() {
    app.fallthrough();
    app.add_option("--log-level", v.log_level)->capture_default_str();
    serve = app.add_subcommand("serve");
    serve->add_option("--listen", v.listen)->capture_default_str();
    serve->add_option("--retry-ms", v.retry_ms)->capture_default_str()->check(CLI::Range(1, 60'000));
    serve->add_option("--session-ttl", v.ttl_s)
        ->transform(CLI::AsNumberWithUnit(std::map<std::string, std::int64_t>{{"s", 1}, {"d", 86400}},
                                          CLI::AsNumberWithUnit::UNIT_OPTIONAL))
        ->default_str("7d");
    serve->add_flag("--reuse-port", v.reuse_port);
    serve->add_flag("!--no-reaper", v.reaper);
    serve->add_option("--fixtures", v.fixtures)->delimiter(',');
    settings = std::make_unique<Settings>(std::vector<CLI::App*>{&app, serve}, serve);
  }

  dorm::Result<void> run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "dorm");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return settings->apply([env](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    });
  }
};

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("dorm-settings-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
  static inline int counter = 0;
};

}  // namespace

TEST_CASE("the command line beats the environment, which beats the file, which beats defaults") {
  TempDir dir;
  auto file = dir.write("dorm.toml",
                        "listen = \"127.0.0.1:1\"\n"
                        "retry-ms = 700\n"
                        "session_ttl = \"2d\"\n"
                        "log-level = \"debug\"\n");
  Program p;
  auto applied = p.run({"serve", "--config", file, "--listen", "127.0.0.1:3"},
                       {{"DORM_LISTEN", "127.0.0.1:2"}, {"DORM_RETRY_MS", "900"}});
  REQUIRE_MESSAGE(applied, applied.error().message);
  CHECK(p.v.listen == "127.0.0.1:3");  // flag over env and file
  CHECK(p.v.retry_ms == 900);          // env over file
  CHECK(p.v.ttl_s == 2 * 86400);       // file (through the option's unit transform)
  CHECK(p.v.log_level == "debug");     // file, for an option of the parent program
  CHECK_FALSE(p.v.reuse_port);         // default

  auto toml = p.settings->effective_toml();
  INFO(toml);
  CHECK(toml.find("listen = '127.0.0.1:3'  # command line") != std::string::npos);
  CHECK(toml.find("retry-ms = 900  # DORM_RETRY_MS") != std::string::npos);
  CHECK(toml.find("# " + file + ":3") != std::string::npos);
  CHECK(toml.find("reuse-port = false  # default") != std::string::npos);
}

TEST_CASE("DORM_CONFIG names the file when --config does not") {
  TempDir dir;
  auto file = dir.write("c.toml", "retry-ms = 42\n");
  Program p;
  REQUIRE(p.run({"serve"}, {{"DORM_CONFIG", file}}));
  CHECK(p.v.retry_ms == 42);
}

TEST_CASE("flags: a negated flag set to true acts as given; env values use CLI11's flag words") {
  TempDir dir;
  auto file = dir.write("c.toml", "no-reaper = true\nreuse-port = true\n");
  Program p;
  REQUIRE(p.run({"serve", "--config", file}));
  CHECK_FALSE(p.v.reaper);
  CHECK(p.v.reuse_port);
  CHECK(p.settings->effective_toml().find("no-reaper = true  # ") != std::string::npos);

  Program q;
  REQUIRE(q.run({"serve"}, {{"DORM_NO_REAPER", "yes"}, {"DORM_REUSE_PORT", "0"}}));
  CHECK_FALSE(q.v.reaper);
  CHECK_FALSE(q.v.reuse_port);

  Program r;
  REQUIRE(r.run({"serve"}, {{"DORM_NO_REAPER", "false"}}));
  CHECK(r.v.reaper);

  Program bad;
  auto refused = bad.run({"serve"}, {{"DORM_REUSE_PORT", "maybe"}});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("DORM_REUSE_PORT: --reuse-port") == 0);
}

TEST_CASE("lists come as a TOML array or a comma-separated variable") {
  TempDir dir;
  auto file = dir.write("c.toml", "fixtures = [\"testing\", \"conformance\"]\n");
  Program p;
  REQUIRE(p.run({"serve", "--config", file}));
  CHECK(p.v.fixtures == std::vector<std::string>{"testing", "conformance"});
  Program q;
  REQUIRE(q.run({"serve"}, {{"DORM_FIXTURES", "conformance,testing"}}));
  CHECK(q.v.fixtures == std::vector<std::string>{"conformance", "testing"});
}

TEST_CASE("bad files and values are refused with their place") {
  TempDir dir;
  struct Case {
    std::string text;
    std::string message;
  };
  std::vector<Case> cases = {
      {"retry-ms = 5\nlistne = \"x\"\n", ":2: unknown key 'listne'"},
      {"config = \"other.toml\"\n", ":1: unknown key 'config' (a config file cannot name"},
      {"[serve]\nlisten = \"x\"\n", ":1: 'serve' is a table"},
      {"retry-ms = 1979-05-27\n", ":1: 'retry-ms' is a date or time"},
      {"retry-ms = [1, 2]\n", ":1: --retry-ms: takes one value, not 2"},
      {"retry-ms = 5\nretry_ms = 6\n", ":2: 'retry_ms' sets the same option as 'retry-ms' on line 1"},
      {"listen = \"127.0.0.1:9\"\nretry-ms = 0\n", ":2: --retry-ms: "},
      {"retry-ms = \n", ":1: "},  // a TOML syntax error keeps toml++'s own message
      {"fixtures = [[\"a\"]]\n", ":1: 'fixtures' holds an array inside its array"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto file = dir.write("bad.toml", c.text);
    Program p;
    auto applied = p.run({"serve", "--config", file});
    REQUIRE_FALSE(applied);
    CHECK(applied.error().code == ErrorCode::invalid_argument);
    CHECK(applied.error().message.rfind(file + c.message, 0) == 0);
  }
  Program missing;
  auto applied = missing.run({"serve", "--config", (dir.path / "absent.toml").string()});
  REQUIRE_FALSE(applied);
  CHECK(applied.error().code == ErrorCode::not_found);
}

TEST_CASE("a value from the environment is checked like the same text on the command line") {
  Program p;
  auto applied = p.run({"serve"}, {{"DORM_RETRY_MS", "0"}});
  REQUIRE_FALSE(applied);
  CHECK(applied.error().message.rfind("DORM_RETRY_MS: --retry-ms: ", 0) == 0);
  Program q;
  auto unit = q.run({"serve"}, {{"DORM_SESSION_TTL", "3 fortnights"}});
  REQUIRE_FALSE(unit);
  CHECK(unit.error().message.rfind("DORM_SESSION_TTL: --session-ttl: ", 0) == 0);
}

TEST_CASE("--print-config output read back as a config file gives the same settings") {
  TempDir dir;
  Program p;
  REQUIRE(p.run({"serve", "--print-config", "--listen", "127.0.0.1:7", "--no-reaper",
                 "--fixtures", "testing,conformance", "--session-ttl", "3d"},
                {{"DORM_RETRY_MS", "333"}}));
  CHECK(p.settings->print_requested());
  auto file = dir.write("printed.toml", p.settings->effective_toml());
  Program q;
  auto applied = q.run({"serve", "--config", file});
  REQUIRE_MESSAGE(applied, applied.error().message);
  CHECK(q.v.listen == "127.0.0.1:7");
  CHECK_FALSE(q.v.reaper);
  CHECK(q.v.fixtures == p.v.fixtures);
  CHECK(q.v.ttl_s == 3 * 86400);
  CHECK(q.v.retry_ms == 333);
  CHECK(q.v.log_level == "info");
}
