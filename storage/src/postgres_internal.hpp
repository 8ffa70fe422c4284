// What postgres_backend.cpp and postgres_leases.cpp share: libpq helpers, a pooled
// connection, and the checkout that returns it to the pool.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/storage/postgres_backend.hpp"

namespace dorm::storage::pg {

constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kByteaArrayOid = 1001;
constexpr Oid kInt8ArrayOid = 1016;
constexpr Oid kTextOid = 25;

inline void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

// PostgreSQL's binary array format for a one-dimensional array without NULLs whose
// elements, of type `element`, are already in binary form.
inline std::string binary_array(const std::vector<std::string_view>& items, Oid element) {
  std::string out;
  std::size_t size = 20;
  for (auto item : items) size += 4 + item.size();
  out.reserve(size);
  put_u32(out, items.empty() ? 0 : 1);  // dimensions
  put_u32(out, 0);                      // no NULLs
  put_u32(out, element);
  if (!items.empty()) {
    put_u32(out, static_cast<std::uint32_t>(items.size()));
    put_u32(out, 1);  // lower bound
  }
  for (auto item : items) {
    put_u32(out, static_cast<std::uint32_t>(item.size()));
    out.append(item);
  }
  return out;
}

// A bytea[]: the parameter we send for key and value lists.
inline std::string bytea_array(const std::vector<std::string_view>& items) {
  return binary_array(items, kByteaOid);
}

inline std::string int8_binary(std::uint64_t v) {
  std::string out;
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
  put_u32(out, static_cast<std::uint32_t>(v));
  return out;
}

// A big-endian int8 as PostgreSQL sends it in binary results.
inline std::uint64_t int8_value(const char* bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// What a failed statement means to dorm's callers, by SQLSTATE class.
inline ErrorCode classify(const PGresult* result, const PGconn* conn) {
  if (PQstatus(conn) == CONNECTION_BAD) return ErrorCode::unavailable;
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string_view s = state ? state : "";
  if (s == "53100") return ErrorCode::no_space;           // disk_full
  if (s == "54000") return ErrorCode::limit_exceeded;     // e.g. a key too long for the index
  if (s == "25006") return ErrorCode::read_only;          // read_only_sql_transaction
  if (s == "55P03") return ErrorCode::busy;
  if (s == "DRM01") return ErrorCode::fenced;           // dorm_check_lease: the lease moved on               // lock_not_available
  if (s.starts_with("08") || s.starts_with("57P")) return ErrorCode::unavailable;
  if (s == "XX001" || s == "XX002") return ErrorCode::corruption;
  return ErrorCode::io_error;
}

inline std::string trimmed_message(const char* text) {
  std::string out = text ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? "no message from libpq" : out;
}

inline Error pg_error(const PGresult* result, const PGconn* conn, const std::string& what) {
  const char* text = result ? PQresultErrorMessage(result) : nullptr;
  if (!text || !*text) text = PQerrorMessage(conn);
  return Error{classify(result, conn), what + ": " + trimmed_message(text)};
}

inline bool ok_status(const PGresult* r) {
  auto s = PQresultStatus(r);
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

inline std::string cell(const PGresult* r, int row, int column) {
  return std::string(PQgetvalue(r, row, column),
                     static_cast<std::size_t>(PQgetlength(r, row, column)));
}

}  // namespace dorm::storage::pg

namespace dorm::storage {

using namespace pg;  // the classes below are written in its terms

class PostgresBackend::Connection {
 public:
  explicit Connection(PGconn* conn) : conn_(conn) {}
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  PGconn* get() const { return conn_; }
  bool broken() const { return PQstatus(conn_) == CONNECTION_BAD; }

  // Runs `sql` (no parameters, text results).
  Result<PgResult> exec(const std::string& sql, const std::string& what) {
    PgResult r(PQexec(conn_, sql.c_str()));
    if (!r || !ok_status(r.get())) return pg_error(r.get(), conn_, what);
    return r;
  }

  // Runs a prepared statement with binary parameters and binary results.
  Result<PgResult> run(const char* statement, const std::vector<std::string_view>& params,
                       const std::vector<bool>& null_params, const std::string& what) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats(params.size(), 1);
    for (std::size_t i = 0; i < params.size(); ++i) {
      bool null = i < null_params.size() && null_params[i];
      // A non-null pointer even for an empty value: NULL would mean SQL NULL.
      values.push_back(null ? nullptr : (params[i].empty() ? "" : params[i].data()));
      lengths.push_back(static_cast<int>(params[i].size()));
    }
    PgResult r(PQexecPrepared(conn_, statement, static_cast<int>(params.size()), values.data(),
                              lengths.data(), formats.data(), 1));
    if (!r || !ok_status(r.get())) return pg_error(r.get(), conn_, what);
    return r;
  }

  // Queues a statement in pipeline mode; false when libpq refused to queue it.
  bool send(const char* statement, const std::vector<std::string_view>& params) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats(params.size(), 1);
    for (auto p : params) {
      values.push_back(p.empty() ? "" : p.data());
      lengths.push_back(static_cast<int>(p.size()));
    }
    return PQsendQueryPrepared(conn_, statement, static_cast<int>(params.size()), values.data(),
                               lengths.data(), formats.data(), 1) == 1;
  }

  bool send_plain(const char* sql) {
    return PQsendQueryParams(conn_, sql, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  }

 private:
  PGconn* conn_;
};

class PostgresBackend::Checkout {
 public:
  Checkout(PostgresBackend* owner, std::unique_ptr<Connection> c)
      : owner_(owner), connection_(std::move(c)) {}
  Checkout(Checkout&& other) noexcept = default;
  Checkout& operator=(Checkout&&) = delete;
  ~Checkout() {
    if (owner_ && connection_) owner_->give_back(std::move(connection_));
  }
  Connection& operator*() const { return *connection_; }
  Connection* operator->() const { return connection_.get(); }

 private:
  PostgresBackend* owner_;
  std::unique_ptr<Connection> connection_;
};

template <class F>
auto PostgresBackend::read(F&& f) -> decltype(f(std::declval<Connection&>())) {
  // A read may run again: once, when the connection it got had broken meanwhile (say the
  // server restarted), on a fresh one.
  for (int attempt = 0;; ++attempt) {
    auto checkout = this->checkout();
    if (!checkout) return std::move(checkout).error();
    auto r = f(**checkout);
    if (r || attempt > 0 || !(*checkout)->broken()) return r;
  }
}

}  // namespace dorm::storage
