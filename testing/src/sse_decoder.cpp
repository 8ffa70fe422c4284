#include "dorm/testing/sse_decoder.hpp"

#include <algorithm>
#include <charconv>

namespace dorm::testing {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

std::optional<std::int64_t> retry_value(std::string_view value) {
  if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::int64_t ms = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return ms;
}

}  // namespace

SseChunk SseDecoder::feed(std::string_view bytes) {
  SseChunk out;
  partial_.append(bytes);
  if (at_start_) {
    // Wait until the BOM can be told from a short first read.
    if (partial_.size() < kByteOrderMark.size() && kByteOrderMark.starts_with(partial_)) return out;
    if (partial_.starts_with(kByteOrderMark)) partial_.erase(0, kByteOrderMark.size());
    at_start_ = false;
  }
  std::size_t start = 0;
  for (std::size_t i = 0; i < partial_.size(); ++i) {
    char c = partial_[i];
    if (c == '\n' && after_cr_ && i == start) {  // the LF of a CRLF split across lines
      after_cr_ = false;
      start = i + 1;
      continue;
    }
    after_cr_ = false;
    if (c != '\n' && c != '\r') continue;
    line(std::string_view(partial_).substr(start, i - start), out);
    after_cr_ = c == '\r';
    start = i + 1;
  }
  partial_.erase(0, start);
  return out;
}

void SseDecoder::line(std::string_view text, SseChunk& out) {
  if (text.empty()) {  // the blank line: the event is complete
    if (has_data_) out.events.push_back(SseEvent{std::move(id_), std::move(event_), std::move(data_)});
    id_.reset();
    event_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;  // a comment
  auto colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = text.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
  }
  if (name == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (name == "id") {
    // An id with a NUL is ignored, as eventsource-parser ignores it: an earlier id of the
    // same event stands.
    if (value.find('\0') == std::string_view::npos) id_ = std::string(value);
  } else if (name == "event") {
    event_ = std::string(value);
  } else if (name == "retry") {
    if (auto ms = retry_value(value)) out.retry_ms = ms;
  }
}

}  // namespace dorm::testing
