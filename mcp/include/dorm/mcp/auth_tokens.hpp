// Bearer tokens for `/mcp`: the `--auth-tokens FILE` format, checking a presented token,
// and reloading the file on SIGHUP.
//
// The file never holds a token, only the SHA-256 of each, so reading it (or a backup of
// it) does not let anyone in. It is a JSON array with one object per token:
//
//   [{"sha256": "<64 hex digits>", "user": "alice", "org": "acme"}, ...]
//
// `sha256` (upper- or lower-case hex) and `user` (a non-empty string) are required, `org`
// is optional (default ""); any other key, a repeated key, a repeated hash, or a string
// with a control character is an error that names the entry (counting from 0) and the
// field. An empty array is valid and lets nobody in. A request presents its token as
// `Authorization: Bearer <token>`; the token is hashed and compared against every entry
// in constant time per entry, and the Identity of the matching entry is who the request
// acts as. Sessions are bound to that identity.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::mcp {

// Who a request acts as. In single-user mode (no token file) every request is
// {"local", ""}.
struct Identity {
  std::string user;
  std::string org;

  friend bool operator==(const Identity&, const Identity&) = default;
};

// One parsed token file. Immutable once parsed.
class TokenSet {
 public:
  using Digest = std::array<unsigned char, 32>;

  // Parses the file format described above. Errors: invalid_argument, e.g.
  // "auth tokens: entry 2: \"sha256\" must be 64 hex digits (got 63 characters)".
  static Result<TokenSet> parse(std::string_view json);

  // Reads and parses the file at `path`. Errors: io_error naming the path if it cannot be
  // read; invalid_argument naming the path and the problem if it does not parse.
  static Result<TokenSet> load(const std::string& path);

  // The identity whose entry holds SHA-256(token), or nullopt (also for an empty token).
  // Every entry is compared with CRYPTO_memcmp and the scan never stops early, so the
  // time taken does not depend on which entry, if any, matched.
  std::optional<Identity> authenticate(std::string_view token) const;

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Digest sha256;
    Identity identity;
  };
  std::vector<Entry> entries_;
};

// The token file of a running server: authenticate() on any thread while reload() swaps
// in a new version of the file. Each authenticate() sees one whole version.
class AuthTokens {
 public:
  // Loads `path` (see TokenSet::load). The path is kept for reload().
  static Result<std::unique_ptr<AuthTokens>> open(std::string path);

  // Reads the file again. On success later authenticate() calls use the new set; on
  // failure the old set stays in force and the error (as TokenSet::load) is returned.
  // Thread-safe.
  Result<void> reload();

  // As TokenSet::authenticate on the current set. Thread-safe; never blocks on file I/O.
  std::optional<Identity> authenticate(std::string_view token) const;

  // The set in force now. Thread-safe.
  std::shared_ptr<const TokenSet> current() const;

  const std::string& path() const { return path_; }

 private:
  AuthTokens(std::string path, std::shared_ptr<const TokenSet> tokens);

  const std::string path_;
  mutable std::mutex mutex_;                // guards tokens_ (the pointer, not the set)
  std::shared_ptr<const TokenSet> tokens_;  // never null
};

// The token of an `Authorization` header value in the Bearer scheme: "Bearer" in any
// case, one or more spaces, then a token of visible ASCII characters (0x21–0x7E) with no
// spaces. Trailing spaces and tabs are ignored. nullopt for another scheme, a missing or
// empty token, or a token with a space or control character in it. The result points into
// `authorization`.
std::optional<std::string_view> bearer_token(std::string_view authorization);

}  // namespace dorm::mcp
