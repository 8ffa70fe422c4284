#include "append_log_backend.hpp"

#include <dorm/storage/map_scan.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace example {
namespace {

using dorm::Error;
using dorm::ErrorCode;
using dorm::storage::WriteBatch;

// Record layout, all integers little-endian u32:
//   body_size | op count | per op: kind (u32), key size, key, value size, value
// A record is written with a single write(); a crash can leave only a prefix of the last
// one, which replay detects by its size and cuts off.
void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool get_u32(std::string_view& in, std::uint32_t& v) {
  if (in.size() < 4) return false;
  v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(4);
  return true;
}

bool get_bytes(std::string_view& in, std::string& out) {
  std::uint32_t n = 0;
  if (!get_u32(in, n) || in.size() < n) return false;
  out.assign(in.data(), n);
  in.remove_prefix(n);
  return true;
}

std::string encode(const WriteBatch& batch) {
  std::string body;
  put_u32(body, static_cast<std::uint32_t>(batch.size()));
  for (const auto op : batch.ops()) {
    put_u32(body, static_cast<std::uint32_t>(op.kind));
    put_u32(body, static_cast<std::uint32_t>(op.key.size()));
    body += op.key;
    put_u32(body, static_cast<std::uint32_t>(op.value.size()));
    body += op.value;
  }
  std::string record;
  put_u32(record, static_cast<std::uint32_t>(body.size()));
  return record + body;
}

// Decodes one record's body into a batch; false if it is malformed.
bool decode(std::string_view body, WriteBatch& batch) {
  std::uint32_t count = 0;
  if (!get_u32(body, count)) return false;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t kind = 0;
    std::string key, value;
    if (!get_u32(body, kind) || !get_bytes(body, key) || !get_bytes(body, value)) return false;
    switch (static_cast<WriteBatch::Kind>(kind)) {
      case WriteBatch::Kind::put: batch.put(key, value); break;
      case WriteBatch::Kind::del: batch.del(key); break;
      case WriteBatch::Kind::delete_range: batch.delete_range(key, value); break;
      default: return false;
    }
  }
  return body.empty();
}

Error io_error(const std::string& what) {
  return Error{ErrorCode::io_error, what + ": " + std::strerror(errno)};
}

}  // namespace

dorm::Result<std::unique_ptr<AppendLogBackend>> AppendLogBackend::open(
    const std::string& path, dorm::storage::Durability durability) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot open log '" + path + "'");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Error{ErrorCode::busy, "log '" + path + "' is open in another process"};
  }
  auto backend = std::unique_ptr<AppendLogBackend>(new AppendLogBackend(path, durability, fd));

  // Replay every whole record; cut off a torn tail so the next append starts clean.
  std::string log;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(log.size()))) > 0) {
    log.append(buf, static_cast<std::size_t>(n));
  }
  if (n < 0) return io_error("cannot read log '" + path + "'");
  std::string_view rest = log;
  std::size_t good = 0;
  while (true) {
    std::string_view at = rest;
    std::uint32_t size = 0;
    if (!get_u32(at, size) || at.size() < size) break;
    WriteBatch batch;
    if (!decode(at.substr(0, size), batch)) {
      return Error{ErrorCode::corruption, "log '" + path + "' has a malformed record at byte " +
                                              std::to_string(good)};
    }
    backend->apply(batch);
    rest = at.substr(size);
    good += 4 + size;
  }
  if (good != log.size() && ::ftruncate(fd, static_cast<off_t>(good)) != 0) {
    return io_error("cannot cut the torn tail of log '" + path + "'");
  }
  return backend;
}

AppendLogBackend::~AppendLogBackend() { ::close(fd_); }

void AppendLogBackend::apply(const WriteBatch& batch) {
  for (const auto op : batch.ops()) {
    switch (op.kind) {
      case WriteBatch::Kind::put: data_.insert_or_assign(std::string(op.key), op.value); break;
      case WriteBatch::Kind::del:
        if (auto it = data_.find(op.key); it != data_.end()) data_.erase(it);
        break;
      case WriteBatch::Kind::delete_range:
        data_.erase(data_.lower_bound(op.key), data_.lower_bound(op.value));
        break;
    }
  }
}

dorm::Result<std::optional<std::string>> AppendLogBackend::get(std::string_view key) {
  std::shared_lock lock(mutex_);
  auto it = data_.find(key);
  return it == data_.end() ? std::optional<std::string>{} : std::optional<std::string>{it->second};
}

dorm::Result<std::vector<std::optional<std::string>>> AppendLogBackend::get_many(
    std::span<const std::string> keys) {
  std::shared_lock lock(mutex_);
  std::vector<std::optional<std::string>> out;
  for (const auto& key : keys) {
    auto it = data_.find(key);
    out.push_back(it == data_.end() ? std::nullopt : std::optional<std::string>{it->second});
  }
  return out;
}

dorm::Result<std::vector<dorm::storage::KeyValue>> AppendLogBackend::scan(
    const dorm::storage::ScanOptions& options) {
  // dorm's helper implements Backend::scan's range, start-after, direction and limit
  // rules over any ordered map; the shared lock keeps the map still meanwhile.
  std::shared_lock lock(mutex_);
  return dorm::storage::scan_ordered_map(data_, options);
}

dorm::Result<void> AppendLogBackend::commit(const WriteBatch& batch) {
  if (auto ok = batch.validate(); !ok) return ok;
  if (batch.empty()) return {};
  std::string record = encode(batch);
  // Holding the lock across the write makes the log order the commit order, and readers
  // see the batch only once it is in the log.
  std::unique_lock lock(mutex_);
  ssize_t written = ::write(fd_, record.data(), record.size());
  if (written != static_cast<ssize_t>(record.size())) {
    // Cut off whatever part did land, so the log stays a sequence of whole records.
    off_t end = ::lseek(fd_, 0, SEEK_END);
    if (written > 0 && end >= written) (void)::ftruncate(fd_, end - written);
    return io_error("cannot append to log '" + path_ + "'");
  }
  if (durability_ == dorm::storage::Durability::fsync && ::fdatasync(fd_) != 0) {
    return io_error("cannot sync log '" + path_ + "'");
  }
  apply(batch);
  return {};
}

}  // namespace example
