// Issue 40, what a new user lost or waited for: outputs that overwrite an
// input, inputs read without a limit, write errors on standard output,
// /dev/stdout and /dev/fd/N as outputs, and empty output paths.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

class NewUserIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_newuser_io_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(fs::path(COLLKIT_SOURCE_DIR) / "topologies/ring-8.json", dir_ / "t.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  // Exit 2, one line "collkit: error: ..." holding `text`, nothing on stdout.
  static void expect_error(const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  fs::path dir_;
};

// Item 1: the tuner's two files are outputs like every other command's.
TEST_F(NewUserIo, TunerRefusesToOverwriteItsTopology) {
  for (const std::string name : {"nccl_tuner.conf", "collkit-tuner.model"}) {
    fs::copy_file(dir_ / "t.json", dir_ / name, fs::copy_options::overwrite_existing);
    const std::string before = slurp(dir_ / name);
    const RunResult r = run("tuner --topology " + p(name) + " -b 1M -e 2M -o " + p(""));
    expect_error(r, "-o " + (dir_ / name).string() + " is the same file as --topology " +
                        (dir_ / name).string() + ": refusing to overwrite an input");
    EXPECT_EQ(slurp(dir_ / name), before);
    fs::remove(dir_ / name);
  }
}

// Item 3: inputs that never end or are huge end in one line, not
// std::bad_alloc or the OOM killer; so does a rank count no machine holds.
TEST_F(NewUserIo, EndlessOrHugeInputsAreRefusedWithALimit) {
  expect_error(run("report /dev/zero -o " + p("x.html")),
               "/dev/zero: more than 256 MiB and not at its end; collkit reads a report whole");
  EXPECT_FALSE(fs::exists(dir_ / "x.html"));
  std::ofstream(dir_ / "big.json") << "";
  fs::resize_file(dir_ / "big.json", std::uint64_t{20} << 30);
  expect_error(run("simulate --topology " + p("big.json") + " --collective all_reduce"),
               "big.json: 21474836480 bytes; collkit reads a topology file whole, at most 256 MiB");
  expect_error(run("simulate --topology /tmp --collective all_reduce"),
               "/tmp: is a directory, not a topology file");
  expect_error(run("simulate --topology " + p("none.json") + " --collective all_reduce"),
               "none.json: cannot open the topology file: No such file or directory");
}

TEST_F(NewUserIo, RankCountsBeyondTheMachineAreRefusedAtOnce) {
  // 2^30 ranks: 2 TiB at 2 KiB a rank. Today's code ran until killed; the
  // timeout turns that into a failure here instead of a hang.
  std::ofstream(dir_ / "huge.json")
      << R"({"dims": [{"kind": "switch", "size": 1073741824, "bandwidth_gbps": 100,
                       "latency_us": 1}]})";
  for (const std::string& cmd :
       {"simulate --collective all_reduce --topology " + p("huge.json"),
        "tuner -o " + p("out") + " --topology " + p("huge.json"),
        "plan --model " + std::string(COLLKIT_SOURCE_DIR) +
            "/models/gpt2-124m.json --batch 8 --topology " + p("huge.json")}) {
    const RunResult r =
        run("--version >/dev/null && timeout 60 '" + std::string(COLLKIT_BINARY) + "' " + cmd);
    expect_error(r, "huge.json: 1073741824 ranks: simulating them needs 2048 GiB or more");
    EXPECT_NE(r.err.find("more than this machine's"), std::string::npos) << r.err;
  }
}

// Item 2: a batch whose byte counts overflow 64-bit integers is refused as
// the model file's sizes are. llama2-7b's largest per-sample activation is
// lm_head's 4096 tokens x 32000 vocabulary = 131072000 elements, 2 bytes in
// bfloat16: at most (2^63 - 1) / 262144000 = 35184372088 samples. 2^62 + 1
// died with SIGFPE (exit 136) before.
TEST_F(NewUserIo, BatchBeyondSixtyFourBitByteCountsIsRefused) {
  const std::int64_t per_sample = std::int64_t{4096} * 32000 * 2;
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / per_sample;
  ASSERT_EQ(limit, 35184372088);
  const std::string plan = "plan --quiet --model " + std::string(COLLKIT_SOURCE_DIR) +
                           "/models/llama2-7b.json --topology " + std::string(COLLKIT_SOURCE_DIR) +
                           "/topologies/h100-cluster-4x8.json --batch ";
  const std::string why =
      ": at most 35184372088 samples for llama2-7b in bfloat16: layer "
      "'lm_head' keeps 131072000 elements of 2 bytes per sample, and a "
      "collective's bytes (samples x 262144000) overflow 64-bit integers "
      "beyond it";
  for (const std::string b : {"4611686018427387905", "35184372089", "1000000000000"})
    expect_error(run("--version >/dev/null && timeout 60 '" + std::string(COLLKIT_BINARY) + "' " +
                     plan + b + " --json " + p(b + ".json")),
                 "--batch " + b + why);
  EXPECT_FALSE(fs::exists(dir_ / "4611686018427387905.json"));
  const RunResult r = run(plan + std::to_string(limit));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("batch 35184372088, bfloat16"), std::string::npos) << r.out;
  // In float (4 bytes) the bound halves.
  expect_error(run(plan + "17592186045" + " --dtype float"),
               "--batch 17592186045: at most 17592186044 samples for llama2-7b in float:");
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLLKIT_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define COLLKIT_TEST_ASAN 1
#endif

TEST_F(NewUserIo, OutOfMemorySaysSoInOneLine) {
#ifdef COLLKIT_TEST_ASAN
  GTEST_SKIP() << "ulimit -v and AddressSanitizer's shadow memory do not mix";
#else
  // 2^18 ranks need about 470 MB; 300 MB of address space runs out.
  std::ofstream(dir_ / "sw.json")
      << R"({"dims": [{"kind": "switch", "size": 262144, "bandwidth_gbps": 100,
                       "latency_us": 1}]})";
  const RunResult r = run("--version >/dev/null && ulimit -v 300000 && '" +
                          std::string(COLLKIT_BINARY) + "' simulate --topology " + p("sw.json") +
                          " --collective all_reduce --algorithm recursive_doubling -b 1K -e 1K");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err,
            "collkit: error: out of memory: the run needs more memory than this machine gives it "
            "(fewer ranks, sizes or algorithms need less)\n");
  EXPECT_EQ(r.out, "");
#endif
}

// Item 4: a document that did not reach standard output is an error, not a
// truncated file behind exit 0.
TEST_F(NewUserIo, WriteErrorsOnStandardOutputAreNotSuccess) {
  const std::string bin = "'" + std::string(COLLKIT_BINARY) + "' ";
  const std::string topo = " --topology " + p("t.json");
  ASSERT_EQ(run("simulate" + topo + " --collective all_reduce --json " + p("s.json")).exit_code, 0);
  for (const std::string& cmd :
       {std::string("schedule --collective all_reduce --algorithm ring --ranks 4"),
        std::string("algorithms"), std::string("algorithms --collective all_reduce"),
        "simulate" + topo + " --collective all_reduce",
        "compare " + p("s.json") + " " + p("s.json"),
        "plan --model " + std::string(COLLKIT_SOURCE_DIR) + "/models/gpt2-124m.json --batch 8" +
            topo}) {
    const RunResult r = run("--version >/dev/null && (" + bin + cmd + " >/dev/full)");
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: standard output: cannot write", 0), 0u) << cmd << r.err;
    EXPECT_NE(r.err.find("the output is incomplete"), std::string::npos) << r.err;
  }
}

// Item 5: /dev/stdout and /dev/fd/N name open streams; through a pipe the
// link's target is pipe:[N], not a path, and today's code failed with "No
// such file or directory".
TEST_F(NewUserIo, DescriptorPathsAreWrittenAsTheyAre) {
  const std::string topo = " --topology " + p("t.json");
  RunResult r =
      run("simulate" + topo + " --collective all_reduce --algorithm ring --json /dev/stdout | cat");
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("\"collkit_version\""), std::string::npos) << r.out;
  ASSERT_EQ(run("simulate" + topo + " --collective all_reduce --json " + p("s.json")).exit_code, 0);
  // The CSV alone reaches the pipe behind descriptor 3.
  r = run("report " + p("s.json") + " --format csv -o /dev/fd/3 3>&1 >/dev/null | cat");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("collective,dtype,op,file,", 0), 0u) << r.out;
  // A file behind /dev/stdout keeps what it held (>> appends), not replaced.
  std::ofstream(dir_ / "log.txt") << "earlier\n";
  r = run("--version >/dev/null && ('" + std::string(COLLKIT_BINARY) + "' report " + p("s.json") +
          " --format csv -o /dev/stdout >>" + p("log.txt") + ")");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir_ / "log.txt").rfind("earlier\ncollective,", 0), 0u);
  // A descriptor that is not open, or open only for reading, is refused first.
  expect_error(run("report " + p("s.json") + " --format csv -o /dev/fd/9"),
               "-o /dev/fd/9: cannot write: Bad file descriptor");
  expect_error(run("report " + p("s.json") + " --format csv -o /dev/fd/0 <" + p("s.json")),
               "-o /dev/fd/0: cannot write: descriptor 0 is open for reading only");
  // /dev/stdout is standard output, as "-" is: not both.
  expect_error(run("simulate" + topo + " --collective all_reduce --json - --csv /dev/stdout"),
               "both name standard output");
}

// Item 6: an empty output path (an unset variable) wrote nothing and exited
// 0 in simulate, plan, compare and bench.
TEST_F(NewUserIo, EmptyOutputPathsAreRefused) {
  const std::string topo = " --topology " + p("t.json");
  ASSERT_EQ(run("simulate" + topo + " --collective all_reduce --json " + p("s.json")).exit_code, 0);
  const std::string model =
      " --model " + std::string(COLLKIT_SOURCE_DIR) + "/models/gpt2-124m.json";
  const struct {
    std::string args, flag;
  } cases[] = {
      {"simulate" + topo + " --collective all_reduce --json ''", "--json"},
      {"simulate" + topo + " --collective all_reduce --csv ''", "--csv"},
      {"simulate" + topo + " --collective all_reduce -J ''", "-J,--output_file"},
      {"plan" + model + topo + " --batch 8 --json ''", "--json"},
      {"compare " + p("s.json") + " " + p("s.json") + " --json ''", "--json"},
      {"report " + p("s.json") + " -o ''", "-o,--output"},
      {"tuner" + topo + " -o ''", "-o,--output"},
      {"bench --backend mpi --collective all_reduce -b 1K -e 1K --json ''", "--json"},
  };
  for (const auto& c : cases) {
    const RunResult r = run(c.args);
    if (c.args.rfind("bench", 0) == 0 && r.err.find("unknown subcommand") != std::string::npos)
      continue;  // built without MPI
    expect_error(r, c.flag + " '': empty (an unset shell variable?); nothing would be written");
  }
}

}  // namespace
}  // namespace collkit
