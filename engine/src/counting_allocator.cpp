// Compiled with -fno-rtti: this class derives from a V8 class, and Debian's libnode
// exports no typeinfo for it.
#include <v8.h>

#include <cstdlib>
#include <cstring>

#include "dorm/engine/array_buffer_budget.hpp"

namespace dorm::engine {
namespace {

class CountingAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  explicit CountingAllocator(std::shared_ptr<ArrayBufferBudget> budget)
      : budget_(std::move(budget)) {}

  void* Allocate(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* data = std::calloc(length == 0 ? 1 : length, 1);
    if (data == nullptr) release(length);
    return data;
  }

  void* AllocateUninitialized(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* data = std::malloc(length == 0 ? 1 : length);
    if (data == nullptr) release(length);
    return data;
  }

  void Free(void* data, std::size_t length) override {
    std::free(data);
    release(length);
  }

 private:
  // Charges `length` bytes unless that would pass the limit; compare-and-swap so two
  // threads cannot both squeeze under it.
  bool reserve(std::size_t length) {
    std::size_t used = budget_->used.load(std::memory_order_relaxed);
    do {
      if (length > budget_->limit || used > budget_->limit - length) {
        if (budget_->on_refused) budget_->on_refused(length);
        return false;
      }
    } while (!budget_->used.compare_exchange_weak(used, used + length,
                                                  std::memory_order_relaxed));
    return true;
  }

  void release(std::size_t length) { budget_->used.fetch_sub(length, std::memory_order_relaxed); }

  std::shared_ptr<ArrayBufferBudget> budget_;
};

}  // namespace

void* new_counting_array_buffer_allocator(std::shared_ptr<ArrayBufferBudget> budget) {
  v8::ArrayBuffer::Allocator* allocator = new CountingAllocator(std::move(budget));
  return allocator;
}

}  // namespace dorm::engine
