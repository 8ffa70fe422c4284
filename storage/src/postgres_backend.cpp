#include "dorm/storage/postgres_backend.hpp"

#include "postgres_internal.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

namespace dorm::storage {
namespace {

using namespace pg;

// A commit that deadlocks with another (two batches writing the same keys in different
// orders) or fails serialization is rolled back whole by the server: run it again.
constexpr int kCommitAttempts = 5;

// Whether `name` may name the table: a lower-case SQL identifier that needs no quoting.
bool plain_identifier(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z'))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

bool retryable(const PGresult* result) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string_view s = state ? state : "";
  return s == "40001" || s == "40P01";  // serialization_failure, deadlock_detected
}

// The net effect of a batch, which applying its operations in order leaves: delete every
// range, then apply the last put or delete of each key that came after the last range
// covering it. Keys come out sorted, so concurrent commits lock rows in one order.
struct NetEffect {
  std::vector<std::pair<std::string_view, std::string_view>> ranges;
  std::map<std::string_view, std::optional<std::string_view>> keys;  // nullopt: delete

  explicit NetEffect(const WriteBatch& batch) {
    for (const auto op : batch.ops()) {
      switch (op.kind) {
        case WriteBatch::Kind::put: keys.insert_or_assign(op.key, op.value); break;
        case WriteBatch::Kind::del: keys.insert_or_assign(op.key, std::nullopt); break;
        case WriteBatch::Kind::delete_range:
          if (op.key < op.value) {
            keys.erase(keys.lower_bound(op.key), keys.lower_bound(op.value));
            ranges.emplace_back(op.key, op.value);
          }
          break;
      }
    }
  }
};

}  // namespace

Result<PostgresBackend::Settings> PostgresBackend::settings_from(const StorageUri& uri) {
  Settings settings;
  settings.durability = uri.durability;
  std::string libpq_query;
  for (const auto& [name, value] : uri.options) {
    if (name == "table") {
      if (!plain_identifier(value)) {
        return Error{ErrorCode::invalid_argument,
                     "table must be a lower-case SQL identifier of 1-63 characters "
                             "(letters a-z, digits, '_'; not starting with a digit), not '" +
                         value + "'"};
      }
      settings.table = value;
    } else if (name == "shared") {
      if (value != "true" && value != "false") {
        return Error{ErrorCode::invalid_argument, "shared must be true or false, not '" + value + "'"};
      }
      settings.shared = value == "true";
    } else if (name == "pool" || name == "lock_wait") {
      const bool pool = name == "pool";
      const long low = pool ? 1 : 0;
      const long high = pool ? 64 : 3600;
      long n = -1;
      bool digits = !value.empty() && value.size() <= 6 &&
                    std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) n = std::stol(value);
      if (n < low || n > high) {
        return Error{ErrorCode::invalid_argument,
                     name + " must be a whole number from " + std::to_string(low) +
                         " to " + std::to_string(high) + (pool ? " (connections)" : " (seconds)") +
                         ", not '" + value + "'"};
      }
      if (pool) {
        settings.pool = static_cast<std::size_t>(n);
      } else {
        settings.lock_wait = std::chrono::seconds(n);
      }
    } else {
      libpq_query += (libpq_query.empty() ? "?" : "&") + name + "=" + value;
    }
  }
  settings.conninfo = "postgresql:" + uri.path + libpq_query;
  // libpq parses its own URI: an unknown parameter or a malformed authority is its error.
  char* message = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(settings.conninfo.c_str(), &message);
  if (!parsed) {
    std::string why = trimmed_message(message);
    PQfreemem(message);
    return Error{ErrorCode::invalid_argument, why};
  }
  PQconninfoFree(parsed);
  return settings;
}

PostgresBackend::PostgresBackend(Settings settings, OpenMode mode)
    : settings_(std::move(settings)), mode_(mode) {}

PostgresBackend::~PostgresBackend() {
  idle_.clear();
  // The owner lock is released here, before the session ends: closing the connection only
  // tells the server to end it, and the server drops the session's locks when its backend
  // process gets to it, which can be after the next opener (this process restarting, a
  // lone owner after the last node) was refused as busy.
  if (owner_ && !owner_->broken()) {
    (void)owner_->exec("SELECT pg_advisory_unlock_all()", description_ + ": releasing the owner lock");
  }
  owner_.reset();
}

Result<std::unique_ptr<PostgresBackend::Connection>> PostgresBackend::connect_one(bool prepare) {
  // application_name lets an operator see dorm's sessions in pg_stat_activity.
  const char* names[] = {"dbname", "fallback_application_name", nullptr};
  const char* values[] = {settings_.conninfo.c_str(), "dorm", nullptr};
  PGconn* raw = PQconnectdbParams(names, values, 1);
  if (!raw) return Error{ErrorCode::internal, "libpq could not allocate a connection"};
  auto c = std::make_unique<Connection>(raw);
  if (PQstatus(raw) != CONNECTION_OK) {
    return Error{ErrorCode::unavailable,
                 "cannot connect to PostgreSQL for " + description_ + ": " +
                     trimmed_message(PQerrorMessage(raw))};
  }
  // Notices (e.g. "relation already exists, skipping") are not for dorm's stderr.
  PQsetNoticeProcessor(raw, [](void*, const char*) {}, nullptr);
  if (PQserverVersion(raw) < 110000) {
    return Error{ErrorCode::invalid_argument,
                 description_ + ": PostgreSQL " + std::to_string(PQserverVersion(raw) / 10000) +
                     " is too old (dorm needs 11 or newer)"};
  }
  std::string session;
  if (settings_.durability == Durability::fsync) session += "SET synchronous_commit = on;";
  if (mode_ == OpenMode::read_only) session += "SET default_transaction_read_only = on;";
  if (!session.empty()) {
    if (auto r = c->exec(session, description_ + ": setting up a session"); !r) {
      return std::move(r).error();
    }
  }
  if (!prepare) return c;
  // The table is found through the connection's search_path, as any other client of the
  // database would find it ("$user", then public, unless the operator set otherwise).
  const std::string t = "\"" + settings_.table + "\"";
  struct Statement {
    const char* name;
    std::string sql;
    std::vector<Oid> types;  // of its parameters, in order
  };
  const Oid key = kByteaOid, keys = kByteaArrayOid, limit = kInt8Oid;
  const Statement statements[] = {
      {"get", "SELECT v FROM " + t + " WHERE k = $1", {key}},
      {"get_many", "SELECT k, v FROM " + t + " WHERE k = ANY($1)", {keys}},
      {"scan_f", "SELECT k, v FROM " + t + " WHERE k >= $1 ORDER BY k LIMIT $2", {key, limit}},
      {"scan_fu", "SELECT k, v FROM " + t + " WHERE k >= $1 AND k < $3 ORDER BY k LIMIT $2",
       {key, limit, key}},
      {"scan_r", "SELECT k, v FROM " + t + " WHERE k >= $1 ORDER BY k DESC LIMIT $2",
       {key, limit}},
      {"scan_ru", "SELECT k, v FROM " + t + " WHERE k >= $1 AND k < $3 ORDER BY k DESC LIMIT $2",
       {key, limit, key}},
      {"del_range", "DELETE FROM " + t + " WHERE k >= $1 AND k < $2", {key, key}},
      {"del_keys", "DELETE FROM " + t + " WHERE k = ANY($1)", {keys}},
      {"upsert",
       "INSERT INTO " + t + " (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
       "ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
       {keys, keys}},
  };
  const Oid text = kTextOid, number = kInt8Oid, numbers = kInt8ArrayOid;
  const Statement lease_statements[] = {
      {"check_lease", "SELECT dorm_check_lease($1, $2, $3)", {text, key, number}},
      {"lease_acquire",
       "INSERT INTO dorm_leases AS l (store, object_id, node_id, fencing_token, expires_at) "
       "VALUES ($1, $2, $3, nextval('dorm_fencing_tokens'), to_timestamp($5 / 1000.0)) "
       "ON CONFLICT (store, object_id) DO UPDATE SET node_id = EXCLUDED.node_id, "
       "fencing_token = EXCLUDED.fencing_token, expires_at = EXCLUDED.expires_at "
       "WHERE l.node_id = EXCLUDED.node_id OR l.expires_at <= to_timestamp($4 / 1000.0) "
       "RETURNING l.fencing_token",
       {text, key, text, limit, number}},
      {"lease_holder",
       "SELECT l.node_id, coalesce(n.address, ''), l.fencing_token, "
       "(extract(epoch FROM l.expires_at) * 1000)::bigint, "
       "coalesce((extract(epoch FROM n.heartbeat_at) * 1000)::bigint, 0) FROM dorm_leases l "
       "LEFT JOIN dorm_nodes n ON n.store = l.store AND n.node_id = l.node_id "
       "WHERE l.store = $1 AND l.object_id = $2",
       {text, key}},
      {"lease_renew",
       "UPDATE dorm_leases l SET expires_at = to_timestamp($5 / 1000.0) "
       "FROM unnest($3::bytea[], $4::bigint[]) AS h(o, t) "
       "WHERE l.store = $1 AND l.node_id = $2 AND l.object_id = h.o AND l.fencing_token = h.t "
       "RETURNING l.object_id",
       {text, text, keys, numbers, number}},
      {"lease_release",
       "DELETE FROM dorm_leases WHERE store = $1 AND object_id = $2 AND fencing_token = $3",
       {text, key, number}},
      {"node_announce",
       "INSERT INTO dorm_nodes AS n (store, node_id, address, heartbeat_at) "
       "VALUES ($1, $2, $3, to_timestamp($4 / 1000.0)) ON CONFLICT (store, node_id) DO UPDATE "
       "SET address = EXCLUDED.address, heartbeat_at = EXCLUDED.heartbeat_at",
       {text, text, text, number}},
      {"node_list",
       "SELECT node_id, address, (extract(epoch FROM heartbeat_at) * 1000)::bigint "
       "FROM dorm_nodes WHERE store = $1 ORDER BY node_id",
       {text}},
      {"node_retire",
       "WITH gone AS (DELETE FROM dorm_leases WHERE store = $1 AND node_id = $2) "
       "DELETE FROM dorm_nodes WHERE store = $1 AND node_id = $2",
       {text, text}},
  };
  for (const auto& statement : statements) {
    PgResult r(PQprepare(raw, statement.name, statement.sql.c_str(),
                         static_cast<int>(statement.types.size()), statement.types.data()));
    if (!r || !ok_status(r.get())) {
      return pg_error(r.get(), raw, description_ + ": preparing " + statement.name);
    }
  }
  if (mode_ == OpenMode::read_write) {
    for (const auto& statement : lease_statements) {
      PgResult r(PQprepare(raw, statement.name, statement.sql.c_str(),
                           static_cast<int>(statement.types.size()), statement.types.data()));
      if (!r || !ok_status(r.get())) {
        return pg_error(r.get(), raw, description_ + ": preparing " + statement.name);
      }
    }
  }
  return c;
}

Result<std::unique_ptr<PostgresBackend>> PostgresBackend::open(const Settings& settings,
                                                               OpenMode mode) {
  std::unique_ptr<PostgresBackend> b(new PostgresBackend(settings, mode));

  // The description: what libpq will connect to, never the password.
  b->description_ = "postgres:";
  {
    PQconninfoOption* parsed = PQconninfoParse(settings.conninfo.c_str(), nullptr);
    if (!parsed) {
      return Error{ErrorCode::invalid_argument, "cannot parse '" + settings.conninfo + "'"};
    }
    std::map<std::string, std::string> fields;
    for (auto* o = parsed; o->keyword; ++o) {
      if (o->val && *o->val) fields[o->keyword] = o->val;
    }
    PQconninfoFree(parsed);
    b->description_ += "//" + (fields.count("user") ? fields["user"] + "@" : std::string()) +
                       fields["host"] + (fields.count("port") ? ":" + fields["port"] : "") + "/" +
                       fields["dbname"] + "?table=" + settings.table;
  }

  // The first connection checks the server and, for an owner, holds the lock.
  auto first = b->connect_one(false);
  if (!first) return std::move(first).error();
  Connection& c = **first;
  if (settings.durability == Durability::fsync) {
    auto fsync = c.exec("SHOW fsync", b->description_ + ": reading the server's fsync");
    if (!fsync) return std::move(fsync).error();
    if (std::string_view(PQgetvalue(fsync->get(), 0, 0)) != "on") {
      return Error{ErrorCode::invalid_argument,
                   b->description_ +
                       ": durability=fsync needs a server running with fsync = on (this one "
                       "has it off, so a commit would not survive a power loss)"};
    }
  }
  {
    auto schema = c.exec("SELECT current_schema()", b->description_ + ": reading the schema");
    if (!schema) return std::move(schema).error();
    if (PQgetisnull(schema->get(), 0, 0)) {
      return Error{ErrorCode::invalid_argument,
                   b->description_ + ": the connection has no schema to keep the table in "
                                     "(its search_path names none that exists)"};
    }
    b->store_ = std::string(PQgetvalue(schema->get(), 0, 0)) + "." + settings.table;
  }
  if (mode == OpenMode::read_write) {
    // Shared nodes hold the owner lock in shared mode: together they exclude a process that
    // would own the store alone (and write without leases), and it excludes them.
    auto taken = b->take_owner_lock(c, settings.lock_wait.count() > 0);
    if (!taken) return std::move(taken).error();
    if (auto created = b->create_schema(c); !created) return created.error();
    if (!settings.shared) {
      // A new owner token: an earlier owner that lost the lock sees it moved and stops.
      const char* values[] = {b->store_.c_str()};
      PgResult token(PQexecParams(c.get(),
                                  "INSERT INTO dorm_owners VALUES ($1, 1) ON CONFLICT (store) "
                                  "DO UPDATE SET token = dorm_owners.token + 1 RETURNING token",
                                  1, nullptr, values, nullptr, nullptr, 0));
      if (!token || !ok_status(token.get())) {
        return pg_error(token.get(), c.get(), b->description_ + ": taking an owner token");
      }
      b->token_ = PQgetvalue(token.get(), 0, 0);
    }
    b->owner_ = std::move(first).value();
  } else {
    std::string name = "\"" + settings.table + "\"";
    const char* values[] = {name.c_str()};
    PgResult r(PQexecParams(c.get(), "SELECT to_regclass($1) IS NOT NULL", 1, nullptr, values,
                            nullptr, nullptr, 0));
    if (!r || !ok_status(r.get())) {
      return pg_error(r.get(), c.get(), b->description_ + ": looking for the table");
    }
    if (std::string_view(PQgetvalue(r.get(), 0, 0)) != "t") {
      return Error{ErrorCode::not_found,
                   b->description_ + ": no such store (the table does not exist)"};
    }
  }
  // One pooled connection now, so a statement the server refuses shows up at open.
  auto pooled = b->checkout();
  if (!pooled) return std::move(pooled).error();
  return b;
}

Result<void> PostgresBackend::create_schema(Connection& c) {
  // Under a transaction-level advisory lock: CREATE ... IF NOT EXISTS and CREATE OR REPLACE
  // are not safe against the same statements in another session at the same moment, which
  // is how the nodes of a cluster start.
  const std::string sql =
      "BEGIN; "
      "SELECT pg_advisory_xact_lock(hashtextextended('dorm:schema', 0)); "
      "CREATE TABLE IF NOT EXISTS \"" + settings_.table + "\" (k bytea PRIMARY KEY, v bytea NOT NULL); "
      "CREATE TABLE IF NOT EXISTS dorm_owners (store text PRIMARY KEY, token bigint NOT NULL); "
      "CREATE TABLE IF NOT EXISTS dorm_nodes (store text, node_id text, address text NOT NULL, "
      "  heartbeat_at timestamptz NOT NULL, PRIMARY KEY (store, node_id)); "
      "CREATE TABLE IF NOT EXISTS dorm_leases (store text, object_id bytea, node_id text NOT NULL, "
      "  fencing_token bigint NOT NULL, expires_at timestamptz NOT NULL, "
      "  PRIMARY KEY (store, object_id)); "
      "CREATE SEQUENCE IF NOT EXISTS dorm_fencing_tokens; "
      // The first statement of every leased commit: holds the lease row until the commit
      // ends, or fails the transaction (SQLSTATE DRM01) when the token is not current.
      "CREATE OR REPLACE FUNCTION dorm_check_lease(s text, o bytea, t bigint) RETURNS void "
      "LANGUAGE plpgsql AS $body$ BEGIN "
      "  PERFORM 1 FROM dorm_leases WHERE store = s AND object_id = o AND fencing_token = t "
      "    FOR SHARE; "
      "  IF NOT FOUND THEN "
      "    RAISE EXCEPTION 'the lease of this object moved on (fencing token % is not current)', t "
      "      USING ERRCODE = 'DRM01'; "
      "  END IF; "
      "END $body$; "
      "COMMIT";
  auto created = c.exec(sql, description_ + ": creating the tables");
  if (!created) {
    if (PQtransactionStatus(c.get()) != PQTRANS_IDLE) PgResult(PQexec(c.get(), "ROLLBACK"));
    return std::move(created).error();
  }
  return {};
}

Error PostgresBackend::fenced_error() const {
  return Error{ErrorCode::fenced,
               description_ + ": this handle lost its ownership (its lock went with its "
                              "PostgreSQL session, and another owner took the store since)"};
}

Result<void> PostgresBackend::confirm_owner() {
  std::lock_guard lock(owner_mutex_);
  if (fenced_) return fenced_error();
  if (!owner_->broken()) {
    PgResult r(PQexec(owner_->get(), "SELECT 1"));
    if (r && ok_status(r.get())) return {};
  }
  // The owner's session is gone (the server restarted, or dropped it), and the lock with
  // it. Take it back if nobody else did; if somebody did, even briefly, their token moved.
  auto c = connect_one(false);
  if (!c) return std::move(c).error();
  auto taken = take_owner_lock(**c, false);
  if (!taken && taken.error().code != ErrorCode::busy) return taken;
  bool ours = taken.ok();
  if (ours) {
    const char* values[] = {store_.c_str()};
    PgResult r(PQexecParams((*c)->get(), "SELECT token::text FROM dorm_owners WHERE store = $1",
                            1, nullptr, values, nullptr, nullptr, 0));
    if (!r || !ok_status(r.get())) {
      return pg_error(r.get(), (*c)->get(), description_ + ": reading the owner token");
    }
    ours = PQntuples(r.get()) == 1 && token_ == PQgetvalue(r.get(), 0, 0);
  }
  if (!ours) {
    fenced_ = true;  // for good: the store is someone else's now
    return fenced_error();
  }
  owner_ = std::move(c).value();
  return {};
}

Result<void> PostgresBackend::take_owner_lock(Connection& c, bool wait) {
  const std::string key = "dorm:" + settings_.table + "@";
  const char* values[] = {key.c_str()};
  if (wait) {
    auto set = c.exec("SET lock_timeout = '" + std::to_string(settings_.lock_wait.count()) + "s'",
                      description_ + ": setting lock_timeout");
    if (!set) return std::move(set).error();
  }
  const std::string lock = settings_.shared ? "pg_advisory_lock_shared" : "pg_advisory_lock";
  const std::string try_lock =
      settings_.shared ? "pg_try_advisory_lock_shared" : "pg_try_advisory_lock";
  const std::string sql =
      wait ? "SELECT " + lock + "(hashtextextended($1 || current_schema(), 0)), true"
           : "SELECT true, " + try_lock + "(hashtextextended($1 || current_schema(), 0))";
  PgResult r(PQexecParams(c.get(), sql.c_str(), 1, nullptr, values, nullptr, nullptr, 0));
  bool locked = r && ok_status(r.get()) && std::string_view(PQgetvalue(r.get(), 0, 1)) == "t";
  if (!locked && r && PQresultStatus(r.get()) == PGRES_FATAL_ERROR &&
      classify(r.get(), c.get()) != ErrorCode::busy) {
    return pg_error(r.get(), c.get(), description_ + ": taking the owner lock");
  }
  if (wait) {
    if (auto reset = c.exec("RESET lock_timeout", description_ + ": resetting lock_timeout");
        !reset) {
      return std::move(reset).error();
    }
  }
  if (locked) return {};
  // Who holds it, for the message: an advisory lock on a bigint is (classid, objid) =
  // (high, low) 32 bits of the key.
  PgResult who(PQexecParams(
      c.get(),
      "SELECT l.pid, coalesce(a.application_name, ''), coalesce(a.client_addr::text, 'local') "
      "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
      "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
      "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      "AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1 || current_schema(), 0)",
      1, nullptr, values, nullptr, nullptr, 0));
  std::string holder;
  if (who && ok_status(who.get()) && PQntuples(who.get()) > 0) {
    holder = " (held by PostgreSQL backend pid " + std::string(PQgetvalue(who.get(), 0, 0)) +
             ", application '" + PQgetvalue(who.get(), 0, 1) + "', client " +
             PQgetvalue(who.get(), 0, 2) + ")";
  }
  return Error{ErrorCode::busy, description_ + (settings_.shared ? " is owned by a dorm process that serves it alone (not shared)"
                                                                : " is owned by another dorm process") + holder +
                                    (wait ? ", still after waiting " +
                                                std::to_string(settings_.lock_wait.count()) + " s"
                                          : "")};
}

Result<PostgresBackend::Checkout> PostgresBackend::checkout() {
  if (fenced_) return fenced_error();
  std::unique_lock lock(pool_mutex_);
  pool_returned_.wait(lock, [&] { return !idle_.empty() || open_connections_ < settings_.pool; });
  if (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return Checkout(this, std::move(c));
  }
  ++open_connections_;
  lock.unlock();
  auto c = connect_one(true);
  // A new connection may follow a server restart, which ended the owner's session and
  // its lock: an owner confirms it still owns the store before using one.
  if (c && mode_ == OpenMode::read_write && owner_ && !settings_.shared) {
    if (auto owned = confirm_owner(); !owned) c = std::move(owned).error();
  }
  if (!c) {
    lock.lock();
    --open_connections_;
    pool_returned_.notify_one();
    return std::move(c).error();
  }
  return Checkout(this, std::move(c).value());
}

void PostgresBackend::give_back(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(pool_mutex_);
  if (connection->broken()) {
    // The server went away (restart, failover, network): its idle siblings are most
    // likely broken too, and a retried read should not meet them. All go; the next
    // acquires connect afresh.
    open_connections_ -= 1 + idle_.size();
    idle_.clear();
    pool_returned_.notify_all();
    return;
  }
  if (PQtransactionStatus(connection->get()) != PQTRANS_IDLE) {
    --open_connections_;  // left mid-exchange: dropped, the next acquire connects afresh
  } else {
    idle_.push_back(std::move(connection));
  }
  pool_returned_.notify_one();
}

Result<std::optional<std::string>> PostgresBackend::get(std::string_view key) {
  return read([&](Connection& c) -> Result<std::optional<std::string>> {
    auto r = c.run("get", {key}, {}, description_ + ": get");
    if (!r) return std::move(r).error();
    if (PQntuples(r->get()) == 0) return std::optional<std::string>{};
    return std::optional<std::string>{cell(r->get(), 0, 0)};
  });
}

Result<std::vector<std::optional<std::string>>> PostgresBackend::get_many(
    std::span<const std::string> keys) {
  using Values = std::vector<std::optional<std::string>>;
  if (keys.empty()) return Values{};
  std::vector<std::string_view> views(keys.begin(), keys.end());
  const std::string array = bytea_array(views);
  return read([&](Connection& c) -> Result<Values> {
    auto r = c.run("get_many", {array}, {}, description_ + ": get_many");
    if (!r) return std::move(r).error();
    std::unordered_map<std::string, std::string> found;
    for (int row = 0; row < PQntuples(r->get()); ++row) {
      found.emplace(cell(r->get(), row, 0), cell(r->get(), row, 1));
    }
    Values out;
    out.reserve(keys.size());
    for (const auto& key : keys) {
      auto it = found.find(key);
      out.push_back(it == found.end() ? std::nullopt : std::optional<std::string>{it->second});
    }
    return out;
  });
}

Result<std::vector<KeyValue>> PostgresBackend::scan(const ScanOptions& options) {
  if (auto ok = options.validate(); !ok) return std::move(ok).error();
  auto bounds = options.bounds();
  if (bounds.empty()) return std::vector<KeyValue>{};
  const char* statement = options.reverse ? (bounds.upper ? "scan_ru" : "scan_r")
                                          : (bounds.upper ? "scan_fu" : "scan_f");
  const std::string limit = int8_binary(options.limit);
  std::vector<std::string_view> params{bounds.lower, limit};
  if (bounds.upper) params.push_back(*bounds.upper);
  // LIMIT NULL is no limit.
  std::vector<bool> nulls{false, options.limit == 0};
  return read([&](Connection& c) -> Result<std::vector<KeyValue>> {
    auto r = c.run(statement, params, nulls, description_ + ": scan");
    if (!r) return std::move(r).error();
    std::vector<KeyValue> out;
    out.reserve(static_cast<std::size_t>(PQntuples(r->get())));
    for (int row = 0; row < PQntuples(r->get()); ++row) {
      out.push_back(KeyValue{cell(r->get(), row, 0), cell(r->get(), row, 1)});
    }
    return out;
  });
}

Result<void> PostgresBackend::commit(const WriteBatch& batch) {
  return commit_batch(batch, nullptr, 0);
}

Result<void> PostgresBackend::commit_leased(const WriteBatch& batch, std::string_view object,
                                            std::uint64_t token) {
  return commit_batch(batch, &object, token);
}

Result<void> PostgresBackend::commit_batch(const WriteBatch& batch, const std::string_view* object,
                                           std::uint64_t token) {
  if (mode_ == OpenMode::read_only) {
    return Error{ErrorCode::read_only, description_ + " is open read-only"};
  }
  if (auto ok = batch.validate(); !ok) return ok;
  // An empty leased batch still checks the lease: its caller learns whether it holds it.
  if (batch.empty() && !object) return {};
  NetEffect net(batch);
  const std::string token_param = int8_binary(token);
  std::vector<std::string_view> deleted, put_keys, put_values;
  for (const auto& [key, value] : net.keys) {
    if (value) {
      put_keys.push_back(key);
      put_values.push_back(*value);
    } else {
      deleted.push_back(key);
    }
  }
  const std::string deleted_array = deleted.empty() ? std::string() : bytea_array(deleted);
  const std::string keys_array = put_keys.empty() ? std::string() : bytea_array(put_keys);
  const std::string values_array = put_keys.empty() ? std::string() : bytea_array(put_values);

  for (int attempt = 1;; ++attempt) {
    auto checkout = this->checkout();
    if (!checkout) return std::move(checkout).error();
    Connection& c = **checkout;
    PGconn* conn = c.get();
    // One pipeline, one round trip: BEGIN, the deletes, the upsert, COMMIT, Sync.
    if (PQenterPipelineMode(conn) != 1) {
      return Error{ErrorCode::unavailable, description_ + ": commit: " +
                                               trimmed_message(PQerrorMessage(conn))};
    }
    int sent = 0;
    bool queued = c.send_plain("BEGIN");
    ++sent;
    if (object) {
      queued = queued && c.send("check_lease", {store_, *object, token_param});
      ++sent;
    }
    for (const auto& [begin, end] : net.ranges) {
      queued = queued && c.send("del_range", {begin, end});
      ++sent;
    }
    if (!deleted.empty()) {
      queued = queued && c.send("del_keys", {deleted_array});
      ++sent;
    }
    if (!put_keys.empty()) {
      queued = queued && c.send("upsert", {keys_array, values_array});
      ++sent;
    }
    queued = queued && c.send_plain("COMMIT");
    ++sent;
    queued = queued && PQpipelineSync(conn) == 1;
    if (!queued) {
      // The connection is left mid-pipeline, so the checkout drops it. Nothing was committed:
      // COMMIT never reached the server.
      return Error{ErrorCode::unavailable, description_ + ": commit: " +
                                               trimmed_message(PQerrorMessage(conn))};
    }
    PgResult failure;
    bool lost = false;
    for (int i = 0; i < sent && !lost; ++i) {
      PgResult r(PQgetResult(conn));
      if (!r) {
        lost = true;
        break;
      }
      if (PQresultStatus(r.get()) == PGRES_FATAL_ERROR) {
        if (!failure) failure = std::move(r);
        if (c.broken()) lost = true;
      }
      if (!lost) PgResult end(PQgetResult(conn));  // each statement's results end with NULL
    }
    if (!lost) {
      PgResult sync(PQgetResult(conn));
      lost = !sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC;
    }
    if (lost || c.broken()) {
      // The outcome is unknown if COMMIT had been sent: the contract lets a failed commit
      // be durable, and callers tolerate it.
      return Error{ErrorCode::unavailable,
                   description_ + ": commit: the connection to PostgreSQL was lost: " +
                       trimmed_message(PQerrorMessage(conn))};
    }
    PQexitPipelineMode(conn);
    if (!failure) return {};
    if (PQtransactionStatus(conn) != PQTRANS_IDLE) PgResult(PQexec(conn, "ROLLBACK"));
    if (!retryable(failure.get()) || attempt == kCommitAttempts) {
      return pg_error(failure.get(), conn, description_ + ": commit");
    }
  }
}

Result<std::string> PostgresBackend::synchronous_commit() {
  return read([&](Connection& c) -> Result<std::string> {
    auto r = c.exec("SHOW synchronous_commit", description_ + ": SHOW synchronous_commit");
    if (!r) return std::move(r).error();
    return std::string(PQgetvalue(r->get(), 0, 0));
  });
}

std::string PostgresBackend::describe() const { return description_; }

Result<CopyStats> PostgresBackend::backup_to(const std::string&) {
  return Error{ErrorCode::not_supported,
               description_ + " is backed up with PostgreSQL's own tools (pg_dump --table=" +
                   settings_.table + ", or base backups with WAL archiving), not dorm backup"};
}

}  // namespace dorm::storage
