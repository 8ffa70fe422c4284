#include "dorm/mcp/auth_tokens.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "dorm/hex.hpp"
#include "json_text.hpp"

namespace dorm::mcp {
namespace {

Error bad(std::string why) {
  return Error{ErrorCode::invalid_argument, "auth tokens: " + std::move(why)};
}

std::string entry_prefix(std::size_t index) {
  return "entry " + std::to_string(index) + ": ";
}

std::string_view view(const rapidjson::Value& string_value) {
  return {string_value.GetString(), string_value.GetStringLength()};
}

// `s` as a JSON string literal, so that an odd key shows up readably in an error.
std::string quoted(std::string_view s) {
  constexpr std::size_t kShown = 64;
  bool cut = s.size() > kShown;
  if (cut) s = s.substr(0, kShown);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buffer.GetString(), buffer.GetSize()) + (cut ? "..." : "");
}

// A token file is written by a person or a tool, so either case of hex digit is accepted.
std::optional<TokenSet::Digest> decode_sha256(std::string_view hex) {
  std::string lower(hex);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  TokenSet::Digest digest{};
  if (!hex_decode(lower, digest)) return std::nullopt;
  return digest;
}

bool has_control_character(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Reads a string field of an entry: must be a string without control characters.
Result<std::string> string_field(const rapidjson::Value& value, std::size_t index,
                                 std::string_view field) {
  std::string where = entry_prefix(index) + "\"" + std::string(field) + "\" ";
  if (!value.IsString()) return bad(where + "must be a string");
  if (has_control_character(view(value))) return bad(where + "contains a control character");
  return std::string(view(value));
}

// Token files are small; a bigger one is a mistake (or an attack on memory).
constexpr std::size_t kMaxTokenFileBytes = 16u << 20;

Result<std::string> read_file(const std::string& path) {
  // O_NONBLOCK so that a FIFO (or a device) cannot block the caller — the signal thread,
  // on SIGHUP — waiting for a writer; such a path is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return Error{ErrorCode::io_error,
                 "cannot open auth tokens file '" + path + "': " + std::strerror(errno)};
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Error{ErrorCode::io_error, "auth tokens file '" + path + "' is not a regular file"};
  }
  if (static_cast<std::size_t>(info.st_size) > kMaxTokenFileBytes) {
    ::close(fd);
    return Error{ErrorCode::io_error, "auth tokens file '" + path + "' is " + std::to_string(info.st_size) +
                                          " bytes; the limit is " + std::to_string(kMaxTokenFileBytes)};
  }
  std::string text;
  char chunk[8192];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      return Error{ErrorCode::io_error,
                   "cannot read auth tokens file '" + path + "': " + std::strerror(error)};
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > kMaxTokenFileBytes) {
      ::close(fd);
      return Error{ErrorCode::io_error, "auth tokens file '" + path + "' grew past the limit of " +
                                            std::to_string(kMaxTokenFileBytes) + " bytes while read"};
    }
  }
  ::close(fd);
  return text;
}

}  // namespace

Result<TokenSet> TokenSet::parse(std::string_view json) {
  rapidjson::Document doc;
  if (auto error = detail::parse_json(json, doc)) return bad("not valid JSON: " + *error);
  if (!doc.IsArray()) {
    return bad(
        R"(the file must be a JSON array of {"sha256": ..., "user": ..., "org": ...} objects)");
  }
  TokenSet set;
  std::map<Digest, std::size_t> seen;  // digest → index of the entry that has it
  const auto entries = doc.GetArray();
  for (rapidjson::SizeType index = 0; index < entries.Size(); ++index) {
    const rapidjson::Value& entry = entries[index];
    if (!entry.IsObject()) return bad(entry_prefix(index) + "must be a JSON object");
    const rapidjson::Value* sha256 = nullptr;
    const rapidjson::Value* user = nullptr;
    const rapidjson::Value* org = nullptr;
    for (const auto& member : entry.GetObject()) {
      std::string_view name = view(member.name);
      const rapidjson::Value** slot = name == "sha256" ? &sha256
                                      : name == "user" ? &user
                                      : name == "org"  ? &org
                                                       : nullptr;
      if (slot == nullptr) {
        return bad(entry_prefix(index) + "unknown field " + quoted(name) +
                   " (the fields are \"sha256\", \"user\" and \"org\")");
      }
      if (*slot != nullptr) {
        return bad(entry_prefix(index) + "\"" + std::string(name) + "\" appears more than once");
      }
      *slot = &member.value;
    }

    if (sha256 == nullptr) return bad(entry_prefix(index) + "\"sha256\" is missing");
    if (!sha256->IsString()) return bad(entry_prefix(index) + "\"sha256\" must be a string");
    auto digest = decode_sha256(view(*sha256));
    if (!digest) {
      return bad(entry_prefix(index) +
                 "\"sha256\" must be 64 hex digits, the SHA-256 of the token (got " +
                 std::to_string(sha256->GetStringLength()) + " characters" +
                 (sha256->GetStringLength() == 64 ? ", not all hex digits)" : ")"));
    }
    if (auto [it, inserted] = seen.emplace(*digest, index); !inserted) {
      return bad(entry_prefix(index) + "the same \"sha256\" as entry " +
                 std::to_string(it->second) + " (each token may appear once)");
    }

    if (user == nullptr) return bad(entry_prefix(index) + "\"user\" is missing");
    auto user_name = string_field(*user, index, "user");
    if (!user_name.ok()) return std::move(user_name).error();
    if (user_name->empty()) return bad(entry_prefix(index) + "\"user\" must not be empty");

    std::string org_name;
    if (org != nullptr) {
      auto read = string_field(*org, index, "org");
      if (!read.ok()) return std::move(read).error();
      org_name = std::move(read).value();
    }
    set.entries_.push_back(Entry{*digest, Identity{std::move(user_name).value(), org_name}});
  }
  return set;
}

Result<TokenSet> TokenSet::load(const std::string& path) {
  auto text = read_file(path);
  if (!text.ok()) return std::move(text).error();
  auto set = parse(*text);
  if (!set.ok()) {
    Error error = std::move(set).error();
    error.message = "'" + path + "': " + error.message;
    return error;
  }
  return set;
}

std::optional<Identity> TokenSet::authenticate(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  // Branch-free accumulation over every entry: which entry matched (at most one: hashes
  // are unique) changes neither the number of comparisons nor the work per entry.
  std::size_t match_plus_one = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    auto equal = static_cast<std::size_t>(
        CRYPTO_memcmp(digest.data(), entries_[i].sha256.data(), digest.size()) == 0);
    match_plus_one |= (i + 1) & (std::size_t{0} - equal);
  }
  if (match_plus_one == 0) return std::nullopt;
  return entries_[match_plus_one - 1].identity;
}

AuthTokens::AuthTokens(std::string path, std::shared_ptr<const TokenSet> tokens)
    : path_(std::move(path)), tokens_(std::move(tokens)) {}

Result<std::unique_ptr<AuthTokens>> AuthTokens::open(std::string path) {
  auto set = TokenSet::load(path);
  if (!set.ok()) return std::move(set).error();
  auto tokens = std::make_shared<const TokenSet>(std::move(set).value());
  return std::unique_ptr<AuthTokens>(new AuthTokens(std::move(path), std::move(tokens)));
}

Result<void> AuthTokens::reload() {
  // The file is read and parsed without the lock; only the pointer swap holds it.
  auto set = TokenSet::load(path_);
  if (!set.ok()) return std::move(set).error();
  auto fresh = std::make_shared<const TokenSet>(std::move(set).value());
  std::lock_guard lock(mutex_);
  tokens_ = std::move(fresh);
  return {};
}

std::shared_ptr<const TokenSet> AuthTokens::current() const {
  std::lock_guard lock(mutex_);
  return tokens_;
}

std::optional<Identity> AuthTokens::authenticate(std::string_view token) const {
  return current()->authenticate(token);
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  auto is_blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!authorization.empty() && is_blank(authorization.front())) authorization.remove_prefix(1);
  while (!authorization.empty() && is_blank(authorization.back())) authorization.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || authorization[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    char c = authorization[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return std::nullopt;
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.empty()) return std::nullopt;
  for (unsigned char c : token) {
    if (c < 0x21 || c > 0x7e) return std::nullopt;
  }
  return token;
}

}  // namespace dorm::mcp
