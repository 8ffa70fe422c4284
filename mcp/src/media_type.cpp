#include "dorm/mcp/media_type.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace dorm::mcp {
namespace {

// q weights in thousandths: "q=0.5" is 500. Without a q a range weighs 1000.
constexpr int kFullWeight = 1000;

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// A parsed media type or media range with the parameters that matter here.
struct MediaRange {
  std::string type;     // lower-case; "*" for */*
  std::string subtype;  // lower-case; "*" for type/* and */*
  int weight = kFullWeight;
  std::optional<std::string> charset;  // the charset parameter's value, unquoted
};

// A cursor over one header value, with the RFC 9110 lexical rules this file needs.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool take(char c) {
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skip_ows() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  // token = 1*tchar; empty if none.
  std::string_view token() {
    std::size_t start = pos_;
    while (!at_end() && is_tchar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE; the unescaped content, or
  // nullopt if unterminated or holding a control character.
  std::optional<std::string> quoted_string() {
    if (!take('"')) return std::nullopt;
    std::string value;
    while (!at_end()) {
      char c = text_[pos_++];
      if (c == '"') return value;
      if (c == '\\') {
        if (at_end()) return std::nullopt;
        c = text_[pos_++];
      }
      auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) return std::nullopt;
      value += c;
    }
    return std::nullopt;
  }
  // Moves past the next comma outside a quoted string (or to the end).
  void skip_element() {
    bool quoted = false;
    while (!at_end()) {
      char c = text_[pos_++];
      if (quoted && c == '\\' && !at_end()) {
        ++pos_;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        return;
      }
    }
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
std::optional<int> parse_weight(std::string_view q) {
  if (q.empty() || (q[0] != '0' && q[0] != '1')) return std::nullopt;
  int whole = q[0] - '0';
  if (q.size() == 1) return whole * kFullWeight;
  if (q[1] != '.' || q.size() > 5) return std::nullopt;
  int fraction = 0;
  int scale = 100;
  for (char c : q.substr(2)) {
    if (c < '0' || c > '9') return std::nullopt;
    fraction += (c - '0') * scale;
    scale /= 10;
  }
  if (whole == 1 && fraction != 0) return std::nullopt;
  return whole * kFullWeight + fraction;
}

// Reads `type "/" subtype *( OWS ";" OWS [ name "=" value ] )` at the lexer's position,
// up to (not including) a top-level comma or the end. A `q` parameter is a weight only in
// an Accept header (`weighted`). nullopt if malformed; the lexer is then somewhere inside
// the element.
std::optional<MediaRange> parse_media_range(Lexer& in, bool weighted) {
  MediaRange range;
  std::string_view type = in.token();
  if (type.empty() || !in.take('/')) return std::nullopt;
  std::string_view subtype = in.token();
  if (subtype.empty()) return std::nullopt;
  range.type = lowered(type);
  range.subtype = lowered(subtype);
  if (range.type == "*" && range.subtype != "*") return std::nullopt;  // "*/json" is no range
  while (true) {
    in.skip_ows();
    if (in.at_end() || in.peek() == ',') return range;
    if (!in.take(';')) return std::nullopt;
    in.skip_ows();
    if (in.at_end() || in.peek() == ',' || in.peek() == ';') continue;  // empty parameter
    std::string_view name = in.token();
    if (name.empty() || !in.take('=')) return std::nullopt;
    std::string value;
    if (in.peek() == '"') {
      auto quoted = in.quoted_string();
      if (!quoted) return std::nullopt;
      value = std::move(*quoted);
    } else {
      value = std::string(in.token());
      if (value.empty()) return std::nullopt;
    }
    if (weighted && iequals(name, "q")) {
      auto weight = parse_weight(value);
      if (!weight) return std::nullopt;
      range.weight = *weight;
    } else if (iequals(name, "charset")) {
      range.charset = std::move(value);
    }
  }
}

std::vector<MediaRange> parse_accept(std::string_view accept) {
  std::vector<MediaRange> ranges;
  Lexer in(accept);
  while (true) {
    in.skip_ows();
    if (in.at_end()) return ranges;
    if (in.take(',')) continue;  // empty list elements are allowed
    if (auto range = parse_media_range(in, /*weighted=*/true)) {
      ranges.push_back(std::move(*range));
      in.take(',');
    } else {
      in.skip_element();
    }
  }
}

}  // namespace

bool accept_allows(std::string_view accept, std::string_view media_type) {
  auto slash = media_type.find('/');
  std::string_view type = media_type.substr(0, slash);
  std::string_view subtype = slash == std::string_view::npos ? "" : media_type.substr(slash + 1);
  int best_specificity = -1;  // 2: type/subtype, 1: type/*, 0: */*
  int best_weight = 0;
  for (const MediaRange& range : parse_accept(accept)) {
    int specificity = -1;
    if (range.type == type && range.subtype == subtype) {
      specificity = 2;
    } else if (range.type == type && range.subtype == "*") {
      specificity = 1;
    } else if (range.type == "*") {
      specificity = 0;
    }
    if (specificity > best_specificity) {
      best_specificity = specificity;
      best_weight = range.weight;
    } else if (specificity == best_specificity) {
      best_weight = std::max(best_weight, range.weight);
    }
  }
  return best_specificity >= 0 && best_weight > 0;
}

bool is_json_content_type(std::string_view content_type) {
  Lexer in(content_type);
  in.skip_ows();
  auto range = parse_media_range(in, /*weighted=*/false);
  if (!range) return false;
  in.skip_ows();
  if (!in.at_end()) return false;  // a list of types, or junk after the type
  if (range->type != "application" || range->subtype != "json") return false;
  return !range->charset || iequals(*range->charset, "utf-8");
}

}  // namespace dorm::mcp
