// WriteBatch — the operations one Backend::commit applies atomically.
//
// Keys and values are copied once into one contiguous buffer as they are added (no
// allocation per operation once the buffer has grown), and read back as string_views
// that stay valid until the batch is next modified.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::storage {

class WriteBatch {
 public:
  enum class Kind : std::uint8_t {
    put,           // key := value
    del,           // remove key (no error if absent)
    delete_range,  // remove every key in [key, value)
  };

  struct Op {
    Kind kind;
    std::string_view key;    // the key, or the range's inclusive begin
    std::string_view value;  // the value for put, the range's exclusive end for delete_range
  };

  void put(std::string_view key, std::string_view value) { add(Kind::put, key, value); }
  void del(std::string_view key) { add(Kind::del, key, {}); }
  void delete_range(std::string_view begin, std::string_view end) {
    add(Kind::delete_range, begin, end);
  }

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  // Sum of key and value bytes over all operations.
  std::size_t byte_size() const { return bytes_.size(); }
  void clear();

  // The i-th operation (0 <= i < size()), in the order they were added.
  Op op(std::size_t i) const;

  // Operations in the order they were added; a commit applies them in this order.
  class const_iterator {
   public:
    using value_type = Op;
    using difference_type = std::ptrdiff_t;
    const_iterator() = default;
    const_iterator(const WriteBatch* batch, std::size_t i) : batch_(batch), i_(i) {}
    Op operator*() const { return batch_->op(i_); }
    const_iterator& operator++() { ++i_; return *this; }
    const_iterator operator++(int) { auto old = *this; ++i_; return old; }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const WriteBatch* batch_ = nullptr;
    std::size_t i_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, entries_.size()}; }
  const WriteBatch& ops() const { return *this; }

  // For implementers: invalid_argument when a delete_range's end is less than its begin.
  // A backend's commit checks this before applying anything.
  Result<void> validate() const;

 private:
  struct Entry {
    Kind kind;
    std::size_t offset;  // of the key in bytes_; the value follows it
    std::size_t key_size;
    std::size_t value_size;
  };
  void add(Kind kind, std::string_view key, std::string_view value);

  std::vector<Entry> entries_;
  std::string bytes_;
};

}  // namespace dorm::storage
