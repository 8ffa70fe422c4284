// UriTemplate: what parse() refuses and why, expansion per RFC 6570 levels 1-2, matching
// (round trips, no "/" inside a simple variable, non-matches).
#include "dorm/mcp/uri_template.hpp"

#include <doctest/doctest.h>

using namespace dorm;
using namespace dorm::mcp;

namespace {

UriTemplate parsed(std::string_view text) {
  auto t = UriTemplate::parse(text);
  REQUIRE(t.ok());
  return std::move(t).value();
}

}  // namespace

TEST_CASE("uri template: bad templates are refused with the reason and the offset") {
  struct Case {
    const char* text;
    const char* message;
  };
  for (auto c : {
           Case{"a{b", "URI template 'a{b': an unclosed '{' at offset 1"},
           Case{"a}b", "URI template 'a}b': a '}' with no '{' at offset 1"},
           Case{"x/{}", "URI template 'x/{}': an empty expression at offset 2"},
           Case{"x/{a,b}", "URI template 'x/{a,b}': several variables in one expression (RFC 6570 level 3) at offset 2"},
           Case{"x{/a}", "URI template 'x{/a}': the operator '/' is RFC 6570 level 3, not supported at offset 1"},
           Case{"x{?q}", "URI template 'x{?q}': the operator '?' is RFC 6570 level 3, not supported at offset 1"},
           Case{"x{=q}", "URI template 'x{=q}': the operator '=' is reserved by RFC 6570 at offset 1"},
           Case{"x/{a:3}", "URI template 'x/{a:3}': a ':' or '*' modifier (RFC 6570 level 4) at offset 2"},
           Case{"x/{a*}", "URI template 'x/{a*}': a ':' or '*' modifier (RFC 6570 level 4) at offset 2"},
           Case{"x/{a-b}", "URI template 'x/{a-b}': a bad variable name at offset 2"},
           Case{"x/{.a}", "URI template 'x/{.a}': the operator '.' is RFC 6570 level 3, not supported at offset 2"},
           Case{"x/{a..b}", "URI template 'x/{a..b}': a bad variable name at offset 2"},
           Case{"a b", "URI template 'a b': a character a URI cannot hold at offset 1"},
           Case{"a%zz", "URI template 'a%zz': a '%' that starts no percent-escape at offset 1"},
           Case{"x/{a}{b}", "URI template 'x/{a}{b}': two expressions with nothing between them at offset 5"},
           Case{"x/{a}/{+a}", "URI template 'x/{a}/{+a}': a variable used twice at offset 6"},
       }) {
    CAPTURE(c.text);
    auto t = UriTemplate::parse(c.text);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == ErrorCode::invalid_argument);
    CHECK(t.error().message == c.message);
  }
  CHECK_FALSE(UriTemplate::parse(std::string(UriTemplate::kMaxTemplateBytes + 1, 'a')).ok());
  CHECK(UriTemplate::parse("file:///{+path}{#section}").ok());
  CHECK(UriTemplate::parse("x/{a.b_c%41}").ok());
  CHECK(UriTemplate::parse("no-variables").ok());
}

TEST_CASE("uri template: expansion encodes per operator, undefined variables vanish") {
  auto t = parsed("test://x/{var}/{+path}{#frag}");
  CHECK(t.variables() == std::vector<std::string>{"var", "path", "frag"});
  CHECK(t.has_variable("path"));
  CHECK_FALSE(t.has_variable("nope"));
  // RFC 6570 §3.2.2-3.2.4 examples.
  CHECK(parsed("{var}").expand({{"var", "value"}}) == "value");
  CHECK(parsed("{hello}").expand({{"hello", "Hello World!"}}) == "Hello%20World%21");
  CHECK(parsed("{+hello}").expand({{"hello", "Hello World!"}}) == "Hello%20World!");
  CHECK(parsed("{+path}/here").expand({{"path", "/foo/bar"}}) == "/foo/bar/here");
  CHECK(parsed("here?ref={+path}").expand({{"path", "/foo/bar"}}) == "here?ref=/foo/bar");
  CHECK(parsed("X{#var}").expand({{"var", "value"}}) == "X#value");
  CHECK(parsed("X{#hello}").expand({{"hello", "Hello World!"}}) == "X#Hello%20World!");
  CHECK(parsed("{base}index").expand({{"base", "http://example.com/home/"}}) ==
        "http%3A%2F%2Fexample.com%2Fhome%2Findex");
  CHECK(parsed("{+base}index").expand({{"base", "http://example.com/home/"}}) ==
        "http://example.com/home/index");
  CHECK(parsed("{+half}").expand({{"half", "50%"}}) == "50%25");
  CHECK(parsed("{+pct}").expand({{"pct", "%41"}}) == "%41");
  CHECK(parsed("{var}").expand({{"var", "\xc3\xa9"}}) == "%C3%A9");
  CHECK(t.expand({}) == "test://x//");
  CHECK(t.expand({{"var", "v"}, {"path", "a/b"}}) == "test://x/v/a/b");
}

TEST_CASE("uri template: match finds the variables, and round-trips expand") {
  auto t = parsed("test://template/{id}/data");
  auto m = t.match("test://template/123/data");
  REQUIRE(m);
  CHECK(*m == UriVariables{{"id", "123"}});
  // A simple variable never spans "/".
  CHECK_FALSE(t.match("test://template/1/2/data"));
  CHECK_FALSE(t.match("test://template/123/dat"));
  CHECK_FALSE(t.match("test://template/123/data/"));
  CHECK_FALSE(t.match("other://template/123/data"));
  CHECK_FALSE(t.match("test://template/a%zz/data"));
  CHECK(t.match("test://template//data") == UriVariables{{"id", ""}});

  for (std::string value : {"plain", "a b", "a/b?c#d", "%41", "50%", "\xc3\xa9t\xc3\xa9", ""}) {
    CAPTURE(value);
    auto uri = t.expand({{"id", value}});
    CHECK(t.match(uri) == UriVariables{{"id", value}});
  }

  auto files = parsed("file:///{+path}{#section}");
  CHECK(files.match("file:///a/b/c.txt") == UriVariables{{"path", "a/b/c.txt"}});
  CHECK(files.match("file:///a/b#intro") == UriVariables{{"path", "a/b#intro"}});
  auto split = parsed("docs/{+path}/v{version}");
  CHECK(split.match("docs/a/b/v/v2") == UriVariables{{"path", "a/b/v"}, {"version", "2"}});
  CHECK(split.match("docs/a%20b/v1") == UriVariables{{"path", "a b"}, {"version", "1"}});
  CHECK_FALSE(split.match("docs/a/b"));

  auto fragment = parsed("doc/{name}{#section}");
  CHECK(fragment.match("doc/readme") == UriVariables{{"name", "readme"}});
  CHECK(fragment.match("doc/readme#a/b") == UriVariables{{"name", "readme"}, {"section", "a/b"}});
  CHECK(fragment.match("doc/readme#") == UriVariables{{"name", "readme"}, {"section", ""}});
  CHECK_FALSE(fragment.match("doc/a/b#c"));

  auto fixed = parsed("test://static");
  CHECK(fixed.match("test://static") == UriVariables{});
  CHECK_FALSE(fixed.match("test://static2"));
  CHECK_FALSE(parsed("x/{+all}").match("x/" + std::string(UriTemplate::kMaxMatchBytes, 'a')));
  // Many reserved variables over a long URI: the table keeps this linear in the length.
  auto many = parsed("{+a}x{+b}x{+c}x{+d}y");
  std::string long_uri(UriTemplate::kMaxMatchBytes - 1, 'x');
  CHECK_FALSE(many.match(long_uri));
  auto split_many = many.match(long_uri + "y");
  REQUIRE(split_many);
  CHECK(split_many->at("a").size() == UriTemplate::kMaxMatchBytes - 4);
  CHECK(split_many->at("d").empty());
}
