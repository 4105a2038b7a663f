// `collkit tuner` as a user runs it: the two files it writes and what they
// hold, and bad input: one line "collkit: error: ...", exit 2, nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tuner/tuner_model.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

class TunerCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_tuner_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    topology_ = (dir_ / "fc-8.json").string();
    std::ofstream(topology_) << R"({"name": "fc-8", "generator": {"kind": "fully_connected",
        "ranks": 8, "bandwidth_gbps": 100, "latency_us": 1.0}})";
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::string& args) { return testing_cli::run_collkit("tuner " + args, dir_); }
  // Only the topology file: nothing was written.
  void expect_nothing_written() {
    std::size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) n += e.is_regular_file();
    EXPECT_EQ(n, 1u);
  }
  void expect_error(const std::string& args, const std::string& text) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    expect_nothing_written();
  }
  fs::path dir_;
  std::string topology_;
};

TEST_F(TunerCli, WritesModelAndConfig) {
  const RunResult r = run("--topology " + topology_ + " --ranks 8,4 -b 1K -e 1M -f 8 -o " +
                          (dir_ / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string model_text = slurp(dir_ / "out" / "collkit-tuner.model");
  const TunerModel m = parse_tuner_model(model_text, "model");
  ASSERT_EQ(m.comms.size(), 2u);
  EXPECT_EQ(m.comms[0].ranks, 8);
  EXPECT_EQ(m.comms[1].ranks, 4);
  // The generator puts every rank on its own node.
  EXPECT_EQ(m.comms[0].nodes, 8);
  EXPECT_EQ(m.comms[1].nodes, 4);
  // A fully connected topology has no NVLS switch: ring for all five
  // collectives (3 protocols each), tree for allreduce, and, every rank on
  // its own node, PAT (Simple) for allgather and reducescatter.
  EXPECT_EQ(m.comms[0].tables.size(), 5u * 3 + 3 + 2);
  EXPECT_NE(m.comms[0].find(2, 6, 2), nullptr);    // allgather pat simple
  EXPECT_NE(m.comms[0].find(3, 6, 2), nullptr);    // reducescatter pat simple
  const TunerTable* t = m.comms[0].find(4, 1, 2);  // allreduce ring simple
  ASSERT_NE(t, nullptr);
  // The grid 1K 8K 64K 512K, and sizes either side of each channel change.
  std::vector<std::uint64_t> bytes;
  for (const TunerPoint& p : t->points) bytes.push_back(p.bytes);
  EXPECT_EQ(bytes.front(), 1024u);
  EXPECT_EQ(bytes.back(), 512u * 1024);
  for (std::uint64_t g : {8192u, 65536u})
    EXPECT_NE(std::find(bytes.begin(), bytes.end(), g), bytes.end()) << g;
  for (std::size_t i = 1; i < t->points.size(); ++i) {
    if (t->points[i].channels != t->points[i - 1].channels) {
      EXPECT_EQ(bytes[i] - bytes[i - 1], 4u) << "a channel change between two grid sizes";
    }
  }
  EXPECT_EQ(m.comms[0].find(4, 4, 2), nullptr);  // no nvls
  // allgather's nBytes: whole per-rank elements of the total.
  EXPECT_EQ(m.comms[1].find(2, 1, 2)->points[0].bytes, 1024u);
  const std::string conf = slurp(dir_ / "out" / "nccl_tuner.conf");
  EXPECT_NE(conf.find("\nallreduce,0,"), std::string::npos) << conf;
  EXPECT_NE(conf.find(",18446744073709551615,"), std::string::npos);
  EXPECT_NE(r.out.find("allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("NCCL_TUNER_PLUGIN=collkit"), std::string::npos) << r.err;
}

TEST_F(TunerCli, BadInputIsOneLineAndWritesNothing) {
  const std::string out = " -o " + (dir_ / "out").string();
  expect_error("--topology " + topology_ + " --ranks 8,x" + out, "--ranks '8,x': 'x'");
  expect_error("--topology " + topology_ + " --ranks 16" + out, "16");
  expect_error("--topology " + topology_ + " --ranks 8,8" + out, "8 ranks given twice");
  expect_error("--topology " + topology_ + " -f 1" + out, "-f '1'");
  expect_error("--topology " + topology_ + " -b 2M -e 1M" + out, "-b");
  expect_error("--topology " + topology_ + " -d float17" + out, "float17");
  expect_error("--topology " + topology_ + " --op median" + out, "median");
  expect_error("--topology " + (dir_ / "none.json").string() + out, "none.json");
  expect_error("--topology " + topology_ + " -o " + topology_, "fc-8.json: -o names a file");
  expect_error("--topology " + topology_ + " -o " + (dir_ / "a" / "b").string(), "does not exist");
  expect_error("--topology " + topology_, "output");
}

}  // namespace
}  // namespace collkit
