// The MSCCL importer: the exact program of a small hand-written file (what
// each step type reads and writes, buffering, reductions through a temp),
// wrong files caught with the failing rank and chunk, the runtime's
// deadlocks (including a full connection) and every published file.
#include "interop/msccl_import.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"
#include "interop/msccl_source.h"
#include "sim/engine.h"
#include "tests/interop/msccl_support.h"
#include "topologies/topology.h"

namespace collkit::msccl {
namespace {

using msccl_testing::Xml;

std::unique_ptr<MscclSchedule> import_text(const std::string& text, Collective c,
                                           std::int64_t count, std::int64_t segment = 0) {
  auto algo = std::make_shared<const Algo>(parse_algo(text, "t.xml"));
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = "msccl:t.xml";
  spec.ranks = algo->ngpus;
  spec.count = count;
  spec.segment = segment;
  return import_schedule(algo, spec);
}

// A two-rank all_reduce: each rank sends the chunk the other reduces, then
// forwards the reduced chunk back.
std::string ring2(int rank1_reduce_src = 1) {
  return Xml("allreduce", 2, 2)
      .gpu(0, 2, 2, 0)
      .tb(0, 1, 1)
      .step("s", "i", 1, "o", 1)
      .step("rrc", "i", 0, "o", 0)
      .step("s", "o", 0, "o", 0)
      .step("r", "o", 1, "o", 1)
      .gpu(1, 2, 2, 0)
      .tb(0, 0, 0)
      .step("s", "i", 0, "o", 0)
      .step("rrcs", "i", rank1_reduce_src, "o", 1)
      .step("r", "o", 0, "o", 0)
      .str();
}

Region R(Buf b, std::int64_t off, std::int64_t cnt) { return {b, off, cnt}; }

TEST(MscclImport, HandWrittenRingGivesTheRuntimesDataFlow) {
  const auto s = import_text(ring2(), Collective::all_reduce, 6);  // 3 elements per chunk
  const std::int64_t c = 3;
  // Both ranks send first and receive second in one thread block: the sends
  // go into the connection's buffer and each transfer is written in the
  // round of its receive. rrc/rrcs reduce a source that is not their
  // destination, so the message lands in a temp (scratch), the source is
  // reduced into it and the result copied to the destination.
  const std::vector<Step> r0 = s->steps(0);
  const std::vector<Step> r1 = s->steps(1);
  ASSERT_EQ(r0.size(), 3u);
  ASSERT_EQ(r1.size(), 3u);
  EXPECT_EQ(r0[0].ops,
            (std::vector<Op>{send_op(1, R(Buf::input, c, c)), recv_op(1, R(Buf::scratch, 0, c))}));
  EXPECT_EQ(r0[1].ops, (std::vector<Op>{reduce_op(R(Buf::input, 0, c), R(Buf::scratch, 0, c)),
                                        copy_op(R(Buf::scratch, 0, c), R(Buf::output, 0, c))}));
  EXPECT_EQ(r0[2].ops,
            (std::vector<Op>{send_op(1, R(Buf::output, 0, c)), recv_op(1, R(Buf::output, c, c))}));
  // Within a step, transfers are ordered by (sender, receiver, channel).
  EXPECT_EQ(r1[0].ops,
            (std::vector<Op>{recv_op(0, R(Buf::scratch, 0, c)), send_op(0, R(Buf::input, 0, c))}));
  EXPECT_EQ(r1[1].ops, (std::vector<Op>{reduce_op(R(Buf::input, c, c), R(Buf::scratch, 0, c)),
                                        copy_op(R(Buf::scratch, 0, c), R(Buf::output, c, c))}));
  EXPECT_EQ(r1[2].ops,
            (std::vector<Op>{recv_op(0, R(Buf::output, 0, c)), send_op(0, R(Buf::output, c, c))}));
  EXPECT_EQ(s->stats().buffered, 4);
  EXPECT_EQ(s->stats().messages, 4);
  EXPECT_EQ(s->buffer_sizes(0).scratch, c);
  for (ReduceOp op : kAllReduceOps) verify_numeric(*s, DType::int32, op);
  verify_symbolic(*s);
  // The origin of an op names the file, line, block and step.
  EXPECT_NE(s->describe_op(1, 2, 1).find("gpu 1 tb 0 step 1 (rrcs, send part)"), std::string::npos)
      << s->describe_op(1, 2, 1);
}

TEST(MscclImport, InPlaceReduceScatterAliasesOutputIntoInput) {
  // In place, rank r's o chunk 0 is its i chunk r: each rank reduces the
  // chunk it keeps where it is and sends the other one.
  const std::string text = Xml("reducescatter", 2, 2, "LL", "inplace=\"1\" outofplace=\"0\"")
                               .gpu(0, 2, 1, 0)
                               .tb(0, 1, 1)
                               .step("s", "i", 1, "i", 1)
                               .step("rrc", "i", 0, "i", 0)
                               .gpu(1, 2, 1, 0)
                               .tb(0, 0, 0)
                               .step("s", "i", 0, "i", 0)
                               .step("rrc", "i", 1, "i", 1)
                               .str();
  const auto s = import_text(text, Collective::reduce_scatter, 8);
  EXPECT_TRUE(s->stats().in_place);
  // The one buffer lives in scratch (the output is one block): a first copy
  // of the input into it and a last copy of the rank's block out of it.
  const std::vector<Step> r1 = s->steps(1);
  ASSERT_FALSE(r1.empty());
  EXPECT_EQ(r1.front().ops.front(), copy_op(R(Buf::input, 0, 8), R(Buf::scratch, 0, 8)));
  EXPECT_EQ(r1.back().ops.back(), copy_op(R(Buf::scratch, 4, 4), R(Buf::output, 0, 4)));
  for (ReduceOp op : kAllReduceOps) verify_numeric(*s, DType::float64, op);
  verify_symbolic(*s);
}

TEST(MscclImport, AWrongChunkIsCaughtWithRankAndChunk) {
  // Rank 1 reduces its chunk 0 into chunk 1: the result at chunk 1 is wrong.
  const auto s = import_text(ring2(0), Collective::all_reduce, 4);
  try {
    verify_symbolic(*s);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("wrong result (symbolic): rank 0 output[2] [chunk 1 of the output]"),
              std::string::npos)
        << what;
    // The op that wrote it last, and where it comes from in the file.
    EXPECT_NE(what.find("; last written by rank 0, step 2, op 1 (recv from 1 into output[2,+2)) "
                        "[t.xml:7: gpu 0 tb 0 step 3 (r, receive part)]"),
              std::string::npos)
        << what;
  }
}

TEST(MscclImport, AContributionCountedTwice) {
  // Rank 0 adds its chunk 0 again after rrc: symbolic check names the step.
  std::string text = ring2();
  const std::string extra =
      "<tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n<step s=\"0\" type=\"re\" srcbuf=\"i\" "
      "srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"0\" deps=\"1\" "
      "hasdep=\"0\"/>\n</tb>\n";
  text.insert(text.find("</gpu>"), extra);
  text.replace(
      text.find("type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
                "depid=\"-1\" deps=\"-1\" hasdep=\"0\""),
      std::string("type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
                  "depid=\"-1\" deps=\"-1\" hasdep=\"0\"")
          .size(),
      "type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"1\"");
  const auto s = import_text(text, Collective::all_reduce, 2);
  try {
    verify_symbolic(*s);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("contribution counted twice"), std::string::npos) << what;
    EXPECT_NE(what.find("gpu 0 tb 1 step 0 (re, local part)"), std::string::npos) << what;
  }
}

TEST(MscclImport, ReceivingFirstOnBothSidesDeadlocks) {
  const std::string text = Xml("allreduce", 2, 1)
                               .gpu(0, 1, 1, 0)
                               .tb(0, 1, 1)
                               .step("r", "o", 0, "o", 0)
                               .step("s", "i", 0, "o", 0)
                               .gpu(1, 1, 1, 0)
                               .tb(0, 0, 0)
                               .step("r", "o", 0, "o", 0)
                               .step("s", "i", 0, "o", 0)
                               .str();
  try {
    import_text(text, Collective::all_reduce, 1);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t.xml:4: <step s=\"0\"> of <tb id=\"0\"> of <gpu id=\"0\">: deadlock: 2 "
                        "thread block(s)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("gpu 0 tb 0 at step 0 (r) waits for a message from gpu 1 on channel 0"),
              std::string::npos)
        << what;
  }
}

// Rank 0 sends three chunks on channel 0 before it sends the one on channel
// 1 that rank 1 waits for before receiving them: fine while the connection
// buffers three messages (LL: a call is one of its 8 steps), a deadlock
// with Simple (a call takes 4 steps: two messages).
std::string three_buffered(const std::string& proto) {
  return Xml("allreduce", 2, 4, proto)
      .gpu(0, 4, 4, 0)
      .tb(0, 1, -1, 0)
      .step("s", "i", 0, "o", 0)
      .step("s", "i", 1, "o", 0)
      .step("s", "i", 2, "o", 0, 1, -1, -1, 1)
      .tb(1, 1, -1, 1)
      .step("s", "i", 3, "o", 0, 1, 0, 2)
      .gpu(1, 4, 4, 0)
      .tb(0, -1, 0, 1)
      .step("r", "i", 0, "o", 3, 1, -1, -1, 1)
      .tb(1, -1, 0, 0)
      .step("r", "i", 0, "o", 0, 1, 0, 0)
      .step("r", "i", 0, "o", 1)
      .step("r", "i", 0, "o", 2)
      .str();
}

TEST(MscclImport, ConnectionBufferingFollowsTheProtocol) {
  const auto ll = import_text(three_buffered("LL"), Collective::all_reduce, 4);
  EXPECT_EQ(ll->stats().buffered, 3);
  try {
    import_text(three_buffered("Simple"), Collective::all_reduce, 4);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    // At 16 bytes a call carries every chunk of a step (71 at most), so each
    // one-chunk send is one call of 4 steps: two fill the 8.
    EXPECT_NE(what.find("gpu 0 tb 0 at step 2 (s) waits to send 1 chunk(s) to gpu 1 on channel 0: "
                        "1 call(s) x 4 step(s) = 4, and the connection holds 2 message(s) in 8 "
                        "of its 8 steps"),
              std::string::npos)
        << what;
  }
}

TEST(MscclImport, MismatchedMessageSizes) {
  const std::string text = Xml("allreduce", 2, 2)
                               .gpu(0, 2, 2, 0)
                               .tb(0, 1, -1)
                               .step("s", "i", 0, "o", 0, 2)
                               .gpu(1, 2, 2, 0)
                               .tb(0, -1, 0)
                               .step("r", "i", 0, "o", 0, 1)
                               .str();
  try {
    import_text(text, Collective::all_reduce, 2);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("r receives 1 chunk(s), but the message it gets"),
              std::string::npos)
        << e.what();
  }
}

TEST(MscclImport, NopDependencyChainNeedsARealStepWithADependency) {
  const std::string text = Xml("allreduce", 2, 1)
                               .gpu(0, 1, 1, 0)
                               .tb(0, 1, -1)
                               .step("s", "i", 0, "o", 0, 1, -1, -1, 1)
                               .tb(1, -1, -1)
                               .step("nop", "i", -1, "o", -1, 0, 0, 0)
                               .step("cpy", "i", 0, "o", 0)
                               .gpu(1, 1, 1, 0)
                               .tb(0, -1, 0)
                               .step("r", "i", 0, "o", 0)
                               .str();
  try {
    import_text(text, Collective::all_reduce, 1);
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("<step s=\"1\"> of <tb id=\"1\"> of <gpu id=\"0\">: "
                                         "attribute depid: the nop steps before it"),
              std::string::npos)
        << e.what();
  }
}

class MscclPublished : public ::testing::TestWithParam<msccl_testing::Published> {};

TEST_P(MscclPublished, ImportsVerifiesAndSimulatesOrFailsPrecisely) {
  const auto& f = GetParam();
  register_interop_sources();
  ScheduleSpec spec;
  spec.collective = parse_collective(f.collective);
  spec.algorithm = std::string("msccl:") + msccl_testing::path_of(f);
  spec.ranks = f.ranks;
  // Where the runtime hangs (float, NCCL's default buffers, one node): at
  // no size for the files that run, at every size for the one that
  // deadlocks, from the hand-computed count for the one that fills its
  // connections at large sizes.
  if (f.failure.empty() || f.failure == "deadlock") {
    const Hang h = first_hang(load(spec.algorithm), spec);
    EXPECT_EQ(h.any, f.failure == "deadlock" || f.hangs_from >= 0);
    EXPECT_EQ(h.every, f.failure == "deadlock");
    if (f.hangs_from >= 0) {
      EXPECT_EQ(h.count, f.hangs_from);
    }
  }
  for (std::int64_t k : {1, 3}) {
    spec.count = f.nchunks * k;
    if (!f.failure.empty()) {
      try {
        const auto s = make_schedule(spec);
        verify_symbolic(*s);
        FAIL() << "no error";
      } catch (const ScheduleError& e) {
        EXPECT_NE(std::string(e.what()).find(f.failure), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(f.file), std::string::npos) << e.what();
      }
      continue;
    }
    const auto s = make_schedule(spec);
    verify_numeric(*s, DType::int32, ReduceOp::sum, 3);
    verify_numeric(*s, DType::float64, ReduceOp::max, 5);
    verify_symbolic(*s);
    const auto topology = load_topology(
        std::string(COLLKIT_SOURCE_DIR) +
            (f.ranks <= 8 ? "/topologies/dgx-h100.json" : "/topologies/h100-cluster-16x8.json"),
        f.ranks);
    const SimResult r = simulate(*s, *topology);
    EXPECT_TRUE(r.time > 0 && std::isfinite(r.time));
    EXPECT_GT(r.messages, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, MscclPublished, ::testing::ValuesIn(msccl_testing::published()),
                         [](const ::testing::TestParamInfo<msccl_testing::Published>& i) {
                           std::string n = i.param.file.substr(0, i.param.file.size() - 4);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n.substr(n.size() > 40 ? n.size() - 40 : 0);
                         });

TEST(MscclImport, LoopsSliceEveryChunk) {
  register_interop_sources();
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "msccl:" + msccl_testing::data_dir() +
                   "/Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__r48ll.xml";
  spec.ranks = 8;
  spec.count = 64 * 10;
  const auto one = make_schedule(spec);
  spec.segment = 4;  // chunks of 10 elements in slices of 4, 4 and 2
  const auto three = make_schedule(spec);
  const auto& m1 = dynamic_cast<const MscclSchedule&>(*one);
  const auto& m3 = dynamic_cast<const MscclSchedule&>(*three);
  EXPECT_EQ(m3.stats().loops, 3);
  EXPECT_EQ(m3.stats().messages, 3 * m1.stats().messages);
  verify_numeric(*three, DType::int32, ReduceOp::sum);
  verify_symbolic(*three);
}

TEST(MscclImport, TheRegistryHookChecksTheSpec) {
  register_interop_sources();
  const std::string file = msccl_testing::data_dir() +
                           "/Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__r48ll.xml";
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "msccl:" + file;
  spec.ranks = 8;
  spec.count = 64;
  EXPECT_NO_THROW(make_schedule(spec));
  auto bad = spec;
  bad.ranks = 4;
  EXPECT_THROW(make_schedule(bad), UsageError);
  bad = spec;
  bad.count = 65;
  try {
    make_schedule(bad);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("count 65 is not a multiple of 64"), std::string::npos);
  }
  bad = spec;
  bad.collective = Collective::all_gather;
  EXPECT_THROW(make_schedule(bad), UsageError);
  bad = spec;
  bad.algorithm = "msccl:/nonexistent.xml";
  EXPECT_THROW(make_schedule(bad), FileError);
  bad = spec;
  bad.algorithm = "msccl:";
  EXPECT_THROW(make_schedule(bad), UsageError);
  EXPECT_THROW(closed_form_cost(spec, spec.model), UsageError);
  const auto src = find_schedule_source(spec.algorithm);
  ASSERT_TRUE(src);
  EXPECT_EQ(src->fixed_ranks(spec.algorithm), 8);
  EXPECT_EQ(src->count_unit(spec), 64);
}

}  // namespace
}  // namespace collkit::msccl
