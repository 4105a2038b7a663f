// Export -> import of every built-in algorithm: for p = 1..9, 12, 16, 24, 33,
// every root class, a count that divides into p blocks and one that does not,
// the exported XML reads back, imports into exactly the original steps (so
// the simulator gives the same time, checked on the switch topology too),
// the reference executor proves the import at the exported count and at
// twice it (the file scales with its chunks), and every schedule that cannot
// be written fails with the reason the documentation gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"
#include "interop/msccl_export.h"
#include "interop/msccl_import.h"
#include "interop/msccl_xml.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit::msccl {
namespace {

constexpr int kRanks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 33};

struct Outcome {
  int exported = 0;
  std::map<std::string, int> reasons;  // why not, with how often
};

// Two programs that run the same: a step's sends and receives are posted
// together (only the order among ops to or from one peer matters); its local
// ops run after them, so what counts is the sequence of communication steps
// with the local ops between them (the importer joins local ops to the step
// before when the IR allows); an empty region's buffer and offset mean
// nothing.
std::vector<Step> canonical(const std::vector<Step>& in) {
  std::vector<Step> out;
  const auto local = [](const Op& op) {
    return op.kind == OpKind::copy || op.kind == OpKind::reduce;
  };
  for (Step st : in) {
    Step comm, locals;
    for (Op& op : st.ops) {
      // Timing hints MSCCL's XML cannot carry (docs/MSCCL.md): dropped by
      // the export; the data movement is the same.
      op.lanes = 1;
      op.fan_in = op.fan_out = 0;
      if (local(op)) op.peer = -1;  // the sender of a switch-summed reduce's data
      if (op.src.count == 0) op.src = {};
      if (op.dst.count == 0) op.dst = {};
      if (local(op) && op.src.count == 0) continue;  // moves nothing, costs nothing
      (local(op) ? locals : comm).ops.push_back(op);
    }
    std::stable_sort(comm.ops.begin(), comm.ops.end(), [](const Op& x, const Op& y) {
      return std::tie(x.kind, x.peer) < std::tie(y.kind, y.peer);
    });
    if (!comm.ops.empty()) out.push_back(std::move(comm));
    if (locals.ops.empty()) continue;
    if (!out.empty() && !out.back().has_communication()) {
      out.back().ops.insert(out.back().ops.end(), locals.ops.begin(), locals.ops.end());
    } else {
      out.push_back(std::move(locals));
    }
  }
  return out;
}

std::string reason_of(const std::string& what) {
  for (const char* r :
       {"MSCCL has no barrier collective", "uneven blocks", "MSCCL_MAX_NUM_STEPS",
        "cnt must be below", "NCCL has 32", "a step can depend on blocks 0..127", "int16"})
    if (what.find(r) != std::string::npos) return r;
  return "unexpected: " + what;
}

TEST(MscclRoundTrip, EveryBuiltInAlgorithm) {
  const auto topology =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/switch-16.json");
  const auto large =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/fat-tree-k8.json");
  Outcome total;
  std::vector<std::string> failures;
  for (const AlgorithmDef& d : algorithm_registry()) {
    for (const std::string& variant : buildable_variants(d)) {
      for (int p : kRanks) {
        std::vector<int> roots{0};
        if (is_rooted(d.collective) && p > 1) roots.push_back(p - 1);
        for (int root : roots) {
          for (std::int64_t count : {std::int64_t{4} * p, std::int64_t{4} * p + 1}) {
            ScheduleSpec spec;
            spec.collective = d.collective;
            spec.algorithm = d.name;
            spec.variant = variant;
            spec.ranks = p;
            spec.root = root;
            spec.count = d.collective == Collective::barrier ? 0 : count;
            const std::string label = std::string(to_string(d.collective)) + "/" + d.name +
                                      (variant.empty() ? "" : ":" + variant) +
                                      " p=" + std::to_string(p) + " root=" + std::to_string(root) +
                                      " n=" + std::to_string(spec.count);
            const auto original = make_schedule(spec);
            Algo algo;
            try {
              algo = export_algo(*original);
            } catch (const UsageError& e) {
              const std::string why = reason_of(e.what());
              ++total.reasons[why];
              if (why.rfind("unexpected", 0) == 0 ||
                  (p <= 9 && count % p == 0 && d.collective != Collective::barrier))
                failures.push_back(label + ": " + e.what());
              continue;
            }
            ++total.exported;
            try {
              auto read = std::make_shared<const Algo>(parse_algo(write_algo(algo), "rt.xml"));
              ScheduleSpec back = spec;
              back.algorithm = "msccl:rt.xml";
              back.variant.clear();
              const auto imported = import_schedule(read, back);
              for (int r = 0; r < p; ++r) {
                const std::vector<Step> a = canonical(original->steps(r));
                const std::vector<Step> b = canonical(imported->steps(r));
                bool same = a.size() == b.size();
                for (std::size_t k = 0; same && k < a.size(); ++k) same = a[k].ops == b[k].ops;
                if (!same) {
                  failures.push_back(label + ": rank " + std::to_string(r) +
                                     "'s imported steps differ from the original");
                  break;
                }
              }
              verify_numeric(*imported, DType::int32, ReduceOp::sum, 9);
              verify_symbolic(*imported);
              {
                const Topology& topo = p <= 16 ? *topology : *large;
                const double t0 = simulate(*original, topo).time;
                const double t1 = simulate(*imported, topo).time;
                if (t0 != t1)
                  failures.push_back(label + ": simulated " + std::to_string(t1) +
                                     " s after the round trip, " + std::to_string(t0) +
                                     " s before");
              }
              back.count = 2 * spec.count;
              verify_numeric(*import_schedule(read, back), DType::int32, ReduceOp::max, 4);
            } catch (const Error& e) {
              failures.push_back(label + ": " + e.what());
            }
          }
        }
      }
    }
  }
  std::string summary = std::to_string(total.exported) + " schedules round-tripped;";
  for (const auto& [why, n] : total.reasons)
    summary += " " + std::to_string(n) + " x '" + why + "';";
  std::printf("[ msccl    ] %s\n", summary.c_str());
  EXPECT_GT(total.exported, 800);
  for (std::size_t i = 0; i < failures.size() && i < 30; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures";
}

TEST(MscclRoundTrip, ExportNamesWhyNot) {
  ScheduleSpec spec;
  spec.collective = Collective::all_gather;
  spec.algorithm = "ring";
  spec.ranks = 3;
  spec.count = 10;
  try {
    export_algo(*make_schedule(spec));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "all_gather/ring p=3 count=10 cannot be written as MSCCL XML: count 10 splits into "
              "uneven blocks over 3 ranks, and MSCCL's allgather gives every rank the same count "
              "(use a multiple of 3)");
  }
  spec.collective = Collective::all_reduce;
  spec.ranks = 64;
  spec.count = 64;
  try {
    export_algo(*make_schedule(spec));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 126 steps; the runtime runs at most 64 per thread "
                                         "block (MSCCL_MAX_NUM_STEPS)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace collkit::msccl
