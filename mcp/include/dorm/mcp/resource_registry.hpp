// ResourceRegistry — every resource a server offers: fixed resources, each at one URI,
// and resource templates, each a family of URIs (RFC 6570, see uri_template.hpp).
//
// A resource has a URI, a name, an optional title, description, MIME type, size and
// annotations, and a synchronous read handler; a template has the same with a URI
// template in place of the URI, and optional completers for its variables. resources/read
// of a URI finds the fixed resource with exactly that URI, else the first template (in
// registration order) that matches it, and calls its handler with the URI, the matched
// variables and the session's storage. A handler runs inside the session's turn, like a
// tool's, but must answer at once: its result is the response.
//
// Resources and templates are listed in registration order, a page at a time, with the
// cursors ToolRegistry uses. A registry with neither means the server offers no
// `resources` capability at all; subscriptions make sense only for fixed resources.
//
// Filled once at start-up, then read from every session concurrently: add() and
// add_template() are not thread-safe, everything const is; handlers and completers are
// called concurrently by different sessions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/completion.hpp"
#include "dorm/mcp/content.hpp"
#include "dorm/mcp/tool.hpp"
#include "dorm/mcp/uri_template.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// What a read handler is asked for.
struct ResourceRead {
  std::string_view uri;           // as the client sent it
  const UriVariables& variables;  // the template's variables; empty for a fixed resource
  ToolStorage& storage;           // the session's storage, valid during the call
};

// The contents at `read.uri`: usually one, several for a URI that names a collection.
// A content whose uri is empty gets `read.uri`. Errors: not_found when the resource is
// gone (answered like an unknown URI), invalid_argument for a URI the template matched
// but the handler cannot serve, anything else for a failure.
using ResourceReader = std::function<Result<std::vector<ResourceContents>>(const ResourceRead&)>;

struct ResourceSpec {
  std::string uri;  // absolute (a scheme, then ":"), at most 2048 bytes
  std::string name;
  std::string title;                       // optional
  std::string description;                 // optional
  std::string mime_type;                   // optional
  std::optional<std::uint64_t> size;       // optional, in bytes before any encoding
  std::optional<Annotations> annotations;  // optional
  ResourceReader read;
};

struct ResourceTemplateSpec {
  std::string uri_template;  // RFC 6570 levels 1-2
  std::string name;
  std::string title;                       // optional
  std::string description;                 // optional
  std::string mime_type;                   // optional: the type of every resource it names
  std::optional<Annotations> annotations;  // optional
  ResourceReader read;
  // Completers by variable name, for completion/complete; each names a template variable.
  std::map<std::string, Completer, std::less<>> completions;
};

class ResourceRegistry {
 public:
  ResourceRegistry();
  ~ResourceRegistry();
  ResourceRegistry(const ResourceRegistry&) = delete;
  ResourceRegistry& operator=(const ResourceRegistry&) = delete;

  // Adds a fixed resource. Errors (invalid_argument, naming the URI and the problem): a
  // URI that is empty, has no scheme, is longer than 2048 bytes or is taken; no name; no
  // read handler.
  Result<void> add(ResourceSpec spec);
  // Adds a template. Errors (invalid_argument, naming the template and the problem): a
  // template UriTemplate::parse refuses or one already added; no name; no read handler; a
  // completer for a variable the template does not have.
  Result<void> add_template(ResourceTemplateSpec spec);

  struct Page {
    std::string items_json;                  // a JSON array of Resource / ResourceTemplate
    std::optional<std::string> next_cursor;  // more to come
  };
  // One page of fixed resources ({uri, name, title?, description?, mimeType?, size?,
  // annotations?}), starting at `cursor` (none: the first). Errors: invalid_argument
  // "invalid cursor" for a cursor this registry did not hand out.
  Result<Page> list(std::optional<std::string_view> cursor, std::size_t page_size) const;
  // One page of templates ({uriTemplate, name, title?, description?, mimeType?,
  // annotations?}), as list().
  Result<Page> list_templates(std::optional<std::string_view> cursor, std::size_t page_size) const;

  // Reads `uri` (see the top of this file): the ReadResourceResult {"contents":[…]}.
  // Errors: not_found "unknown resource: URI" when nothing has or matches the URI, else
  // the handler's error as it returned it; a handler that throws gives internal, naming
  // the exception.
  Result<std::string> read(std::string_view uri, ToolStorage& storage) const;

  // Whether read(uri) would find a handler: a fixed resource has `uri` or a template
  // matches it. For resources/subscribe, which names a resource without reading it.
  bool contains(std::string_view uri) const;

  // Candidates for `variable` of the template whose text is `uri_template`, as its
  // completer returns them (no completer: none), uncapped (complete() in completion.hpp
  // cuts). Errors: invalid_argument for an unknown template or a variable it does not
  // have; internal, naming the exception, for a completer that throws.
  Result<std::vector<std::string>> complete(std::string_view uri_template,
                                            std::string_view variable, std::string_view value,
                                            const CompletionArguments& context) const;

  // Whether clients may subscribe to updates: there is at least one fixed resource.
  bool supports_subscribe() const { return !resources_.empty(); }
  // No resources and no templates: the server announces no `resources` capability.
  bool empty() const { return resources_.empty() && templates_.empty(); }
  std::size_t size() const { return resources_.size(); }
  std::size_t template_count() const { return templates_.size(); }

 private:
  struct Template;
  std::vector<ResourceSpec> resources_;
  std::vector<std::unique_ptr<Template>> templates_;
};

}  // namespace dorm::mcp
