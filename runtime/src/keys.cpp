#include "dorm/runtime/keys.hpp"

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

}  // namespace dorm::keys
