// The built-in paths of code mode's `tools` proxy: search, describe.tool and storage.*
// (code_builtins.hpp), and the session's store for storage.*.
#include "code_builtins.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>

#include "mcp_session_code.hpp"

namespace dorm::actors {

using namespace session_internal;
using namespace code_detail;

namespace code_builtins {

namespace {

Reply refuse(std::string message) { return {false, std::move(message)}; }

std::optional<std::string> string_arg(const rapidjson::Value& args, const char* key) {
  const rapidjson::Value* v = member(args, key);
  if (!v || !v->IsString()) return std::nullopt;
  return std::string(v->GetString(), v->GetStringLength());
}

// `fallback` when absent; none when present but not an unsigned integer.
std::optional<std::uint64_t> uint_arg(const rapidjson::Value& args, const char* key, std::uint64_t fallback) {
  const rapidjson::Value* v = member(args, key);
  if (!v) return fallback;
  if (!v->IsUint64()) return std::nullopt;
  return v->GetUint64();
}

bool contains_folded(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

std::vector<std::string> words_of(const std::string& query) {
  std::vector<std::string> words;
  for (std::size_t at = 0; at < query.size();) {
    auto begin = query.find_first_not_of(" \t", at);
    if (begin == std::string::npos) break;
    auto end = query.find_first_of(" \t", begin);
    words.push_back(query.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    at = end == std::string::npos ? query.size() : end;
  }
  return words;
}

// Every tool code may call, as the registry lists them: one tools/list page per string.
Result<std::vector<std::string>> code_tool_pages(const mcp::ToolRegistry& tools) {
  std::vector<std::string> pages;
  std::optional<std::string> cursor;
  do {
    auto page = tools.list(cursor, 100, mcp::Exposure::code);
    if (!page) return std::move(page).error();
    pages.push_back(page->tools_json);
    cursor = page->next_cursor;
  } while (cursor);
  return pages;
}

Reply describe_tool(const mcp::ToolRegistry& tools, const std::vector<std::string>& pages,
                    const rapidjson::Value& args) {
  auto path = string_arg(args, "path");
  if (!path) return refuse("describe.tool needs {path} (a string)");
  rapidjson::Document listed;
  for (const auto& text : pages) {
    listed.Parse(text.c_str());
    for (const auto& tool : listed.GetArray()) {
      if (std::string_view(tool["name"].GetString()) != *path) continue;
      const mcp::ToolRegistry::Entry* entry = tools.find(*path, mcp::Exposure::code);
      rapidjson::StringBuffer buffer;
      JsonWriter w(buffer);
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
      return {true, buffer.GetString()};
    }
  }
  return refuse("no tool at path " + *path + " (find tools with tools.search({query}))");
}

// Every word of the query must appear in the name, title or description.
Reply search(const std::vector<std::string>& pages, const rapidjson::Value& args) {
  std::string query = string_arg(args, "query").value_or("");
  auto limit = uint_arg(args, "limit", 12);
  auto offset = uint_arg(args, "offset", 0);
  if (!limit || !offset || *limit == 0 || *limit > 100) {
    return refuse("search takes {query?, limit? (1-100, default 12), offset? (default 0)}");
  }
  const std::vector<std::string> words = words_of(query);
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  std::uint64_t total = 0;
  w.StartObject();
  w.Key("items");
  w.StartArray();
  rapidjson::Document listed;
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
  return {true, buffer.GetString()};
}

Reply storage(Store& store, const std::string& path, const rapidjson::Value& args) {
  if (path == "storage.list") {
    auto limit = uint_arg(args, "limit", 100);
    if (!limit || *limit == 0 || *limit > 1000) return refuse("storage.list takes {prefix?, limit? (1-1000, default 100)}");
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartArray();
    for (const auto& [k, v] : store.list(string_arg(args, "prefix").value_or(""), *limit).value_or_throw()) {
      w.StartObject();
      w.Key("key");
      w.String(k.data(), static_cast<rapidjson::SizeType>(k.size()));
      w.Key("value");
      w.RawValue(v.data(), v.size(), rapidjson::kObjectType);
      w.EndObject();
    }
    w.EndArray();
    return {true, buffer.GetString()};
  }
  if (path != "storage.get" && path != "storage.put" && path != "storage.delete") {
    return refuse("unknown tool: " + path + " (storage has get, put, delete and list)");
  }
  auto key = string_arg(args, "key");
  if (!key || key->empty()) return refuse(path + " needs {key} (a non-empty string)");
  if (key->size() > kMaxKeyBytes) {
    return refuse(path + ": key is " + std::to_string(key->size()) + " bytes; the limit is " +
                  std::to_string(kMaxKeyBytes));
  }
  if (path == "storage.get") return {true, store.get(*key).value_or_throw().value_or("null")};
  if (path == "storage.delete") return {true, store.del(*key).value_or_throw() ? "true" : "false"};
  const rapidjson::Value* value = member(args, "value");
  if (!value) return refuse("storage.put needs {key, value} (any JSON value)");
  auto stored = store.put(*key, compact(*value));
  if (!stored && is_input_error(stored.error().code)) return refuse("storage.put: " + stored.error().message);
  stored.value_or_throw();
  return {true, "true"};
}

}  // namespace

// What a tools.* promise gets from a tool's CallToolResult: ok → the value (JSON), else
// the message it rejects with. The value is the structuredContent when there is one; a
// single text block gives its text, parsed when it is JSON ("1" → 1) and as a string
// otherwise; anything else gives the content array.
Reply value_for_code(const mcp::ToolResult& result) {
  rapidjson::Document doc;
  doc.Parse(result.json.c_str());
  if (doc.HasParseError() || !doc.IsObject()) return {false, "the tool returned a malformed result"};
  const rapidjson::Value* content = member(doc, "content");
  auto texts = [&] {
    std::string out;
    if (content && content->IsArray()) {
      for (const auto& block : content->GetArray()) {
        const rapidjson::Value* text = member(block, "text");
        if (text && text->IsString()) {
          if (!out.empty()) out += "\n";
          out += text->GetString();
        }
      }
    }
    return out;
  };
  const rapidjson::Value* is_error = member(doc, "isError");
  if (is_error && is_error->IsBool() && is_error->GetBool()) {
    std::string message = texts();
    return {false, message.empty() ? "the tool failed" : message};
  }
  if (const rapidjson::Value* structured = member(doc, "structuredContent")) return {true, compact(*structured)};
  if (content && content->IsArray() && content->Size() == 1) {
    const rapidjson::Value* text = member((*content)[0], "text");
    if (text && text->IsString()) {
      rapidjson::Document parsed;
      parsed.Parse(text->GetString(), text->GetStringLength());
      if (!parsed.HasParseError()) return {true, compact(parsed)};
      return {true, json_string(std::string_view(text->GetString(), text->GetStringLength()))};
    }
  }
  return {true, content ? compact(*content) : "null"};
}

bool is_builtin(std::string_view path) {
  return path == "search" || path == "describe.tool" || path.starts_with("storage.");
}

Reply answer(const mcp::ToolRegistry& tools, Store& store, const std::string& path, const std::string& args_json) {
  rapidjson::Document args;
  args.Parse(args_json.c_str());
  if (args.HasParseError() || !args.IsObject()) return refuse(path + ": arguments must be an object");
  if (path == "search" || path == "describe.tool") {
    auto pages = code_tool_pages(tools);
    if (!pages) return refuse(pages.error().message);
    return path == "search" ? search(*pages, args) : describe_tool(tools, *pages, args);
  }
  return storage(store, path, args);
}

}  // namespace code_builtins

// tools.storage.* of a session: JSON values under its c/<key> keys.
void McpSession::Code::builtin(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call) {
  class SessionStore : public code_builtins::Store {
   public:
    explicit SessionStore(McpSession& session) : session_(session) {}
    Result<std::optional<std::string>> get(std::string_view key) override {
      return session_.get(session_keys::code_data(key));
    }
    Result<void> put(std::string_view key, std::string_view value) override {
      return session_.put(session_keys::code_data(key), value);
    }
    Result<bool> del(std::string_view key) override { return session_.del(session_keys::code_data(key)); }
    Result<std::vector<std::pair<std::string, std::string>>> list(std::string_view prefix,
                                                                  std::size_t limit) override {
      ListOptions options;
      options.prefix = session_keys::code_data(prefix);
      options.limit = limit;
      auto listed = session_.list(options);
      if (!listed) return std::move(listed).error();
      std::vector<std::pair<std::string, std::string>> out;
      for (auto& kv : *listed) {
        out.emplace_back(std::string(session_keys::parse_code_data(kv.key).value_or("")), std::move(kv.value));
      }
      return out;
    }

   private:
    McpSession& session_;
  };
  SessionStore store(session_);
  auto [ok, value] = code_builtins::answer(*session_.options_.tools, store, call.path, call.args_json);
  deliver(live, call.seq, ok, std::move(value));
}

}  // namespace dorm::actors
