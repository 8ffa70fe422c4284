#include "dorm/mcp/content.hpp"

#include "json_out.hpp"

namespace dorm::mcp {
namespace {

using detail::JsonOut;

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;  // clang 14 does not deduce aggregates yet

void write_link(JsonOut& out, const ResourceLink& link) {
  out.member("type", "resource_link");
  out.member("uri", link.uri);
  out.member("name", link.name);
  out.optional_member("title", link.title);
  out.optional_member("description", link.description);
  out.optional_member("mimeType", link.mime_type);
  if (link.size) {
    out.key("size");
    out.writer().Uint64(*link.size);
  }
}

}  // namespace

std::string Annotations::to_json() const {
  JsonOut out;
  out.writer().StartObject();
  if (!audience.empty()) {
    out.key("audience");
    out.writer().StartArray();
    for (const auto& role : audience) out.string(role);
    out.writer().EndArray();
  }
  if (priority) {
    out.key("priority");
    out.writer().Double(*priority);
  }
  out.optional_member("lastModified", last_modified);
  out.writer().EndObject();
  return out.text();
}

ResourceContents ResourceContents::text(std::string uri, std::string text, std::string mime_type) {
  return ResourceContents{std::move(uri), std::move(mime_type), Kind::text, std::move(text)};
}

ResourceContents ResourceContents::blob(std::string uri, std::string base64,
                                        std::string mime_type) {
  return ResourceContents{std::move(uri), std::move(mime_type), Kind::blob, std::move(base64)};
}

std::string ResourceContents::to_json() const {
  JsonOut out;
  out.writer().StartObject();
  out.member("uri", uri);
  out.optional_member("mimeType", mime_type);
  out.member(kind == Kind::text ? "text" : "blob", value);
  out.writer().EndObject();
  return out.text();
}

Content Content::text(std::string text) {
  return Content(Text{std::move(text)});
}

Content Content::image(std::string base64, std::string mime_type) {
  return Content(Media{"image", std::move(base64), std::move(mime_type)});
}

Content Content::audio(std::string base64, std::string mime_type) {
  return Content(Media{"audio", std::move(base64), std::move(mime_type)});
}

Content Content::embedded(ResourceContents resource) {
  return Content(std::move(resource));
}

Content Content::link(ResourceLink link) {
  return Content(std::move(link));
}

Content Content::annotated(Annotations annotations) && {
  annotations_ = std::move(annotations);
  return std::move(*this);
}

std::string Content::to_json() const {
  JsonOut out;
  out.writer().StartObject();
  std::visit(Overload{
                 [&](const Text& t) {
                   out.member("type", "text");
                   out.member("text", t.text);
                 },
                 [&](const Media& m) {
                   out.member("type", m.type);
                   out.member("data", m.base64);
                   out.member("mimeType", m.mime_type);
                 },
                 [&](const ResourceContents& r) {
                   out.member("type", "resource");
                   out.raw_member("resource", r.to_json());
                 },
                 [&](const ResourceLink& l) { write_link(out, l); },
             },
             block_);
  if (annotations_) out.raw_member("annotations", annotations_->to_json());
  out.writer().EndObject();
  return out.text();
}

std::string content_array_json(const std::vector<Content>& blocks) {
  JsonOut out;
  out.writer().StartArray();
  for (const auto& block : blocks) out.raw(block.to_json());
  out.writer().EndArray();
  return out.text();
}

}  // namespace dorm::mcp
