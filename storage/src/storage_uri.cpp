#include "dorm/storage/storage_uri.hpp"

#include <set>

#include "dorm/storage/postgres_backend.hpp"
#include "scheme_registry.hpp"

namespace dorm::storage {
namespace {

Error bad(std::string_view uri, std::string_view why) {
  return Error{ErrorCode::invalid_argument,
               "invalid storage URI '" + std::string(uri) + "': " + std::string(why)};
}

}  // namespace

std::string_view to_string(Scheme s) noexcept {
  switch (s) {
    case Scheme::rocksdb: return "rocksdb";
    case Scheme::sqlite: return "sqlite";
    case Scheme::memory: return "memory";
    case Scheme::postgres: return "postgres";
    case Scheme::registered: return "registered";
  }
  return "unknown";
}

std::string_view StorageUri::scheme_name() const noexcept {
  return scheme == Scheme::registered ? std::string_view(registered_scheme)
                                      : storage::to_string(scheme);
}

std::string StorageUri::to_string() const {
  std::string out{scheme_name()};
  out += ':';
  out += path;
  char separator = '?';
  auto add = [&](std::string_view name, std::string_view value) {
    out += separator;
    out += name;
    out += '=';
    out += value;
    separator = '&';
  };
  if (durability != Durability::process) add("durability", storage::to_string(durability));
  if (reserve) add("reserve", reserve->to_string());
  for (const auto& [name, value] : options) add(name, value);
  return out;
}

// "rocksdb, sqlite or memory", and the registered schemes.
std::string known_schemes() {
  auto registered = registered_storage_schemes();
  if (registered.empty()) return "rocksdb, sqlite, memory or postgres";
  std::string out = "rocksdb, sqlite, memory, postgres";
  for (std::size_t i = 0; i < registered.size(); ++i) {
    out += i + 1 == registered.size() ? " or " : ", ";
    out += registered[i];
  }
  return out;
}

Result<StorageUri> parse_storage_uri(std::string_view uri) {
  auto colon = uri.find(':');
  if (colon == std::string_view::npos) {
    return bad(uri, "expected SCHEME:PATH with scheme " + known_schemes());
  }
  std::string_view scheme = uri.substr(0, colon);
  std::string_view rest = uri.substr(colon + 1);
  std::string_view path = rest.substr(0, rest.find('?'));
  std::string_view query =
      rest.size() > path.size() ? rest.substr(path.size() + 1) : std::string_view{};
  bool has_query = rest.size() > path.size();

  StorageUri out;
  if (scheme == "rocksdb") {
    out.scheme = Scheme::rocksdb;
  } else if (scheme == "sqlite") {
    out.scheme = Scheme::sqlite;
  } else if (scheme == "memory") {
    out.scheme = Scheme::memory;
  } else if (scheme == "postgres" || scheme == "postgresql") {
    out.scheme = Scheme::postgres;
  } else if (detail::find_storage_scheme(scheme)) {
    out.scheme = Scheme::registered;
    out.registered_scheme = std::string(scheme);
  } else {
    return bad(uri,
               "unknown scheme '" + std::string(scheme) + "' (expected " + known_schemes() + ")");
  }
  if (out.scheme == Scheme::memory) {
    if (!path.empty()) return bad(uri, "memory: takes no path");
  } else if (path.empty() && out.scheme != Scheme::registered) {
    if (out.scheme == Scheme::postgres) {
      return bad(uri, "postgres: needs a server and database, e.g. postgres://dorm@localhost/dorm");
    }
    return bad(uri, std::string(scheme) + ": needs a path, e.g. " + std::string(scheme) +
                        ":./dorm-data");
  }
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return bad(uri, "the path contains a control character");
  }
  out.path = std::string(path);

  if (has_query) {
    std::set<std::string_view> seen;
    std::size_t pos = 0;
    while (true) {
      std::size_t amp = query.find('&', pos);
      std::string_view pair = query.substr(pos, amp == std::string_view::npos ? amp : amp - pos);
      if (pair.empty()) return bad(uri, "empty option (stray '?' or '&')");
      auto eq = pair.find('=');
      if (eq == std::string_view::npos) {
        return bad(uri, "option '" + std::string(pair) + "' has no '=value'");
      }
      std::string_view name = pair.substr(0, eq);
      std::string_view value = pair.substr(eq + 1);
      if (name.empty()) return bad(uri, "option '" + std::string(pair) + "' has no name");
      if (!seen.insert(name).second) {
        return bad(uri, "option '" + std::string(name) + "' is given twice");
      }
      if (name == "durability") {
        if (value == "process") {
          out.durability = Durability::process;
        } else if (value == "fsync") {
          out.durability = Durability::fsync;
        } else {
          return bad(uri, "durability must be process or fsync, not '" + std::string(value) + "'");
        }
      } else if (out.scheme == Scheme::registered || out.scheme == Scheme::postgres) {
        // Its factory reads it (and refuses it if it does not know it); postgres options
        // are checked below, once all are known.
        for (unsigned char c : pair) {
          if (c < 0x20 || c == 0x7f) return bad(uri, "an option contains a control character");
        }
        out.options.emplace_back(std::string(name), std::string(value));
      } else if (name == "reserve") {
        if (out.scheme != Scheme::rocksdb) {
          return bad(uri, "reserve applies to rocksdb: only (" + std::string(scheme) +
                              ": keeps no space reserve)");
        }
        auto reserve = ReserveSpec::parse(value);
        if (!reserve) return bad(uri, reserve.error().message);
        out.reserve = *reserve;
      } else {
        return bad(uri, "unknown option '" + std::string(name) + "' (known: durability, reserve)");
      }
      if (amp == std::string_view::npos) break;
      pos = amp + 1;
    }
  }
  if (out.scheme == Scheme::postgres) {
    if (!out.path.starts_with("//")) {
      return bad(uri, "postgres: takes a URI, postgres://[USER@]HOST[:PORT]/DATABASE");
    }
    if (auto settings = PostgresBackend::settings_from(out); !settings) {
      return bad(uri, settings.error().message);
    }
  }
  return out;
}

}  // namespace dorm::storage
