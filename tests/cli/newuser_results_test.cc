// Issue 40, results that were wrong or misleading: labelled cluster logs,
// -J files' command lines, impossible launch groups, bench's best per size,
// MSCCL files outside what they declare.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

const fs::path kSource = COLLKIT_SOURCE_DIR;
const fs::path kRingLog =
    kSource / "tests/data/nccl-tests/h100x8_allreduce_ring_together-nccl-tests.txt";

class NewUserResults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_newuser_results_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  static void expect_error(const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // `log` with `label` before every line.
  void write_labelled(const std::string& name, const std::string& label) {
    std::istringstream in(slurp(kRingLog));
    std::ofstream out(dir_ / name);
    for (std::string line; std::getline(in, line);) out << label << line << "\n";
  }
  fs::path dir_;
};

// Item 7: Open MPI --tag-output and MPICH -prepend-rank logs start with '[',
// and were sniffed as malformed JSON by report, compare and calibrate.
TEST_F(NewUserResults, LabelledLogsAreReadAsLogs) {
  write_labelled("tag.txt", "[1,0]<stdout>:");
  write_labelled("pre.txt", "[0] ");
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  RunResult r = run("report " + p("tag.txt") + " " + p("pre.txt") +
                    " --collective all_reduce --format csv -o -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The header and each log's 31 sizes (the chart draws out-of-place rows).
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 2 * 31) << r.out;
  ASSERT_EQ(run("simulate --topology " + dgx +
                " --collective all_reduce --algorithm nccl -b 8 -e 8G -f 2 --json " + p("p.json"))
                .exit_code,
            0);
  r = run("compare " + p("p.json") + " " + p("tag.txt") + " --collective all_reduce");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run("calibrate " + p("pre.txt") + " --collective all_reduce --topology " + dgx + " -o " +
          p("fit.json") + " --max-iterations 1 --starts 1");
  EXPECT_EQ(r.err.find("malformed JSON"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("# collkit calibrate: base"), std::string::npos) << r.out << r.err;
}

// Item 10: -J files record the command line as given, every flag; reports
// record --launch.
TEST_F(NewUserResults, NcclTestsJsonRecordsTheWholeCommandLine) {
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  RunResult r = run("simulate --topology " + dgx +
                    " --collective all_reduce --algorithm ring --launch group:4 --net-model "
                    "alpha-beta --ranks 4 -b 1K -e 4K -f 2 -J " +
                    p("j.json") + " --json " + p("r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(slurp(dir_ / "j.json"));
  const std::vector<std::string> args = j["args"].get<std::vector<std::string>>();
  const std::vector<std::string> expected = {COLLKIT_BINARY, "simulate",
                                             "--topology",   dgx,
                                             "--collective", "all_reduce",
                                             "--algorithm",  "ring",
                                             "--launch",     "group:4",
                                             "--net-model",  "alpha-beta",
                                             "--ranks",      "4",
                                             "-b",           "1K",
                                             "-e",           "4K",
                                             "-f",           "2",
                                             "-J",           (dir_ / "j.json").string(),
                                             "--json",       (dir_ / "r.json").string()};
  EXPECT_EQ(args, expected);
  EXPECT_EQ(Json::parse(slurp(dir_ / "r.json"))["launch"], "group:4");
  r =
      run("bench --backend mpi --collective all_reduce --algorithm ring -b 1K -e 2K -f 2 -n 3 "
          "-w 1 -J " +
          p("b.json"));
  if (r.err.find("unknown subcommand 'bench'") != std::string::npos) return;  // no MPI here
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = Json::parse(slurp(dir_ / "b.json"));
  const std::vector<std::string> bench_args = j["args"].get<std::vector<std::string>>();
  const std::vector<std::string> bench_expected = {
      COLLKIT_BINARY, "bench",      "--backend",   "mpi",
      "--collective", "all_reduce", "--algorithm", "ring",
      "-b",           "1K",         "-e",          "2K",
      "-f",           "2",          "-n",          "3",
      "-w",           "1",          "-J",          (dir_ / "b.json").string()};
  EXPECT_EQ(bench_args, bench_expected);
}

// Item 11: group:99 on 8 GPUs added a 396 us floor to every call.
TEST_F(NewUserResults, LaunchGroupLargerThanTheRunIsRefused) {
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  const std::string message =
      "--launch group:99: one thread launching on 99 devices, but the run has 8 ranks";
  expect_error(run("simulate --topology " + dgx + " --collective all_reduce --launch group:99"),
               message);
  expect_error(run("tuner --topology " + dgx + " --launch group:99 -o " + p("t")), message);
  ASSERT_EQ(run("simulate --topology " + dgx + " --collective all_reduce --json " + p("s.json"))
                .exit_code,
            0);
  // calibrate checks it against the base's ranks (the measured run's).
  expect_error(run("calibrate " + p("s.json") + " --topology " + dgx + " --launch group:99 -o " +
                   p("fit.json")),
               message);
  // As many devices as ranks is a launch that happens (nccl-tests -g 8).
  EXPECT_EQ(
      run("simulate --topology " + dgx + " --collective all_reduce --launch group:8").exit_code, 0);
}

// Item 8: on dgx-h100 (pipelined GPU endpoints, which pay nothing per
// message) 256-byte segments made a 64 MiB broadcast faster than NCCL's own
// chunks (213 against 222 us, 16 M messages) and --segment 4 took 21 s. A
// segment below the smallest chunk the file gives (LL: 32 KiB of data,
// "chunk_kib": 32) is refused; from the chunk up, and on networks without
// pipelined endpoints, any segment runs.
TEST_F(NewUserResults, SegmentsBelowTheGpuChunkAreRefused) {
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  ASSERT_EQ(Json::parse(slurp(dgx))["protocols"]["LL"]["chunk_kib"], 32);
  const std::string bcast = "simulate --topology " + dgx +
                            " --collective broadcast --algorithm pipelined_chain -b 64M -e 64M ";
  for (const std::string seg : {"4", "256", "32764"})
    expect_error(run(bcast + "--segment " + seg + " --json " + p("s.json")),
                 "--segment '" + seg +
                     "': below dgx-h100's smallest pipeline chunk (LL, 32768 bytes of data): its "
                     "endpoints are pipelined GPU kernels, which the simulator charges nothing "
                     "per message, so smaller segments than NCCL moves would look free; give at "
                     "least 32768, or 0 for automatic");
  EXPECT_FALSE(fs::exists(dir_ / "s.json"));
  EXPECT_EQ(run(bcast + "--segment 32K").exit_code, 0);
  EXPECT_EQ(run(bcast + "--segment 0").exit_code, 0);
  // ring-8's endpoints are not pipelined: small segments cost their messages.
  EXPECT_EQ(run("simulate --topology " + (kSource / "topologies/ring-8.json").string() +
                " --collective broadcast --algorithm pipelined_chain -b 64K -e 64K --segment 256")
                .exit_code,
            0);
}

// Item 12: the public ring log was run as nccl-tests -g 8 (nGpus 8: one
// thread launches every call on 8 GPUs). compare said nothing against a
// one-process prediction, and calibrate fitted it as one process per device.
TEST_F(NewUserResults, CompareAndCalibrateFollowTheMeasuredLaunch) {
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  const std::string log = kRingLog.string();
  const std::string sim = "simulate --topology " + dgx +
                          " --collective all_reduce --algorithm nccl:ring -b 8 -e 8G -f 2";
  ASSERT_EQ(run(sim + " --json " + p("s1.json") + " -J " + p("j1.json")).exit_code, 0);
  ASSERT_EQ(run(sim + " --launch group:8 --json " + p("s8.json") + " -J " + p("j8.json")).exit_code,
            0);
  const std::string cmp = " --collective all_reduce --match nccl:ring";
  RunResult r = run("compare " + p("s1.json") + " " + log + cmp);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "collkit: note: " + log + " was launched as --launch group:8 (nGpus 8) but " +
                       (dir_ / "s1.json").string() +
                       " as --launch proc: a call's launch floor differs, which shows at small "
                       "sizes; simulate with --launch group:8 to match\n");
  // Matched: no word, as a simulate -J read back (collkit.launch) too.
  r = run("compare " + p("s8.json") + " " + log + cmp);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Json::parse(slurp(dir_ / "j8.json"))["collkit"]["launch"], "group:8");
  r = run("compare " + p("j8.json") + " " + log + cmp);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // A nccl-tests -J file (no collkit object): config.ngpus says it.
  Json nt = Json::parse(slurp(dir_ / "j1.json"));
  ASSERT_EQ(nt["config"]["ngpus"], 8);
  nt.erase("collkit");
  std::ofstream(dir_ / "nt.json") << nt.dump();
  r = run("compare " + p("s1.json") + " " + p("nt.json") + cmp);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" was launched as --launch group:8 (config.ngpus 8) but "),
            std::string::npos)
      << r.err;

  // calibrate follows the log, says so, and records it in the fit.
  const std::string cal = " --collective all_reduce --topology " + dgx +
                          " --match nccl:ring --min-bytes 1M --starts 1 --max-iterations 20 -o ";
  r = run("calibrate " + log + cal + p("fit.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "collkit: note: calls simulated as --launch group:8 (nGpus 8), as " + log +
                       " was launched; --launch proc fits them as one process per device\n");
  EXPECT_NE(slurp(dir_ / "fit.json")
                .find("; calls launched as --launch group:8 (as the measured runs were)"),
            std::string::npos);
  // --launch given wins, with a word where the log disagrees.
  r = run("calibrate " + log + cal + p("fit-proc.json") + " --launch proc");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "collkit: warning: " + log +
                       " was launched as --launch group:8 (nGpus 8); fitted as --launch proc, "
                       "as given\n");
  EXPECT_EQ(slurp(dir_ / "fit-proc.json").find("calls launched as"), std::string::npos);
  // Runs launched two ways are not fitted as one.
  expect_error(run("calibrate " + log + " " + p("s1.json") + cal + p("fit-mixed.json")),
               log + " was launched as --launch group:8 (nGpus 8), " + (dir_ / "s1.json").string() +
                   " as --launch proc: calibrate them apart, or give --launch");
  EXPECT_FALSE(fs::exists(dir_ / "fit-mixed.json"));
}

// Item 15: plans filled the device to the byte (Llama-2-70B on 4x8 H100 at
// 85.69 of 85.90 GB). A plan now leaves --memory-reserve free (by default
// 5% of the device for fragmentation plus 2 GiB for the CUDA context and
// NCCL's buffers, planner.h). llama2-7b on one DGX H100 at batch 64 needs
// 30.79 GB per rank as planned without a reserve, so on a 33 GB device
// (default reserve 1.65 + 2.15 GB) the default rules that plan out.
TEST_F(NewUserResults, PlansLeaveTheMemoryReserveFree) {
  const std::string base = "plan --quiet --model " + (kSource / "models/llama2-7b.json").string() +
                           " --topology " + (kSource / "topologies/dgx-h100.json").string() +
                           " --batch 64 --device-memory 33GB";
  const auto plan_memory = [&](const std::string& flags, const std::string& name) {
    const RunResult r = run(base + flags + " --json " + p(name));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const Json j = Json::parse(slurp(dir_ / name));
    return std::pair{j["totals"]["memory"]["total_bytes"].get<double>(), j};
  };
  const double reserve = 0.05 * 33e9 + 2147483648.0;
  const auto [none, j0] = plan_memory(" --memory-reserve 0", "none.json");
  EXPECT_GT(none, 33e9 - reserve);  // the plan the reserve must rule out
  EXPECT_LE(none, 33e9);
  EXPECT_EQ(j0["memory_reserve_bytes"], 0.0);
  const auto [reserved, j1] = plan_memory("", "default.json");
  EXPECT_DOUBLE_EQ(j1["memory_reserve_bytes"].get<double>(), reserve);
  EXPECT_LE(reserved, 33e9 - reserve);
  EXPECT_NE(j1["verdict"].get<std::string>().find(" of 29.2 GB usable"), std::string::npos)
      << j1["verdict"];
  const auto [more, j2] = plan_memory(" --memory-reserve 5GB", "five.json");
  EXPECT_LE(more, 28e9);
  expect_error(run(base + " --memory-reserve 33GB"),
               "--memory-reserve: 33.0 GB leaves nothing of the 33.0 GB device memory");
}

// Item 15, the second half: a layout the user gives that is faster but not
// chosen says why, the 5% rule (kLayoutMargin), and so does the verdict;
// it claimed such a fitting plan "does not fit". Eight blocks of hidden
// 8192 over 16 tokens at 5 TFLOPS: tensor parallelism over 4 GPUs with
// ZeRO-1 is 0.6% faster than plain data parallelism, under the 5% margin.
TEST_F(NewUserResults, FasterLayoutNotChosenNamesTheFivePercentRule) {
  std::ofstream(dir_ / "m.json") << R"({"name": "short-seq", "layers": [
    {"name": "blocks", "kind": "transformer_block", "shape": {"hidden": 8192, "ffn": 32768,
     "heads": 64, "seq": 16, "bias": false, "gated": false, "norm": "layernorm"}, "repeat": 8}]})";
  const std::string base = "plan --quiet --model " + p("m.json") + " --topology " +
                           (kSource / "topologies/h100-cluster-4x8.json").string() +
                           " --batch 64 --device-tflops ";
  RunResult r = run(base + "5 --tp 4 --zero 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# layout: tensor_parallel 1 x pipeline 1 x data_parallel 32"),
            std::string::npos)
      << r.out;
  const std::size_t at = r.out.find("#   yours is ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double percent = std::stod(r.out.substr(r.out.find('(', at) + 1));
  EXPECT_GT(percent, 0);
  EXPECT_LT(percent, 5);
  EXPECT_NE(r.out.find("%) faster per step than the planner's choice", at), std::string::npos);
  EXPECT_NE(r.out.find("#   not chosen though faster: the planner keeps plain data parallelism "
                       "unless tensor or pipeline parallelism shortens the step by more than 5%"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", tensor_parallel 4 x pipeline 1) fits, but gains less than 5% over "
                       "plain data parallelism, which the planner then keeps"),
            std::string::npos)
      << r.out;
  const std::size_t verdict = r.out.find("\n# fits: ");
  ASSERT_NE(verdict, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(verdict, r.out.find('\n', verdict + 1) - verdict).find("does not fit"),
            std::string::npos)
      << r.out;
  // At 400 TFLOPS the same saving is about 20% of the step: chosen.
  r = run(base + "400");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# layout: tensor_parallel 8 x pipeline 1 x data_parallel 4"),
            std::string::npos)
      << r.out;
}

// Item 14: an MSCCL file simulated outside what it declares says so per
// row; the nccl family's MSCCL export says the protocol NCCL chose.
TEST_F(NewUserResults, MscclFileOutsideItsDeclarationSaysSoPerRow) {
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  const std::string file =
      (kSource /
       "tests/data/msccl/Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__r48ll.xml")
          .string();
  RunResult r =
      run("simulate --topology " + dgx + " --collective all_reduce --algorithm msccl:" + file +
          " -b 64K -e 4M -f 4 --json " + p("s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string in_place =
      "outside the MSCCL file's declaration: out of place, which the file does not serve "
      "(outofplace=\"0\"; its schedule runs in place)";
  const std::string sizes = "outside the file's sizes 266240..2078719 bytes per call";
  EXPECT_NE(r.out.find("#          65536 ..       262144  " + in_place + "; " + sizes),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("#        1048576 ..      1048576  " + in_place + "\n"), std::string::npos)
      << r.out;
  const Json j = Json::parse(slurp(dir_ / "s.json"));
  EXPECT_EQ(j["results"][2]["ran"], in_place);

  const std::string schedule =
      "schedule --collective all_reduce --algorithm nccl --ranks 8 "
      "--count 1024 --format msccl-xml --topology " +
      dgx;
  r = run(schedule);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ring/LL/"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("proto=\"LL\""), std::string::npos) << r.out.substr(0, 200);
  expect_error(run(schedule + " --protocol Simple"),
               "--protocol Simple: the schedule is NCCL's choice on " + dgx +
                   ", ring/LL/1ch, whose protocol is LL (drop --protocol)");
}

}  // namespace
}  // namespace collkit
