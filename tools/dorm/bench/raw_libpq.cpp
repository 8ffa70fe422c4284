#include "raw_libpq.hpp"

#include <libpq-fe.h>

#include <stdexcept>

namespace dorm::bench {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

// A one-dimensional bytea[] in PostgreSQL's binary array format.
template <class Get>
std::string bytea_array(std::size_t n, Get get) {
  std::string out;
  put_u32(out, 1);
  put_u32(out, 0);
  put_u32(out, 17);  // bytea
  put_u32(out, static_cast<std::uint32_t>(n));
  put_u32(out, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& item = get(i);
    put_u32(out, static_cast<std::uint32_t>(item.size()));
    out += item;
  }
  return out;
}

void check(PGresult* r, PGconn* c, const char* what) {
  auto s = PQresultStatus(r);
  bool ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
  std::string message = ok ? "" : PQresultErrorMessage(r);
  PQclear(r);
  if (!ok) throw std::runtime_error(std::string(what) + ": " + message + PQerrorMessage(c));
}

}  // namespace

struct RawLibpq::Impl {
  PGconn* conn = nullptr;
};

RawLibpq::RawLibpq(const std::string& conninfo, const std::string& table,
                   bool synchronous_commit_on)
    : impl_(std::make_unique<Impl>()) {
  impl_->conn = PQconnectdb(conninfo.c_str());
  PGconn* c = impl_->conn;
  if (PQstatus(c) != CONNECTION_OK) {
    throw std::runtime_error(std::string("raw libpq: ") + PQerrorMessage(c));
  }
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  const std::string t = "\"" + table + "\"";
  check(PQexec(c, ("DROP TABLE IF EXISTS " + t).c_str()), c, "drop");
  check(PQexec(c, ("CREATE TABLE " + t + " (k bytea PRIMARY KEY, v bytea NOT NULL)").c_str()), c,
        "create");
  if (synchronous_commit_on) check(PQexec(c, "SET synchronous_commit = on"), c, "set");
  const Oid bytea = 17, array = 1001, int8 = 20;
  const Oid get_types[] = {bytea};
  const Oid scan_types[] = {bytea, int8, bytea};
  const Oid upsert_types[] = {array, array};
  check(PQprepare(c, "get", ("SELECT v FROM " + t + " WHERE k = $1").c_str(), 1, get_types), c,
        "prepare get");
  check(PQprepare(c, "scan",
                  ("SELECT k, v FROM " + t + " WHERE k >= $1 AND k < $3 ORDER BY k LIMIT $2").c_str(),
                  3, scan_types),
        c, "prepare scan");
  check(PQprepare(c, "upsert",
                  ("INSERT INTO " + t + " (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
                   "ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
                      .c_str(),
                  2, upsert_types),
        c, "prepare upsert");
}

RawLibpq::~RawLibpq() { PQfinish(impl_->conn); }

void RawLibpq::commit(const std::vector<std::pair<std::string, std::string>>& puts) {
  PGconn* c = impl_->conn;
  std::string keys = bytea_array(puts.size(), [&](std::size_t i) -> const std::string& {
    return puts[i].first;
  });
  std::string values = bytea_array(puts.size(), [&](std::size_t i) -> const std::string& {
    return puts[i].second;
  });
  const char* params[] = {keys.data(), values.data()};
  const int lengths[] = {static_cast<int>(keys.size()), static_cast<int>(values.size())};
  const int formats[] = {1, 1};
  PQenterPipelineMode(c);
  PQsendQueryParams(c, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 0);
  PQsendQueryPrepared(c, "upsert", 2, params, lengths, formats, 1);
  PQsendQueryParams(c, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0);
  PQpipelineSync(c);
  for (int i = 0; i < 3; ++i) {
    check(PQgetResult(c), c, "commit");
    PQclear(PQgetResult(c));  // the NULL that ends each statement's results
  }
  PGresult* sync = PQgetResult(c);
  bool synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  PQclear(sync);
  PQexitPipelineMode(c);
  if (!synced) throw std::runtime_error("raw libpq: no pipeline sync");
}

bool RawLibpq::get(const std::string& key, std::string& value) {
  const char* params[] = {key.data()};
  const int lengths[] = {static_cast<int>(key.size())};
  const int formats[] = {1};
  PGresult* r = PQexecPrepared(impl_->conn, "get", 1, params, lengths, formats, 1);
  bool found = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
  if (found) value.assign(PQgetvalue(r, 0, 0), static_cast<std::size_t>(PQgetlength(r, 0, 0)));
  PQclear(r);
  return found;
}

std::size_t RawLibpq::scan_prefix(const std::string& prefix, const std::string& end) {
  const char* params[] = {prefix.data(), nullptr, end.data()};
  const int lengths[] = {static_cast<int>(prefix.size()), 0, static_cast<int>(end.size())};
  const int formats[] = {1, 1, 1};
  PGresult* r = PQexecPrepared(impl_->conn, "scan", 3, params, lengths, formats, 1);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    PQclear(r);
    throw std::runtime_error("raw libpq: scan failed");
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (int row = 0; row < PQntuples(r); ++row) {
    out.emplace_back(std::string(PQgetvalue(r, row, 0), static_cast<std::size_t>(PQgetlength(r, row, 0))),
                     std::string(PQgetvalue(r, row, 1), static_cast<std::size_t>(PQgetlength(r, row, 1))));
  }
  PQclear(r);
  return out.size();
}

}  // namespace dorm::bench
