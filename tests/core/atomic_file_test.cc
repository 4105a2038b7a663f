#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("collkit_atomic_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Names of everything in the directory (temporaries are hidden files).
  std::vector<std::string> entries() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesLeavingNoTemporary) {
  const fs::path p = dir_ / "r.json";
  write_file_atomic(p, "first\n");
  EXPECT_EQ(read(p), "first\n");
  write_file_atomic(p, std::string(1 << 20, 'x'));
  EXPECT_EQ(read(p), std::string(1 << 20, 'x'));
  EXPECT_EQ(entries(), std::vector<std::string>{"r.json"});
}

TEST_F(AtomicFileTest, FailedRenameKeepsTargetAndRemovesTemporary) {
  // A directory in the target's place makes the final rename fail after the
  // temporary was fully written.
  fs::create_directories(dir_ / "taken");
  try {
    write_file_atomic(dir_ / "taken", "data");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind((dir_ / "taken").string() + ": cannot write: ", 0), 0u)
        << e.what();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"taken"});
  EXPECT_TRUE(fs::is_empty(dir_ / "taken"));
}

TEST_F(AtomicFileTest, MissingDirectoryIsAFileError) {
  EXPECT_THROW(write_file_atomic(dir_ / "no" / "r.json", "x"), FileError);
  EXPECT_EQ(entries(), std::vector<std::string>{});
}

TEST_F(AtomicFileTest, GroupIsAllOrNothing) {
  const fs::path a = dir_ / "a.json";
  write_file_atomic(a, "old");
  // The second file cannot be created: the first must not be replaced.
  EXPECT_THROW(write_files_atomic({{a.string(), "new"}, {(dir_ / "no" / "b.csv").string(), "b"}}),
               FileError);
  EXPECT_EQ(read(a), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.json"});
  write_files_atomic({{a.string(), "new"}, {(dir_ / "b.csv").string(), "b"}});
  EXPECT_EQ(read(a), "new");
  EXPECT_EQ(read(dir_ / "b.csv"), "b");
}

TEST_F(AtomicFileTest, CheckWritable) {
  EXPECT_NO_THROW(check_writable((dir_ / "new.json").string()));
  EXPECT_EQ(entries(), std::vector<std::string>{});  // checking creates nothing
  try {
    check_writable((dir_ / "nope" / "x.json").string());
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "nope" / "x.json").string() +
                                         ": cannot write: directory '" + (dir_ / "nope").string() +
                                         "' does not exist");
  }
  EXPECT_THROW(check_writable(dir_.string()), FileError);
  EXPECT_NO_THROW(check_writable("relative-in-cwd.json"));
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode;
}

TEST_F(AtomicFileTest, SymlinkIsFollowedAndItsTargetReplaced) {
  const fs::path target = dir_ / "target.json";
  write_file_atomic(target, "old");
  fs::create_symlink("target.json", dir_ / "link.json");  // relative, as ln -s makes it
  write_file_atomic(dir_ / "link.json", "new");
  EXPECT_TRUE(S_ISLNK(mode_of(dir_ / "link.json")));
  EXPECT_EQ(fs::read_symlink(dir_ / "link.json"), "target.json");
  EXPECT_EQ(read(target), "new");
  // A dangling link creates its target.
  fs::create_symlink(dir_ / "later.json", dir_ / "dangling.json");
  write_file_atomic(dir_ / "dangling.json", "made");
  EXPECT_TRUE(S_ISLNK(mode_of(dir_ / "dangling.json")));
  EXPECT_EQ(read(dir_ / "later.json"), "made");
  EXPECT_EQ(entries(),
            (std::vector<std::string>{"dangling.json", "later.json", "link.json", "target.json"}));
}

TEST_F(AtomicFileTest, FifoIsWrittenInPlace) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read(fifo); });
  write_file_atomic(fifo, "through the pipe\n");
  reader.join();
  EXPECT_EQ(got, "through the pipe\n");
  EXPECT_TRUE(S_ISFIFO(mode_of(fifo)));
  EXPECT_EQ(entries(), std::vector<std::string>{"pipe"});
}

TEST_F(AtomicFileTest, CharacterDeviceIsWrittenInPlace) {
  // A private /dev/null (1, 3): making one needs root.
  const fs::path null = dir_ / "null";
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod needs root: " << std::strerror(errno);
  write_files_atomic({{null.string(), "discarded"}, {(dir_ / "r.csv").string(), "kept"}});
  EXPECT_TRUE(S_ISCHR(mode_of(null)));
  EXPECT_EQ(read(dir_ / "r.csv"), "kept");
  EXPECT_NO_THROW(check_writable(null.string()));
  EXPECT_EQ(entries(), (std::vector<std::string>{"null", "r.csv"}));
}

TEST_F(AtomicFileTest, SocketIsWrittenInPlace) {
  const fs::path path = dir_ / "sock";
  const int server = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(server, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(server, 1), 0);
  std::string got;
  std::thread reader([&] {
    const int c = ::accept(server, nullptr, nullptr);
    char buf[256];
    for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(c);
  });
  write_file_atomic(path, "over the socket");
  reader.join();
  ::close(server);
  EXPECT_EQ(got, "over the socket");
  EXPECT_TRUE(S_ISSOCK(mode_of(path)));
}

TEST_F(AtomicFileTest, DashIsStandardOutput) {
  ::testing::internal::CaptureStdout();
  write_file_atomic("-", "to stdout\n");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "to stdout\n");
  EXPECT_EQ(entries(), std::vector<std::string>{});
}

TEST_F(AtomicFileTest, ReadOnlyFileIsRefusedAndUnchanged) {
  const fs::path p = dir_ / "ro.json";
  write_file_atomic(p, "precious");
  fs::permissions(p, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  for (const auto& call : {+[](const std::string& s) { check_writable(s); },
                           +[](const std::string& s) { write_file_atomic(s, "gone"); }}) {
    try {
      call(p.string());
      FAIL() << "a read-only file was accepted";
    } catch (const FileError& e) {
      EXPECT_EQ(std::string(e.what()),
                p.string() +
                    ": cannot write: the file is read-only (mode 0444); refusing to "
                    "replace it (make it writable or choose another path)");
    }
  }
  EXPECT_EQ(read(p), "precious");
  EXPECT_EQ(mode_of(p) & 07777, 0444u);
  // Through a link too: the target decides.
  fs::create_symlink(p, dir_ / "link");
  EXPECT_THROW(write_file_atomic((dir_ / "link").string(), "gone"), FileError);
  EXPECT_EQ(read(p), "precious");
}

TEST_F(AtomicFileTest, ReplacingKeepsTheMode) {
  const fs::path p = dir_ / "private.json";
  write_file_atomic(p, "v1");
  ::chmod(p.c_str(), 0600);
  write_file_atomic(p, "v2");
  EXPECT_EQ(mode_of(p) & 07777, 0600u);
  ::chmod(p.c_str(), 0664);
  write_file_atomic(p, "v3");
  EXPECT_EQ(mode_of(p) & 07777, 0664u);
  EXPECT_EQ(read(p), "v3");
}

TEST_F(AtomicFileTest, OutputsThatAreInputsAreRefused) {
  const fs::path in = dir_ / "topo.json";
  write_file_atomic(in, "input");
  fs::create_symlink(in, dir_ / "alias.json");
  fs::create_hard_link(in, dir_ / "hard.json");
  for (const fs::path& out :
       {in, dir_ / "alias.json", dir_ / "hard.json", dir_ / "sub" / ".." / "topo.json"}) {
    if (out.parent_path().filename() == "..") fs::create_directories(dir_ / "sub");
    try {
      check_outputs({{"--json", out.string()}}, {{"--model", "x"}, {"--topology", in.string()}});
      FAIL() << out;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--json " + out.string() +
                                           " is the same file as --topology " + in.string() +
                                           ": refusing to overwrite an input");
    }
  }
  EXPECT_NO_THROW(
      check_outputs({{"--json", (dir_ / "other.json").string()}}, {{"--topology", in.string()}}));
  // Two outputs naming one file, existing or not, or both standard output.
  EXPECT_THROW(check_outputs(
                   {{"--json", (dir_ / "a").string()}, {"--csv", (dir_ / "." / "a").string()}}, {}),
               UsageError);
  EXPECT_THROW(check_outputs({{"--json", "-"}, {"--csv", "-"}}, {}), UsageError);
  EXPECT_NO_THROW(check_outputs({{"--json", "-"}, {"--csv", ""}}, {{"--topology", in.string()}}));
  EXPECT_EQ(read(in), "input");
  // Unwritable outputs are named with their flag.
  try {
    check_outputs({{"-o", (dir_ / "no" / "r.html").string()}}, {});
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("-o " + (dir_ / "no" / "r.html").string(), 0), 0u);
  }
}

}  // namespace
}  // namespace collkit
