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
        std::string("verify --collective all_reduce --algorithm ring")}) {
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
