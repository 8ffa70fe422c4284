// Content — what tools, prompts and resources hand back to a client (MCP 2025-11-25).
//
// A content block is text, an image or audio clip (base64 data with its MIME type), an
// embedded resource (its contents inline, as text or a base64 blob), or a resource link
// (a URI the client may read later with resources/read). Any block may carry annotations:
// who it is for, how important it is, when it last changed. Resources read with
// resources/read come back as ResourceContents, the same shape an embedded resource holds.
// Base64 text is listed as given: this layer neither decodes nor checks it, so the bytes
// a handler produced are the bytes the client gets. Everything here writes compact JSON
// text with RapidJSON's Writer; absent optional fields are left out, never written empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dorm::mcp {

// Hints for the client, all optional (MCP `Annotations`).
struct Annotations {
  std::vector<std::string> audience;  // "user" and/or "assistant"
  std::optional<double> priority;     // 0 (optional) to 1 (required)
  std::string last_modified;          // ISO 8601, e.g. "2025-01-12T15:00:58Z"

  // The annotations as a JSON object, e.g. {"audience":["user"],"priority":0.5}.
  std::string to_json() const;
};

// The contents of one resource (MCP `TextResourceContents` / `BlobResourceContents`).
struct ResourceContents {
  enum class Kind { text, blob };
  std::string uri;
  std::string mime_type;  // optional
  Kind kind = Kind::text;
  std::string value;  // the text, or the base64 bytes of a blob (listed as given)

  static ResourceContents text(std::string uri, std::string text, std::string mime_type = {});
  static ResourceContents blob(std::string uri, std::string base64, std::string mime_type = {});

  // {"uri":…,["mimeType":…,]"text":…} or {"uri":…,["mimeType":…,]"blob":…}.
  std::string to_json() const;
};

// A pointer to a resource, listed in a result instead of its contents (MCP `ResourceLink`).
struct ResourceLink {
  std::string uri;
  std::string name;
  std::string title;                  // optional
  std::string description;            // optional
  std::string mime_type;              // optional
  std::optional<std::uint64_t> size;  // in bytes, before any encoding
};

// One content block. Built by the factories, then written with to_json().
class Content {
 public:
  static Content text(std::string text);
  static Content image(std::string base64, std::string mime_type);
  static Content audio(std::string base64, std::string mime_type);
  static Content embedded(ResourceContents resource);
  static Content link(ResourceLink link);

  // The same block with `annotations`.
  Content annotated(Annotations annotations) &&;

  // {"type":"text","text":…}, {"type":"image","data":…,"mimeType":…}, {"type":"audio",…},
  // {"type":"resource","resource":{…}}, {"type":"resource_link","uri":…,"name":…,…};
  // each with "annotations" when set.
  std::string to_json() const;

 private:
  struct Text {
    std::string text;
  };
  struct Media {
    const char* type;  // "image" or "audio"
    std::string base64;
    std::string mime_type;
  };
  using Block = std::variant<Text, Media, ResourceContents, ResourceLink>;
  explicit Content(Block block) : block_(std::move(block)) {}

  Block block_;
  std::optional<Annotations> annotations_;
};

// A JSON array of the blocks' to_json(), in order.
std::string content_array_json(const std::vector<Content>& blocks);

}  // namespace dorm::mcp
