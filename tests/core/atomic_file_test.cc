#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

}  // namespace
}  // namespace collkit
