// The orbit reduction (docs/SIMULATOR.md, "Orbits"): where a turn of the
// ranks is proven, the run simulates one rank per orbit and must take the
// full run's time (to rounding), every rank's finishing time and the same
// count of transfers and bytes; where it is not proven, the plain run is
// taken and the note says why. The full run is the same engine with
// SimOptions::orbits off, which the rest of the simulator's tests check
// against closed forms and hand-worked cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/json.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "topologies/graph_topology.h"
#include "topologies/topology.h"
#include "topologies/topology_view.h"

namespace collkit {
namespace {

struct Pair {
  SimResult full;
  SimResult reduced;
};

Pair run_both(const Topology& topo, Collective c, std::optional<NcclVariant> variant,
              std::int64_t bytes, NetModel model = NetModel::flow) {
  const NcclContext ctx = nccl_context(topo, topo.num_ranks());
  ScheduleSpec base;
  base.collective = c;
  base.algorithm = "nccl";
  base.ranks = topo.num_ranks();
  base.elem_size = 4;
  base.count = c == Collective::all_reduce ? bytes / 4 : bytes / 4 / topo.num_ranks();
  const NcclChoice choice =
      nccl_runnable_choice(ctx, c, bytes, DataType::float32, RedOp::sum, variant);
  const auto schedule = make_schedule(nccl_schedule_spec(base, ctx, choice, topo));
  SimOptions on;
  on.model = model;
  on.rank_times = true;
  SimOptions off = on;
  off.orbits = false;
  return {simulate(*schedule, topo, off), simulate(*schedule, topo, on)};
}

std::string source(const std::string& file) {
  return std::string(COLLKIT_SOURCE_DIR) + "/topologies/" + file;
}
std::string cluster(int nodes) {
  return source("h100-cluster-2x8.json@" + std::to_string(nodes) + "x8");
}

void expect_same(const Pair& r) {
  ASSERT_GT(r.full.time, 0);
  EXPECT_EQ(r.full.orbit, 1);
  EXPECT_EQ(r.full.orbit_note, "none: off (--no-orbits)");
  EXPECT_LE(std::abs(r.reduced.time / r.full.time - 1), 1e-12)
      << "reduced " << r.reduced.time << " full " << r.full.time << " (" << r.reduced.orbit_note
      << ")";
  EXPECT_EQ(r.reduced.messages, r.full.messages);
  EXPECT_DOUBLE_EQ(r.reduced.bytes, r.full.bytes);
  ASSERT_EQ(r.reduced.rank_times.size(), r.full.rank_times.size());
  for (std::size_t i = 0; i < r.full.rank_times.size(); ++i)
    EXPECT_LE(std::abs(r.reduced.rank_times[i] - r.full.rank_times[i]), 1e-12 * r.full.time)
        << "rank " << i;
  if (r.reduced.orbit > 1) {
    // One rank per orbit ran: fewer events.
    EXPECT_LT(r.reduced.events, r.full.events);
  } else {
    EXPECT_EQ(r.reduced.orbit_note.rfind("none: ", 0), 0u) << r.reduced.orbit_note;
    EXPECT_EQ(r.reduced.time, r.full.time);
  }
}

using Variant = std::optional<NcclVariant>;

// NCCL's choices and each variant, on one node and on 2 to 16 nodes, at a
// size where the pipeline is long (256 MiB) and one where latency counts
// (1 MiB): every run equal to the full one, and the reduction taken where
// the schedule commutes with the rail turn.
TEST(Orbits, ReducedRunTakesTheFullRunsTimes) {
  int applied = 0, runs = 0;
  for (int nodes : {1, 2, 3, 4, 8, 16}) {
    const auto topo = load_topology(cluster(nodes));
    ASSERT_NE(topo->turn(TurnKind::local), nullptr);
    EXPECT_EQ(topo->turn(TurnKind::node) != nullptr, nodes > 1);
    for (Collective c :
         {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
      for (Variant v : {Variant{}, Variant{NcclVariant::ring}, Variant{NcclVariant::tree},
                        Variant{NcclVariant::nvls}, Variant{NcclVariant::nvls_tree}}) {
        if (v && !nccl_has_schedule(c, *v)) continue;
        for (std::int64_t bytes : {std::int64_t{1} << 20, std::int64_t{256} << 20}) {
          if (v == NcclVariant::nvls && nodes > 1) continue;  // NVLS is one node's
          if (v == NcclVariant::nvls_tree && nodes == 1) continue;
          if (v == NcclVariant::tree && nodes == 1) continue;
          SCOPED_TRACE(std::to_string(nodes) + " nodes, " + std::string(to_string(c)) + " " +
                       (v ? std::string(to_string(*v)) : std::string("NCCL's choice")) + ", " +
                       std::to_string(bytes) + " B");
          const Pair r = run_both(*topo, c, v, bytes);
          expect_same(r);
          ++runs;
          if (r.reduced.orbit > 1) {
            ++applied;
            // The turn of the largest orbits that holds: the rail turn (8
            // ranks), the node turn (`nodes`) or the node turn two nodes at
            // a time (nodes / 2, NCCL's rings).
            const std::string kind = r.reduced.orbit_note.substr(0, r.reduced.orbit_note.find(','));
            if (kind == "rail turn") {
              EXPECT_EQ(r.reduced.orbit, 8);
            } else if (kind == "node turn") {
              EXPECT_EQ(r.reduced.orbit, nodes);
            } else {
              EXPECT_EQ(kind, "node turn by 2");
              EXPECT_EQ(r.reduced.orbit, nodes / 2);
            }
            EXPECT_EQ(r.reduced.orbit_note,
                      kind + ", " + std::to_string(r.reduced.orbit) + " ranks per orbit, " +
                          std::to_string(8 * nodes / r.reduced.orbit) + " simulated");
          }
          // The cases the reduction is for: NVLSTree all_reduce across
          // nodes, NVLS in one, the ring's all_gather and reduce_scatter
          // (NCCL's choice for 256 MiB on these clusters).
          const bool big = bytes == (std::int64_t{256} << 20);
          if ((v == NcclVariant::nvls_tree && big) || v == NcclVariant::nvls ||
              (v == NcclVariant::ring && c != Collective::all_reduce && big && nodes != 3)) {
            EXPECT_GE(r.reduced.orbit, 8) << r.reduced.orbit_note;
          }
          // The rings on 16 nodes: every second node's ring order repeats.
          if (v == NcclVariant::ring && c != Collective::all_reduce && nodes == 16) {
            EXPECT_EQ(r.reduced.orbit_note, "node turn by 2, 8 ranks per orbit, 16 simulated");
          }
          // NCCL's trees across nodes differ by channel: no rank's program
          // is its neighbour's turned.
          if (v == NcclVariant::tree) {
            EXPECT_EQ(r.reduced.orbit, 1);
          }
        }
      }
    }
  }
  EXPECT_GE(applied, runs / 2);
}

TEST(Orbits, AlphaBetaModelToo) {
  const auto topo = load_topology(cluster(4));
  const Pair r = run_both(*topo, Collective::all_reduce, NcclVariant::nvls_tree, 256 << 20,
                          NetModel::alpha_beta);
  EXPECT_EQ(r.reduced.orbit, 8);
  expect_same(r);
}

// A cluster whose 8 GPUs share 2 NICs (GPU j on NIC j / 4): turning GPU j
// to j + 1 does not map the network onto itself (GPU 3 and 4 are on
// different NICs), so no rail turn is offered and the run is the plain one.
TEST(Orbits, AsymmetricClusterHasNoRailTurn) {
  std::ifstream in(source("h100-cluster-2x8.json"));
  Json j = Json::parse(in);
  j["generator"]["nics_per_node"] = 2;
  j["device"] = source("../devices/h100-sxm5-80gb.json");
  const std::filesystem::path dir = "/tmp/collkit_sim_orbits";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "two-nics.json").string();
  std::ofstream(file) << j.dump(2);
  const auto topo = load_topology(file);
  EXPECT_EQ(topo->turn(TurnKind::local), nullptr);
  for (Collective c : {Collective::all_reduce, Collective::all_gather}) {
    const Pair r = run_both(*topo, c, std::nullopt, 256 << 20);
    expect_same(r);
    EXPECT_EQ(r.reduced.orbit, 1);
  }
}

// A degraded link (NIC 3 of node 1 at half its rate), seen through a view
// as calibration's trial networks are: views offer no turn, the plain run.
class Degraded final : public TopologyView {
 public:
  Degraded(const GraphTopology& base, LinkId slow) : TopologyView(base), slow_(slow) {}
  LinkProps link(LinkId id) const override {
    LinkProps l = TopologyView::link(id);
    if (id == slow_) l.bandwidth /= 2;
    return l;
  }

 private:
  LinkId slow_;
};

TEST(Orbits, DegradedLinkTakesThePlainRun) {
  const auto topo = load_topology(cluster(2));
  const auto& graph = dynamic_cast<const GraphTopology&>(*topo);
  std::vector<LinkId> route;
  graph.route(11, 3, route);  // node 1 GPU 3 to node 0 GPU 3: over rail 3
  ASSERT_GE(route.size(), 3u);
  const Degraded slow(graph, route[1]);
  EXPECT_EQ(slow.turn(TurnKind::local), nullptr);
  const Pair r = run_both(slow, Collective::all_reduce, NcclVariant::nvls_tree, 256 << 20);
  expect_same(r);
  EXPECT_EQ(r.reduced.orbit_note, "none: the topology offers no proven turn of its ranks");
  // The degraded link slows the call: the view is what ran.
  const Pair fast = run_both(*topo, Collective::all_reduce, NcclVariant::nvls_tree, 256 << 20);
  EXPECT_GT(r.full.time, fast.full.time * 1.01);
}

// A claimed turn is checked, not trusted: the same two-node graph with a
// link of another class is refused.
std::unique_ptr<GraphTopology> two_nodes(double odd_bandwidth) {
  auto owned = std::make_unique<GraphTopology>();
  GraphTopology& g = *owned;
  int gpu[2][2];
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 2; ++j) gpu[n][j] = g.add_node("g", false);
  const int sw[2] = {g.add_node("sw0", true), g.add_node("sw1", true)};
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 2; ++j)
      g.add_cable(gpu[n][j], sw[n], LinkProps{n == 1 && j == 1 ? odd_bandwidth : 100e9, 1e-6});
  const int rail[2] = {g.add_node("rail0", true), g.add_node("rail1", true)};
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 2; ++j) g.add_cable(gpu[n][j], rail[j], LinkProps{50e9, 2e-6});
  std::vector<int> sigma(8);
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 2; ++j) sigma[gpu[n][j]] = gpu[n][1 - j];
  sigma[sw[0]] = sw[0];
  sigma[sw[1]] = sw[1];
  sigma[rail[0]] = rail[1];
  sigma[rail[1]] = rail[0];
  g.set_turn(TurnKind::local, sigma, 2, 2);
  g.finalize();
  return owned;
}

TEST(Orbits, ClaimedTurnIsChecked) {
  const auto owned = two_nodes(100e9);
  const GraphTopology& same = *owned;
  const RankTurn* t = same.turn(TurnKind::local);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->order(), 2);
  // Every link's image joins the images of its ends: cycles of 2 (GPU
  // links) or 1 (none here: every link moves).
  for (LinkId l = 0; l < same.num_links(); ++l) {
    const LinkId m = t->apply_link(l, 1);
    EXPECT_NE(m, l);
    EXPECT_EQ(t->apply_link(m, 1), l);
    EXPECT_EQ(same.link_class(m), same.link_class(l));
  }
  EXPECT_EQ(two_nodes(50e9)->turn(TurnKind::local), nullptr);
}

// Explicit files (no generator) offer no turn.
TEST(Orbits, ExplicitFileTakesThePlainRun) {
  const auto topo = load_topology(source("dumbbell.json"));
  EXPECT_EQ(topo->turn(TurnKind::local), nullptr);
  EXPECT_EQ(topo->turn(TurnKind::node), nullptr);
}

}  // namespace
}  // namespace collkit

namespace collkit {
namespace {

// Four endpoints on a ring of cables, claimed symmetric under r -> r + 1
// (which it is). Between opposite ranks there are two equal-cost paths and
// the tie-break takes the destination's index: 0 -> 2 goes by 1, but 2 ->
// 0 also goes by 1, not by 3 as 0 -> 2 turned twice would. A schedule with
// such pairs must take the plain run (the route check refuses); one with
// neighbours only is reduced.
std::unique_ptr<GraphTopology> ring_of_four() {
  auto g = std::make_unique<GraphTopology>();
  for (int r = 0; r < 4; ++r) g->add_node("r" + std::to_string(r), false);
  for (int r = 0; r < 4; ++r) g->add_cable(r, (r + 1) % 4, LinkProps{50e9, 1e-6});
  g->set_turn(TurnKind::local, {1, 2, 3, 0}, 1, 4);
  g->finalize();
  return g;
}

SimResult run_on(const Topology& topo, Collective c, const std::string& algorithm, bool orbits) {
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = algorithm;
  spec.ranks = 4;
  spec.elem_size = 4;
  spec.count = 4096;
  SimOptions options;
  options.orbits = orbits;
  return simulate(*make_schedule(spec), topo, options);
}

TEST(Orbits, RoutesThatDoNotTurnTakeThePlainRun) {
  const auto topo = ring_of_four();
  ASSERT_NE(topo->turn(TurnKind::local), nullptr);
  std::vector<LinkId> there, back;
  topo->route(0, 2, there);
  topo->route(2, 0, back);
  ASSERT_EQ(there.size(), 2u);
  ASSERT_EQ(back.size(), 2u);
  // Both routes pass rank 1: 2 -> 0 is not 0 -> 2 turned twice.
  EXPECT_EQ(topo->link_dst(there[0]), 1);
  EXPECT_EQ(topo->link_dst(back[0]), 1);

  const SimResult neighbours = run_on(*topo, Collective::all_gather, "ring", true);
  EXPECT_EQ(neighbours.orbit, 4) << neighbours.orbit_note;
  EXPECT_LE(
      std::abs(neighbours.time / run_on(*topo, Collective::all_gather, "ring", false).time - 1),
      1e-12);

  const SimResult across = run_on(*topo, Collective::all_to_all, "nccl:p2p", true);
  EXPECT_EQ(across.orbit, 1);
  EXPECT_NE(across.orbit_note.find("the route from rank"), std::string::npos) << across.orbit_note;
  EXPECT_EQ(across.time, run_on(*topo, Collective::all_to_all, "nccl:p2p", false).time);
}

}  // namespace
}  // namespace collkit
