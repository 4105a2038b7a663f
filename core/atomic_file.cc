#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace collkit {
namespace {

std::string reason(int err) { return std::strerror(err); }

std::string directory_of(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

// A temporary created next to the target (rename() is atomic only within one
// file system). The name is hidden and unique per process and call, so
// concurrent writers never collide; it is removed unless committed.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<unsigned> counter{0};
    const std::filesystem::path p(target);
    if (p.filename().empty()) throw FileError(target + ": cannot write: not a file name");
    // Appended rather than "." + name: gcc 12 warns falsely (-Wrestrict) on that.
    std::string hidden = ".";
    hidden += p.filename().string();
    const std::string base = (p.parent_path() / hidden).string();
    for (;;) {
      path_ = base + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      // 0666 & ~umask, like any file the user creates (mkstemp would force 0600).
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) break;
      if (errno != EEXIST) {
        const int err = errno;
        path_.clear();
        throw FileError(target + ": cannot write: " + reason(err));
      }
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&& o) noexcept
      : target_(std::move(o.target_)), path_(std::move(o.path_)), fd_(o.fd_) {
    o.path_.clear();
    o.fd_ = -1;
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  // Writes everything and flushes it to disk, so that after the rename a
  // crash cannot leave the target empty.
  void write_all(const std::string& text) {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail(errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (::fsync(fd_) != 0) fail(errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(errno);
  }

  void commit() {
    if (::rename(path_.c_str(), target_.c_str()) != 0) fail(errno);
    path_.clear();
  }

 private:
  [[noreturn]] void fail(int err) const {
    throw FileError(target_ + ": cannot write: " + reason(err));
  }

  std::string target_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace

void write_file_atomic(const std::string& path, const std::string& text) {
  write_files_atomic({{path, text}});
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<TempFile> temps;
  temps.reserve(files.size());
  for (const auto& [path, text] : files) {
    temps.emplace_back(path);
    temps.back().write_all(text);
  }
  for (TempFile& t : temps) t.commit();
}

void check_writable(const std::string& path) {
  const std::string dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw FileError(path + ": cannot write: directory '" + dir + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw FileError(path + ": cannot write: directory '" + dir + "' is not writable");
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw FileError(path + ": cannot write: is a directory");
}

}  // namespace collkit
