// The built-in paths of code mode's `tools` proxy: search, describe.tool and storage.*.
#include "mcp_session_code.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>

namespace dorm::actors {

using namespace session_internal;
using namespace code_detail;

namespace {

bool contains_folded(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

}  // namespace

void McpSession::Code::builtin(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call) {
  rapidjson::Document args;
  args.Parse(call.args_json.c_str());
  if (args.HasParseError() || !args.IsObject()) return deliver(live, call.seq, false, call.path + ": arguments must be an object");
  auto string_arg = [&](const char* key) -> std::optional<std::string> {
    const rapidjson::Value* v = member(args, key);
    if (!v || !v->IsString()) return std::nullopt;
    return std::string(v->GetString(), v->GetStringLength());
  };
  auto uint_arg = [&](const char* key, std::uint64_t fallback) -> std::optional<std::uint64_t> {
    const rapidjson::Value* v = member(args, key);
    if (!v) return fallback;
    if (!v->IsUint64()) return std::nullopt;
    return v->GetUint64();
  };
  const mcp::ToolRegistry& tools = *session_.options_.tools;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);

  if (call.path == "search" || call.path == "describe.tool") {
    // Every tool code may call, from the registry's own listing.
    std::vector<std::string> pages;
    std::optional<std::string> cursor;
    do {
      auto page = tools.list(cursor, 100, mcp::Exposure::code);
      if (!page) return deliver(live, call.seq, false, page.error().message);
      pages.push_back(page->tools_json);
      cursor = page->next_cursor;
    } while (cursor);
    rapidjson::Document listed;
    if (call.path == "describe.tool") {
      auto path = string_arg("path");
      if (!path) return deliver(live, call.seq, false, "describe.tool needs {path} (a string)");
      for (const auto& text : pages) {
        listed.Parse(text.c_str());
        for (const auto& tool : listed.GetArray()) {
          if (std::string_view(tool["name"].GetString()) != *path) continue;
          const mcp::ToolRegistry::Entry* entry = tools.find(*path, mcp::Exposure::code);
          w.StartObject();
          w.Key("path");
          w.String(path->c_str());
          for (const char* key : {"title", "description", "inputSchema", "outputSchema", "annotations"}) {
            if (const rapidjson::Value* v = member(tool, key)) {
              w.Key(key);
              v->Accept(w);
            }
          }
          w.Key("requiresApproval");
          w.Bool(entry && tools.spec(*entry).requires_approval);
          w.EndObject();
          return deliver(live, call.seq, true, buffer.GetString());
        }
      }
      return deliver(live, call.seq, false, "no tool at path " + *path + " (find tools with tools.search({query}))");
    }
    std::string query = string_arg("query").value_or("");
    auto limit = uint_arg("limit", 12);
    auto offset = uint_arg("offset", 0);
    if (!limit || !offset || *limit == 0 || *limit > 100) {
      return deliver(live, call.seq, false, "search takes {query?, limit? (1-100, default 12), offset? (default 0)}");
    }
    // Every word of the query must appear in the name, title or description.
    std::vector<std::string> words;
    for (std::size_t at = 0; at < query.size();) {
      auto begin = query.find_first_not_of(" \t", at);
      if (begin == std::string::npos) break;
      auto end = query.find_first_of(" \t", begin);
      words.push_back(query.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
      at = end == std::string::npos ? query.size() : end;
    }
    std::uint64_t total = 0;
    w.StartObject();
    w.Key("items");
    w.StartArray();
    for (const auto& text : pages) {
      listed.Parse(text.c_str());
      for (const auto& tool : listed.GetArray()) {
        std::string haystack = tool["name"].GetString();
        for (const char* key : {"title", "description"}) {
          if (const rapidjson::Value* v = member(tool, key); v && v->IsString()) haystack += std::string(" ") + v->GetString();
        }
        bool match = std::all_of(words.begin(), words.end(), [&](const std::string& word) { return contains_folded(haystack, word); });
        if (!match) continue;
        if (total >= *offset && total < *offset + *limit) {
          w.StartObject();
          w.Key("path");
          w.String(tool["name"].GetString());
          if (const rapidjson::Value* d = member(tool, "description")) {
            w.Key("description");
            d->Accept(w);
          }
          w.EndObject();
        }
        ++total;
      }
    }
    w.EndArray();
    w.Key("total");
    w.Uint64(total);
    w.Key("offset");
    w.Uint64(*offset);
    w.Key("limit");
    w.Uint64(*limit);
    w.EndObject();
    return deliver(live, call.seq, true, buffer.GetString());
  }

  // tools.storage.*: the session's storage for code, JSON values under c/<key>.
  auto key = string_arg("key");
  auto check_key = [&]() -> std::optional<std::string> {
    if (!key || key->empty()) return call.path + " needs {key} (a non-empty string)";
    if (key->size() > kMaxCodeKeyBytes) {
      return call.path + ": key is " + std::to_string(key->size()) + " bytes; the limit is " +
             std::to_string(kMaxCodeKeyBytes);
    }
    return std::nullopt;
  };
  if (call.path == "storage.get") {
    if (auto bad = check_key()) return deliver(live, call.seq, false, *bad);
    auto value = session_.get(std::string(kCodeStoragePrefix) + *key).value_or_throw();
    return deliver(live, call.seq, true, value.value_or("null"));
  }
  if (call.path == "storage.put") {
    if (auto bad = check_key()) return deliver(live, call.seq, false, *bad);
    const rapidjson::Value* value = member(args, "value");
    if (!value) return deliver(live, call.seq, false, "storage.put needs {key, value} (any JSON value)");
    auto stored = session_.put(std::string(kCodeStoragePrefix) + *key, compact(*value));
    if (!stored && is_input_error(stored.error().code)) {
      return deliver(live, call.seq, false, "storage.put: " + stored.error().message);
    }
    stored.value_or_throw();
    return deliver(live, call.seq, true, "true");
  }
  if (call.path == "storage.delete") {
    if (auto bad = check_key()) return deliver(live, call.seq, false, *bad);
    bool existed = session_.del(std::string(kCodeStoragePrefix) + *key).value_or_throw();
    return deliver(live, call.seq, true, existed ? "true" : "false");
  }
  if (call.path == "storage.list") {
    auto limit = uint_arg("limit", 100);
    if (!limit || *limit == 0 || *limit > 1000) return deliver(live, call.seq, false, "storage.list takes {prefix?, limit? (1-1000, default 100)}");
    ListOptions options;
    options.prefix = std::string(kCodeStoragePrefix) + string_arg("prefix").value_or("");
    options.limit = *limit;
    auto rows = session_.list(options).value_or_throw();
    w.StartArray();
    for (const auto& kv : rows) {
      w.StartObject();
      w.Key("key");
      std::string_view k = std::string_view(kv.key).substr(kCodeStoragePrefix.size());
      w.String(k.data(), static_cast<rapidjson::SizeType>(k.size()));
      w.Key("value");
      w.RawValue(kv.value.data(), kv.value.size(), rapidjson::kObjectType);
      w.EndObject();
    }
    w.EndArray();
    return deliver(live, call.seq, true, buffer.GetString());
  }
  deliver(live, call.seq, false, "unknown tool: " + call.path + " (storage has get, put, delete and list)");
}

}  // namespace dorm::actors
