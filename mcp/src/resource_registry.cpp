#include "dorm/mcp/resource_registry.hpp"

#include <algorithm>

#include "guarded_call.hpp"
#include "json_out.hpp"
#include "paging.hpp"

namespace dorm::mcp {

struct ResourceRegistry::Template {
  ResourceTemplateSpec spec;
  UriTemplate parsed;
};

namespace {

using detail::JsonOut;

Error bad(std::string_view what, std::string_view key, std::string_view why) {
  return Error{ErrorCode::invalid_argument,
               std::string(what) + " '" + std::string(key) + "': " + std::string(why)};
}

// scheme ":" … with scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1).
bool has_scheme(std::string_view uri) {
  auto colon = uri.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(uri[0])) return false;
  return std::all_of(
      uri.begin() + 1, uri.begin() + static_cast<std::ptrdiff_t>(colon), [&](char c) {
        return alpha(c) || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
      });
}

// The members a resource and a template share, after the URI or template.
void write_common(JsonOut& out, const std::string& name, const std::string& title,
                  const std::string& description, const std::string& mime_type) {
  out.member("name", name);
  out.optional_member("title", title);
  out.optional_member("description", description);
  out.optional_member("mimeType", mime_type);
}

Result<std::string> read_with(const ResourceReader& reader, std::string_view uri,
                              const UriVariables& variables, ToolStorage& storage) {
  auto contents = detail::guarded_call<std::vector<ResourceContents>>(
      "the read handler of '" + std::string(uri) + "'", [&] {
        return reader(ResourceRead{uri, variables, storage});
      });
  if (!contents) return std::move(contents).error();
  JsonOut out;
  out.writer().StartObject();
  out.key("contents");
  out.writer().StartArray();
  for (auto& c : *contents) {
    if (c.uri.empty()) c.uri = std::string(uri);
    out.raw(c.to_json());
  }
  out.writer().EndArray();
  out.writer().EndObject();
  return out.text();
}

}  // namespace

ResourceRegistry::ResourceRegistry() = default;
ResourceRegistry::~ResourceRegistry() = default;

Result<void> ResourceRegistry::add(ResourceSpec spec) {
  constexpr std::string_view kWhat = "resource";
  if (!has_scheme(spec.uri)) return bad(kWhat, spec.uri, "a URI starts with a scheme and ':'");
  if (spec.uri.size() > detail::kMaxCursorKeyBytes) {
    return bad(kWhat, spec.uri.substr(0, 64) + "…",
               "a URI of " + std::to_string(spec.uri.size()) + " bytes exceeds the limit of " +
                   std::to_string(detail::kMaxCursorKeyBytes) + " bytes");
  }
  for (const auto& r : resources_) {
    if (r.uri == spec.uri) return bad(kWhat, spec.uri, "already registered");
  }
  if (spec.name.empty()) return bad(kWhat, spec.uri, "no name");
  if (!spec.read) return bad(kWhat, spec.uri, "no read handler");
  resources_.push_back(std::move(spec));
  return {};
}

Result<void> ResourceRegistry::add_template(ResourceTemplateSpec spec) {
  constexpr std::string_view kWhat = "resource template";
  auto parsed = UriTemplate::parse(spec.uri_template);
  if (!parsed) return std::move(parsed).error();
  for (const auto& t : templates_) {
    if (t->spec.uri_template == spec.uri_template) {
      return bad(kWhat, spec.uri_template, "already registered");
    }
  }
  if (spec.name.empty()) return bad(kWhat, spec.uri_template, "no name");
  if (!spec.read) return bad(kWhat, spec.uri_template, "no read handler");
  for (const auto& [variable, completer] : spec.completions) {
    if (!parsed->has_variable(variable)) {
      return bad(kWhat, spec.uri_template,
                 "a completer for '" + variable + "', which the template does not have");
    }
  }
  templates_.push_back(std::make_unique<Template>(Template{std::move(spec), std::move(*parsed)}));
  return {};
}

Result<ResourceRegistry::Page> ResourceRegistry::list(std::optional<std::string_view> cursor,
                                                      std::size_t page_size) const {
  JsonOut out;
  out.writer().StartArray();
  auto key = [&](std::size_t i) -> std::optional<std::string_view> { return resources_[i].uri; };
  auto write = [&](std::size_t i) {
    const ResourceSpec& r = resources_[i];
    out.writer().StartObject();
    out.member("uri", r.uri);
    write_common(out, r.name, r.title, r.description, r.mime_type);
    if (r.size) {
      out.key("size");
      out.writer().Uint64(*r.size);
    }
    if (r.annotations) out.raw_member("annotations", r.annotations->to_json());
    out.writer().EndObject();
  };
  auto next = detail::walk_page(resources_.size(), cursor, page_size, key, write);
  if (!next) return std::move(next).error();
  out.writer().EndArray();
  return Page{out.text(), std::move(*next)};
}

Result<ResourceRegistry::Page> ResourceRegistry::list_templates(
    std::optional<std::string_view> cursor, std::size_t page_size) const {
  JsonOut out;
  out.writer().StartArray();
  auto key = [&](std::size_t i) -> std::optional<std::string_view> {
    return templates_[i]->spec.uri_template;
  };
  auto write = [&](std::size_t i) {
    const ResourceTemplateSpec& t = templates_[i]->spec;
    out.writer().StartObject();
    out.member("uriTemplate", t.uri_template);
    write_common(out, t.name, t.title, t.description, t.mime_type);
    if (t.annotations) out.raw_member("annotations", t.annotations->to_json());
    out.writer().EndObject();
  };
  auto next = detail::walk_page(templates_.size(), cursor, page_size, key, write);
  if (!next) return std::move(next).error();
  out.writer().EndArray();
  return Page{out.text(), std::move(*next)};
}

Result<std::string> ResourceRegistry::read(std::string_view uri, ToolStorage& storage) const {
  for (const auto& r : resources_) {
    if (r.uri == uri) return read_with(r.read, uri, UriVariables{}, storage);
  }
  for (const auto& t : templates_) {
    if (auto variables = t->parsed.match(uri))
      return read_with(t->spec.read, uri, *variables, storage);
  }
  return Error{ErrorCode::not_found, "unknown resource: " + std::string(uri)};
}

bool ResourceRegistry::contains(std::string_view uri) const {
  return std::any_of(resources_.begin(), resources_.end(),
                     [&](const ResourceSpec& r) { return r.uri == uri; }) ||
         std::any_of(templates_.begin(), templates_.end(),
                     [&](const auto& t) { return t->parsed.match(uri).has_value(); });
}

Result<std::vector<std::string>> ResourceRegistry::complete(
    std::string_view uri_template, std::string_view variable, std::string_view value,
    const CompletionArguments& context) const {
  for (const auto& t : templates_) {
    if (t->spec.uri_template != uri_template) continue;
    if (!t->parsed.has_variable(variable)) {
      return bad("resource template", uri_template, "no variable '" + std::string(variable) + "'");
    }
    auto completer = t->spec.completions.find(variable);
    if (completer == t->spec.completions.end() || !completer->second) {
      return std::vector<std::string>{};
    }
    return detail::guarded_call<std::vector<std::string>>(
        "the completer of '" + std::string(variable) + "'",
        [&] { return completer->second(value, context); });
  }
  return Error{ErrorCode::invalid_argument,
               "unknown resource template: " + std::string(uri_template)};
}

}  // namespace dorm::mcp
