#include "dorm/storage/write_batch.hpp"

namespace dorm::storage {

void WriteBatch::put(std::string_view key, std::string_view value) {
  ops_.push_back(Op{Kind::put, std::string(key), std::string(value)});
  bytes_ += key.size() + value.size();
}

void WriteBatch::del(std::string_view key) {
  ops_.push_back(Op{Kind::del, std::string(key), {}});
  bytes_ += key.size();
}

void WriteBatch::delete_range(std::string_view begin, std::string_view end) {
  ops_.push_back(Op{Kind::delete_range, std::string(begin), std::string(end)});
  bytes_ += begin.size() + end.size();
}

void WriteBatch::clear() {
  ops_.clear();
  bytes_ = 0;
}

Result<void> WriteBatch::validate() const {
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    if (op.kind == Kind::delete_range && op.value < op.key) {
      return Error{ErrorCode::invalid_argument,
                   "operation " + std::to_string(i) +
                       " of the batch is a delete_range whose end precedes its begin"};
    }
  }
  return {};
}

}  // namespace dorm::storage
