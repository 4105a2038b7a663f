// --jobs on the commands that run many simulations: simulate (algorithms x
// sizes) and plan (layouts) print and write the same bytes on 1, 2 and 3
// threads (calibrate's own check is in tests/calibration/calibrate_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::slurp;

const std::string kSource = COLLKIT_SOURCE_DIR;

class Jobs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("collkit_cli_jobs." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs `args --jobs J --json FILE` for each J; every run must print and
  // write what the first did.
  void expect_same(const std::string& args) {
    std::string out, json;
    for (const char* jobs : {"1", "2", "3"}) {
      const fs::path file = dir_ / (std::string("j") + jobs + ".json");
      const auto r =
          run_collkit(args + " --jobs " + jobs + " --json '" + file.string() + "'", dir_);
      ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.err;
      if (out.empty()) {
        out = r.out;
        json = slurp(file);
        ASSERT_FALSE(json.empty());
        continue;
      }
      EXPECT_EQ(r.out, out) << args << " --jobs " << jobs;
      EXPECT_EQ(slurp(file), json) << args << " --jobs " << jobs;
    }
  }
  fs::path dir_;
};

TEST_F(Jobs, SimulateAlgorithmsTimesSizes) {
  expect_same("simulate --topology '" + kSource +
              "/topologies/h100-cluster-4x8.json' --collective all_reduce -b 1K -e 64M -f 16");
}

TEST_F(Jobs, PlanLayouts) {
  // At 4 GiB nothing fits without ZeRO-3, so tensor and pipeline layouts
  // are priced too (planner.cc), sharing one cache of collective times.
  expect_same("plan --model '" + kSource + "/models/gpt2-1.5b.json' --topology '" + kSource +
              "/topologies/h100-cluster-2x8.json' --batch 64 --device-memory 4GiB");
}

}  // namespace
}  // namespace collkit
