// The schedule interpreter without a GPU: device programs
// (realrun/device_program.h) compiled from the plans and run by the host
// engine (realrun/host_interpreter.h), which executes the per-operation
// logic the GPU kernel executes (realrun/interpreter.h) with one thread per
// rank and lane, real atomics and seeded random delays. Checked against the
// collectives' definition (tests/realrun/oracle.h) and the bench's check
// data, for every registered (collective, algorithm, variant) at p = 2..8;
// and mutation tests: a program without one of its waits computes garbage,
// without a signal it stops with an error instead of hanging, without a
// barrier between lanes it computes garbage.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "realrun/check_data.h"
#include "realrun/device_program.h"
#include "realrun/host_interpreter.h"
#include "realrun/multirank.h"
#include "realrun/plan.h"
#include "tests/realrun/host_rank.h"
#include "tests/realrun/list_schedule.h"
#include "tests/realrun/oracle.h"

namespace collkit::realrun {
namespace {

using testing_oracle::Case;
using testing_oracle::HostRank;
using testing_oracle::naive_input;
using testing_oracle::naive_output;
using testing_oracle::registered_cases;
using testing_oracle::Values;

bool host_can_read(void*, int, int) { return true; }

std::unique_ptr<Schedule> schedule(Collective c, const std::string& algorithm, int p, int root,
                                   std::int64_t n, int elem_size) {
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = algorithm;
  spec.ranks = p;
  spec.root = root;
  spec.count = n;
  spec.elem_size = elem_size;
  return make_schedule(spec);
}

// Every rank of one schedule as a device program on host memory.
struct World {
  // ll: compile_multirank's ll_max_bytes (-1: no LL messages), sent by
  // `protocol`.
  World(const Schedule& s, DataType type, RedOp op, bool in_place, bool direct, int lanes,
        std::int64_t ll = -1, LlProtocol protocol = LlProtocol::ll) {
    for (int r = 0; r < s.ranks(); ++r) plans.push_back(compile_plan(s, r, type, op, in_place));
    for (const CompiledPlan& p : plans) ptrs.push_back(&p);
    for (const CompiledPlan& p : plans) ranks.push_back(std::make_unique<HostRank>(p));
    for (const auto& r : ranks) bases.push_back(r->bases);
    multirank = compile_multirank(ptrs, direct ? &host_can_read : nullptr, nullptr, false, ll);
    program = compile_device_program(ptrs, multirank, lanes, true, protocol);
  }
  // Runs `program` (as compiled, or as a test changed it) once.
  void run(const HostInterpreterOptions& options) {
    if (!engine) engine = std::make_unique<HostInterpreter>(program, bases);
    engine->run(options);
  }
  std::vector<CompiledPlan> plans;
  std::vector<const CompiledPlan*> ptrs;
  std::vector<std::unique_ptr<HostRank>> ranks;
  std::vector<AreaBases> bases;
  MultiRankProgram multirank;
  DeviceProgram program;
  std::unique_ptr<HostInterpreter> engine;
};

// `program` without rank r's operation i.
void drop_op(DeviceProgram& program, int r, std::uint32_t i) {
  program.ops.erase(program.ops.begin() + program.first_op[r] + i);
  for (int q = r + 1; q <= program.ranks; ++q) --program.first_op[q];
}

// Inputs in place, outputs, scratch and temp as garbage (so a run that
// reads before the writer wrote cannot find an earlier run's values).
void load_inputs(World& w, const std::vector<Values>& in, bool in_place) {
  for (std::size_t r = 0; r < w.plans.size(); ++r) {
    const CompiledPlan& p = w.plans[r];
    HostRank& h = *w.ranks[r];
    if (h.scratch.size() > 0) std::memset(h.scratch.data(), 0x33, h.scratch.size());
    if (h.temp.size() > 0) std::memset(h.temp.data(), 0x44, h.temp.size());
    if (!in_place && p.output_bytes > 0)
      std::memset(w.ranks[r]->output(), 0x5A, static_cast<std::size_t>(p.output_bytes));
    if (p.input_bytes > 0)
      std::memcpy(w.ranks[r]->input(), in[r].data(), static_cast<std::size_t>(p.input_bytes));
  }
}

std::vector<Values> outputs(const World& w) {
  std::vector<Values> out(w.plans.size());
  for (std::size_t r = 0; r < w.plans.size(); ++r) {
    out[r].resize(static_cast<std::size_t>(w.plans[r].output_bytes / 8));
    if (!out[r].empty()) std::memcpy(out[r].data(), w.ranks[r]->output(), out[r].size() * 8);
  }
  return out;
}

std::string name_of(const Case& c) {
  std::string name = std::string(to_string(c.collective)) + "_" + c.algorithm;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

// ---- the program ------------------------------------------------------------

// What the compiler promises: every pull from a peer comes after a wait for
// a flag that peer signals; every flag is signalled by the one rank it
// belongs to, once per lane and iteration; barriers only with lanes.
TEST(DeviceProgramTest, PullsWaitForTheirSendersAndFlagsHaveOneSignaller) {
  for (const char* algorithm : {"ring", "recursive_doubling", "double_binary_tree"}) {
    for (int lanes : {1, 3}) {
      const auto s = schedule(Collective::all_reduce, algorithm, 5, 0, 41, 8);
      World w(*s, DataType::int64, RedOp::sum, false, true, lanes);
      const DeviceProgram& d = w.program;
      std::vector<int> signals(d.flags(), 0);
      std::int64_t pulls = 0;
      for (int r = 0; r < d.ranks; ++r) {
        std::vector<bool> waited_for(d.ranks, false);
        for (const DevOp& o : d.rank_ops(r)) {
          if (o.kind == DevOpKind::wait) {
            ASSERT_NE(d.flag_rank[o.flag], r) << "a rank waits for its own event";
            waited_for[d.flag_rank[o.flag]] = true;
          }
          if (o.kind == DevOpKind::signal || o.kind == DevOpKind::barrier) {
            ASSERT_EQ(d.flag_rank[o.flag], r) << "rank " << r << " signals another's flag";
            ++signals[o.flag];
          }
          if ((o.kind == DevOpKind::copy || o.kind == DevOpKind::reduce) && o.src.rank != r) {
            ++pulls;
            EXPECT_TRUE(waited_for[o.src.rank])
                << algorithm << ": rank " << r << " pulls from " << o.src.rank << " unwaited";
          }
        }
      }
      for (int f = 0; f < d.flags(); ++f) EXPECT_EQ(signals[f], 1) << "flag " << f;
      EXPECT_EQ(pulls, d.pulls);
      // One pull per copy or direct reduce of the streams program that moves
      // bytes between two ranks.
      std::int64_t moved = 0;
      for (const StreamCmd& c : w.multirank.cmds) {
        if (c.kind == CmdKind::copy && c.peer != c.stream &&
            w.plans[c.stream].recvs[c.index].ref.bytes > 0)
          ++moved;
        if (c.kind == CmdKind::reduce_from && c.peer != c.stream &&
            w.plans[c.stream].locals[c.index].src.bytes > 0)
          ++moved;
      }
      EXPECT_EQ(pulls, moved) << algorithm;
      if (lanes == 1) {
        EXPECT_EQ(d.barriers, 0);
      }
    }
  }
}

// The memory traffic the program counts is the derivation of
// docs/results/gpu.md for ring all_reduce on one GPU: out of place 2n per rank
// for the first copy, 3b per reduce-scatter step (read both blocks, write
// one), 2b per all-gather step; n (2P + 5(P - 1)) over all ranks.
TEST(DeviceProgramTest, RingAllReduceTrafficIsTheDocumentedBound) {
  for (int p : {2, 4, 8}) {
    const std::int64_t n = 1 << 17;  // elements of 8 bytes: 1 MiB per rank
    const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 8);
    World w(*s, DataType::int64, RedOp::sum, false, true, 1);
    const std::int64_t bytes = n * 8;
    EXPECT_EQ(w.program.bytes_read + w.program.bytes_written, bytes * (2 * p + 5 * (p - 1)))
        << "p=" << p;
    World in_place(*s, DataType::int64, RedOp::sum, true, true, 1);
    EXPECT_EQ(in_place.program.bytes_read + in_place.program.bytes_written, bytes * 5 * (p - 1))
        << "p=" << p << " in place";
  }
}

// Ring all_reduce with every message LL: each rank pushes 2 (P - 1)
// messages and receives them with no wait, no signal and, at 16 lanes, no
// barrier in place (the block a rank reduces is the block it sends next,
// the same region, so the same lanes) and one out of place (after the first
// copy, whose slices are not lines). Traffic: a slot is S = 2b for a
// message of b (LL; LL128: 128 bytes per 120, 8 KiB -> 8,832), so a
// reduce-scatter step moves b (send: read) + S (slot written) + S (slot
// read) + b (own block read) + b (written) = 3b + 2S and an all-gather
// step 2b + 2S: (P - 1)(5b + 4S) per rank, 13 (P - 1) b for LL.
// Forwarded (the default), every send but a rank's first goes out of the
// receive that computed its block (2P - 3 per rank), which saves reading
// the block again: (11P - 10) b for LL.
TEST(DeviceProgramTest, LlRingNeedsNoHandshakes) {
  for (const LlProtocol protocol : {LlProtocol::ll, LlProtocol::ll128})
    for (int p : {2, 5, 8}) {
      const std::int64_t n = std::int64_t{1024} * p;  // elements of 8 bytes
      const std::int64_t b = n * 8 / p;
      const std::int64_t slot = protocol == LlProtocol::ll ? 2 * b : (b + 119) / 120 * 128;  // S
      ASSERT_EQ(slot, ll_slot_bytes(b, protocol));
      const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 8);
      for (bool in_place : {true, false}) {
        World w(*s, DataType::int64, RedOp::sum, in_place, true, 16, 1 << 30, protocol);
        const DeviceProgram& d = w.program;
        EXPECT_EQ(d.ll_protocol, protocol);
        EXPECT_EQ(d.ll_messages, 2 * p * (p - 1)) << "p=" << p;
        EXPECT_EQ(d.waits, 0) << "p=" << p;
        EXPECT_EQ(d.signals, 0) << "p=" << p;
        EXPECT_EQ(d.barriers, in_place ? 0 : p) << "p=" << p << (in_place ? " in place" : "");
        EXPECT_EQ(w.multirank.ll_messages, d.ll_messages);
        const std::int64_t copy = in_place ? 0 : 2 * n * 8;  // per rank
        EXPECT_EQ(d.ll_forwards, p * (2 * p - 3)) << "p=" << p;
        EXPECT_EQ(d.bytes_read + d.bytes_written,
                  p * (copy + (p - 1) * (5 * b + 4 * slot) - (2 * p - 3) * b))
            << "p=" << p << (in_place ? " in place" : "");
        if (protocol == LlProtocol::ll) {
          EXPECT_EQ(d.bytes_read + d.bytes_written, p * (copy + (11 * p - 10) * b));
        }
        const DeviceProgram unfolded =
            compile_device_program(w.ptrs, w.multirank, 16, false, protocol);
        EXPECT_EQ(unfolded.ll_forwards, 0);
        EXPECT_EQ(unfolded.ll_messages, d.ll_messages);
        EXPECT_EQ(unfolded.barriers, d.barriers);
        EXPECT_EQ(unfolded.bytes_read + unfolded.bytes_written,
                  p * (copy + (p - 1) * (5 * b + 4 * slot)))
            << "p=" << p << (in_place ? " in place" : "");
        for (int r = 0; r < p; ++r) {
          std::int64_t area = 0;
          for (const DevOp& o : d.ops) {
            if (o.kind == DevOpKind::ll_send && o.slot_rank == r)
              area += ll_slot_bytes(o.bytes, protocol);
            if (o.fwd_rank == r) area += ll_slot_bytes(o.bytes, protocol);
          }
          EXPECT_EQ(d.ll_bytes[r], area) << "rank " << r;
          EXPECT_EQ(d.ll_bytes[r], std::int64_t{2} * (p - 1) * slot) << "rank " << r;
        }
        // The bound program names the protocol's operations.
        std::vector<interp::Flag> flags(static_cast<std::size_t>(d.flags()));
        std::vector<interp::Flag*> addresses(flags.size());
        for (std::size_t f = 0; f < flags.size(); ++f) addresses[f] = &flags[f];
        const auto lines = static_cast<std::size_t>(d.ll_bytes[0] / 128 + 1);  // per rank
        std::vector<interp::Ll128Line> area(lines * static_cast<std::size_t>(p));
        std::vector<unsigned char*> ll(static_cast<std::size_t>(p));
        for (std::size_t r = 0; r < ll.size(); ++r)
          ll[r] = reinterpret_cast<unsigned char*>(area.data() + r * lines);
        const auto bound = bind_device_program(d, w.bases, addresses, ll);
        for (std::size_t i = 0; i < bound.size(); ++i) {
          const DevOpKind k = d.ops[i].kind;
          const int expect = k == DevOpKind::ll_send     ? interp::kLlSend
                             : k == DevOpKind::ll_copy   ? interp::kLlCopy
                             : k == DevOpKind::ll_reduce ? interp::kLlReduce
                                                         : -1;
          if (expect < 0) continue;
          EXPECT_EQ(bound[i].code, expect + (protocol == LlProtocol::ll128 ? 3 : 0));
        }
        // An LL128 area must hold its lines whole: 128-byte aligned.
        if (protocol == LlProtocol::ll128) {
          ll[1] += 16;
          EXPECT_THROW(bind_device_program(d, w.bases, addresses, ll), UsageError);
        }
      }
      // Messages over the limit stay as they were: the same program as
      // without LL.
      World simple(*s, DataType::int64, RedOp::sum, false, true, 16, b - 1);
      World none(*s, DataType::int64, RedOp::sum, false, true, 16);
      EXPECT_EQ(simple.program.ll_messages, 0);
      EXPECT_EQ(simple.program.ops.size(), none.program.ops.size());
      EXPECT_EQ(simple.program.waits, none.program.waits);
    }
}

// A line is ready only when both of its words carry the iteration's flag:
// a zeroed slot, a line of the previous iteration, or a line half written
// are not; the data comes back whole.
TEST(InterpreterTest, LlLineCarriesItsFlagInBothWords) {
  interp::LlLine line{};
  std::uint64_t data = 0;
  EXPECT_FALSE(interp::ll_load(&line, interp::ll_flag(0), data));
  EXPECT_NE(interp::ll_flag(0), 0u);
  EXPECT_NE(interp::ll_flag(0xFFFFFFFEull), 0u);  // never the zeroed value
  EXPECT_NE(interp::ll_flag(0), interp::ll_flag(1));
  interp::ll_store(&line, 0x0123456789ABCDEFull, interp::ll_flag(7));
  EXPECT_FALSE(interp::ll_load(&line, interp::ll_flag(8), data));
  ASSERT_TRUE(interp::ll_load(&line, interp::ll_flag(7), data));
  EXPECT_EQ(data, 0x0123456789ABCDEFull);
  // Iteration 8 has written the first word only.
  line.w[0] = (line.w[0] & 0xFFFFFFFFull) | (std::uint64_t{interp::ll_flag(8)} << 32);
  EXPECT_FALSE(interp::ll_load(&line, interp::ll_flag(8), data));
  EXPECT_FALSE(interp::ll_load(&line, interp::ll_flag(7), data));
}

// An LL128 line is ready only when its flag word carries the iteration's
// flag; its 15 data words are the message's bytes [120 L, 120 L + 120) in
// order (part 7 holds 8 data bytes and the flag), and a message's last line
// carries zeros past its end.
TEST(InterpreterTest, Ll128LineHoldsOneHundredTwentyBytesAndAFlag) {
  std::vector<unsigned char> msg(250);
  for (std::size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<unsigned char>(i * 7 + 3);
  std::vector<interp::Ll128Line> slot(3);
  interp::ExecOp send;
  send.code = interp::kLl128Send;
  send.src = msg.data();
  send.dst = reinterpret_cast<unsigned char*>(slot.data());
  send.bytes = static_cast<std::int64_t>(msg.size());
  interp::ll128_send_slice(send, interp::ll_flag(4), 0, 1, 0, 1);
  for (int line = 0; line < 3; ++line) {
    EXPECT_EQ(slot[line].w[15], interp::ll_flag(4)) << "line " << line;
    unsigned char data[120];
    std::memcpy(data, slot[line].w, 120);
    for (int i = 0; i < 120; ++i) {
      const std::size_t at = static_cast<std::size_t>(line) * 120 + i;
      EXPECT_EQ(data[i], at < msg.size() ? msg[at] : 0) << "line " << line << " byte " << i;
    }
  }
  std::uint64_t w[15];
  EXPECT_FALSE(interp::ll128_load_line(&slot[1], interp::ll_flag(5), w));
  ASSERT_TRUE(interp::ll128_load_line(&slot[1], interp::ll_flag(4), w));
  EXPECT_EQ(std::memcmp(w, msg.data() + 120, 120), 0);
  interp::Ll128Line zero{};
  EXPECT_FALSE(interp::ll128_load_line(&zero, interp::ll_flag(0), w));
}

// One lane per 32 KiB of the largest operation (a ring block of 256 KiB:
// 8), within [1, max_lanes].
TEST(DeviceProgramTest, LanesFollowTheLargestOperation) {
  const auto big = schedule(Collective::all_reduce, "ring", 4, 0, 1 << 17, 8);  // 1 MiB per rank
  World w(*big, DataType::int64, RedOp::sum, true, true, 1);  // in place: no input copy
  std::int64_t largest = 0;
  for (const DevOp& o : w.program.ops) largest = std::max(largest, o.bytes);
  EXPECT_EQ(largest, (1 << 20) / 4);  // a ring block
  EXPECT_EQ(choose_lanes(w.ptrs, 1000), largest / kLaneBytes);
  EXPECT_EQ(choose_lanes(w.ptrs, 3), 3);
  EXPECT_EQ(choose_lanes(w.ptrs, 0), 1);
  // LL messages: one lane per 8 KiB of the largest (256 KiB blocks: 32);
  // messages over the LL limit count as before.
  EXPECT_EQ(choose_lanes(w.ptrs, 1000, largest), largest / kLlLaneBytes);
  EXPECT_EQ(choose_lanes(w.ptrs, 1000, largest - 1), largest / kLaneBytes);
  EXPECT_EQ(choose_lanes(w.ptrs, 16, largest), 16);
  const auto small = schedule(Collective::all_reduce, "ring", 4, 0, 5, 8);
  World t(*small, DataType::int64, RedOp::sum, false, true, 1);
  EXPECT_EQ(choose_lanes(t.ptrs, 1000), 1);
  EXPECT_EQ(choose_lanes(t.ptrs, 1000, 1 << 30), 1);
}

// LL only where it is on (ll_bytes > 0) and the collective is small enough;
// LL128 lines above their size.
TEST(DeviceProgramTest, LlAndLl128FollowTheCollectiveSize) {
  const std::int64_t k = 1024, m = k * k;
  const auto is = [](LlChoice c, std::int64_t max_bytes, LlProtocol protocol) {
    return c.max_bytes == max_bytes && c.protocol == protocol;
  };
  EXPECT_TRUE(is(choose_ll(4 * k, 256 * k, m, 512 * k), 256 * k, LlProtocol::ll));
  EXPECT_TRUE(is(choose_ll(512 * k, 256 * k, m, 512 * k), 256 * k, LlProtocol::ll));
  EXPECT_TRUE(is(choose_ll(512 * k + 1, 256 * k, m, 512 * k), 256 * k, LlProtocol::ll128));
  EXPECT_TRUE(is(choose_ll(m, 256 * k, m, 512 * k), 256 * k, LlProtocol::ll128));
  EXPECT_EQ(choose_ll(m + 1, 256 * k, m, 512 * k).max_bytes, -1);
  EXPECT_EQ(choose_ll(4 * k, 0, m, 512 * k).max_bytes, -1);
  EXPECT_TRUE(is(choose_ll(0, 8, m, 0), 8, LlProtocol::ll));  // 0 is not above 0
  EXPECT_TRUE(is(choose_ll(1, 8, m, 0), 8, LlProtocol::ll128));
  EXPECT_TRUE(is(choose_ll(m, 8, m, m), 8, LlProtocol::ll));
  // The defaults: LL128 only between them.
  EXPECT_LT(kInterpreterLl128Above, kInterpreterLlSize);
}

TEST(DeviceProgramTest, BadLanesAndBindingsAreUsageErrors) {
  const auto s = schedule(Collective::all_reduce, "ring", 3, 0, 7, 8);
  World w(*s, DataType::int64, RedOp::sum, false, false, 1);
  EXPECT_THROW(compile_device_program(w.ptrs, w.multirank, 0), UsageError);
  std::vector<interp::Flag*> too_few;
  EXPECT_THROW(bind_device_program(w.program, w.bases, too_few), UsageError);
}

// ---- every collective x algorithm -------------------------------------------

class InterpreterScheduleTest : public ::testing::TestWithParam<Case> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(InterpreterScheduleTest);

// For every p = 2..8 two runs, whose root, count (0, 1, p - 1, p + 1, a few
// hundred), placement, lanes (1..3), receive mode (pull into temp, or
// reduce straight from the sender) and protocol (every message LL, none,
// those of at most 40 bytes: both kinds in one program; every message
// LL128, or those of at most 200 bytes) rotate with the case and p, so that
// every case meets most of them and the suite stays fast.
TEST_P(InterpreterScheduleTest, ComputesTheCollective) {
  const Case& tc = GetParam();
  const Collective c = tc.collective;
  std::uint64_t k = std::hash<std::string>{}(name_of(tc)) % 997;
  for (int p = 2; p <= 8; ++p) {
    const std::vector<std::int64_t> counts{0, 1, p - 1, p + 1, 300 + p};
    const std::vector<int> roots =
        is_rooted(c) ? std::vector<int>{p - 1, 0, p / 2} : std::vector<int>{0};
    for (int run = 0; run < 2; ++run, ++k) {
      const std::int64_t n = c == Collective::barrier ? 0 : counts[(k + 2 * run) % counts.size()];
      const int root = roots[(k + run) % roots.size()];
      const int lanes = 1 + static_cast<int>((k + run) % 3);
      const bool direct = (k + run) % 2 == 0;
      const int kind = static_cast<int>((k / 2 + run) % 5);
      const std::int64_t ll = std::vector<std::int64_t>{-1, 1 << 30, 40, 1 << 30, 200}[kind];
      const LlProtocol protocol = kind >= 3 ? LlProtocol::ll128 : LlProtocol::ll;
      const RedOp op = is_reduction(c) ? (k % 2 ? RedOp::max : RedOp::sum) : RedOp::sum;
      const auto s = schedule(c, tc.algorithm, p, root, n, 8);
      bool in_place = run == 1;
      for (int r = 0; r < p && in_place; ++r)
        in_place = in_place_hazard(*s, r, in_place_layout(c, p, r, root, n)).empty();
      std::vector<Values> in;
      for (int r = 0; r < p; ++r) in.push_back(naive_input(c, p, r, root, n));
      World w(*s, DataType::int64, op, in_place, direct, lanes, ll, protocol);
      ASSERT_EQ(w.program.unsupported, "");
      load_inputs(w, in, in_place);
      HostInterpreterOptions o;
      o.seed = k * 7919 + p;
      w.run(o);
      const auto out = outputs(w);
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(out[r], naive_output(c, op, p, r, root, n, in))
            << to_string(c) << " " << tc.algorithm << " p=" << p << " root=" << root << " n=" << n
            << " lanes=" << lanes << (direct ? " direct" : "") << (in_place ? " in place" : "")
            << " ll=" << ll << " " << to_string(protocol) << " rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, InterpreterScheduleTest, ::testing::ValuesIn(registered_cases()),
                         [](const auto& info) { return name_of(info.param); });

// Every type and op through the bench's check data (expected values from
// the host's reduce_into, independent of the interpreter's element code),
// bit for bit; the reducing collectives' algorithms, p and lanes rotate.
// Two iterations in a row on the same flags (the second waits for counts
// of the second iteration) with fresh inputs each.
TEST(InterpreterTest, EveryTypeAndOpMatchesTheCheckData) {
  const Collective collectives[] = {Collective::all_reduce, Collective::reduce_scatter,
                                    Collective::reduce};
  int i = 0;
  for (DataType t : kAllDataTypes) {
    for (RedOp op : kAllRedOps) {
      const Collective c = collectives[i % 3];
      const std::vector<std::string> algorithms = expand_algorithms(c, "all", false);
      const std::string& algorithm = algorithms[(i / 3) % algorithms.size()];
      const int p = 2 + i % 7;
      const int lanes = 1 + i % 3;
      const std::int64_t n = i % 2 ? 3 * p + 1 : 97 + 16 * p;
      const int root = p - 1;
      ++i;
      const auto s = schedule(c, algorithm, p, root, n, size_of(t));
      // LL or LL128 on every other pair of cases: odd byte counts (int8,
      // half) end messages within a line.
      const std::int64_t ll = (i / 2) % 2 == 0 ? std::int64_t{1} << 30 : -1;
      const LlProtocol protocol = (i / 4) % 2 == 0 ? LlProtocol::ll : LlProtocol::ll128;
      World w(*s, t, op, false, i % 2 == 0, lanes, ll, protocol);
      for (std::int64_t iter : {3, 4}) {
        for (int r = 0; r < p; ++r) {
          fill_check_input(c, t, op, p, r, iter,
                           {w.ranks[r]->input(), static_cast<std::size_t>(w.plans[r].input_bytes)});
          poison({w.ranks[r]->output(), static_cast<std::size_t>(w.plans[r].output_bytes)});
        }
        HostInterpreterOptions o;
        o.seed = static_cast<std::uint64_t>(i) * 31 + iter;
        w.run(o);
        for (int r = 0; r < p; ++r) {
          std::vector<std::byte> expected(static_cast<std::size_t>(w.plans[r].output_bytes));
          expected_output(c, t, op, p, r, root, n, iter, expected);
          const std::span<const std::byte> got{w.ranks[r]->output(), expected.size()};
          EXPECT_EQ(count_wrong(t, got, expected), 0)
              << to_string(c) << " " << algorithm << " p=" << p << " lanes=" << lanes << " "
              << to_string(t) << " " << to_string(op) << " ll=" << ll << " " << to_string(protocol)
              << " iteration " << iter << " rank " << r;
        }
      }
      EXPECT_EQ(w.engine->iterations(), 2u);
    }
  }
}

// ---- mutations --------------------------------------------------------------

// Ring all_reduce, 4 ranks: drop each wait of rank 1 in turn and slow down
// the rank it waited for. Without the wait rank 1 reads a block before its
// sender has reduced it, or overwrites a block its receiver has not pulled
// yet: most drops must be caught as a wrong result (or a stop). The same
// runs with every wait in place are right.
TEST(InterpreterMutationTest, DroppingAWaitIsCaught) {
  const int p = 4;
  const std::int64_t n = 256;
  const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 8);
  std::vector<Values> in;
  for (int r = 0; r < p; ++r) in.push_back(naive_input(Collective::all_reduce, p, r, 0, n));
  const auto right = [&](const World& w) {
    const auto out = outputs(w);
    for (int r = 0; r < p; ++r)
      if (out[r] != naive_output(Collective::all_reduce, RedOp::sum, p, r, 0, n, in)) return false;
    return true;
  };
  World base(*s, DataType::int64, RedOp::sum, false, true, 1);
  std::vector<std::uint32_t> waits;
  for (std::uint32_t i = 0; i < base.program.rank_ops(1).size(); ++i)
    if (base.program.rank_ops(1)[i].kind == DevOpKind::wait) waits.push_back(i);
  ASSERT_GE(waits.size(), 6u);
  int caught = 0;
  for (std::uint32_t i : waits) {
    const int slow = base.program.flag_rank[base.program.rank_ops(1)[i].flag];
    HostInterpreterOptions o;
    o.seed = i;
    o.slow_rank = slow;
    o.slow_us = 300;
    o.spin_limit_ms = 2000;
    {
      World control(*s, DataType::int64, RedOp::sum, false, true, 1);
      load_inputs(control, in, false);
      control.run(o);
      ASSERT_TRUE(right(control)) << "the unchanged program is wrong (wait " << i << ")";
    }
    World w(*s, DataType::int64, RedOp::sum, false, true, 1);
    drop_op(w.program, 1, i);
    load_inputs(w, in, false);
    bool wrong = false;
    try {
      w.run(o);
      wrong = !right(w);
    } catch (const RuntimeFailure&) {
      wrong = true;
    }
    caught += wrong ? 1 : 0;
  }
  // Not every single wait is needed for this input (the first step sends
  // the input, which nobody writes; a later wait can cover an earlier one),
  // but some must be.
  EXPECT_GT(caught, 0) << "none of " << waits.size() << " dropped waits was caught";
  // Every wait of rank 1 for its sender (rank 0) dropped at once: caught.
  World w(*s, DataType::int64, RedOp::sum, false, true, 1);
  for (std::uint32_t i = static_cast<std::uint32_t>(w.program.rank_ops(1).size()); i-- > 0;) {
    const DevOp& o = w.program.rank_ops(1)[i];
    if (o.kind == DevOpKind::wait && w.program.flag_rank[o.flag] == 0) drop_op(w.program, 1, i);
  }
  // A race, so a loaded machine could hide it once; it may take a few runs.
  bool caught_all = false;
  for (int attempt = 0; attempt < 5 && !caught_all; ++attempt) {
    load_inputs(w, in, false);
    HostInterpreterOptions o;
    o.seed = 100 + attempt;
    o.slow_rank = 0;
    o.slow_us = 1000;
    w.run(o);
    caught_all = !right(w);
  }
  EXPECT_TRUE(caught_all) << "rank 1 never waited for rank 0, and nobody noticed";
}

// Ring all_gather on 3 ranks and 2 lanes (ll: compile_multirank's
// ll_max_bytes) without rank 2's first operation of `kind`: the bounded
// spin stops the whole program with an error whose text holds every one of
// `expected`, well within the time a hang would take. After the error the
// engine starts over from iteration 0, and the unchanged program runs with
// the same options.
void expect_stop_without(DevOpKind kind, std::int64_t ll, const std::vector<std::string>& expected,
                         LlProtocol protocol = LlProtocol::ll) {
  const int p = 3;
  const bool direct = ll >= 0;
  const auto s = schedule(Collective::all_gather, "ring", p, 0, 30, 8);
  World w(*s, DataType::int64, RedOp::sum, false, direct, 2, ll, protocol);
  std::uint32_t i = 0;
  while (w.program.rank_ops(2)[i].kind != kind) ++i;
  drop_op(w.program, 2, i);
  HostInterpreterOptions o;
  o.spin_limit_ms = 200;
  const auto start = std::chrono::steady_clock::now();
  try {
    w.run(o);
    FAIL() << "no error";
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    for (const std::string& part : expected) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(w.engine->iterations(), 0u);
  World good(*s, DataType::int64, RedOp::sum, false, direct, 2, ll, protocol);
  EXPECT_NO_THROW(good.run(o));
}

// Without a signal its waiter can never go on. The first waiter to give up
// names itself and its flag: usually the one whose signal was dropped (rank
// 2's), or a rank stuck behind it.
TEST(InterpreterMutationTest, DroppingASignalStopsWithAnError) {
  expect_stop_without(DevOpKind::signal, -1,
                      {"waited longer than 200 ms", ", signalled by rank ", "deadlock"});
}

// Without one LL send its receiver polls lines that never get the flag; the
// error names the LL operation it stopped at.
TEST(InterpreterMutationTest, DroppingAnLlSendStopsWithAnError) {
  expect_stop_without(DevOpKind::ll_send, 1 << 30, {"waited longer than 200 ms", "(ll_"});
  expect_stop_without(DevOpKind::ll_send, 1 << 30, {"waited longer than 200 ms", "(ll_"},
                      LlProtocol::ll128);
}

// LL receives wait line by line: with the sender of every message slowed
// down, ring all_reduce with every message LL is right on every iteration,
// and the iterations' flags keep a slot of the previous one from being
// taken for this one (the second run's inputs differ).
TEST(InterpreterTest, LlReceivesWaitForSlowSenders) {
  const int p = 4;
  const std::int64_t n = 203;
  const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 8);
  for (const LlProtocol protocol : {LlProtocol::ll, LlProtocol::ll128}) {
    World w(*s, DataType::int64, RedOp::sum, false, true, 3, 1 << 30, protocol);
    ASSERT_EQ(w.program.waits, 0);
    for (int iter = 0; iter < 3; ++iter) {
      std::vector<Values> in;
      for (int r = 0; r < p; ++r) {
        in.push_back(naive_input(Collective::all_reduce, p, r, 0, n));
        for (auto& v : in.back()) v += std::int64_t{1000} * iter;
      }
      load_inputs(w, in, false);
      HostInterpreterOptions o;
      o.seed = 5 + iter;
      o.slow_rank = iter % p;
      o.slow_us = 500;
      w.run(o);
      const auto out = outputs(w);
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(out[r], naive_output(Collective::all_reduce, RedOp::sum, p, r, 0, n, in))
            << to_string(protocol) << " iteration " << iter << " rank " << r;
    }
  }
}

using testing_oracle::ListSchedule;

// Two lanes: a copy into scratch, then a copy of a shifted part of it. The
// two operations' slices differ, so lane 0 of the second reads bytes lane 1
// of the first writes: the compiler puts a barrier between them. Without
// it, and with lane 1 slow, lane 0 copies stale bytes.
TEST(InterpreterMutationTest, DroppingABarrierBetweenLanesIsCaught) {
  const std::int64_t n = 64, shift = 16;
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "hand";
  spec.ranks = 1;
  spec.count = n;
  spec.elem_size = 8;
  std::vector<std::vector<Step>> steps(1);
  steps[0].push_back(Step{{copy_op({Buf::input, 0, n}, {Buf::scratch, 0, n})}});
  steps[0].push_back(Step{{copy_op({Buf::scratch, shift, n - shift}, {Buf::output, 0, n - shift}),
                           copy_op({Buf::input, 0, shift}, {Buf::output, n - shift, shift})}});
  ListSchedule s(spec, steps, n);
  Values in(n);
  for (std::int64_t j = 0; j < n; ++j) in[j] = 1000 + j;
  Values want(n);
  for (std::int64_t j = 0; j < n; ++j)
    want[j] = j < n - shift ? in[j + shift] : in[j - (n - shift)];
  HostInterpreterOptions o;
  o.slow_rank = 0;
  o.slow_lane = 1;
  o.slow_us = 10000;
  {
    World w(s, DataType::int64, RedOp::sum, false, false, 2);
    ASSERT_EQ(w.program.barriers, 1);
    load_inputs(w, {in}, false);
    w.run(o);
    EXPECT_EQ(outputs(w)[0], want);
  }
  World w(s, DataType::int64, RedOp::sum, false, false, 2);
  std::uint32_t barrier = 0;
  while (w.program.rank_ops(0)[barrier].kind != DevOpKind::barrier) ++barrier;
  drop_op(w.program, 0, barrier);
  // A race: lane 1 sleeps 10 ms before each operation, so lane 0 almost
  // always reads first; a loaded machine may need another run.
  bool caught = false;
  for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
    load_inputs(w, {in}, false);
    w.run(o);
    caught = outputs(w)[0] != want;
  }
  EXPECT_TRUE(caught) << "lane 0 was not caught reading what lane 1 had not written";
  // With one lane the same program needs no barrier.
  World one(s, DataType::int64, RedOp::sum, false, false, 1);
  EXPECT_EQ(one.program.barriers, 0);
}

}  // namespace
}  // namespace collkit::realrun
