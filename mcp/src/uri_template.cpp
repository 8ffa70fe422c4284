#include "dorm/mcp/uri_template.hpp"

#include <algorithm>

namespace dorm::mcp {
namespace {

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_unreserved(char c) {
  return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}
bool is_reserved(char c) {
  return std::string_view(":/?#[]@!$&'()*+,;=").find(c) != std::string_view::npos;
}
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  return (c | 0x20) - 'a' + 10;
}
bool escape_at(std::string_view s, std::size_t i) {
  return s[i] == '%' && i + 2 < s.size() && is_hex(s[i + 1]) && is_hex(s[i + 2]);
}

// `at` lies inside a percent-escape ("%4|1"): no variable may end there.
bool inside_escape(std::string_view s, std::size_t at) {
  return (at >= 1 && s[at - 1] == '%') || (at >= 2 && s[at - 2] == '%');
}

void append_escaped(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xf]);
}

// Precondition: every "%" in `s` starts a percent-escape.
std::string decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      out.push_back(static_cast<char>(hex_value(s[i + 1]) << 4 | hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool escapes_well_formed(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && !escape_at(s, i)) return false;
  }
  return true;
}

// varname = varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded.
bool valid_varname(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '%') {
      if (!escape_at(name, i)) return false;
      i += 2;
    } else if (c == '.') {
      if (name[i + 1] == '.') return false;
    } else if (!is_alpha(c) && !is_digit(c) && c != '_') {
      return false;
    }
  }
  return true;
}

bool valid_literal(unsigned char c) {
  return c > 0x20 && c != 0x7f &&
         std::string_view("\"'<>\\^`|").find(static_cast<char>(c)) == std::string_view::npos;
}

Error bad_template(std::string_view text, std::string_view why, std::size_t at) {
  return Error{ErrorCode::invalid_argument, "URI template '" + std::string(text) +
                                                "': " + std::string(why) + " at offset " +
                                                std::to_string(at)};
}

}  // namespace

Result<UriTemplate> UriTemplate::parse(std::string_view text) {
  if (text.size() > kMaxTemplateBytes) {
    return Error{ErrorCode::invalid_argument, "a URI template of " + std::to_string(text.size()) +
                                                  " bytes exceeds the limit of " +
                                                  std::to_string(kMaxTemplateBytes) + " bytes"};
  }
  UriTemplate t;
  t.text_ = std::string(text);
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) t.parts_.push_back(Part{Part::Kind::literal, std::move(literal)});
    literal.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}') return bad_template(text, "a '}' with no '{'", i);
    if (c == '%' && !escape_at(text, i))
      return bad_template(text, "a '%' that starts no percent-escape", i);
    if (c != '{') {
      if (!valid_literal(static_cast<unsigned char>(c))) {
        return bad_template(text, "a character a URI cannot hold", i);
      }
      literal.push_back(c);
      continue;
    }
    auto close = text.find('}', i + 1);
    if (close == std::string_view::npos) return bad_template(text, "an unclosed '{'", i);
    std::string_view expr = text.substr(i + 1, close - i - 1);
    if (expr.empty()) return bad_template(text, "an empty expression", i);
    Part part{Part::Kind::simple, {}};
    if (expr.front() == '+' || expr.front() == '#') {
      part.kind = expr.front() == '+' ? Part::Kind::reserved : Part::Kind::fragment;
      expr.remove_prefix(1);
    } else if (std::string_view("./;?&").find(expr.front()) != std::string_view::npos) {
      return bad_template(
          text,
          std::string("the operator '") + expr.front() + "' is RFC 6570 level 3, not supported", i);
    } else if (std::string_view("=,!@|").find(expr.front()) != std::string_view::npos) {
      return bad_template(
          text, std::string("the operator '") + expr.front() + "' is reserved by RFC 6570", i);
    }
    if (expr.find(',') != std::string_view::npos) {
      return bad_template(text, "several variables in one expression (RFC 6570 level 3)", i);
    }
    if (expr.find(':') != std::string_view::npos || expr.ends_with('*')) {
      return bad_template(text, "a ':' or '*' modifier (RFC 6570 level 4)", i);
    }
    if (!valid_varname(expr)) return bad_template(text, "a bad variable name", i);
    if (t.has_variable(expr)) return bad_template(text, "a variable used twice", i);
    // Two variables side by side could be split anywhere; a fragment starts at its "#".
    if (literal.empty() && !t.parts_.empty() && t.parts_.back().kind != Part::Kind::literal &&
        part.kind != Part::Kind::fragment) {
      return bad_template(text, "two expressions with nothing between them", i);
    }
    flush();
    part.text = std::string(expr);
    t.parts_.push_back(std::move(part));
    i = close;
  }
  flush();
  return t;
}

std::vector<std::string> UriTemplate::variables() const {
  std::vector<std::string> names;
  for (const auto& p : parts_) {
    if (p.kind == Part::Kind::literal) continue;
    if (std::find(names.begin(), names.end(), p.text) == names.end()) names.push_back(p.text);
  }
  return names;
}

bool UriTemplate::has_variable(std::string_view name) const {
  return std::any_of(parts_.begin(), parts_.end(), [&](const Part& p) {
    return p.kind != Part::Kind::literal && p.text == name;
  });
}

std::string UriTemplate::expand(const UriVariables& values) const {
  std::string out;
  for (const auto& p : parts_) {
    if (p.kind == Part::Kind::literal) {
      out += p.text;
      continue;
    }
    auto value = values.find(p.text);
    if (value == values.end()) continue;
    if (p.kind == Part::Kind::fragment) out.push_back('#');
    const std::string& v = value->second;
    for (std::size_t i = 0; i < v.size(); ++i) {
      char c = v[i];
      bool keep =
          is_unreserved(c) || (p.kind != Part::Kind::simple && (is_reserved(c) || escape_at(v, i)));
      if (keep) {
        out.push_back(c);
      } else {
        append_escaped(out, static_cast<unsigned char>(c));
      }
    }
  }
  return out;
}

// Matching is a table over (part, offset): fits[k][at] says whether parts k… match the
// URI from `at` to its end. It is filled from the last part backwards, so each cell costs
// O(1) and the whole match O(parts × length), whatever the template; then one walk from
// the start picks, for each variable, the furthest end at which the rest still fits.
struct UriTemplate::Matcher {
  const std::vector<Part>& parts;
  std::string_view uri;
  std::vector<std::vector<char>> fits;
  // stop[at]: the first "/", "?" or "#" at or after `at` (the length if none): a simple
  // variable starting at `at` ends there at the latest.
  std::vector<std::size_t> stop;

  bool may_end(std::size_t k, std::size_t at) const {
    return fits[k + 1][at] && !inside_escape(uri, at);
  }
  std::size_t limit(const Part& p, std::size_t at) const {
    return p.kind == Part::Kind::simple ? stop[at] : uri.size();
  }

  void fill() {
    std::size_t n = parts.size();
    std::size_t size = uri.size();
    fits.assign(n + 1, std::vector<char>(size + 1, 0));
    fits[n][size] = 1;
    stop.assign(size + 1, size);
    for (std::size_t at = size; at-- > 0;) {
      bool delimiter = uri[at] == '/' || uri[at] == '?' || uri[at] == '#';
      stop[at] = delimiter ? at : stop[at + 1];
    }
    for (std::size_t k = n; k-- > 0;) {
      const Part& p = parts[k];
      if (p.kind == Part::Kind::literal) {
        for (std::size_t at = 0; at + p.text.size() <= size; ++at) {
          fits[k][at] = uri.substr(at).starts_with(p.text) && fits[k + 1][at + p.text.size()];
        }
        continue;
      }
      // nearest: the first offset at or after `at` where this variable may end.
      std::size_t nearest = std::string_view::npos;
      std::vector<char> value_fits(size + 2, 0);  // a value may start at `at`
      for (std::size_t at = size + 1; at-- > 0;) {
        if (may_end(k, at)) nearest = at;
        value_fits[at] = nearest != std::string_view::npos && nearest <= limit(p, at);
      }
      for (std::size_t at = 0; at <= size; ++at) {
        fits[k][at] = p.kind != Part::Kind::fragment
                          ? value_fits[at]
                          : (at < size && uri[at] == '#' && value_fits[at + 1]) || fits[k + 1][at];
      }
    }
  }

  // Where the value of variable part k that starts at `at` ends: as late as the rest of
  // the template allows. Precondition: has_end(k, at).
  std::size_t furthest_end(std::size_t k, std::size_t at) const {
    std::size_t end = limit(parts[k], at);
    while (!may_end(k, end)) --end;
    return end;
  }

  UriVariables walk() const {
    UriVariables out;
    std::size_t at = 0;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const Part& p = parts[k];
      if (p.kind == Part::Kind::literal) {
        at += p.text.size();
        continue;
      }
      if (p.kind == Part::Kind::fragment) {
        bool defined = at < uri.size() && uri[at] == '#' && has_end(k, at + 1);
        if (!defined) continue;  // the rest fits from here: fits[k + 1][at]
        ++at;
      }
      std::size_t end = furthest_end(k, at);
      out[p.text] = decode(uri.substr(at, end - at));
      at = end;
    }
    return out;
  }

  // Whether variable part k, starting at `at`, can end somewhere the rest fits.
  bool has_end(std::size_t k, std::size_t at) const {
    for (std::size_t end = limit(parts[k], at) + 1; end-- > at;) {
      if (may_end(k, end)) return true;
    }
    return false;
  }
};

std::optional<UriVariables> UriTemplate::match(std::string_view uri) const {
  if (uri.size() > kMaxMatchBytes || !escapes_well_formed(uri)) return std::nullopt;
  Matcher m{parts_, uri, {}, {}};
  m.fill();
  if (!m.fits[0][0]) return std::nullopt;
  return m.walk();
}

}  // namespace dorm::mcp
