// NCCL's choice per version (sim/nccl_versions.h, docs/NCCL.md "Versions"),
// checked against an independent computation.
//
// `NcclOracle` below is written apart from sim/nccl.cc and in another shape:
// it follows NCCL's own structure, the tuning table of every collective x
// algorithm x protocol filled once per communicator (ncclTopoTuneModel),
// then the time of each entry at a size (ncclTopoGetAlgoTime), the pick in
// NCCL's order (topoGetAlgoInfo) and the channel count (topoGetAlgoInfo's
// rule and, from 2.22, scheduleCollTasksToPlan's spread). Its figures are
// written per version as ranges of releases ("from v2.23.4-1 the tree's
// Simple hop is 4 us"), read off src/graph/tuning.cc and src/enqueue.cc of
// each tag, not taken from sim/nccl_versions.cc (whose figures are release
// deltas). Its inputs are NCCL's graphs on each machine as NCCL's INFO logs
// print them (docs/NCCL.md, "Channels"), and the test first checks that
// nccl_context() derives the same.
//
// The grid: every supported release line (and versions between releases),
// the shipped topologies, five collectives, two types, 8 B to 16 GiB by 4x.
#include "sim/nccl_versions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "core/nccl_version.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

const std::string kTopologies = std::string(COLLKIT_SOURCE_DIR) + "/topologies/";

// ---- Versions: parsing and the release each version follows --------------

TEST(NcclVersion, ParsesWhatNcclAndItsTagsPrint) {
  EXPECT_EQ(parse_nccl_version("2.26.2"), (NcclVersion{2, 26, 2}));
  EXPECT_EQ(parse_nccl_version("2.26.2+cuda12.8"), (NcclVersion{2, 26, 2}));
  EXPECT_EQ(parse_nccl_version("v2.26.2-1"), (NcclVersion{2, 26, 2}));
  EXPECT_EQ(parse_nccl_version("2.29.7-1+cuda13.0"), (NcclVersion{2, 29, 7}));
  for (const char* bad : {"", "2.26", "2", "2.26.", "x2.26.2", "2.26.2 ", "2.26.2+", "2.26.2-",
                          "2.26.2-x", "v", "2..2", "2.26.2.1", "12345.1.1"})
    EXPECT_FALSE(parse_nccl_version(bad)) << bad;
  EXPECT_EQ(to_string(NcclVersion{2, 18, 1}), "2.18.1");
}

TEST(NcclVersion, SupportedRangeAndErrorsNameTheFlagAndValue) {
  EXPECT_TRUE(nccl_version_supported({2, 18, 1}));
  EXPECT_TRUE(nccl_version_supported({2, 30, 7}));
  EXPECT_TRUE(nccl_version_supported({2, 30, 99}));
  EXPECT_FALSE(nccl_version_supported({2, 18, 0}));
  EXPECT_FALSE(nccl_version_supported({2, 17, 1}));
  EXPECT_FALSE(nccl_version_supported({2, 31, 0}));
  EXPECT_FALSE(nccl_version_supported({3, 0, 0}));
  try {
    checked_nccl_version("--nccl-version", "2.17.1");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--nccl-version '2.17.1': NCCL 2.17.1 is outside the versions collkit has NCCL's "
              "cost model for (2.18.1 to 2.30.x)");
    EXPECT_EQ(e.exit_code(), 2);
  }
  try {
    checked_nccl_version("--nccl-version", "2.26");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--nccl-version '2.26': expected an NCCL version"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(nccl_tuning({2, 31, 0}), UsageError);
}

TEST(NcclVersion, AVersionFollowsTheNewestReleaseAtOrBelowIt) {
  EXPECT_EQ(nccl_tuning({2, 18, 1}).release, (NcclVersion{2, 18, 1}));
  EXPECT_EQ(nccl_tuning({2, 18, 6}).release, (NcclVersion{2, 18, 3}));
  EXPECT_EQ(nccl_tuning({2, 20, 5}).release, (NcclVersion{2, 20, 3}));
  // 2.25.1, 2.28.7, 2.29.7 and 2.30.3 change Blackwell's figures only.
  EXPECT_EQ(nccl_tuning({2, 25, 1}).release, (NcclVersion{2, 25, 1}));
  EXPECT_EQ(nccl_tuning({2, 26, 6}).release, (NcclVersion{2, 26, 2}));
  EXPECT_EQ(nccl_tuning({2, 28, 7}).release, (NcclVersion{2, 28, 7}));
  EXPECT_EQ(nccl_tuning({2, 29, 3}).release, (NcclVersion{2, 29, 2}));
  EXPECT_EQ(nccl_tuning({2, 30, 4}).release, (NcclVersion{2, 30, 3}));
  // Releases in order, each with its tag.
  const std::vector<NcclTuning>& rs = nccl_releases();
  ASSERT_FALSE(rs.empty());
  EXPECT_EQ(rs.front().release, kOldestNcclVersion);
  for (std::size_t i = 1; i < rs.size(); ++i) EXPECT_LT(rs[i - 1].release, rs[i].release);
  for (const NcclTuning& r : rs)
    EXPECT_EQ(r.tag, "v" + to_string(r.release) + "-1") << to_string(r.release);
  EXPECT_TRUE(nccl_version_supported(kDefaultNcclVersion));
}

// ---- The machines: NCCL's graphs on each ---------------------------------

struct Machine {
  const char* name;
  const char* file;
  int ranks;
  int gpus_per_node;  // 0: the file as it is; g: the cluster file with g GPUs a node
  // NCCL's graphs (docs/NCCL.md, "Channels"): channels x GB/s per channel;
  // NVLS heads and the NVLS graph's NVLink / network side; CollNet heads.
  int nodes;
  int ring_ch;
  double ring_bw;
  int tree_ch;
  double tree_bw;
  int nvls_heads;
  double nvls_intra, nvls_inter;
  int collnet_heads;
  double collnet_bw;
  int runtime;           // channels at run time
  int arch;              // NCCL's compute-capability row: 0 Ampere, 1 Hopper, 2 Blackwell
  bool nvswitch = true;  // the GPUs of a node meet in a switch (CollNet Direct)
  bool x86 = true;       // the host is x86 (GB200's Grace is Arm)
};
constexpr int kAmpere = 0, kHopper = 1, kBlackwell = 2;

// One node of 8 H100: ring and tree 12 x 30 GB/s, NVLS 8 heads at 40 GB/s
// (its network side raised to 60, the top of NCCL's sm90 speeds), 24
// channels. Across nodes: one channel per NIC at 48 GB/s, doubled at run
// time; the NVLS graph's heads at the same 48. One node of 8 A100: 12 x 20,
// no NVLS. One GPU a node: one NIC, one graph channel.
const Machine kMachines[] = {
    {"dgx-h100", "dgx-h100.json", 8, 0, 1, 12, 30, 12, 30, 8, 40, 60, 0, 0, 24, kHopper},
    {"dgx-a100", "dgx-a100.json", 8, 0, 1, 12, 20, 12, 20, 0, 0, 0, 0, 0, 24, kAmpere},
    {"h100 2x8", "h100-cluster-2x8.json", 16, 0, 2, 8, 48, 8, 48, 8, 48, 48, 0, 0, 16, kHopper},
    {"h100 4x8", "h100-cluster-4x8.json", 32, 0, 4, 8, 48, 8, 48, 8, 48, 48, 0, 0, 16, kHopper},
    {"h100 16x8", "h100-cluster-16x8.json", 128, 0, 16, 8, 48, 8, 48, 8, 48, 48, 0, 0, 16, kHopper},
    {"h100 16x8 sharp", "h100-cluster-16x8-sharp.json", 128, 0, 16, 8, 48, 8, 48, 8, 48, 48, 8, 48,
     16, kHopper},
    {"a100 2x8", "a100-cluster-2x8.json", 16, 0, 2, 8, 24, 8, 24, 0, 0, 0, 0, 0, 16, kAmpere},
    {"h100 16x1", "h100-cluster-16x8.json", 16, 1, 16, 1, 48, 1, 48, 0, 0, 0, 0, 0, 2, kHopper},
    // Blackwell (docs/NCCL.md, "Blackwell"): one node of 8 B200, ring and
    // tree 16 x 45 GB/s (NCCL's 8 x 90, duplicated), NVLS 8 heads x 80 GB/s
    // raised to 90 on the network side, 32 channels; across nodes one channel
    // per 400G NIC as on H100. The A100 cluster with SHARP: CollNet on an
    // NVSwitch system without NVLS. One NVL72 rack: 72 GPUs, NVLS 32 heads
    // (NCCL's most) x 20 GB/s raised to 40; two racks: one graph channel per
    // NIC up to 16 and 32 NVLS heads at the NIC's 48.
    {"dgx-b200", "dgx-b200.json", 8, 0, 1, 16, 45, 16, 45, 8, 80, 90, 0, 0, 32, kBlackwell},
    {"b200 2x8", "b200-cluster-2x8.json", 16, 0, 2, 8, 48, 8, 48, 8, 48, 48, 0, 0, 16, kBlackwell},
    {"a100 16x8 sharp", "a100-cluster-16x8-sharp.json", 128, 0, 16, 8, 24, 8, 24, 0, 0, 0, 8, 24,
     16, kAmpere},
    {"gb200 nvl72", "gb200-nvl72.json", 72, 0, 1, 16, 45, 16, 45, 32, 20, 40, 0, 0, 32, kBlackwell,
     true, false},
    {"gb200 2 racks", "gb200-nvl72-cluster-2.json", 144, 0, 2, 16, 48, 16, 48, 32, 48, 48, 0, 0, 32,
     kBlackwell, true, false},
};

std::unique_ptr<Topology> load(const Machine& m) {
  const std::string path = kTopologies + m.file;
  if (m.gpus_per_node == 0) return load_topology(path, m.ranks);
  // The cluster with g GPUs (and g NICs) a node, as the accuracy test builds it.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json top = Json::parse(text.str());
  Json& gen = top.at("generator");
  gen["nodes"] = m.ranks / m.gpus_per_node;
  gen["devices_per_node"] = m.gpus_per_node;
  gen["nics_per_node"] = m.gpus_per_node;
  for (const char* key : {"ring", "tree", "nvls", "runtime_channels"}) top["nccl"].erase(key);
  return parse_topology(top.dump(), path, m.ranks);
}

TEST(NcclVersions, ContextsCarryNcclsGraphs) {
  for (const Machine& m : kMachines) {
    SCOPED_TRACE(m.name);
    const std::unique_ptr<Topology> t = load(m);
    const NcclContext ctx = nccl_context(*t, m.ranks);
    EXPECT_EQ(ctx.nodes, m.nodes);
    EXPECT_EQ(ctx.ring_channels, m.ring_ch);
    EXPECT_NEAR(ctx.ring_bw, m.ring_bw, 1e-9);
    EXPECT_EQ(ctx.tree_channels, m.tree_ch);
    EXPECT_NEAR(ctx.tree_bw, m.tree_bw, 1e-9);
    EXPECT_EQ(ctx.nvls_heads, m.nvls_heads);
    if (m.nvls_heads > 0) {
      EXPECT_NEAR(ctx.nvls_bw, m.nvls_intra, 1e-9);
      EXPECT_NEAR(ctx.nvls_bw_inter, m.nvls_inter, 1e-9);
    }
    EXPECT_EQ(ctx.collnet_heads, m.collnet_heads);
    if (m.collnet_heads > 0) {
      EXPECT_NEAR(ctx.collnet_bw, m.collnet_bw, 1e-9);
    }
    EXPECT_EQ(ctx.runtime_channels, m.runtime);
    EXPECT_EQ(ctx.nvls_channels, m.arch == kBlackwell ? 32 : 16);  // 2.26.2
    EXPECT_EQ(ctx.arch, m.arch);
    EXPECT_EQ(ctx.x86_host, m.x86);
    EXPECT_EQ(ctx.ring_same_channels, m.nodes == 1);
    EXPECT_EQ(ctx.version, kDefaultNcclVersion);
  }
}

// ---- The oracle ------------------------------------------------------------

constexpr NcclVersion V(int a, int b, int c) { return {a, b, c}; }

// NCCL's indices.
enum Func { kBroadcast, kReduce, kAllGather, kReduceScatter, kAllReduce, kFuncs };
enum Algo { kTree, kRing, kCnDirect, kCnChain, kNvls, kNvlsTree, kPat, kAlgos };
enum Proto { kLL, kLL128, kSimple, kProtos };
enum Hw { kNvl, kPci, kNet };

Func func_of(Collective c) {
  switch (c) {
    case Collective::broadcast:
      return kBroadcast;
    case Collective::reduce:
      return kReduce;
    case Collective::all_gather:
      return kAllGather;
    case Collective::reduce_scatter:
      return kReduceScatter;
    default:
      return kAllReduce;
  }
}

// NCCL's figures as each tag has them. `v` is the version asked for; a
// range "[a, b)" below means releases a up to, not including, b.
double base_lat(NcclVersion v, int a, int p) {
  switch (a) {
    case kTree:
      return p == kLL ? 6.8 : p == kLL128 ? 14.0 : (v >= V(2, 23, 4) ? 8.4 : 0.0);
    case kRing:
      return p == kLL ? 6.6 : p == kLL128 ? 14.0 : 8.4;
    case kCnDirect:
    case kCnChain:
      if (v >= V(2, 19, 1)) return 0;
      return p == kLL ? 6.8 : p == kLL128 ? 14.0 : 0.0;
    case kNvls:
    case kNvlsTree:
      return v < V(2, 19, 1) && p == kSimple ? 23.0 : 0.0;
    default:
      return 0;
  }
}

double hw_lat(NcclVersion v, int hw, int a, int p) {
  switch (a) {
    case kTree:
      if (p == kLL) return hw == kNvl ? 0.6 : hw == kPci ? 1.0 : 5.0;
      if (p == kLL128) return hw == kNvl ? 1.25 : hw == kPci ? 1.9 : 8.5;
      // Simple: 28 everywhere in 2.18.1 and [2.19.1, 2.23.4); 2.18.3..6 has
      // 4 / 6 / 14; 2.23.4 on 4 / 4 / 14.
      if (v >= V(2, 23, 4)) return hw == kNet ? 14 : 4;
      if (v >= V(2, 18, 3) && v < V(2, 19, 1)) return hw == kNvl ? 4 : hw == kPci ? 6 : 14;
      return 28;
    case kRing:
      if (p == kLL) return hw == kNvl ? 0.6 : hw == kPci ? 1.0 : 2.7;
      if (p == kLL128) return hw == kNvl ? 1.9 : hw == kPci ? 2.5 : 4.0;
      return hw == kNvl ? 3.4 : hw == kPci ? 5.7 : 14.0;
    case kCnDirect:
      if (p != kSimple) return 0;
      if (v < V(2, 19, 1)) return hw == kNet ? 10.7 : 8.0;
      return hw == kNet ? 31 : 3.7;
    case kCnChain:
      if (p != kSimple) return 0;
      if (v < V(2, 19, 1)) return hw == kNvl ? 4.75 : hw == kPci ? 8.0 : 14;
      return hw == kNet ? 30 : 2.8;
    case kNvls:
    case kNvlsTree:
      if (p != kSimple || hw == kPci) return 0;
      if (hw == kNvl) return v < V(2, 19, 1) ? 0 : v < V(2, 21, 5) ? 23 : 25;
      if (a == kNvls) return 18;
      return v < V(2, 19, 1) ? 19 : v < V(2, 28, 9) ? 14 : 20.9;
    default:
      return 0;
  }
}

// The row NCCL uses for a GPU: Blackwell's exists from 2.25.1; before, an
// sm100 GPU falls in Hopper's (compCapIndex stops at minCompCap >= 90).
int row(NcclVersion v, int arch) { return arch == kBlackwell && v < V(2, 25, 1) ? kHopper : arch; }
// llMaxBws: one node by GPU (Ampere / Hopper / Blackwell rows), more by CPU
// (Intel row, which Arm hosts share).
double ll_max_bw(NcclVersion v, int arch, int nodes) {
  if (nodes == 1) {
    switch (row(v, arch)) {
      case kAmpere:
        return 87.7;
      case kHopper:
        return v >= V(2, 21, 5) ? 141.0 : 87.7;
      default:
        return 2 * 141.0;
    }
  }
  return nodes == 2 ? 39.0 : 20.4;
}
int node_col(int nodes) { return nodes == 1 ? 0 : nodes == 2 ? 1 : 2; }
double ring_ll128_cap(NcclVersion v, int arch, int nodes) {
  switch (row(v, arch)) {
    case kAmpere:
      return 20.0;
    case kHopper:
      return 36.7;
    default:
      if (v >= V(2, 29, 7)) return 40.0;
      if (v >= V(2, 29, 2)) return nodes == 2 ? 34.6 : 34.5;
      if (v >= V(2, 28, 7)) return nodes == 2 ? 34.6 : 2 * 36.7;
      return 2 * 36.7;
  }
}
double tree_ll128_cap(NcclVersion v, int arch, int nodes) {
  switch (row(v, arch)) {
    case kAmpere:
      return 20.0;
    case kHopper:
      return v >= V(2, 18, 3) && nodes > 2 ? 29.0 : 36.7;
    default: {
      const double early[3] = {2 * 36.7, 2 * 36.7, 2 * 29.0};
      const double late[3] = {55.6, 31.67, 20.0};
      return (v >= V(2, 28, 3) ? late : early)[node_col(nodes)];
    }
  }
}
double tree_cap(NcclVersion v, int arch, int nodes) {
  const double ampere[3] = {24.0, 23.6, 17.8};
  const double hopper[3] = {38.7, 41.4, v >= V(2, 18, 3) ? 36.0 : 33.0};
  const double blackwell_early[3] = {2 * 38.7, 2 * 41.4, 2 * 36.0};
  const double blackwell_late[3] = {70.0, 42.8, 24.0};
  switch (row(v, arch)) {
    case kAmpere:
      return ampere[node_col(nodes)];
    case kHopper:
      return hopper[node_col(nodes)];
    default:
      return (v >= V(2, 28, 3) ? blackwell_late : blackwell_early)[node_col(nodes)];
  }
}
double nvls_tree_cap(NcclVersion v, int arch, int nodes) {
  const double ampere[3] = {24.0, 23.6, 17.8};
  const double hopper[3] = {0.0, 57.7, 45.5};
  const double blackwell[3] = {0.0, 96.0, v >= V(2, 30, 3) ? 80.0 : v >= V(2, 28, 9) ? 43.8 : 43.1};
  switch (row(v, arch)) {
    case kAmpere:
      return ampere[node_col(nodes)];
    case kHopper:
      return hopper[node_col(nodes)];
    default:
      return blackwell[node_col(nodes)];
  }
}
double nvls_efficiency(NcclVersion v, int arch) {
  switch (row(v, arch)) {
    case kAmpere:
      return 0.0;
    case kHopper:
      return 0.85;
    default:
      return 0.74;
  }
}
// NVLS channels (src/transport/nvls.cc): 16 on sm90; sm100 32 (2.25, 2.26),
// then 24 in one NVLink domain and 32 across (2.27 to 2.29), and from
// 2.30.3 across domains by the NIC speed.
int nvls_channels(NcclVersion v, const Machine& m) {
  if (m.arch != kBlackwell) return 16;
  if (v < V(2, 27, 3)) return 32;
  if (m.nodes == 1) return 24;
  if (v < V(2, 30, 3)) return 32;
  const double nic = m.ring_bw;  // across nodes, the NIC's per-channel speed
  if (m.nodes == 2 && nic >= 48) return 32;
  if (nic >= 96) return m.ranks / m.nodes <= 8 ? 24 : 32;
  if (nic >= 48) return 24;
  return 32;
}

// NCCL's log2i: a shift loop (0 for 0) before 2.22, log2Down (-1) after.
int nccl_log2i(NcclVersion v, std::int64_t x) {
  if (x <= 0) return v >= V(2, 22, 3) ? -1 : 0;
  int l = 0;
  while (x > 1) {
    x >>= 1;
    ++l;
  }
  return l;
}

const double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

bool nvls_reduces(DataType t, RedOp op) {  // ncclNvlsSupported
  switch (t) {
    case DataType::int32:
    case DataType::uint32:
    case DataType::int64:
    case DataType::uint64:
    case DataType::half:
    case DataType::bfloat16:
      return op == RedOp::sum || op == RedOp::min || op == RedOp::max;
    case DataType::float32:
    case DataType::float64:
      return op == RedOp::sum;
    default:
      return false;
  }
}

struct Pick {
  int algo = -1;
  int proto = -1;
  double time = 0;
  int channels = 0;
};

class NcclOracle {
 public:
  NcclOracle(NcclVersion v, const Machine& m) : v_(v), m_(m) {
    n_ = m.ranks;
    nodes_ = m.nodes;
    ppn_ = static_cast<double>(n_) / nodes_;
    tune();
  }

  // ncclTopoTuneModel: latencies and bandwidths of every entry; bw 0 = off.
  void tune() {
    for (int f = 0; f < kFuncs; ++f)
      for (int a = 0; a < kAlgos; ++a)
        for (int p = 0; p < kProtos; ++p) bw_[f][a][p] = lat_[f][a][p] = 0;
    if (n_ <= 1) return;
    const int gpu_ll = 0;
    (void)gpu_ll;
    const double llmax = ll_max_bw(v_, m_.arch, nodes_);
    for (int f = 0; f < kFuncs; ++f) {
      const int nsteps = f == kAllReduce                            ? 2 * (n_ - 1)
                         : (f == kAllGather || f == kReduceScatter) ? n_ - 1
                                                                    : n_;
      for (int a = 0; a < kAlgos; ++a) {
        // Which algorithms a function weighs.
        if ((f == kBroadcast || f == kReduce) && a != kRing) continue;
        if (f == kAllGather || f == kReduceScatter) {
          bool weighed = a == kRing;
          if (a == kNvls && v_ >= V(2, 19, 1)) weighed = true;
          if (a == kPat && v_ >= V(2, 23, 4)) weighed = true;
          // CollNet Direct (2.20+) needs a plugin with all_gather /
          // reduce_scatter: none here.
          if (!weighed) continue;
        }
        if (f == kAllReduce && a == kPat) continue;
        for (int p = 0; p < kProtos; ++p) {
          if ((a == kNvls || a == kNvlsTree || a == kPat) && p != kSimple) continue;
          if (a == kPat && nodes_ != n_) continue;  // ncclPatEnable
          const bool collnet = a == kCnDirect || a == kCnChain;
          int ch = 0;
          double intra = 0, inter = 0;
          graph(a, ch, intra, inter);
          double bw = (nodes_ <= 2 || collnet) ? intra : inter;
          if (a == kNvls || a == kNvlsTree) {
            if (v_ >= V(2, 28, 3)) {
              if (ch < 2) continue;
              const double eff = nvls_efficiency(v_, m_.arch);
              double ib = intra * eff * (ch - 1) / ch;
              ib *= f == kAllReduce ? 2.0 : (ppn_ - 1) / ppn_;
              double nb = inter * ((nodes_ <= 2 && a == kNvlsTree) ? 2 : 1);
              bw = std::min(ib, nb);
              if (a == kNvlsTree) bw = std::min(bw, nvls_tree_cap(v_, m_.arch, nodes_));
            } else if (v_ >= V(2, 19, 1)) {
              if (a == kNvls) {
                bw = (v_ >= V(2, 27, 3) && f != kAllReduce)
                         ? std::min(intra * (ppn_ - 1) / ppn_, inter * 0.9)
                         : std::min(intra, inter);
              } else {
                bw = std::min(intra, nodes_ <= 2 ? inter : inter / 2);
              }
            }
          }
          double bus = ch * bw;
          if (a == kRing && p == kLL) {
            const double f_ll = v_ >= V(2, 21, 5)                                 ? 0.5
                                : (nodes_ > 1 || f == kAllReduce || f == kReduce) ? 0.25
                                                                                  : 1.0 / 3.0;
            bus = std::min(llmax, bus * f_ll);
          }
          if (a == kRing && p == kLL128) {
            const double share = (v_ < V(2, 23, 4) && ppn_ < 2) ? 0.7 : 0.92;
            bus = std::min(bus * share, ch * ring_ll128_cap(v_, m_.arch, nodes_));
          }
          if (a == kTree) bus = std::min(bus * .92, ch * tree_cap(v_, m_.arch, nodes_));
          if (a == kTree && p == kLL) bus = std::min(bus / 3.8, llmax);
          if (a == kTree && p == kLL128)
            bus = std::min(bus * (nodes_ == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                           ch * tree_ll128_cap(v_, m_.arch, nodes_));
          if (a == kPat) bus *= v_ >= V(2, 24, 3) ? 0.75 : 0.85;
          if (collnet && p != kSimple) bus = 0;
          if (a == kCnDirect && p == kSimple) {
            double gpu_per_nic = ppn_ / ch;
            gpu_per_nic -= (gpu_per_nic - 1) / 2;
            bus /= gpu_per_nic;
            if (m_.arch != kAmpere) bus *= .85;  // minCompCap >= 90
          }
          // To algorithm bandwidth.
          bool convert = true;
          if (f == kAllGather || f == kReduceScatter) {
            if (v_ >= V(2, 23, 4))
              convert = a == kRing;
            else
              convert = true;  // ring and NVLS alike
          }
          if (convert) {
            double r = .5;
            if (a == kRing) r = static_cast<double>(n_) / nsteps;
            if (a == kNvls || a == kNvlsTree) {
              if (v_ >= V(2, 28, 3))
                r = static_cast<double>(n_) / nsteps;
              else if (v_ >= V(2, 18, 3) && (a == kNvls || v_ >= V(2, 19, 1)))
                r = 5.0 / 6.0;
              else if (a == kNvls)
                r = .75;
              else
                r = .70 * nodes_ / (2.0 * (nodes_ - 1));
            }
            bus *= r;
          }
          bw_[f][a][p] = bus;
          // Latency.
          double lat = base_lat(v_, a, p);
          const int ihw = kNvl;  // every machine here: NVLink inside a node
          double il = hw_lat(v_, ihw, a, p);
          double nl = (ppn_ == 1 && v_ >= V(2, 23, 4)) ? hw_lat(v_, kNet, kTree, p)
                                                       : hw_lat(v_, kNet, a, p);
          const int loc = n_ / nodes_;
          int lg = 0;
          for (int x = nodes_; x > 1; x >>= 1) ++lg;
          if (a == kRing) {
            const int hw = nodes_ == 1 ? ihw : kNet;
            if (f == kBroadcast || f == kReduce) {
              const bool same = nodes_ == 1;
              if (same)
                lat += hw_lat(v_, hw, kRing, p);
              else
                lat += nsteps * hw_lat(v_, hw, p == kSimple ? kTree : kRing, p);
            } else {
              if (nodes_ > 1) il = std::max(il, p == kSimple ? 3.0 : 1.0);
              int inter_steps = 0;
              if (nodes_ > 1) {
                if (f == kAllReduce)
                  inter_steps = v_ >= V(2, 23, 4) ? 2 * (nodes_ - 1) : 2 * nodes_;
                else
                  inter_steps = nodes_ - 1;
              }
              lat += (nsteps - inter_steps) * il + inter_steps * nl;
            }
          } else if (a == kTree) {
            if (f == kAllReduce) lat += 2 * ((loc - 1) * il + lg * nl);
          } else if (a == kCnDirect) {
            const double arity = v_ >= V(2, 19, 1) ? 0.4 : 0.5;
            lat += 2 * (std::min(1, loc - 1) * il + (loc - 1) * arity) + nl;
          } else if (a == kCnChain) {
            lat += 2 * (loc - 1) * il + nl;
          } else if (a == kNvls) {
            if (v_ < V(2, 19, 1)) {
              if (nodes_ > 1) lat += hw_lat(v_, kNet, kNvls, p);
            } else {
              lat = il + (nodes_ > 1 ? nl : 0);
            }
          } else if (a == kNvlsTree) {
            if (v_ < V(2, 19, 1))
              lat += 2 * (nodes_ - 1) * hw_lat(v_, kNet, kNvlsTree, p);
            else
              lat += il + 2 * lg * nl;
          } else if (a == kPat) {
            lat = 8 + lg * (nl / 3.5) + n_ * 2.8;
          }
          lat_[f][a][p] = lat;
        }
      }
    }
    // Algorithms the communicator turns off.
    for (int f = 0; f < kFuncs; ++f)
      for (int a = 0; a < kAlgos; ++a) {
        bool off = false;
        if (a == kNvlsTree && nodes_ == 1) off = true;
        if (m_.collnet_heads == 0 &&
            (a == kCnDirect || a == kCnChain || (a == kNvls && nodes_ > 1)))
          off = true;
        if (a == kCnDirect && !m_.nvswitch) off = true;  // not an NVSwitch system
        if (a == kNvls || a == kNvlsTree)
          if (m_.nvls_heads == 0) off = true;  // no NVLS graph
        if (off)
          for (int p = 0; p < kProtos; ++p) bw_[f][a][p] = 0;
      }
  }

  // ncclTopoGetAlgoTime; -1 where the entry is off.
  double time(int f, int a, int p, std::int64_t bytes) const {
    double bw = bw_[f][a][p];
    double lat = lat_[f][a][p];
    if (bw == 0) return -1;
    const int ls = nccl_log2i(v_, bytes >> 6);
    if (a == kTree && f == kAllReduce && ls >= 0 && ls < 23) bw *= kTreeCorrection[p][ls];
    // 2.29.2+: NVLSTree on Blackwell with an x86 host, 24 entries.
    if (a == kNvlsTree && f == kAllReduce && v_ >= V(2, 29, 2) && m_.arch == kBlackwell && m_.x86 &&
        ls >= 0 && ls < 24)
      bw *= ls < 23 ? kTreeCorrection[p][ls] : (p == kSimple ? .9 : 1.0);
    if (a == kRing && p == kSimple && nodes_ > 1 && f == kAllReduce &&
        bytes / (static_cast<std::int64_t>(m_.runtime) * n_) >= 64)
      lat *= 1.4;
    return lat + bytes / (1000 * bw);
  }

  // updateCollCostTable's filters and topoGetAlgoInfo's pick, then the
  // channels.
  Pick choose(Collective c, std::int64_t bytes, DataType type, RedOp op) const {
    const int f = func_of(c);
    Pick best;
    double best_time = std::numeric_limits<double>::max();
    for (int a = 0; a < kAlgos; ++a) {
      if (a == kNvls || a == kNvlsTree) {
        // nvlsSupport of the call: the type and op NVLS reduces; all_gather
        // exempt in 2.19 and again from 2.22.
        bool support = nvls_reduces(type, f == kAllGather ? RedOp::sum : op);
        if (f == kAllGather && (v_ < V(2, 20, 3) || v_ >= V(2, 22, 3))) support = true;
        if (!support) continue;
        if (a == kNvls && nodes_ > 1 && m_.collnet_heads == 0) continue;
        if (a == kNvls && (f == kAllGather || f == kReduceScatter) && (nodes_ > 1 || n_ > 32))
          continue;
      }
      if ((a == kCnDirect || a == kCnChain) && m_.collnet_heads == 0) continue;
      if (a == kCnDirect && n_ / nodes_ > 8) continue;
      if (a == kCnChain && v_ >= V(2, 28, 3) && n_ / nodes_ > 8) continue;
      if (a == kPat && f == kReduceScatter && op == RedOp::avg) continue;
      for (int p = 0; p < kProtos; ++p) {
        const double t = time(f, a, p, bytes);
        if (t >= 0 && t < best_time) {
          best_time = t;
          best.algo = a;
          best.proto = p;
        }
      }
    }
    best.time = best_time;
    if (best.algo >= 0) best.channels = channels(c, bytes, best.algo, best.proto);
    return best;
  }

  int channels(Collective c, std::int64_t bytes, int a, int p) const {
    const int f = func_of(c);
    int nc = m_.runtime;
    int nt = 640;  // CollNet, NVLS
    if (a == kRing || a == kTree) nt = p == kLL ? 512 : p == kLL128 ? 640 : 512;
    if (a == kPat) nt = 0;  // never set by the tuner
    int thr = p == kSimple ? 64 : 8;
    if (a == kRing && p == kLL) thr *= n_;
    if ((a == kCnDirect || a == kCnChain) && p == kSimple) thr = 512;
    if (a == kCnDirect) {
      int sw = 16;
      bool go = true;
      while (sw >= 1 && go) {
        while ((go = static_cast<double>(bytes) <
                     static_cast<double>(nc) * nt * m_.collnet_heads * thr) &&
               nc > sw) {
          if (nc == sw + sw / 2) thr /= 2;
          nc--;
        }
        sw /= 2;
      }
    } else if (a == kNvls || a == kNvlsTree) {
      nc = nvls_channels(v_, m_);
      if (v_ >= V(2, 28, 3) && nodes_ > 1 && a == kNvls) nc = std::min(nc, m_.runtime);
    } else {
      while (static_cast<double>(bytes) < static_cast<double>(nc) * nt * thr) {
        if (nc >= 2)
          nc--;
        else
          break;
      }
    }
    const bool collnet_task = a == kCnDirect || a == kCnChain || (a == kNvls && nodes_ > 1);
    if (v_ < V(2, 22, 3) || collnet_task) return nc;
    // scheduleCollTasksToPlan, the call alone in its plan.
    const int kind_max = (a == kNvls || a == kNvlsTree) ? nvls_channels(v_, m_) : m_.runtime;
    const bool gs = f == kAllGather || f == kReduceScatter;
    const std::int64_t count_bytes = gs ? bytes / n_ : bytes;
    if (count_bytes == 0) return nc;  // no elements: NCCL discards the call, nothing is planned
    std::int64_t tpb = f == kAllReduce ? 2 : gs ? n_ : 1;
    const bool x4 = p == kLL && v_ >= V(2, 26, 2);
    const std::int64_t task_traffic = count_bytes * tpb * (x4 ? 4 : 1);
    if (x4) tpb *= 4;
    const int nch = std::min(nc, kind_max);
    std::int64_t min_t = v_ >= V(2, 29, 2) ? 32 << 10 : v_ >= V(2, 23, 4) ? 16 << 10 : 512;
    const auto divup = [](std::int64_t x, std::int64_t y) { return (x + y - 1) / y; };
    std::int64_t per_ch;
    if (v_ < V(2, 23, 4))
      per_ch = std::max(min_t, task_traffic / nch);
    else if (v_ < V(2, 29, 2))
      per_ch = std::max(min_t, std::max(min_t, task_traffic) / nch);
    else
      per_ch = divup(std::max(min_t, task_traffic) / nch, 16) * 16;
    const std::int64_t cell = v_ < V(2, 23, 4) ? 16 : divup(divup(min_t, tpb), 16) * 16;
    const std::int64_t cells = divup(count_bytes, cell);
    const std::int64_t tcell = cell * tpb;
    std::int64_t cpc = std::min(cells, divup(per_ch, tcell));
    std::int64_t lo;
    if (kind_max == 1)
      lo = cells;
    else
      lo = std::min(cells, v_ < V(2, 23, 4) ? per_ch / tcell : divup(per_ch, tcell));
    std::int64_t mid = (cells - lo) / cpc;
    std::int64_t hi = (cells - lo) % cpc;
    std::int64_t used = (lo != 0) + mid + (hi != 0);
    if (kind_max < used) {
      mid = kind_max - 2;
      cpc = (cells - lo) / (mid + 1);
      hi = cpc + (cells - lo) % (mid + 1);
    }
    if (hi == 0 && mid != 0) {
      hi = cpc;
      mid--;
    }
    if (lo == 0) {
      if (mid == 0) {
        lo = hi;
        hi = 0;
      } else {
        lo = cpc;
        mid--;
      }
    }
    return static_cast<int>((lo != 0) + mid + (hi != 0));
  }

 private:
  void graph(int a, int& ch, double& intra, double& inter) const {
    if (a == kRing) {
      ch = m_.ring_ch;
      intra = inter = m_.ring_bw;
    } else if (a == kTree || a == kPat) {
      ch = m_.tree_ch;
      intra = inter = m_.tree_bw;
    } else if (a == kNvls || a == kNvlsTree) {
      ch = m_.nvls_heads;
      intra = m_.nvls_intra;
      inter = m_.nvls_inter;
    } else {
      ch = m_.collnet_heads;
      intra = inter = m_.collnet_bw;
    }
  }

  NcclVersion v_;
  Machine m_;
  int n_ = 1, nodes_ = 1;
  double ppn_ = 1;
  double bw_[kFuncs][kAlgos][kProtos] = {};
  double lat_[kFuncs][kAlgos][kProtos] = {};
};

NcclVariant variant_of(int a) {
  constexpr NcclVariant kOrder[] = {NcclVariant::tree,
                                    NcclVariant::ring,
                                    NcclVariant::collnet_direct,
                                    NcclVariant::collnet_chain,
                                    NcclVariant::nvls,
                                    NcclVariant::nvls_tree,
                                    NcclVariant::pat};
  return kOrder[a];
}
Protocol protocol_of(int p) { return kAllProtocols[p]; }

// Every release line, first and later patch releases, and versions between.
const NcclVersion kVersions[] = {V(2, 18, 1), V(2, 18, 3), V(2, 18, 6), V(2, 19, 1), V(2, 19, 4),
                                 V(2, 20, 3), V(2, 20, 5), V(2, 21, 5), V(2, 22, 3), V(2, 23, 4),
                                 V(2, 24, 3), V(2, 25, 1), V(2, 26, 2), V(2, 26, 6), V(2, 27, 3),
                                 V(2, 27, 7), V(2, 28, 3), V(2, 28, 7), V(2, 28, 9), V(2, 29, 2),
                                 V(2, 29, 7), V(2, 30, 3), V(2, 30, 7)};

TEST(NcclVersions, ChoiceMatchesTheOracleOnEveryMachineVersionCollectiveAndSize) {
  int checked = 0, mismatches = 0;
  for (const Machine& m : kMachines) {
    const std::unique_ptr<Topology> t = load(m);
    for (NcclVersion v : kVersions) {
      const NcclContext ctx = nccl_context(*t, m.ranks, v);
      ASSERT_EQ(ctx.version, v);
      const NcclOracle oracle(v, m);
      for (Collective c : {Collective::all_reduce, Collective::all_gather,
                           Collective::reduce_scatter, Collective::broadcast, Collective::reduce})
        for (auto [type, op] :
             {std::pair{DataType::float32, RedOp::sum}, std::pair{DataType::int8, RedOp::sum},
              std::pair{DataType::bfloat16, RedOp::max}})
          for (std::int64_t bytes = 8; bytes <= (std::int64_t{16} << 30); bytes *= 4) {
            const Pick want = oracle.choose(c, bytes, type, op);
            ASSERT_GE(want.algo, 0);
            const NcclChoice got = nccl_choose(ctx, c, bytes, type, op, std::nullopt);
            ++checked;
            const bool same = got.variant == variant_of(want.algo) &&
                              got.protocol == protocol_of(want.proto) &&
                              got.channels == want.channels &&
                              std::abs(got.model_us - want.time) <= 1e-9 * want.time + 1e-9;
            if (!same && ++mismatches <= 20)
              ADD_FAILURE() << m.name << ", NCCL " << to_string(v) << ", " << to_string(c) << " "
                            << to_string(type) << " " << to_string(op) << ", " << bytes
                            << " B: collkit " << describe(got) << " " << got.model_us
                            << " us, oracle " << to_string(variant_of(want.algo)) << "/"
                            << to_string(protocol_of(want.proto)) << "/" << want.channels << "ch "
                            << want.time << " us";
          }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(checked, 20000);
}

// Every estimate NCCL weighs, not only the chosen one, agrees with the
// oracle's table (dgx-h100 and the 2-node cluster, every version).
TEST(NcclVersions, EveryCandidateEstimateMatchesTheOracle) {
  for (const Machine& m : {kMachines[0], kMachines[2], kMachines[5], kMachines[7]}) {
    const std::unique_ptr<Topology> t = load(m);
    for (NcclVersion v : kVersions) {
      const NcclContext ctx = nccl_context(*t, m.ranks, v);
      const NcclOracle oracle(v, m);
      for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::broadcast})
        for (std::int64_t bytes :
             {std::int64_t{4096}, std::int64_t{1} << 22, std::int64_t{1} << 30}) {
          const std::vector<NcclChoice> all =
              nccl_candidates(ctx, c, bytes, DataType::float32, RedOp::sum, std::nullopt);
          int want_count = 0;
          for (int a = 0; a < kAlgos; ++a)
            for (int p = 0; p < kProtos; ++p) {
              const double w = oracle.time(func_of(c), a, p, bytes);
              const bool nvls_gs = (a == kNvls) && c != Collective::all_reduce && m.nodes > 1;
              if (w < 0 || nvls_gs) continue;
              ++want_count;
              const auto it = std::find_if(all.begin(), all.end(), [&](const NcclChoice& x) {
                return x.variant == variant_of(a) && x.protocol == protocol_of(p);
              });
              ASSERT_NE(it, all.end()) << m.name << " " << to_string(v) << " " << a << "/" << p;
              EXPECT_NEAR(it->model_us, w, 1e-9 * w)
                  << m.name << " " << to_string(v) << " " << to_string(c) << " " << a << "/" << p;
            }
          EXPECT_EQ(static_cast<int>(all.size()), want_count) << m.name << " " << to_string(v);
        }
    }
  }
}

// ---- Hand-checked figures --------------------------------------------------

// 2 nodes x 8 H100 with NVLS, NCCL 2.26.2 (tuning.cc v2.26.2-1): NVLSTree's
// bw is the NVLS graph's 8 heads x min(48, 48) GB/s x 5/6 = 320 GB/s, its
// latency 25 + 2 x log2(2) x 14 = 53 us, so at 1 MiB 53 + 1048576 / 320e3 =
// 56.28 us; the ring's Simple bw is 8 x 48 x 16/30 = 204.8 GB/s. NVLSTree is
// chosen from 1 MiB to 16 GiB. NCCL 2.18.1 converts NVLSTree's bus bw at
// 0.70 x 2 / 2: 268.8 GB/s; 2.28.3+ at 8 x 57.7 (the per-channel cap) x
// 16/30 = 246.19 GB/s, with a 25 + 2 x 14 us latency (20.9 from 2.28.9).
TEST(NcclVersions, TwoNodeH100AllReduceHandChecked) {
  const std::unique_ptr<Topology> t = load_topology(kTopologies + "h100-cluster-2x8.json", 16);
  const NcclContext c226 = nccl_context(*t, 16, V(2, 26, 2));
  const auto nvt = [&](const NcclContext& ctx, std::int64_t b) {
    return nccl_model_time(ctx, Collective::all_reduce, NcclVariant::nvls_tree, Protocol::simple, b,
                           DataType::float32, RedOp::sum)
        .value();
  };
  EXPECT_NEAR(nvt(c226, 1 << 20), 53 + 1048576 / 320e3, 1e-9);
  for (std::int64_t b = std::int64_t{1} << 20; b <= (std::int64_t{16} << 30); b *= 2) {
    const NcclChoice ch =
        nccl_choose(c226, Collective::all_reduce, b, DataType::float32, RedOp::sum, std::nullopt);
    EXPECT_EQ(describe(ch), "nvls_tree/Simple/16ch") << b;
  }
  const double ring_16g =
      nccl_model_time(c226, Collective::all_reduce, NcclVariant::ring, Protocol::simple,
                      std::int64_t{16} << 30, DataType::float32, RedOp::sum)
          .value();
  // 8.4 + 28 x 3.4 + 2 x 14 = 131.6 us, x 1.4 past the plateau.
  EXPECT_NEAR(ring_16g, 131.6 * 1.4 + 17179869184.0 / 204.8e3, 1e-6);
  const NcclContext c218 = nccl_context(*t, 16, V(2, 18, 1));
  // 2.18.1: base 23 + 2 x (2 - 1) x 19 = 61 us.
  EXPECT_NEAR(nvt(c218, 1 << 20), 61 + 1048576 / 268.8e3, 1e-9);
  const NcclContext c283 = nccl_context(*t, 16, V(2, 28, 3));
  EXPECT_NEAR(nvt(c283, 1 << 20), 53 + 1048576 / (8 * 57.7 * 16 / 30.0 * 1e3), 1e-9);
  const NcclContext c229 = nccl_context(*t, 16, V(2, 29, 2));
  EXPECT_NEAR(nvt(c229, 1 << 20), 25 + 2 * 20.9 + 1048576 / (8 * 57.7 * 16 / 30.0 * 1e3), 1e-9);
}

// One node of 8 H100, all_reduce NVLS: 2.26 8 x 40 x 5/6 = 266.7 GB/s;
// 2.28+ 8 x min(40 x 0.85 x 7/8 x 2, 60) x 8/14 = 272 GB/s; latency 25 us.
TEST(NcclVersions, OneNodeNvlsHandChecked) {
  const std::unique_ptr<Topology> t = load_topology(kTopologies + "dgx-h100.json");
  const auto nvls = [&](NcclVersion v) {
    return nccl_model_time(nccl_context(*t, 8, v), Collective::all_reduce, NcclVariant::nvls,
                           Protocol::simple, std::int64_t{1} << 30, DataType::float32, RedOp::sum)
        .value();
  };
  const double b = std::int64_t{1} << 30;
  EXPECT_NEAR(nvls(V(2, 26, 2)), 25 + b / (8 * 40 * 5 / 6.0 * 1e3), 1e-6);
  EXPECT_NEAR(nvls(V(2, 29, 2)), 25 + b / (8 * 59.5 * 8 / 14.0 * 1e3), 1e-6);
  EXPECT_NEAR(nvls(V(2, 19, 1)), 23 + b / (8 * 40 * 5 / 6.0 * 1e3), 1e-6);
  // 2.18.1: base 23 us, 8 x 40 x 0.75.
  EXPECT_NEAR(nvls(V(2, 18, 1)), 23 + b / (8 * 40 * 0.75 * 1e3), 1e-6);
}

// Broadcast on one node: every ring channel takes the same path, one hop
// of latency (6.6 + 0.6 us LL); across nodes a hop per rank (16 x 2.7).
TEST(NcclVersions, BroadcastLatencyFollowsSameChannels) {
  const std::unique_ptr<Topology> one = load_topology(kTopologies + "dgx-h100.json");
  const std::unique_ptr<Topology> two = load_topology(kTopologies + "h100-cluster-2x8.json", 16);
  const auto ll = [](const Topology& t, int ranks) {
    return nccl_model_time(nccl_context(t, ranks), Collective::broadcast, NcclVariant::ring,
                           Protocol::ll, 0, DataType::float32, RedOp::sum)
        .value();
  };
  EXPECT_NEAR(ll(*one, 8), 6.6 + 0.6, 1e-12);
  EXPECT_NEAR(ll(*two, 16), 6.6 + 16 * 2.7, 1e-12);
}

// Channels: 2.26's planner gives a 64 KiB ring LL128 all_reduce on one
// node ceil(128 KiB / 16 KiB) = 8 channels (topoGetAlgoInfo's rule alone
// allows 12: 65536 < 13 x 640 x 8); 2.29's 32 KiB minimum gives 4; 2.21,
// without the planner, 12.
TEST(NcclVersions, ChannelRulesByRelease) {
  const std::unique_ptr<Topology> t = load_topology(kTopologies + "dgx-h100.json");
  const auto ch = [&](NcclVersion v) {
    return nccl_channels(nccl_context(*t, 8, v), Collective::all_reduce, 65536, NcclVariant::ring,
                         Protocol::ll128);
  };
  EXPECT_EQ(ch(V(2, 21, 5)), 12);
  EXPECT_EQ(ch(V(2, 26, 2)), 8);
  EXPECT_EQ(ch(V(2, 29, 2)), 4);
}

// A topology file may name the version; a flag (the argument) overrides it.
TEST(NcclVersions, TopologyFileNamesTheVersion) {
  std::ifstream in(kTopologies + "dgx-h100.json");
  std::stringstream text;
  text << in.rdbuf();
  Json top = Json::parse(text.str());
  top["nccl"]["version"] = "2.29.2+cuda12.9";
  const std::unique_ptr<Topology> t = parse_topology(top.dump(), "v.json");
  EXPECT_EQ(nccl_context(*t, 8).version, V(2, 29, 2));
  EXPECT_EQ(nccl_context(*t, 8, V(2, 19, 3)).version, V(2, 19, 3));
  EXPECT_EQ(nccl_context(*t, 8, V(2, 19, 3)).tuning->release, V(2, 19, 1));
  for (const char* bad : {"2.17.1", "2.26", "latest"}) {
    top["nccl"]["version"] = bad;
    try {
      parse_topology(top.dump(), "v.json");
      FAIL() << bad;
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("nccl.version"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  top["nccl"]["version"] = 2.26;
  EXPECT_THROW(parse_topology(top.dump(), "v.json"), FileError);
}

}  // namespace
}  // namespace collkit
