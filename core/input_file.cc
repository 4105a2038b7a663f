#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace collkit {
namespace {

std::string mib(std::uint64_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes) + " bytes";
}

std::string too_large(const std::string& name, std::string_view what, std::uint64_t limit) {
  return name + ": more than " + mib(limit) + " and not at its end; collkit reads a " +
         std::string(what) + " whole, at most " + mib(limit) +
         " (a device that never ends, such as /dev/zero, is not a file)";
}

// Reads `fd` to its end, failing once more than `limit` bytes arrived.
std::string read_stream(int fd, const std::string& name, std::string_view what, std::uint64_t limit,
                        std::uint64_t expected) {
  std::string text;
  text.reserve(expected);
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError(name + ": cannot read the " + std::string(what) + ": " +
                      std::strerror(errno));
    }
    if (text.size() + static_cast<std::uint64_t>(n) > limit)
      throw FileError(too_large(name, what, limit));
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

std::string input_name(const std::string& path) {
  return path == kStdinPath ? std::string(kStdinPath) + " (standard input)" : path;
}

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit) {
  const std::string name = input_name(path);
  const std::string role(what);
  if (path.empty())
    throw FileError("(empty path): cannot open the " + role + ": no file name given");
  int fd = STDIN_FILENO;
  if (path == kStdinPath) {
    static std::atomic<bool> taken{false};
    if (taken.exchange(true))
      throw FileError(name + ": standard input is read once; another input already read it");
  } else {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw FileError(name + ": cannot open the " + role + ": " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd != STDIN_FILENO) ::close(fd);
    }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw FileError(name + ": cannot open the " + role + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw FileError(name + ": is a directory, not a " + role);
  if (S_ISBLK(st.st_mode))
    throw FileError(name + ": is a block device, not a " + role + "; refusing to read it whole");
  if (S_ISREG(st.st_mode)) {
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size > limit)
      throw FileError(name + ": " + std::to_string(size) + " bytes; collkit reads a " + role +
                      " whole, at most " + mib(limit));
    return read_stream(fd, name, what, limit, size);
  }
  // A pipe, socket or character device: its size is not known beforehand.
  return read_stream(fd, name, what, limit, 0);
}

}  // namespace collkit
