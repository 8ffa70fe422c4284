#include "build_info.hpp"

#include <caf/config.hpp>
#include <rocksdb/version.h>
#include <sqlite3.h>
#include <v8-version.h>

#include <boost/version.hpp>
#include <string>

#include "version.hpp"

namespace dorm::tools {
namespace {

// CAF 0.17 encodes its version as one number, 1706 for 0.17.6, and has no run-time query.
std::string caf_version() {
  constexpr int v = CAF_VERSION;
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string boost_version() {
  constexpr int v = BOOST_VERSION;
  return std::to_string(v / 100000) + "." + std::to_string(v / 100 % 1000) + "." +
         std::to_string(v % 100);
}

}  // namespace

std::string version_text() {
  std::string text = std::string("dorm ") + kVersion + " (commit " + build_commit() + ")\n";
  text += "  CAF " + caf_version() + "\n";
  text += "  RocksDB " + rocksdb::GetRocksVersionAsString(true) + "\n";
  // From the header: calling into V8 would load libnode into the server process, which
  // never runs V8 (the engine workers do, and are built against the same headers).
  text += "  V8 " + std::to_string(V8_MAJOR_VERSION) + "." + std::to_string(V8_MINOR_VERSION) +
          "." + std::to_string(V8_BUILD_NUMBER) + "." + std::to_string(V8_PATCH_LEVEL) +
          " (in the engine workers)\n";
  text += std::string("  SQLite ") + sqlite3_libversion() + "\n";
  text += "  Boost " + boost_version();
  return text;
}

}  // namespace dorm::tools
