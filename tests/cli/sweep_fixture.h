// The scratch folder of the collkit sweep tests (sweep_cmd_test.cc, and
// sweep_mpi_test.cc under mpirun): a run's three files by tag, and the check
// that two runs wrote the same bytes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace collkit::testing_cli {

class SweepFiles : public ::testing::Test {
 protected:
  // `name` keeps the tests of different programs apart in /tmp.
  explicit SweepFiles(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() /
             ("collkit_cli_" + name + "." + std::to_string(::getpid()))) {}
  void SetUp() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string outputs(const std::string& tag) const {
    return " --json '" + (dir_ / (tag + ".json")).string() + "' --csv '" +
           (dir_ / (tag + ".csv")).string() + "' --html '" + (dir_ / (tag + ".html")).string() +
           "'";
  }
  void expect_same(const std::string& a, const std::string& b) const {
    for (const char* ext : {".json", ".csv", ".html"}) {
      const std::string x = slurp(dir_ / (a + ext)), y = slurp(dir_ / (b + ext));
      EXPECT_FALSE(x.empty()) << a << ext;
      EXPECT_EQ(x, y) << a << ext << " vs " << b << ext;
    }
  }
  std::filesystem::path dir_;
};

}  // namespace collkit::testing_cli
