#include "dorm/engine/v8_process.hpp"

#include <libplatform/libplatform.h>
#include <v8.h>

#include <memory>
#include <mutex>

// Debian's libnode was built without these; defining any of them makes V8::Initialize
// abort with "Embedder-vs-V8 build configuration mismatch".
#if defined(V8_COMPRESS_POINTERS) || defined(V8_31BIT_SMIS_ON_64BIT_ARCH) || \
    defined(V8_ENABLE_SANDBOX)
#error "libnode108's V8 has no pointer compression, 31-bit Smis or sandbox"
#endif

namespace dorm::engine {

v8::Platform& v8_platform() {
  // Leaked on purpose: V8 is never disposed (see header).
  static v8::Platform* platform = [] {
    v8::V8::InitializeICU();
    auto owned = v8::platform::NewDefaultPlatform();
    v8::Platform* raw = owned.release();
    v8::V8::InitializePlatform(raw);
    v8::V8::Initialize();
    return raw;
  }();
  return *platform;
}

}  // namespace dorm::engine
