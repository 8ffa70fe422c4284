#include "dorm/runtime/keys.hpp"

#include "dorm/runtime/object_id.hpp"

namespace dorm::keys {

std::string meta(std::string_view name) {
  std::string out(1, kMeta);
  out.append(name);
  return out;
}

std::string object_prefix(std::string_view ns, std::string_view id_body) {
  std::string out(1, kObject);
  out.append(ns).push_back('\0');
  out.append(id_body);
  return out;
}

std::string index_prefix(std::string_view index) {
  std::string out(1, kIndex);
  out.append(index).push_back('\0');
  return out;
}

std::string index_entry(std::string_view index, std::string_view key) {
  return index_prefix(index).append(key);
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool valid_user_index(std::string_view name) {
  return valid_name(name) && !name.starts_with("dorm.");
}

std::optional<std::string_view> decode_meta(std::string_view key) {
  if (key.size() < 2 || key[0] != kMeta) return std::nullopt;
  return key.substr(1);
}

std::optional<ObjectKey> decode_object_key(std::string_view key) {
  if (key.empty() || key[0] != kObject) return std::nullopt;
  std::string_view rest = key.substr(1);
  auto nul = rest.find('\0');
  if (nul == std::string_view::npos || !valid_name(rest.substr(0, nul))) return std::nullopt;
  std::string_view after = rest.substr(nul + 1);
  if (after.size() < ObjectId::kBodyBytes + 1) return std::nullopt;
  ObjectKey out;
  out.ns = rest.substr(0, nul);
  out.body = after.substr(0, ObjectId::kBodyBytes);
  out.kind = after[ObjectId::kBodyBytes];
  if (out.kind != kObjectData && out.kind != kObjectAlarm) return std::nullopt;
  out.rest = after.substr(ObjectId::kBodyBytes + 1);
  return out;
}

std::optional<IndexKey> decode_index_key(std::string_view key) {
  if (key.empty() || key[0] != kIndex) return std::nullopt;
  std::string_view rest = key.substr(1);
  auto nul = rest.find('\0');
  if (nul == std::string_view::npos || !valid_name(rest.substr(0, nul))) return std::nullopt;
  return IndexKey{rest.substr(0, nul), rest.substr(nul + 1)};
}

}  // namespace dorm::keys
