// A tmpfs of a given size, mounted on a fresh directory for one test and unmounted (lazily,
// so even files a failed test left open do not keep it) and removed afterwards. Tests fill
// it to see what a full disk does. Mounting needs root (CAP_SYS_ADMIN): the tests that use
// this run as root on the project's machine and in CI; anywhere else they fail, saying so
// (docs/storage.md, "Disk full"); they are never skipped silently.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace dorm::testing {

class TmpfsMount {
 public:
  explicit TmpfsMount(std::uint64_t bytes) {
    std::string pattern = (std::filesystem::temp_directory_path() / "dorm-tmpfs-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    std::string options = "size=" + std::to_string(bytes) + ",mode=0700";
    if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      int err = errno;
      ::rmdir(path_.c_str());
      throw std::runtime_error("cannot mount a tmpfs on " + path_.string() + ": " + std::strerror(err) +
                               (::geteuid() != 0 ? " (this test fills a small filesystem of its own "
                                                   "and must run as root)"
                                                 : ""));
    }
  }
  ~TmpfsMount() {
    ::umount2(path_.c_str(), MNT_DETACH);
    ::rmdir(path_.c_str());
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

  std::uint64_t free_bytes() const {
    struct statvfs st {};
    if (::statvfs(path_.c_str(), &st) != 0) throw std::runtime_error("statvfs failed");
    return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  }

  // Takes `bytes` of the filesystem with a file named `name` (allocated, not sparse).
  void ballast(const std::string& name, std::uint64_t bytes) const {
    int fd = ::open((path_ / name).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0) throw std::runtime_error("cannot create ballast " + name);
    int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    ::close(fd);
    if (err != 0) throw std::runtime_error("cannot allocate ballast " + name + ": " + std::strerror(err));
  }
  void drop(const std::string& name) const { std::filesystem::remove(path_ / name); }

 private:
  std::filesystem::path path_;
};

}  // namespace dorm::testing
