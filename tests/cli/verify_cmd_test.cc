// `collkit verify` and `collkit schedule --format msccl-xml` as a user runs
// them: exit 0 and the counts proved, exit 1 naming the failing file, block
// and step, exit 2 with one line for bad input (and nothing on stdout).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

using testing_cli::RunResult;

RunResult run(const std::string& args) {
  return testing_cli::run_collkit(args, ::testing::TempDir());
}

std::string data(const std::string& file) {
  return std::string(COLLKIT_SOURCE_DIR) + "/tests/data/msccl/" + file;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(VerifyCommand, BuiltInAlgorithmAtTheDefaultCounts) {
  const RunResult r = run("verify --collective all_reduce --algorithm ring --ranks 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 0, 1, p-1, p, p+1, 65537: six rows, the uneven ones included.
  for (const char* row : {"\n           0 ", "\n           1 ", "\n           4 ",
                          "\n           5 ", "\n           6 ", "\n       65537 "})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  EXPECT_NE(r.out.find("# verified at 6 count(s)"), std::string::npos) << r.out;
}

TEST(VerifyCommand, PublishedFileUsesItsRankCountAndChunkMultiples) {
  const RunResult r =
      run("verify --collective all_gather --algorithm msccl:" +
          data("Azure__msccl-scheduler__tools__msccl-algorithms__ncv4__ag_hier_4_LL.xml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 ranks (fixed by the algorithm)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("protocol LL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# counts: multiples of 16 only"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# verified at 5 count(s)"), std::string::npos) << r.out;
}

TEST(VerifyCommand, DeadlockedFileExitsOneNamingTheStep) {
  const RunResult r = run(
      "verify --collective all_gather --algorithm msccl:" +
      data("spriestgcl__teccl-msccl__teccl__examples__experiments__output__nvswitch16__AllGather__"
           "Fast__64MB_msccl_strict.xml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("verify: FAILED at count 16: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("msccl_strict.xml:5: <step s=\"0\"> of <tb id=\"0\"> of <gpu id=\"0\">: "
                       "deadlock"),
            std::string::npos)
      << r.err;
}

// Issue 44: the 64-GPU recursive halving/doubling file runs at small sizes
// and hangs in the runtime from 8 MiB of floats (tests/interop/msccl_support.h
// works the boundary out): verify proves the counts below, states the
// boundary and passes; a count at the boundary fails naming the full
// connection; --nccl-buffsize moves the boundary.
TEST(VerifyCommand, FileThatHangsAtLargeSizesIsVerifiedBelowThem) {
  const std::string rdh = data(
      "dailiuyao__msccl_tools_lyd__examples__xml__allreduce_rec_doub_halv_Simple_gpu64_ins1.xml");
  const RunResult r = run("verify --collective all_reduce --algorithm msccl:" + rdh);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n# runtime: hangs from count 2097216 (8388864 bytes of 4-byte elements; "
                       "Simple, connection buffer 4194304 bytes (NCCL_BUFFSIZE's default) in 8 "
                       "steps, all ranks in one node), where a call carries at most 15 chunk(s); "
                       "the largest count that runs is 2097152; larger counts are not verified\n"
                       "# runtime: at count 2097216: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu 0 tb 5 at step 0 (s) waits to send 32 chunk(s) to gpu 32 on channel 0: "
                       "3 call(s) x 4 step(s) = 12"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n          64     13     12       768  numeric x10, symbolic "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# verified at 5 count(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; the runtime hangs from count 2097216 (above)\n"), std::string::npos)
      << r.out;

  const RunResult at =
      run("verify --collective all_reduce --algorithm msccl:" + rdh + " --count 2097216");
  EXPECT_EQ(at.exit_code, 1) << at.out << at.err;
  EXPECT_EQ(count_lines(at.err), 1) << at.err;
  EXPECT_NE(at.err.find("verify: FAILED at count 2097216: "), std::string::npos) << at.err;
  EXPECT_NE(at.err.find("deadlock: 384 thread block(s)"), std::string::npos) << at.err;

  // NCCL_BUFFSIZE 2 MiB: 1 MiB a call, 16 chunks of it while ceil(bytes /
  // 64) <= 65536: the boundary halves twice, to 4 MiB + 64 floats.
  const RunResult small = run("verify --collective all_reduce --algorithm msccl:" + rdh +
                              " --nccl-buffsize 2M --count 64");
  ASSERT_EQ(small.exit_code, 0) << small.out << small.err;
  EXPECT_NE(small.out.find("# runtime: hangs from count 1048640 (4194560 bytes of 4-byte "
                           "elements; Simple, connection buffer 2097152 bytes (NCCL_BUFFSIZE) in "
                           "8 steps"),
            std::string::npos)
      << small.out;

  // A file that runs at every size says so.
  const RunResult ok =
      run("verify --collective all_gather --algorithm msccl:" +
          data("Azure__msccl-scheduler__tools__msccl-algorithms__ncv4__ag_hier_4_LL.xml"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\n# runtime: no size hangs (LL, connection buffer 524288 bytes "
                        "(NCCL_LL_BUFFSIZE's default) in 8 steps, all ranks in one node)"),
            std::string::npos)
      << ok.out;
}

TEST(VerifyCommand, BadInputIsOneLineExitTwo) {
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "/bad.xml";
  std::ofstream(bad) << "<algo name=\"x\" proto=\"LL\" nchannels=\"1\" nchunksperloop=\"2\" "
                        "ngpus=\"2\" coll=\"allreduce\" inplace=\"1\" outofplace=\"0\">\n"
                        "<gpu id=\"0\" i_chunks=\"two\" o_chunks=\"0\" s_chunks=\"0\"/>\n</algo>\n";
  for (const std::string& args :
       {"verify --collective all_reduce --algorithm msccl:" + bad,
        std::string("verify --collective all_reduce --algorithm msccl:/nonexistent.xml"),
        "verify --collective all_reduce --algorithm msccl:" +
            data("Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__r48ll.xml") +
            " --count 100",
        "verify --collective all_gather --algorithm msccl:" +
            data("Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__r48ll.xml"),
        std::string("verify --collective all_reduce --algorithm ring"),
        std::string("verify --collective all_reduce --algorithm ring --ranks 4 --nccl-buffsize 7"),
        std::string("verify --collective all_reduce --algorithm ring --ranks 4 --nccl-buffsize "
                    "4G")}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  const RunResult r = run("verify --collective all_reduce --algorithm msccl:" + bad);
  EXPECT_NE(r.err.find("bad.xml:2: <gpu id=\"0\">: attribute i_chunks: \"two\" is not an integer"),
            std::string::npos)
      << r.err;
}

TEST(VerifyCommand, NcclBuffsizeOutOfRangeNamesTheFlag) {
  const RunResult r =
      run("verify --collective all_reduce --algorithm ring --ranks 4 --nccl-buffsize 7");
  EXPECT_EQ(r.err,
            "collkit: error: --nccl-buffsize '7': NCCL_BUFFSIZE must be 8 .. 2147483647 bytes (an "
            "int split into 8 steps), or 0 for NCCL's default\n");
}

TEST(AlgorithmsCommand, ListsTheScheduleSources) {
  const RunResult r = run("algorithms --collective all_reduce");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("schedule sources (--algorithm PREFIX:ARGUMENT)\n  msccl:FILE.xml  an MSCCL "
                       "XML algorithm (docs/MSCCL.md)\n"),
            std::string::npos)
      << r.out;
}

TEST(ScheduleCommand, MscclXmlExportRoundTripsThroughVerify) {
  const std::string dir = ::testing::TempDir();
  const RunResult x =
      run("schedule --collective reduce_scatter --algorithm recursive_halving --ranks 4 --count 8 "
          "--format msccl-xml");
  ASSERT_EQ(x.exit_code, 0) << x.err;
  EXPECT_EQ(x.out.rfind("<algo name=\"collkit reduce_scatter/recursive_halving p=4 count=8\"", 0),
            0u)
      << x.out;
  const std::string file = dir + "/rs.xml";
  std::ofstream(file) << x.out;
  const RunResult v =
      run("verify --collective reduce_scatter --algorithm msccl:" + file + " --count 8");
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const RunResult no =
      run("schedule --collective barrier --algorithm dissemination --ranks 4 --format msccl-xml");
  EXPECT_EQ(no.exit_code, 2);
  EXPECT_NE(no.err.find("MSCCL has no barrier collective"), std::string::npos) << no.err;
  EXPECT_EQ(no.out, "");
}

}  // namespace
}  // namespace collkit
