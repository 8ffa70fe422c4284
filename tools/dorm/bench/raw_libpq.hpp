// The baseline of `dorm bench storage --postgres`: the same operations PostgresBackend
// performs, done with libpq directly on one connection — the same table layout, the same
// prepared statements in binary, one pipelined transaction per commit — so the ratio
// against it is what dorm's layer (the pool, batch reduction, Result) costs.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dorm::bench {

class RawLibpq {
 public:
  // Connects with `conninfo` (a libpq URI) and creates `table` afresh.
  RawLibpq(const std::string& conninfo, const std::string& table, bool synchronous_commit_on);
  ~RawLibpq();
  RawLibpq(const RawLibpq&) = delete;
  RawLibpq& operator=(const RawLibpq&) = delete;

  void commit(const std::vector<std::pair<std::string, std::string>>& puts);
  bool get(const std::string& key, std::string& value);
  std::size_t scan_prefix(const std::string& prefix, const std::string& end);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::bench
