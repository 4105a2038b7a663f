// The runtime's connection buffering at the size being run (issue 44,
// docs/MSCCL.md "Connection buffering"): chunks per call from
// mscclSetupCount, steps per call by protocol, NCCL_BUFFSIZE, the deeper
// connections between nodes, and the sizes from which a file hangs: hand-made
// files one call and one step either side of the boundary, the published
// 64-GPU file that hangs only at large sizes, and simulate and bench refusing
// those sizes. Every expected figure is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"
#include "interop/msccl_import.h"
#include "interop/msccl_source.h"
#include "realrun/harness.h"
#include "sim/sweep.h"
#include "tests/interop/msccl_support.h"
#include "topologies/topology.h"

namespace collkit::msccl {
namespace {

using msccl_testing::Xml;

Algo algo_of(const std::string& proto, Collective c, int ngpus, int nchunks) {
  Algo a;
  a.proto = proto;
  a.collective = c;
  a.ngpus = ngpus;
  a.nchunksperloop = nchunks;
  return a;
}

ScheduleSpec spec_of(Collective c, int ranks, std::int64_t count, std::int64_t buffsize = 0) {
  ScheduleSpec spec;
  spec.collective = c;
  spec.ranks = ranks;
  spec.count = count;
  spec.elem_size = 4;
  spec.nccl_buffsize = buffsize;
  return spec;
}

TEST(MscclBuffering, ChunksPerCallFollowMscclSetupCount) {
  // Simple all_reduce, 64 chunks, 4 MiB buffer: a step is 4194304 / 8 =
  // 524288 bytes, a call MSCCL_CHUNKSTEPS = 4 of them: 2097152 bytes.
  const Algo simple = algo_of("Simple", Collective::all_reduce, 64, 64);
  Buffering b = buffering(simple, spec_of(Collective::all_reduce, 64, 64));
  EXPECT_EQ(b.buffer, 4194304);
  EXPECT_EQ(b.chunk_effective, 2097152);
  EXPECT_EQ(b.bytes, 256);
  EXPECT_EQ(b.max_allowed_count, 71);  // 2097152 / 4 is capped below MSCCL_MAX_COUNT = 72
  EXPECT_EQ(b.steps_per_call, 4);
  EXPECT_EQ(b.steps, 8);
  EXPECT_EQ(b.net_steps, 16);
  EXPECT_EQ(calls_of(b, 32), 1);
  // 64 MiB: 1 MiB chunks, 2097152 / 1048576 = 2 per call; 32 chunks are 16
  // calls, 64 steps.
  b = buffering(simple, spec_of(Collective::all_reduce, 64, 16777216));
  EXPECT_EQ(b.max_allowed_count, 2);
  EXPECT_EQ(calls_of(b, 32) * b.steps_per_call, 64);
  // 8 MiB: 131072-byte chunks, 16 per call; 64 bytes more: ceil(8388864 /
  // 64) = 131076, 2097152 / 131076 = 15.9995, so 15.
  EXPECT_EQ(buffering(simple, spec_of(Collective::all_reduce, 64, 2097152)).max_allowed_count, 16);
  b = buffering(simple, spec_of(Collective::all_reduce, 64, 2097216));
  EXPECT_EQ(b.max_allowed_count, 15);
  EXPECT_EQ(calls_of(b, 32), 3);
  EXPECT_EQ(calls_of(b, 30), 2);
  EXPECT_EQ(calls_of(b, 0), 0);  // cnt 0: the kernel's loop over calls does not run
  // NCCL_BUFFSIZE 8192: 1024-byte steps, 4096 bytes a call.
  EXPECT_EQ(buffering(simple, spec_of(Collective::all_reduce, 64, 64, 8192)).chunk_effective, 4096);
  // broadcast and reduce set chunkSteps 1 (msccl_parser.cc): 524288 bytes.
  EXPECT_EQ(buffering(algo_of("Simple", Collective::broadcast, 8, 8),
                      spec_of(Collective::broadcast, 8, 8))
                .chunk_effective,
            524288);
  // LL: 524288-byte buffer, 65536-byte steps, half of it data: 32768 a
  // call; 65536 floats over 64 chunks are 4096-byte chunks: 8 per call,
  // each call one step. NCCL_BUFFSIZE is Simple's only.
  const Algo ll = algo_of("LL", Collective::all_reduce, 8, 64);
  b = buffering(ll, spec_of(Collective::all_reduce, 8, 65536, 8192));
  EXPECT_EQ(b.buffer, 524288);
  EXPECT_EQ(b.chunk_effective, 32768);
  EXPECT_EQ(b.max_allowed_count, 8);
  EXPECT_EQ(b.steps_per_call, 1);
  // LL128: 4915200 / 8 = 614400-byte steps, 15 of each 16 words data:
  // 576000; 294912 floats over 64 chunks are 18432 bytes: 31 per call.
  b = buffering(algo_of("LL128", Collective::all_reduce, 8, 64),
                spec_of(Collective::all_reduce, 8, 294912));
  EXPECT_EQ(b.chunk_effective, 576000);
  EXPECT_EQ(b.max_allowed_count, 31);
  EXPECT_EQ(b.steps_per_call, 1);
  // gather: the kernel's count is the collkit count / p: 8 ranks, 64
  // chunks, count 8 x 64 x 1024 floats = 262144 bytes, 4096 a chunk.
  b = buffering(algo_of("LL", Collective::gather, 8, 64),
                spec_of(Collective::gather, 8, 8 * 64 * 1024));
  EXPECT_EQ(b.bytes, 262144);
  EXPECT_EQ(b.max_allowed_count, 8);
}

// A two-rank all_reduce of 2k chunks in which both ranks send first: k
// chunks each way, then the reduced halves back. Both sends must fit their
// connection, or neither rank ever receives.
std::string sends_first(const std::string& proto, int k) {
  return Xml("allreduce", 2, 2 * k, proto)
      .gpu(0, 2 * k, 2 * k, 0)
      .tb(0, 1, 1)
      .step("s", "i", k, "o", k, k)
      .step("rrc", "i", 0, "o", 0, k)
      .step("s", "o", 0, "o", 0, k)
      .step("r", "o", k, "o", k, k)
      .gpu(1, 2 * k, 2 * k, 0)
      .tb(0, 0, 0)
      .step("s", "i", 0, "o", 0, k)
      .step("rrc", "i", k, "o", k, k)
      .step("s", "o", k, "o", k, k)
      .step("r", "o", 0, "o", 0, k)
      .str();
}

ScheduleSpec file_spec(const std::shared_ptr<const Algo>& a, std::int64_t count,
                       std::int64_t buffsize = 0, int node_size = 0) {
  ScheduleSpec spec = spec_of(a->collective, a->ngpus, count, buffsize);
  spec.algorithm = "msccl:" + a->file;
  spec.node_size = node_size;
  return spec;
}

TEST(MscclBuffering, SimpleSendThatExactlyFitsAndOneCallOver) {
  // 6 chunks sent first, 12 per buffer, NCCL_BUFFSIZE 8192: a call carries
  // m = floor(4096 / ceil(4 count / 12)) chunks; 6 chunks take ceil(6 / m)
  // calls of 4 steps. m = 3: 2 calls, 8 steps, exactly the connection; m =
  // 2: 3 calls, 12 steps. m >= 3 while ceil(4 count / 12) <= 1365, that is
  // 4 count <= 16380: count 4092 (a multiple of 12) runs, 4104 hangs.
  const auto a = std::make_shared<const Algo>(parse_algo(sends_first("Simple", 6), "t.xml"));
  const auto fits = import_schedule(a, file_spec(a, 4092, 8192));
  EXPECT_EQ(fits->stats().buffering.max_allowed_count, 3);
  EXPECT_EQ(fits->stats().buffered, 4);  // both first sends and both second ones
  verify_numeric(*fits, DType::int32, ReduceOp::sum);
  verify_symbolic(*fits);
  try {
    import_schedule(a, file_spec(a, 4104, 8192));
    FAIL() << "no deadlock";
  } catch (const RuntimeDeadlock& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t.xml:4: <step s=\"0\"> of <tb id=\"0\"> of <gpu id=\"0\">: deadlock: 2 "
                        "thread block(s) cannot progress even with the connections' buffering "
                        "(at 16416 bytes a call carries up to 2 chunk(s) and takes 4 step(s) of "
                        "a connection's 8); gpu 0 tb 0 at step 0 (s) waits to send 6 chunk(s) to "
                        "gpu 1 on channel 0: 3 call(s) x 4 step(s) = 12, and the connection "
                        "holds 0 message(s) in 0 of its 8 steps"),
              std::string::npos)
        << what;
  }
  const Hang h = first_hang(a, file_spec(a, 0, 8192));
  EXPECT_TRUE(h.any);
  EXPECT_FALSE(h.every);
  EXPECT_EQ(h.count, 4104);
  EXPECT_EQ(h.last_ok, 4092);
  EXPECT_EQ(h.at.max_allowed_count, 2);
  EXPECT_NE(h.reason.find("3 call(s) x 4 step(s) = 12"), std::string::npos) << h.reason;
  // With NCCL's 4 MiB the same boundary is 512 times further: m >= 3 while
  // ceil(4 count / 12) <= floor(2097152 / 3) = 699050, 4 count <= 8388600.
  EXPECT_EQ(first_hang(a, file_spec(a, 0)).count, 2097156);
}

TEST(MscclBuffering, ConnectionsBetweenNodesHoldTwiceTheSteps) {
  // One rank per node: the connection crosses nodes and holds 16 steps
  // (the sender's 8 and the receiving proxy's 8 posted receives). 6 chunks
  // fit while ceil(6 / m) x 4 <= 16, m >= 2: ceil(4 count / 12) <= 2048,
  // count <= 6144; 6156 hangs.
  const auto a = std::make_shared<const Algo>(parse_algo(sends_first("Simple", 6), "t.xml"));
  EXPECT_NO_THROW(import_schedule(a, file_spec(a, 6144, 8192, 1)));
  EXPECT_THROW(import_schedule(a, file_spec(a, 6156, 8192, 1)), RuntimeDeadlock);
  const Hang h = first_hang(a, file_spec(a, 0, 8192, 1));
  EXPECT_EQ(h.count, 6156);
  EXPECT_EQ(h.last_ok, 6144);
  EXPECT_NE(h.reason.find("a connection's 8, 16 across nodes"), std::string::npos) << h.reason;
  EXPECT_NE(h.reason.find("6 call(s) x 4 step(s) = 24, and the connection holds 0 message(s) in 0 "
                          "of its 16 steps"),
            std::string::npos)
      << h.reason;
  // Both ranks in one node: as above.
  EXPECT_EQ(first_hang(a, file_spec(a, 0, 8192, 2)).count, 4104);
}

TEST(MscclBuffering, LlSendOfEightStepsFitsAtEverySizeAndNineDoNot) {
  // LL: a call is one step, at most 8 in a connection, and at the largest
  // sizes a call carries one chunk. 8 chunks are 8 calls at worst: they
  // always fit.
  const auto eight = std::make_shared<const Algo>(parse_algo(sends_first("LL", 8), "t.xml"));
  EXPECT_FALSE(first_hang(eight, file_spec(eight, 0)).any);
  EXPECT_NO_THROW(import_schedule(eight, file_spec(eight, 16 * 1024 * 1024)));
  // 9 chunks (18 per buffer) hang once a call carries one chunk: m =
  // floor(32768 / ceil(4 count / 18)) < 2 once ceil(4 count / 18) > 16384,
  // 4 count > 294912, count > 73728; 73728 is a multiple of 18 (m = 2: 5
  // calls), 73746 the first that hangs (9 calls, 9 steps).
  const auto nine = std::make_shared<const Algo>(parse_algo(sends_first("LL", 9), "t.xml"));
  const Hang h = first_hang(nine, file_spec(nine, 0));
  EXPECT_EQ(h.count, 73746);
  EXPECT_EQ(h.last_ok, 73728);
  EXPECT_NE(h.reason.find("waits to send 9 chunk(s) to gpu 1 on channel 0: 9 call(s) x 1 step(s) "
                          "= 9, and the connection holds 0 message(s) in 0 of its 8 steps"),
            std::string::npos)
      << h.reason;
  const auto ok = import_schedule(nine, file_spec(nine, 73728));
  verify_numeric(*ok, DType::float32, ReduceOp::sum);
  EXPECT_THROW(import_schedule(nine, file_spec(nine, 73746)), RuntimeDeadlock);
}

TEST(MscclBuffering, AFileThatDeadlocksWithAnyBufferHangsAtEverySize) {
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
  const auto a = std::make_shared<const Algo>(parse_algo(text, "t.xml"));
  const Hang h = first_hang(a, file_spec(a, 0));
  EXPECT_TRUE(h.every);
  EXPECT_EQ(h.count, 1);
  EXPECT_NE(h.reason.find("waits for a message from gpu 1"), std::string::npos) << h.reason;
}

std::string rdh_file() {
  return msccl_testing::data_dir() +
         "/dailiuyao__msccl_tools_lyd__examples__xml__allreduce_rec_doub_halv_Simple_gpu64_ins1."
         "xml";
}

TEST(MscclBuffering, PublishedRecursiveHalvingRunsSmallAndHangsLarge) {
  register_interop_sources();
  const auto a = load("msccl:" + rdh_file());
  // Small: every send of a step is one call (up to 71 chunks), 4 steps.
  const auto small = import_schedule(a, file_spec(a, 64));
  verify_numeric(*small, DType::int32, ReduceOp::sum, 3);
  verify_symbolic(*small);
  // The boundary of msccl_support.h: 2097152 floats (8 MiB) run, 2097216 hang.
  EXPECT_NO_THROW(import_schedule(a, file_spec(a, 2097152)));
  const Hang h = first_hang(a, file_spec(a, 0));
  EXPECT_EQ(h.count, 2097216);
  EXPECT_EQ(h.last_ok, 2097152);
  EXPECT_NE(h.reason.find(":40: <step s=\"0\"> of <tb id=\"5\"> of <gpu id=\"0\">: deadlock: 384 "
                          "thread block(s)"),
            std::string::npos)
      << h.reason;
  EXPECT_NE(h.reason.find("gpu 0 tb 5 at step 0 (s) waits to send 32 chunk(s) to gpu 32 on "
                          "channel 0: 3 call(s) x 4 step(s) = 12"),
            std::string::npos)
      << h.reason;
  // 64 MiB: 16 calls, 64 steps.
  try {
    import_schedule(a, file_spec(a, 16777216));
    FAIL() << "no deadlock";
  } catch (const RuntimeDeadlock& e) {
    EXPECT_NE(std::string(e.what()).find("16 call(s) x 4 step(s) = 64"), std::string::npos)
        << e.what();
  }
  // Nodes of 8 ranks: the partners 32, 16 and 8 ranks away are in other
  // nodes, 16 steps. 32 chunks fit while ceil(32 / m) x 4 <= 16, m >= 8:
  // ceil(bytes / 64) <= 262144, bytes <= 16 MiB, so from 4194368 floats;
  // the 16 and 8 chunks to the other nodes need m >= 4 and m >= 2, the 4
  // chunks inside the node m >= 2: none binds first.
  EXPECT_EQ(first_hang(a, file_spec(a, 0, 0, 8)).count, 4194368);
  // NCCL_BUFFSIZE 2 MiB: calls of 1 MiB, 16 per call while ceil(bytes /
  // 64) <= 65536, bytes <= 4 MiB: from 1048640 floats.
  EXPECT_EQ(first_hang(a, file_spec(a, 0, 2097152)).count, 1048640);
  // The registry's hook, as simulate and bench ask it.
  EXPECT_EQ(runtime_hang(file_spec(a, 2097152)), "");
  const std::string hang = runtime_hang(file_spec(a, 2097216));
  EXPECT_NE(hang.find(" at count 2097216 (8388864 bytes): the runtime hangs from count 2097216 "
                      "(8388864 bytes of 4-byte elements; Simple, connection buffer 4194304 bytes "
                      "(NCCL_BUFFSIZE's default) in 8 steps, all ranks in one node), where a call "
                      "carries at most 15 chunk(s); the largest count that runs is 2097152: "),
            std::string::npos)
      << hang;
}

TEST(MscclBuffering, SimulateRefusesTheSizesThatHang) {
  register_interop_sources();
  const auto topology =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/h100-cluster-16x8.json", 64);
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms = {"msccl:" + rdh_file()};
  sweep.ranks = 64;
  // Nodes of 8 (the topology's): 16 MiB runs, 32 MiB hangs (above).
  sweep.sizes = {16 << 20};
  const auto points = simulate_sweep(sweep, *topology, SimOptions{});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_GT(points[0].seconds, 0);
  sweep.sizes = {16 << 20, 32 << 20};
  try {
    simulate_sweep(sweep, *topology, SimOptions{});
    FAIL() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("size 33554432 of the sweep: msccl:"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("the runtime hangs from count 4194368"), std::string::npos)
        << e.what();
  }
  // NCCL_BUFFSIZE 64 MiB: a call carries 32 MiB; at 32 MiB the chunks are
  // 512 KiB, 64 per call, so every send is one call: 32 MiB runs.
  sweep.nccl_buffsize = 64 << 20;
  EXPECT_EQ(simulate_sweep(sweep, *topology, SimOptions{}).size(), 2u);
}

TEST(MscclBuffering, BenchRefusesTheSizesThatHang) {
  register_interop_sources();
  realrun::BenchArgs args;
  args.backend = "mpi";
  args.collective = "all_reduce";
  args.algorithms = "msccl:" + rdh_file();
  args.min_bytes = "8M";
  args.max_bytes = "8M";
  EXPECT_EQ(realrun::parse_config(args, 64).sizes.size(), 1u);
  // One node (bench knows no topology): from 8388864 bytes.
  args.max_bytes = "16M";
  args.step_factor = "2";
  try {
    realrun::parse_config(args, 64);
    FAIL() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-e 16M: 16777216 bytes of float: msccl:"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("the runtime hangs from count 2097216"), std::string::npos)
        << e.what();
  }
  // NCCL_BUFFSIZE 8 MiB: 16 per call while ceil(bytes / 64) <= 262144:
  // 16 MiB runs.
  args.nccl_buffsize = "8M";
  EXPECT_EQ(realrun::parse_config(args, 64).sizes.size(), 2u);
  args.nccl_buffsize = "7";
  EXPECT_THROW(realrun::parse_config(args, 64), UsageError);
}

}  // namespace
}  // namespace collkit::msccl
