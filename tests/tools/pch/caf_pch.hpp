// Precompiled header for translation units that use CAF: caf/all.hpp alone costs about
// 6 s per file to parse, so every CAF-using target compiles it once through this header.

#include <caf/all.hpp>
