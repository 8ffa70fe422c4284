// The code the docs show is the code the test command compiles and runs: in docs/*.md,
// each fenced block announced by `<!-- example: FILE NAME -->` (FILE from the repository
// root) must equal, line for line, the lines of FILE between its two
// `// [example: NAME]` markers (docs/runtime.md's rolling deploy is one).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string kRoot = DORM_SOURCE_ROOT;

std::string read_file(const std::string& relative) {
  std::ifstream in(kRoot + "/" + relative);
  REQUIRE_MESSAGE(in.good(), "cannot read " << relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Example {
  std::string file;
  std::string name;
  std::vector<std::string> shown;  // the fenced block's lines
};

// Every announced example of a markdown text, with its fenced block.
std::vector<Example> examples(const std::string& markdown) {
  const std::string tag = "<!-- example: ";
  std::vector<Example> out;
  auto lines = lines_of(markdown);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].starts_with(tag)) continue;
    std::istringstream words(lines[i].substr(tag.size()));
    Example e;
    words >> e.file >> e.name;
    REQUIRE_MESSAGE(i + 1 < lines.size(), "example " << e.name << " has no code block");
    REQUIRE_MESSAGE(lines[i + 1].starts_with("```"), "example " << e.name << " is not followed by a code block");
    std::size_t j = i + 2;
    for (; j < lines.size() && !lines[j].starts_with("```"); ++j) e.shown.push_back(lines[j]);
    REQUIRE_MESSAGE(j < lines.size(), "example " << e.name << "'s code block is not closed");
    out.push_back(std::move(e));
    i = j;
  }
  return out;
}

// The lines of `source` between its two markers for `name`.
std::vector<std::string> marked(const std::string& source, const std::string& name) {
  const std::string marker = "// [example: " + name + "]";
  auto lines = lines_of(source);
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == marker) at.push_back(i);
  }
  REQUIRE_MESSAGE(at.size() == 2, "expected two '" << marker << "' lines, found " << at.size());
  return {lines.begin() + static_cast<long>(at[0]) + 1, lines.begin() + static_cast<long>(at[1])};
}

}  // namespace

TEST_CASE("docs: each announced example is, line for line, the test code between its markers") {
  std::vector<Example> found;
  for (const auto& entry : std::filesystem::directory_iterator(kRoot + "/docs")) {
    if (entry.path().extension() != ".md") continue;
    auto some = examples(read_file("docs/" + entry.path().filename().string()));
    found.insert(found.end(), some.begin(), some.end());
  }
  // docs/runtime.md's rolling deploy at least.
  REQUIRE_FALSE(found.empty());
  for (const auto& e : found) {
    CAPTURE(e.file);
    CAPTURE(e.name);
    auto source = marked(read_file(e.file), e.name);
    REQUIRE_FALSE(source.empty());
    CHECK(e.shown.size() == source.size());
    for (std::size_t i = 0; i < std::min(e.shown.size(), source.size()); ++i) {
      CAPTURE(i);
      CHECK(e.shown[i] == source[i]);
    }
  }
}

TEST_CASE("docs example check: an announced block and a marked section are read as written") {
  auto found = examples("text\n<!-- example: f.cpp demo -->\n```cpp\nint a = 1;\n```\nmore\n");
  REQUIRE(found.size() == 1);
  CHECK(found[0].file == "f.cpp");
  CHECK(found[0].name == "demo");
  CHECK(found[0].shown == std::vector<std::string>{"int a = 1;"});
  CHECK(marked("x\n// [example: demo]\nint a = 2;\n// [example: demo]\n", "demo") ==
        std::vector<std::string>{"int a = 2;"});
}
