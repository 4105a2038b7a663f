// The shipped topology files and the ASTRA-sim YAML import.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "route_check.h"
#include "topologies/astra.h"
#include "topologies/sha256.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing::expect_connected_route;
using testing::route_names;

const fs::path kDir = fs::path(COLLKIT_SOURCE_DIR) / "topologies";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<Topology> shipped(const std::string& stem, int ranks = 0) {
  return load_topology((kDir / (stem + ".json")).string(), ranks);
}

TEST(ShippedFiles, EveryFileLoadsWithMetadataAndConnectedRoutes) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    auto t = load_topology(entry.path().string());
    EXPECT_EQ(t->name, entry.path().stem().string());
    EXPECT_FALSE(t->description.empty());
    EXPECT_NE(t->description.find("HARDWARE.md"), std::string::npos) << "cite the figures";
    EXPECT_EQ(t->file, entry.path().string());
    EXPECT_EQ(t->sha256, sha256_hex(slurp(entry.path())));
    EXPECT_GE(t->num_ranks(), 2);
    // A per-message cost: an endpoint overhead, or (GPU files) the per-hop
    // latencies of the protocol every schedule is timed with.
    if (t->default_protocol != Protocol::none) {
      EXPECT_TRUE(t->protocol(t->default_protocol).set);
      EXPECT_GT(t->protocol(t->default_protocol).base_latency, 0);
    } else {
      EXPECT_GT(t->endpoint(0).overhead, 0);
    }
    // Routes from every 7th rank to every rank (every 997th beyond 1024 ranks).
    const int p = t->num_ranks();
    const int src_step = p > 1024 ? 997 : 7, dst_step = p > 1024 ? 61 : 1;
    for (int s = 0; s < p; s += src_step) {
      for (int d = 0; d < p; d += dst_step) {
        if (s != d) expect_connected_route(*t, s, d);
      }
    }
  }
  EXPECT_GE(count, 10);
}

TEST(ShippedFiles, Figures) {
  auto dgx = shipped("dgx-h100");
  EXPECT_EQ(dgx->num_ranks(), 8);
  EXPECT_EQ(dgx->link(0).bandwidth, 370.8e9);
  EXPECT_EQ(dgx->endpoint(3).overhead, 0);
  EXPECT_EQ(dgx->endpoint(3).reduce_bw, 1000e9);
  EXPECT_TRUE(dgx->endpoint(3).pipelined);
  EXPECT_DOUBLE_EQ(dgx->endpoint(3).launch, 4e-6);
  EXPECT_EQ(dgx->devices_per_node, 8);
  EXPECT_EQ(dgx->default_protocol, Protocol::simple);
  // NCCL's per-hop figures, half per link of a GPU-switch-GPU hop.
  EXPECT_DOUBLE_EQ(dgx->link(0).latency_for(Protocol::ll), 0.3e-6);
  EXPECT_DOUBLE_EQ(dgx->link(0).latency_for(Protocol::ll128), 0.95e-6);
  EXPECT_DOUBLE_EQ(dgx->link(0).latency_for(Protocol::simple), 1.7e-6);
  EXPECT_DOUBLE_EQ(dgx->protocol(Protocol::ll).efficiency, 0.5);
  EXPECT_DOUBLE_EQ(dgx->protocol(Protocol::simple).base_latency, 8.4e-6);
  EXPECT_DOUBLE_EQ(dgx->protocol(Protocol::simple).chunk_bytes, 512 * 1024.0);
  double nvls = 0;
  EXPECT_EQ(dgx->in_network_side(0, nvls), 1);  // rank 0 -> the NVSwitch
  EXPECT_EQ(nvls, 272e9);
  EXPECT_EQ(dgx->in_network_side(1, nvls), -1);
  EXPECT_EQ(dgx->nccl.ring_channels, 12);
  EXPECT_EQ(dgx->nccl.nvls_heads, 8);
  EXPECT_EQ(dgx->nccl.runtime_channels, 24);

  auto a100 = shipped("dgx-a100");
  EXPECT_EQ(a100->link(0).bandwidth, 240e9);
  EXPECT_EQ(a100->nccl.gpu, NcclGpu::a100);
  EXPECT_EQ(a100->in_network_side(0, nvls), 0);  // no NVLS before Hopper

  for (int nodes : {2, 4, 16, 128, 2048}) {
    auto c = shipped("h100-cluster-" + std::to_string(nodes) + "x8");
    EXPECT_EQ(c->num_ranks(), 8 * nodes);
    EXPECT_EQ(c->node_of(8 * nodes - 1), nodes - 1);
  }

  auto h100 = shipped("h100-cluster-4x8");
  EXPECT_EQ(h100->num_ranks(), 32);
  EXPECT_EQ(route_names(*h100, 5, 29),
            (std::vector<std::string>{"n0.g5->n0.nic5.tx", "n0.nic5.tx->rail5", "rail5->n3.nic5.rx",
                                      "n3.nic5.rx->n3.g5"}));

  // The A100 cluster at the H100 files' standard (issue 42): protocols,
  // pipelined endpoints, launch cost, NCCL's A100 graph.
  auto a100c = shipped("a100-cluster-2x8");
  EXPECT_EQ(a100c->num_ranks(), 16);
  EXPECT_EQ(a100c->endpoint(0).reduce_bw, 680e9);
  EXPECT_TRUE(a100c->endpoint(0).pipelined);
  EXPECT_DOUBLE_EQ(a100c->endpoint(0).launch, 4e-6);
  EXPECT_EQ(a100c->default_protocol, Protocol::simple);
  EXPECT_EQ(a100c->nccl.gpu, NcclGpu::a100);
  EXPECT_EQ(a100c->nccl.ring_channels, 12);

  // Blackwell: NVLink 5 at NCCL's 18 x 40 GB/s (900 line rate), NVLS 8
  // heads x 80 x 0.74 a port.
  auto b200 = shipped("dgx-b200");
  EXPECT_EQ(b200->link(0).bandwidth, 720e9);
  EXPECT_EQ(b200->link(0).line_rate, 900e9);
  EXPECT_EQ(b200->in_network_side(0, nvls), 1);
  EXPECT_DOUBLE_EQ(nvls, 473.6e9);
  EXPECT_EQ(b200->nccl.gpu, NcclGpu::b200);
  // A GB200 NVL72 rack is one node of 72 GPUs; the generator's nodes are racks.
  auto nvl72 = shipped("gb200-nvl72-cluster-2");
  EXPECT_EQ(nvl72->num_ranks(), 144);
  EXPECT_EQ(nvl72->node_of(71), 0);
  EXPECT_EQ(nvl72->node_of(72), 1);
  EXPECT_EQ(nvl72->nccl.gpu, NcclGpu::gb200);
  EXPECT_EQ(shipped("gb200-nvl72-cluster-20")->num_ranks(), 1440);
  // MI300X: a full mesh, one 48 GB/s xGMI link to each peer (64 line rate).
  auto mi = shipped("mi300x-8");
  std::vector<LinkId> r;
  for (int peer = 1; peer < 8; ++peer) {
    mi->route(0, peer, r);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(mi->link(r[0]).bandwidth, 48e9);
    EXPECT_EQ(mi->link(r[0]).line_rate, 64e9);
  }
  EXPECT_TRUE(is_amd(mi->nccl.gpu));

  EXPECT_EQ(shipped("ring-8")->num_ranks(), 8);
  EXPECT_EQ(shipped("switch-16")->num_ranks(), 16);
  EXPECT_EQ(shipped("torus-4x4")->num_links(), 64);
  EXPECT_EQ(shipped("hypercube-64")->num_ranks(), 64);
  EXPECT_EQ(shipped("fat-tree-k8")->num_ranks(), 128);
  EXPECT_EQ(shipped("fat-tree-k8")->num_link_classes(), 1);
  EXPECT_EQ(shipped("fat-tree-k8-2to1")->num_link_classes(), 2);
}

// Every shipped GPU file (a default protocol) has what NCCL's model needs
// (the loader warns of nothing) and gives every link its line rate.
TEST(ShippedFiles, GpuFilesAreCompleteWithLineRates) {
  int gpu_files = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".json") continue;
    const std::unique_ptr<Topology> t = load_topology(entry.path().string());
    SCOPED_TRACE(entry.path().string());
    if (t->default_protocol == Protocol::none) {
      EXPECT_TRUE(t->warnings.empty());
      continue;
    }
    ++gpu_files;
    EXPECT_TRUE(t->warnings.empty()) << t->warnings.front();
    for (LinkId id = 0; id < t->num_links(); id += std::max<LinkId>(1, t->num_links() / 4096))
      EXPECT_GE(t->link(id).line_rate, t->link(id).bandwidth) << t->link_name(id);
    EXPECT_GT(t->link(0).line_rate, 0);
  }
  EXPECT_GE(gpu_files, 25);
}

// A file that looks like a GPU machine but lacks some of its keys: one
// warning per key, naming it (the a100-cluster-2x8.json of before issue 42
// had no protocols, pipelined endpoints, launch cost or nccl block; with
// only a launch cost it gets the other four).
TEST(ShippedFiles, LoaderNamesWhatAGpuFileLacks) {
  const std::string text = R"({"endpoint": {"launch_us": 4.0},
    "generator": {"kind": "switch", "ranks": 8, "bandwidth_gbps": 240, "latency_us": 0.3}})";
  const std::unique_ptr<Topology> t = parse_topology(text, "partial.json");
  ASSERT_EQ(t->warnings.size(), 3u);
  EXPECT_EQ(t->warnings[0].rfind("protocols: missing: the file describes a GPU machine (it has "
                                 "endpoint.launch_us)",
                                 0),
            0u)
      << t->warnings[0];
  EXPECT_EQ(t->warnings[1].rfind("endpoint.pipelined: missing", 0), 0u) << t->warnings[1];
  EXPECT_EQ(t->warnings[2].rfind("nccl.gpu: missing", 0), 0u) << t->warnings[2];
  // A CPU file (none of the GPU keys): nothing to say.
  EXPECT_TRUE(parse_topology(R"({"generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1}})",
                             "cpu.json")
                  ->warnings.empty());
  // Protocols without LL128: that one is named.
  const std::unique_ptr<Topology> u = parse_topology(
      R"({"endpoint": {"launch_us": 4.0, "pipelined": true}, "nccl": {"gpu": "H100"},
          "protocols": {"LL": {"efficiency": 0.5}, "Simple": {}},
          "generator": {"kind": "switch", "ranks": 8, "bandwidth_gbps": 240}})",
      "p.json");
  ASSERT_EQ(u->warnings.size(), 1u);
  EXPECT_EQ(u->warnings[0].rfind("protocols.LL128: missing", 0), 0u) << u->warnings[0];
}

TEST(ShippedFiles, DumbbellCrossesTheThinLink) {
  auto t = shipped("dumbbell");
  EXPECT_EQ(t->num_ranks(), 8);
  EXPECT_EQ(t->num_link_classes(), 2);
  std::vector<LinkId> r;
  for (int s = 0; s < 4; ++s) {
    t->route(s, s + 4, r);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(t->link_name(r[1]), "s0->s1");
    EXPECT_EQ(t->link(r[1]).bandwidth, 12e9);
    t->route(s + 4, s, r);
    EXPECT_EQ(t->link_name(r[1]), "s1->s0");
  }
  t->route(0, 1, r);
  EXPECT_EQ(r.size(), 2u);
}

TEST(ShippedFiles, FewerRanksThanEndpoints) {
  auto t = shipped("fat-tree-k8", 20);
  EXPECT_EQ(t->num_ranks(), 20);
  EXPECT_EQ(t->num_endpoints(), 128);
}

TEST(Astra, ImportsAnalyticalYamlAsDims) {
  fs::path path = fs::temp_directory_path() / "collkit_astra_3d.yml";
  const std::string yaml =
      "topology: [ Ring, FullyConnected, Switch ]\n"
      "npus_count: [ 4, 2, 2 ]  # NPUs\n"
      "bandwidth: [ 50.0, 100.0, 200.0 ]  # GB/s\n"
      "latency: [ 500.0, 100.0, 50.0 ]  # ns\n";
  std::ofstream(path) << yaml;
  auto t = load_topology("astra:" + path.string());
  EXPECT_EQ(t->num_ranks(), 16);
  EXPECT_EQ(t->name, "collkit_astra_3d");
  EXPECT_EQ(t->file, "astra:" + path.string());
  EXPECT_EQ(t->sha256, sha256_hex(yaml));
  EXPECT_NE(t->description.find("ring(4) x fully_connected(2) x switch(2)"), std::string::npos)
      << t->description;
  // Ring of 4: 8 links; FC of 2: 16; switch of 2: 32.
  EXPECT_EQ(t->num_links(), 16 * 2 + 16 * 1 + 16 * 2);
  EXPECT_EQ(t->num_nodes(), 16 + 8);
  EXPECT_EQ(t->num_link_classes(), 3);
  // Rank 15 = (3, 1, 1): one step back round the ring, one FC link, two switch links.
  std::vector<LinkId> r;
  t->route(0, 15, r);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(t->link_name(r[0]), "r0->r3");
  EXPECT_EQ(t->link(r[0]).bandwidth, 50.0 * kAstraBytesPerGB);
  EXPECT_DOUBLE_EQ(t->link(r[0]).latency, 500e-9);
  EXPECT_DOUBLE_EQ(t->link(r[3]).latency, 50e-9);
  auto four = load_topology("astra:" + path.string(), 4);
  EXPECT_EQ(four->num_ranks(), 4);
  fs::remove(path);
}

}  // namespace
}  // namespace collkit
