// The tuner's model file (tuner/tuner_model.h): what it accepts, how every
// rejection names line, field and value, the round trip, and the
// interpolation checked against closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "tuner/tuner_model.h"

namespace collkit {
namespace {

const char* kGood = R"(# made by hand
collkit-nccl-tuner 1
comm 8 1
table allreduce ring simple 3
1024 10 1
4096 20 2
16384 80 4
table allreduce tree ll 2
1024 5 1
16384 500 8
comm 16 2
table broadcast ring ll128 1
1 0.5 64
)";

std::string error_of(const std::string& text) {
  try {
    parse_tuner_model(text, "m.model");
  } catch (const FileError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(TunerModel, ParsesAndRoundTrips) {
  const TunerModel m = parse_tuner_model(kGood, "m.model");
  ASSERT_EQ(m.comms.size(), 2u);
  EXPECT_EQ(m.comments, std::vector<std::string>{"made by hand"});
  const TunerComm* c = m.find(8, 1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(m.find(8, 2), nullptr);
  ASSERT_EQ(c->tables.size(), 2u);
  const TunerTable* t = c->find(4, 1, 2);  // allreduce ring simple
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->points[1].bytes, 4096u);
  EXPECT_EQ(t->points[1].time_us, 20);
  EXPECT_EQ(t->points[1].channels, 2);
  EXPECT_EQ(c->find(4, 0, 0)->points.size(), 2u);  // tree ll
  EXPECT_EQ(m.find(16, 2)->tables[0].collective, 0);
  EXPECT_EQ(m.find(16, 2)->tables[0].protocol, 1);
  const std::string text = tuner_model_text(m);
  const TunerModel again = parse_tuner_model(text, "again");
  EXPECT_EQ(tuner_model_text(again), text);
  // 17 digits keep a double exactly.
  TunerModel x = m;
  x.comms[0].tables[0].points[0].time_us = 0.1 + 0.2;
  EXPECT_EQ(parse_tuner_model(tuner_model_text(x), "x").comms[0].tables[0].points[0].time_us,
            0.1 + 0.2);
}

TEST(TunerModel, NamesMatchNcclIds) {
  // NCCL's ids (tuner/nccl_tuner_v5.h): ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_*.
  EXPECT_EQ(tuner_collective_id("broadcast"), 0);
  EXPECT_EQ(tuner_collective_id("reduce"), 1);
  EXPECT_EQ(tuner_collective_id("allgather"), 2);
  EXPECT_EQ(tuner_collective_id("reducescatter"), 3);
  EXPECT_EQ(tuner_collective_id("allreduce"), 4);
  EXPECT_EQ(tuner_algorithm_id("tree"), 0);
  EXPECT_EQ(tuner_algorithm_id("ring"), 1);
  EXPECT_EQ(tuner_algorithm_id("collnet_direct"), 2);
  EXPECT_EQ(tuner_algorithm_id("collnet_chain"), 3);
  EXPECT_EQ(tuner_algorithm_id("nvls"), 4);
  EXPECT_EQ(tuner_algorithm_id("nvls_tree"), 5);
  EXPECT_EQ(tuner_algorithm_id("pat"), 6);
  EXPECT_EQ(tuner_protocol_id("ll"), 0);
  EXPECT_EQ(tuner_protocol_id("ll128"), 1);
  EXPECT_EQ(tuner_protocol_id("simple"), 2);
  EXPECT_EQ(tuner_protocol_id("Simple"), -1);
  EXPECT_TRUE(tuner_algorithm_name(7).empty());
}

TEST(TunerModel, RejectsWithLineFieldAndValue) {
  const std::string head = "collkit-nccl-tuner 1\ncomm 8 1\n";
  struct Case {
    std::string text;
    std::string expect;
  };
  const Case cases[] = {
      {"", "m.model: empty"},
      {"collkit-nccl-tuner 2\n", "m.model:1: header: expected 'collkit-nccl-tuner 1'"},
      {"collkit-nccl-tuner 1\n", "m.model: no 'comm' section"},
      {"collkit-nccl-tuner 1\ntable allreduce ring ll 1\n1 1 1\n",
       "m.model:2: table: before the first 'comm' line"},
      {"collkit-nccl-tuner 1\ncomm 0 1\n",
       "m.model:2: comm ranks: '0' is out of range 1..16777216"},
      {"collkit-nccl-tuner 1\ncomm 8 9\n", "m.model:2: comm nodes: '9' is out of range 1..8"},
      {"collkit-nccl-tuner 1\ncomm 8 x\n",
       "m.model:2: comm nodes: 'x' is not a non-negative integer"},
      {head + "comm 8 1\n", "m.model:3: comm: 8 ranks on 1 nodes given twice"},
      {head + "table alltoall ring ll 1\n",
       "m.model:3: table collective: 'alltoall' is not one of broadcast reduce allgather "
       "reducescatter allreduce"},
      {head + "table allreduce mesh ll 1\n", "m.model:3: table algorithm: 'mesh' is not one of"},
      {head + "table allreduce ring LL 1\n", "m.model:3: table protocol: 'LL' is not one of"},
      {head + "table allreduce ring ll 0\n",
       "m.model:3: table points: '0' is out of range 1..4096"},
      {head + "table allreduce ring ll 2\n8 1 1\n",
       "m.model:4: table: ends after 1 of its 2 points"},
      {head + "table allreduce ring ll 2\n8 1 1\n8 2 1\n",
       "m.model:5: point bytes: '8' is not larger than the previous point's 8"},
      {head + "table allreduce ring ll 1\n8 -1 1\n",
       "m.model:4: point time_us: '-1' is not a time in microseconds"},
      {head + "table allreduce ring ll 1\n8 nan 1\n", "m.model:4: point time_us: 'nan'"},
      {head + "table allreduce ring ll 1\n8 1,5 1\n", "m.model:4: point time_us: '1,5'"},
      {head + "table allreduce ring ll 1\n8 1 65\n",
       "m.model:4: point channels: '65' is out of range 1..64"},
      {head + "table allreduce ring ll 1\n18446744073709551616 1 1\n",
       "m.model:4: point bytes: '18446744073709551616' is out of range"},
      {head + "table allreduce ring ll 1\n8 1\n", "m.model:4: point: expected '<bytes> <time_us>"},
      {head + "table allreduce ring ll 1\n8 1 1\ntable allreduce ring ll 1\n8 1 1\n",
       "m.model:5: table: allreduce ring ll given twice for 8 ranks"},
      {head + "bogus\n", "m.model:3: line: 'bogus' is not 'comm' or 'table'"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_EQ(e.rfind(c.expect, 0), 0u) << "text:\n" << c.text << "error: " << e;
  }
}

TEST(TunerModel, AcceptsCrlfTabsAndComments) {
  const TunerModel m = parse_tuner_model(
      "# a\r\ncollkit-nccl-tuner 1\r\n\r\n  # b\r\ncomm\t4 1\r\ntable reduce ring simple 1\r\n"
      "64 1e3 2\r\n",
      "crlf");
  EXPECT_EQ(m.comms[0].tables[0].points[0].time_us, 1000);
}

// Found by the fuzzer: a comment ending in CRs wrote back as one that read
// without them (tests/regressions/tuner_model/).
TEST(TunerModel, CommentsRoundTrip) {
  const TunerModel m =
      parse_tuner_model("#\xa9\r\r\r\n#  two spaces \t\n#\ncollkit-nccl-tuner 1\ncomm 4 1\n", "c");
  EXPECT_EQ(m.comments, (std::vector<std::string>{"\xa9", " two spaces", ""}));
  const std::string text = tuner_model_text(m);
  EXPECT_EQ(parse_tuner_model(text, "again").comments, m.comments);
}

// Every committed fuzzer input reads or throws FileError, and one that
// reads round-trips.
TEST(TunerModel, FuzzRegressionsReadOrThrowFileError) {
  const std::filesystem::path dir =
      std::filesystem::path(COLLKIT_SOURCE_DIR) / "tests" / "regressions" / "tuner_model";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    ++n;
    try {
      const std::string written = tuner_model_text(parse_tuner_model(text.str(), "r"));
      EXPECT_EQ(tuner_model_text(parse_tuner_model(written, "w")), written) << e.path();
    } catch (const FileError&) {
    }
  }
  EXPECT_GE(n, 1);
}

TEST(TunerModel, InterpolatesInLogLogSpace) {
  TunerTable t;
  // t = 3 * b^0.5 at three grid sizes: a power law is exact between them.
  for (std::uint64_t b : {1024u, 65536u, 1048576u})
    t.points.push_back(TunerPoint{b, 3 * std::sqrt(static_cast<double>(b)), 1});
  for (std::uint64_t b : {1024u, 2000u, 4096u, 65535u, 65536u, 100000u, 1048575u})
    EXPECT_NEAR(t.time_at(b), 3 * std::sqrt(static_cast<double>(b)), 1e-9 * t.time_at(b)) << b;
  // Grid sizes give the stored time exactly.
  EXPECT_EQ(t.time_at(65536), t.points[1].time_us);
  // Below the grid: the first time; above it: scaled by bytes.
  EXPECT_EQ(t.time_at(1), t.points[0].time_us);
  EXPECT_DOUBLE_EQ(t.time_at(4 * 1048576), 4 * t.points[2].time_us);
  // A zero time: linear in bytes on that interval.
  TunerTable z;
  z.points = {{100, 0, 1}, {200, 10, 1}};
  EXPECT_DOUBLE_EQ(z.time_at(150), 5);
}

TEST(TunerModel, ChannelsOfTheGridSizeAtOrBelow) {
  TunerTable t;
  t.points = {{1024, 1, 2}, {4096, 2, 8}, {16384, 4, 16}};
  EXPECT_EQ(t.channels_at(1), 2);
  EXPECT_EQ(t.channels_at(1024), 2);
  EXPECT_EQ(t.channels_at(4095), 2);
  EXPECT_EQ(t.channels_at(4096), 8);
  EXPECT_EQ(t.channels_at(1u << 30), 16);
}

TEST(TunerModel, BestIsNcclsScanOfTheTable) {
  TunerComm c;
  c.tables.push_back(TunerTable{4, 1, 2, {{1024, 10, 4}}});  // ring simple
  c.tables.push_back(TunerTable{4, 0, 0, {{1024, 10, 2}}});  // tree ll: same time
  c.tables.push_back(TunerTable{4, 1, 0, {{1024, 12, 3}}});  // ring ll
  c.tables.push_back(TunerTable{0, 1, 0, {{1024, 1, 1}}});   // broadcast
  TunerChoice b = tuner_best(c, 4, 1024);
  // A tie goes to the lower algorithm id, as NCCL's loop over its table.
  EXPECT_EQ(b.algorithm, 0);
  EXPECT_EQ(b.protocol, 0);
  EXPECT_EQ(b.channels, 2);
  bool allowed[21] = {};
  allowed[1 * 3 + 0] = true;  // ring ll only
  b = tuner_best(c, 4, 1024, allowed);
  EXPECT_EQ(b.algorithm, 1);
  EXPECT_EQ(b.protocol, 0);
  EXPECT_EQ(b.time_us, 12);
  EXPECT_EQ(tuner_best(c, 2, 1024).algorithm, -1);
}

}  // namespace
}  // namespace collkit
