// WriteBatch — the operations one Backend::commit applies atomically.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::storage {

class WriteBatch {
 public:
  enum class Kind {
    put,           // key := value
    del,           // remove key (no error if absent)
    delete_range,  // remove every key in [key, end)
  };

  struct Op {
    Kind kind;
    std::string key;    // the key, or the range's inclusive begin
    std::string value;  // the value for put, the range's exclusive end for delete_range
  };

  void put(std::string_view key, std::string_view value);
  void del(std::string_view key);
  void delete_range(std::string_view begin, std::string_view end);

  // Operations in the order they were added; a commit applies them in this order.
  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  std::size_t size() const { return ops_.size(); }
  // Sum of key and value bytes over all operations.
  std::size_t byte_size() const { return bytes_; }
  void clear();

  // For implementers: invalid_argument when a delete_range's end is less than its begin.
  // A backend's commit checks this before applying anything.
  Result<void> validate() const;

 private:
  std::vector<Op> ops_;
  std::size_t bytes_ = 0;
};

}  // namespace dorm::storage
