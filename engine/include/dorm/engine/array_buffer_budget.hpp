// ArrayBuffer memory accounting.
//
// V8's per-isolate heap limit does not cover ArrayBuffer backing stores (they live outside
// the V8 heap: 256 MiB of ArrayBuffers fit under a 64 MiB heap limit), so each isolate gets
// an allocator that counts those bytes against a budget and refuses an allocation that
// would exceed it (V8 then throws a RangeError in the script that asked).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

namespace v8 {
class ArrayBuffer;
}

namespace dorm::engine {

struct ArrayBufferBudget {
  explicit ArrayBufferBudget(std::size_t limit_bytes) : limit(limit_bytes) {}
  const std::size_t limit;        // most bytes of backing stores alive at once
  std::atomic<std::size_t> used{0};  // bytes currently allocated
  // Called (on the allocating thread) when an allocation is refused, before V8 throws its
  // RangeError; the engine uses it to end the execution with kind memory_limit.
  std::function<void(std::size_t requested)> on_refused;
};

// Returns a new v8::ArrayBuffer::Allocator (owned by the caller, to be passed in
// v8::Isolate::CreateParams::array_buffer_allocator and deleted after the isolate)
// that charges every backing store to `budget`. The class itself lives in a file
// compiled with -fno-rtti, as Debian's libnode has no RTTI.
void* new_counting_array_buffer_allocator(std::shared_ptr<ArrayBufferBudget> budget);

}  // namespace dorm::engine
