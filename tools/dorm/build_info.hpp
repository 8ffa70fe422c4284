// What `dorm --version` prints: dorm's version and the commit it was built from, and the
// versions of the libraries that decide its behaviour, as loaded at run time where the
// library can say (a shared library may be newer than the headers dorm was compiled with).
#pragma once

#include <string>

namespace dorm::tools {

// The commit dorm was built from (`git describe --always --dirty`), or "unknown" when the
// sources were not a git checkout.
const char* build_commit();

// Several lines: "dorm 0.1.0 (commit abc1234)", then one per library.
std::string version_text();

}  // namespace dorm::tools
