#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

std::string reason(int err) { return std::strerror(err); }

std::string directory_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

std::string octal_mode(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Follows `path` while it is a symbolic link (relative targets against the
// link's directory) and returns the final path, which may not exist.
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    fs::path target = fs::read_symlink(p, ec);
    if (ec) throw FileError(path + ": cannot write: " + ec.message());
    if (target.is_relative()) target = fs::path(p).parent_path() / target;
    p = target.string();
  }
  throw FileError(path + ": cannot write: too many levels of symbolic links");
}

// The descriptor a path names: /dev/stdout 1, /dev/stderr 2, /dev/fd/N and
// /proc/self/fd/N (bash's >(...) hands out /dev/fd/63); -1 for any other
// path. Such a path is the open stream itself, so it is written through the
// descriptor: its target (pipe:[N] for a pipe) is not a path, and a file
// behind it keeps its offset and append mode instead of being replaced.
int descriptor_of(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
                                    "/proc/" + std::to_string(::getpid()) + "/fd/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    const std::string digits = path.substr(prefix.size());
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    return std::stoi(digits);
  }
  return -1;
}

// What is at an output path, and so how it is written.
struct Target {
  enum class Kind : std::uint8_t { standard_output, replace, in_place, descriptor };
  Kind kind = Kind::replace;
  std::string given;    // as the user wrote it, for messages
  std::string path;     // after following links
  bool exists = false;  // replace: an existing regular file
  struct stat st {};    // of the existing file
  bool socket = false;  // in_place: a Unix socket (connected, not opened)
  int fd = -1;          // descriptor: the open descriptor the path names
};

Target resolve(const std::string& given) {
  Target t;
  t.given = given;
  if (given == kStdoutPath) {
    t.kind = Target::Kind::standard_output;
    return t;
  }
  if (given.empty()) throw FileError("(empty path): cannot write: no file name given");
  if (const int fd = descriptor_of(given); fd >= 0) {
    t.kind = Target::Kind::descriptor;
    t.fd = fd;
    t.path = given;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) throw FileError(given + ": cannot write: " + reason(errno));
    if ((flags & O_ACCMODE) == O_RDONLY)
      throw FileError(given + ": cannot write: descriptor " + std::to_string(fd) +
                      " is open for reading only");
    return t;
  }
  t.path = follow_links(given);
  const std::string via = t.path == given ? "" : " (the link's target " + t.path + ")";
  if (::stat(t.path.c_str(), &t.st) != 0) {
    // Absent (or its directory is): created, checked by check_writable.
    if (fs::path(t.path).filename().empty())
      throw FileError(given + ": cannot write: not a file name");
    return t;
  }
  if (S_ISDIR(t.st.st_mode)) throw FileError(given + ": cannot write: is a directory" + via);
  if (S_ISBLK(t.st.st_mode))
    throw FileError(given + ": cannot write: is a block device" + via +
                    "; refusing to write reports to it");
  if (S_ISCHR(t.st.st_mode) || S_ISFIFO(t.st.st_mode) || S_ISSOCK(t.st.st_mode)) {
    t.kind = Target::Kind::in_place;
    t.socket = S_ISSOCK(t.st.st_mode);
    if (!t.socket && ::access(t.path.c_str(), W_OK) != 0)
      throw FileError(given + ": cannot write: " + reason(errno) + via);
    return t;
  }
  if (!S_ISREG(t.st.st_mode))
    throw FileError(given + ": cannot write: not a regular file, device, FIFO or socket" + via);
  t.exists = true;
  // Read-only means no write bit at all (root too, which access() would let
  // through), or not writable by this user.
  if ((t.st.st_mode & 0222) == 0 || ::access(t.path.c_str(), W_OK) != 0)
    throw FileError(given + ": cannot write: the file is read-only (mode " +
                    octal_mode(t.st.st_mode) + ")" + via +
                    "; refusing to replace it (make it writable or choose another path)");
  return t;
}

void check_directory(const Target& t) {
  const std::string dir = directory_of(t.path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw FileError(t.given + ": cannot write: directory '" + dir + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw FileError(t.given + ": cannot write: directory '" + dir + "' is not writable");
}

void write_fd(int fd, const std::string& text, const std::string& given) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError(given + ": cannot write: " + reason(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// A device, FIFO or socket: written where it is, no temporary, no rename.
void write_in_place(const Target& t, const std::string& text) {
  int fd = -1;
  if (t.socket) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (t.path.size() >= sizeof addr.sun_path)
      throw FileError(t.given + ": cannot write: socket path too long");
    std::memcpy(addr.sun_path, t.path.c_str(), t.path.size() + 1);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      throw FileError(t.given + ": cannot write: " + reason(err));
    }
  } else {
    fd = ::open(t.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw FileError(t.given + ": cannot write: " + reason(errno));
  }
  try {
    write_fd(fd, text, t.given);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw FileError(t.given + ": cannot write: " + reason(errno));
}

// The descriptor "-" writes to: 1, or the saved standard output after
// reserve_standard_output().
int standard_output_fd = STDOUT_FILENO;

void write_standard_output(const std::string& text) {
  // Whatever the command printed through stdio comes first.
  if (std::fflush(stdout) != 0)
    throw FileError(std::string(kStdoutPath) +
                    " (standard output): cannot write: " + reason(errno));
  write_fd(standard_output_fd, text, std::string(kStdoutPath) + " (standard output)");
}

// /dev/stdout, /dev/fd/N: written through the descriptor, after what stdio
// holds for it. Standard output is the saved one after
// reserve_standard_output(), as for "-".
void write_descriptor(const Target& t, const std::string& text) {
  if (t.fd == STDOUT_FILENO || t.fd == STDERR_FILENO) {
    std::fflush(stdout);
    std::fflush(stderr);
  }
  write_fd(t.fd == STDOUT_FILENO ? standard_output_fd : t.fd, text, t.given);
}

// A temporary created next to the (link-resolved) target: rename() is atomic
// only within one file system. The name is hidden and unique per process and
// call, so concurrent writers never collide; it is removed unless committed.
class TempFile {
 public:
  explicit TempFile(const Target& target) : given_(target.given), target_(target.path) {
    static std::atomic<unsigned> counter{0};
    const fs::path p(target_);
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
        throw FileError(given_ + ": cannot write: " + reason(err));
      }
    }
    if (target.exists) {
      // The replacement keeps the file's permissions (and, for root, owner).
      if (::geteuid() == 0) (void)!::fchown(fd_, target.st.st_uid, target.st.st_gid);
      if (::fchmod(fd_, target.st.st_mode & 07777) != 0) fail(errno);
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&& o) noexcept
      : given_(std::move(o.given_)),
        target_(std::move(o.target_)),
        path_(std::move(o.path_)),
        fd_(o.fd_) {
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
    write_fd(fd_, text, given_);
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
    throw FileError(given_ + ": cannot write: " + reason(err));
  }

  std::string given_;
  std::string target_;
  std::string path_;
  int fd_ = -1;
};

// What identifies a path for check_outputs: device and inode where it
// exists, else the absolute path after following links.
struct Identity {
  bool standard_output = false;
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string resolved;
};

Identity identify(const std::string& path) {
  Identity id;
  if (path == kStdoutPath || descriptor_of(path) == STDOUT_FILENO) {
    id.standard_output = true;
    return id;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return id;
  }
  std::error_code ec;
  id.resolved = fs::weakly_canonical(fs::absolute(follow_links(path)), ec).string();
  if (ec) id.resolved = path;
  return id;
}

bool same_file(const Identity& a, const Identity& b) {
  if (a.standard_output || b.standard_output) return a.standard_output && b.standard_output;
  if (a.exists != b.exists) return false;
  return a.exists ? a.dev == b.dev && a.ino == b.ino : a.resolved == b.resolved;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& text) {
  write_files_atomic({{path, text}});
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  // Every target is looked at before anything is written.
  std::vector<Target> targets;
  targets.reserve(files.size());
  for (const auto& file : files) {
    targets.push_back(resolve(file.first));
    if (targets.back().kind == Target::Kind::replace) check_directory(targets.back());
  }
  std::vector<TempFile> temps;
  temps.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (targets[i].kind != Target::Kind::replace) continue;
    temps.emplace_back(targets[i]);
    temps.back().write_all(files[i].second);
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (targets[i].kind == Target::Kind::in_place) write_in_place(targets[i], files[i].second);
    if (targets[i].kind == Target::Kind::standard_output) write_standard_output(files[i].second);
    if (targets[i].kind == Target::Kind::descriptor) write_descriptor(targets[i], files[i].second);
  }
  for (TempFile& t : temps) t.commit();
}

void reserve_standard_output() {
  if (standard_output_fd != STDOUT_FILENO) return;
  std::fflush(stdout);
  const int saved = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    throw FileError(std::string(kStdoutPath) + " (standard output): " + reason(errno));
  standard_output_fd = saved;
}

void check_writable(const std::string& path) {
  const Target t = resolve(path);
  if (t.kind == Target::Kind::replace) check_directory(t);
}

void check_outputs(const std::vector<PathArg>& outputs, const std::vector<PathArg>& inputs) {
  std::vector<std::pair<const PathArg*, Identity>> seen;
  for (const PathArg& out : outputs) {
    if (out.path.empty()) continue;
    try {
      check_writable(out.path);
    } catch (const FileError& e) {
      throw FileError(out.flag + " " + e.what());
    }
    const Identity id = identify(out.path);
    for (const auto& [other, other_id] : seen)
      if (same_file(id, other_id))
        throw UsageError(
            out.flag + " " + out.path + " and " + other->flag + " " + other->path +
            (id.standard_output ? " both name standard output" : " name the same file") +
            ": give each output its own path");
    for (const PathArg& in : inputs) {
      // An input "-" is standard input, never an output's file.
      if (in.path.empty() || in.path == "-") continue;
      if (same_file(id, identify(in.path)) && (id.exists || id.standard_output))
        throw UsageError(out.flag + " " + out.path + " is the same file as " + in.flag + " " +
                         in.path + ": refusing to overwrite an input");
    }
    seen.emplace_back(&out, id);
  }
}

}  // namespace collkit
