// docs/mcp.md shows examples/own-tool/own_tool.cpp verbatim ("Your own tool"); the build
// compiles the file and tests/e2e/own_tool.test.mjs runs it, so the page cannot rot as
// long as the two stay equal, which this checks.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The fenced block right after the line naming `marker` in `page`; empty if there is none.
std::string block_after(const std::string& page, const std::string& marker) {
  auto at = page.find(marker);
  if (at == std::string::npos) return {};
  auto open = page.find("\n```cpp\n", at);
  if (open == std::string::npos) return {};
  open += 8;
  auto close = page.find("\n```\n", open);
  if (close == std::string::npos) return {};
  return page.substr(open, close + 1 - open);
}

}  // namespace

TEST_CASE("docs/mcp.md shows examples/own-tool/own_tool.cpp as it is") {
  const std::string root = DORM_SOURCE_ROOT;
  auto page = read_file(root + "/docs/mcp.md");
  auto source = read_file(root + "/examples/own-tool/own_tool.cpp");
  auto shown = block_after(page, "<!-- examples/own-tool/own_tool.cpp -->");
  REQUIRE_MESSAGE(!shown.empty(),
                  "docs/mcp.md has no ```cpp block after <!-- examples/own-tool/own_tool.cpp -->");
  CHECK_MESSAGE(shown == source,
                "the block in docs/mcp.md differs from examples/own-tool/own_tool.cpp: copy "
                "the file into the page");
}
