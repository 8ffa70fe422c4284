#include "dorm/storage/write_batch.hpp"

namespace dorm::storage {

void WriteBatch::add(Kind kind, std::string_view key, std::string_view value) {
  entries_.push_back(Entry{kind, bytes_.size(), key.size(), value.size()});
  bytes_.append(key);
  bytes_.append(value);
}

WriteBatch::Op WriteBatch::op(std::size_t i) const {
  const Entry& e = entries_[i];
  std::string_view all(bytes_);
  return Op{e.kind, all.substr(e.offset, e.key_size), all.substr(e.offset + e.key_size, e.value_size)};
}

void WriteBatch::clear() {
  entries_.clear();
  bytes_.clear();
}

Result<void> WriteBatch::validate() const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Op o = op(i);
    if (o.kind == Kind::delete_range && o.value < o.key) {
      return Error{ErrorCode::invalid_argument,
                   "operation " + std::to_string(i) +
                       " of the batch is a delete_range whose end precedes its begin"};
    }
  }
  return {};
}

}  // namespace dorm::storage
