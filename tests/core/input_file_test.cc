// Input files read whole, never without bound (issue 40 item 3): regular
// files over the limit refused before they are read, streams refused once
// they pass it, directories and missing files named with the reason.
#include "core/input_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::string& path, std::uint64_t limit = kMaxInputBytes) {
  try {
    read_input_file(path, "topology file", limit);
  } catch (const FileError& e) {
    return e.what();
  }
  return "(no error)";
}

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("collkit_input_file_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(InputFileTest, RegularFileWithinTheLimitIsReadWhole) {
  const std::string path = (dir_ / "t.json").string();
  std::ofstream(path) << "{\"x\": 1}";
  EXPECT_EQ(read_input_file(path, "topology file"), "{\"x\": 1}");
  // Exactly the limit is allowed, one byte more is not.
  EXPECT_EQ(read_input_file(path, "topology file", 8), "{\"x\": 1}");
  EXPECT_EQ(error_of(path, 7),
            path + ": 8 bytes; collkit reads a topology file whole, at most 7 bytes");
}

TEST_F(InputFileTest, SparseHugeFileIsRefusedBeforeReading) {
  const std::string path = (dir_ / "big.json").string();
  std::ofstream(path) << "";
  fs::resize_file(path, std::uint64_t{20} << 30);  // 20 GiB, sparse
  EXPECT_EQ(error_of(path),
            path + ": 21474836480 bytes; collkit reads a topology file whole, at most 256 MiB");
}

TEST_F(InputFileTest, EndlessDeviceIsRefusedAtTheLimit) {
  EXPECT_EQ(error_of("/dev/zero", 1 << 20),
            "/dev/zero: more than 1 MiB and not at its end; collkit reads a topology file "
            "whole, at most 1 MiB (a device that never ends, such as /dev/zero, is not a file)");
}

TEST_F(InputFileTest, PipeIsReadToItsEnd) {
  const std::string path = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(path) << "from a pipe"; });
  EXPECT_EQ(read_input_file(path, "report"), "from a pipe");
  writer.join();
}

TEST_F(InputFileTest, DirectoryAndMissingFileSayWhatIsWrong) {
  EXPECT_EQ(error_of(dir_.string()), dir_.string() + ": is a directory, not a topology file");
  EXPECT_EQ(
      error_of((dir_ / "none.json").string()),
      (dir_ / "none.json").string() + ": cannot open the topology file: No such file or directory");
  EXPECT_EQ(error_of(""), "(empty path): cannot open the topology file: no file name given");
}

TEST_F(InputFileTest, StandardInputIsReadOnce) {
  const std::string path = (dir_ / "in.txt").string();
  std::ofstream(path) << "stdin text";
  const int saved = ::dup(STDIN_FILENO);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDIN_FILENO);
  ::close(fd);
  EXPECT_EQ(read_input_file("-", "report"), "stdin text");
  EXPECT_EQ(error_of("-"),
            "- (standard input): standard input is read once; another input already read it");
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
}

}  // namespace
}  // namespace collkit
