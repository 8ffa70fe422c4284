#include "sse_decoder.hpp"

#include <algorithm>
#include <charconv>

namespace dorm::deploy_sim {

SseChunk SseDecoder::feed(std::string_view bytes) {
  SseChunk out;
  if (first_ && !bytes.empty()) {
    first_ = false;
    if (bytes.starts_with("\xEF\xBB\xBF")) bytes.remove_prefix(3);
  }
  for (char c : bytes) {
    if (cr_ended_ && c == '\n') {  // the LF of a CRLF whose CR ended the line already
      cr_ended_ = false;
      continue;
    }
    cr_ended_ = false;
    if (c == '\n' || c == '\r') {
      cr_ended_ = c == '\r';
      line(pending_, out);
      pending_.clear();
    } else {
      pending_.push_back(c);
    }
  }
  return out;
}

void SseDecoder::line(std::string_view text, SseChunk& out) {
  if (text.empty()) {  // the blank line that ends an event
    if (data_lines_ > 0) out.events.push_back(SseEvent{std::move(id_), event_, data_});
    id_.reset();
    event_.clear();
    data_.clear();
    data_lines_ = 0;
    return;
  }
  if (text.front() == ':') return;  // a comment, e.g. a keep-alive
  auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    field(text, {}, out);
    return;
  }
  auto value = text.substr(colon + 1);
  if (value.starts_with(' ')) value.remove_prefix(1);
  field(text.substr(0, colon), value, out);
}

void SseDecoder::field(std::string_view name, std::string_view value, SseChunk& out) {
  if (name == "data") {
    if (data_lines_++ > 0) data_.push_back('\n');
    data_.append(value);
  } else if (name == "event") {
    event_ = value;
  } else if (name == "id") {
    if (value.find('\0') == std::string_view::npos) id_ = std::string(value);
  } else if (name == "retry") {
    bool digits = !value.empty() && std::all_of(value.begin(), value.end(),
                                                [](char c) { return c >= '0' && c <= '9'; });
    std::int64_t ms = 0;
    if (digits && std::from_chars(value.data(), value.data() + value.size(), ms).ec == std::errc{})
      out.retry_ms = ms;
  }
}

}  // namespace dorm::deploy_sim
