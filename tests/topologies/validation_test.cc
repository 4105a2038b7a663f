// Every kind of bad topology file gives a FileError naming the file, the
// field (as a path like links[3].bandwidth_gbps) and the value at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/error.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

// The FileError message for `json`, or a failure if it loads.
std::string error_of(const std::string& json, int ranks = 0) {
  try {
    parse_topology(json, "bad.json", ranks);
  } catch (const FileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded without error: " << json;
  return "";
}

void expect_error(const std::string& json, std::initializer_list<const char*> parts,
                  int ranks = 0) {
  std::string msg = error_of(json, ranks);
  EXPECT_EQ(msg.rfind("bad.json", 0), 0u) << msg;
  for (const char* part : parts)
    EXPECT_NE(msg.find(part), std::string::npos) << msg << "\n  lacks: " << part;
}

const char* kLinks = R"({"nodes": [{"id": "g0"}, {"id": "g1"}, {"id": "sw", "switch": true}],
  "links": [%s]})";

std::string explicit_with(const std::string& links) {
  const std::string s = kLinks;
  const std::size_t at = s.find("%s");
  return s.substr(0, at) + links + s.substr(at + 2);
}

TEST(Validation, MalformedJsonGivesLineAndColumn) {
  expect_error("{\n  \"name\": \"x\",\n  @\n}", {"bad.json:3:3:", "malformed JSON"});
  expect_error("{\"generator\": {\"kind\": \"ring\",}}", {"bad.json:1:", "malformed JSON"});
  expect_error("", {"bad.json:1:1:", "malformed JSON"});
}

TEST(Validation, TopLevelMustBeAnObjectWithOneForm) {
  expect_error("[1, 2]", {"(top level)", "expected an object", "[1,2]"});
  expect_error(R"({"name": "x"})", {"missing the network", "generator", "dims", "nodes + links"});
  expect_error(R"({"generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}, "dims": []})",
               {"exactly one of"});
  expect_error(R"({"generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1},
                   "ranks": ["a"]})",
               {"bad.json: ranks:", "only in the explicit form"});
}

TEST(Validation, UnknownKeysEverywhereListValidKeys) {
  expect_error(R"({"nmae": "x", "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"bad.json: nmae: unknown key", "name, description"});
  expect_error(R"({"generator": {"kind": "ring", "rank": 2, "bandwidth_gbps": 1}})",
               {"generator.rank: unknown key", "ranks"});
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1},
                                {"a": "g1", "b": "sw", "bandwith_gbps": 1})"),
               {"links[1].bandwith_gbps: unknown key", "bandwidth_gbps"});
  expect_error(
      R"({"endpoint": {"overhead": 1},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
      {"endpoint.overhead: unknown key",
       "overhead_us, reduce_gbps, copy_gbps, cache_mb, dram_factor, dirty_factor, host_cores"});
  expect_error(R"({"dims": [{"kind": "ring", "size": 2, "bandwidth_gbps": 1, "lat": 3}]})",
               {"dims[0].lat: unknown key"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 2,
                   "intra": {"bandwidth_gbps": 1, "speed": 2},
                   "inter": {"bandwidth_gbps": 1}}})",
               {"generator.intra.speed: unknown key"});
}

TEST(Validation, Bandwidth) {
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1},
                                {"a": "g1", "b": "sw"})"),
               {"links[1].bandwidth_gbps: missing"});
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1},
                                {"a": "g1", "b": "sw", "bandwidth_gbps": 0})"),
               {"links[1].bandwidth_gbps: must be > 0", "got 0"});
  expect_error(R"({"generator": {"kind": "switch", "ranks": 4, "bandwidth_gbps": -5}})",
               {"generator.bandwidth_gbps: must be > 0", "-5"});
  expect_error(R"({"endpoint": {"reduce_gbps": 0},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.reduce_gbps: must be > 0", "got 0"});
  expect_error(R"({"endpoint": {"dram_factor": 2},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.dram_factor: needs cache_mb"});
  expect_error(R"({"endpoint": {"cache_mb": 0, "dram_factor": 2},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.cache_mb: must be > 0", "got 0"});
  expect_error(R"({"endpoint": {"cache_mb": 8, "dram_factor": -1},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.dram_factor: must be > 0", "-1"});
  expect_error(R"({"endpoint": {"receiver_copies": true},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.receiver_copies: needs host_cores"});
  expect_error(R"({"endpoint": {"host_cores": 1, "receiver_copies": 1},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.receiver_copies: expected true or false", "1"});
  expect_error(R"({"endpoint": {"dirty_factor": 0.5},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.dirty_factor: must be >= 1", "0.5"});
  expect_error(R"({"endpoint": {"host_cores": 0},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.host_cores: must be > 0", "got 0"});
  expect_error(R"({"endpoint": {"copy_gbps": -3},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.copy_gbps: must be > 0", "-3"});
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1},
                                {"a": "g1", "b": "sw", "bandwidth_gbps": 1})")
                   .replace(0, 1, R"({"endpoint": {"copy_gbps": "fast"},)"),
               {"endpoint.copy_gbps", "number"});
}

// line_rate_gbps: optional, a bandwidth, never below the link's own.
TEST(Validation, LineRate) {
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 10},
                                {"a": "g1", "b": "sw", "bandwidth_gbps": 10, "line_rate_gbps": 8})"),
               {"links[1].line_rate_gbps: 8 GB/s is below the bandwidth of 10 GB/s"});
  expect_error(R"({"generator": {"kind": "switch", "ranks": 4, "bandwidth_gbps": 5,
                                 "line_rate_gbps": 0}})",
               {"generator.line_rate_gbps: must be > 0", "got 0"});
  expect_error(R"({"generator": {"kind": "switch", "ranks": 4, "bandwidth_gbps": 5,
                                 "line_rate_gbps": "fast"}})",
               {"generator.line_rate_gbps", "number"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 2,
                    "intra": {"kind": "switch", "bandwidth_gbps": 100},
                    "nic_bandwidth_gbps": 20, "nic_line_rate_gbps": 19,
                    "inter": {"kind": "switch", "bandwidth_gbps": 20}}})",
               {"generator.nic_line_rate_gbps: 19 GB/s is below the bandwidth of 20 GB/s"});
  // Carried on the links; a NIC's defaults to the fabric's; none = 0.
  const std::unique_ptr<Topology> t = parse_topology(
      R"({"generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 2,
            "intra": {"kind": "switch", "bandwidth_gbps": 100, "line_rate_gbps": 150},
            "inter": {"kind": "switch", "bandwidth_gbps": 20, "line_rate_gbps": 25}}})",
      "ok.json");
  int intra = 0, nic = 0, fabric = 0;
  for (LinkId id = 0; id < t->num_links(); ++id) {
    const LinkProps l = t->link(id);
    const std::string name = t->link_name(id);
    if (l.bandwidth == 100e9) intra += l.line_rate == 150e9;
    if (l.bandwidth == 20e9)
      (name.find("nic") != std::string::npos && name.find("rail") == std::string::npos &&
               name.find("sw") == std::string::npos
           ? nic
           : fabric) += l.line_rate == 25e9;
  }
  EXPECT_GT(intra, 0);
  EXPECT_GT(nic + fabric, 0);
  for (LinkId id = 0; id < t->num_links(); ++id)
    EXPECT_GT(t->link(id).line_rate, 0) << t->link_name(id);
  const std::unique_ptr<Topology> none = parse_topology(
      R"({"generator": {"kind": "ring", "ranks": 3, "bandwidth_gbps": 5}})", "ok.json");
  EXPECT_EQ(none->link(0).line_rate, 0);
}

TEST(Validation, Latency) {
  expect_error(R"({"generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1,
                   "latency_us": -1}})",
               {"generator.latency_us: must be >= 0", "-1"});
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1, "latency_us": -0.5},
                                {"a": "g1", "b": "sw", "bandwidth_gbps": 1})"),
               {"links[0].latency_us: must be >= 0", "-0.5"});
  expect_error(R"({"endpoint": {"overhead_us": -2},
                   "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"endpoint.overhead_us: must be >= 0", "-2"});
}

TEST(Validation, DisconnectedGraphNamesAnUnreachableRank) {
  expect_error(R"({"nodes": [{"id": "g0"}, {"id": "g1"}, {"id": "g2"}, {"id": "g3"}],
                   "links": [{"a": "g0", "b": "g1", "bandwidth_gbps": 1},
                             {"a": "g2", "b": "g3", "bandwidth_gbps": 1}]})",
               {"bad.json: links:", "disconnected", "rank 2", "\"g2\"", "rank 0"});
}

TEST(Validation, OneWayLinksNameTheDirectionThatIsMissing) {
  // g0 -> g1 only: g1 is reached from rank 0 but cannot reach it.
  expect_error(R"({"nodes": [{"id": "g0"}, {"id": "g1"}],
                   "links": [{"a": "g0", "b": "g1", "bandwidth_gbps": 1, "directed": true}]})",
               {"bad.json: links: the graph is disconnected: rank 1 (node \"g1\") cannot reach "
                "rank 0 (node \"g0\")"});
  // g1 -> g0 only: rank 0 cannot reach g1.
  expect_error(R"({"nodes": [{"id": "g0"}, {"id": "g1"}],
                   "links": [{"a": "g1", "b": "g0", "bandwidth_gbps": 1, "directed": true}]})",
               {"bad.json: links: the graph is disconnected: rank 1 (node \"g1\") cannot be "
                "reached from rank 0 (node \"g0\")"});
}

TEST(Validation, MoreRanksThanEndpoints) {
  expect_error(R"({"generator": {"kind": "switch", "ranks": 16, "bandwidth_gbps": 1}})",
               {"--ranks", "20", "16 endpoints"}, 20);
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1},
                                {"a": "g1", "b": "sw", "bandwidth_gbps": 1})"),
               {"--ranks", "3", "2 endpoints"}, 3);
  expect_error(R"({"generator": {"kind": "switch", "ranks": 16, "bandwidth_gbps": 1}})",
               {"--ranks", "-1"}, -1);
}

TEST(Validation, NodesAndLinks) {
  expect_error(R"({"nodes": [{"id": "g0"}, {"id": "g1"}, {"id": "g0"}], "links": []})",
               {"nodes[2].id", "duplicate node id \"g0\"", "nodes[0]"});
  expect_error(explicit_with(R"({"a": "g0", "b": "g9", "bandwidth_gbps": 1})"),
               {"links[0].b", "unknown node \"g9\""});
  expect_error(explicit_with(R"({"a": "g0", "b": "g0", "bandwidth_gbps": 1})"),
               {"links[0].b", "itself"});
  expect_error(explicit_with(R"({"b": "g0", "bandwidth_gbps": 1})"), {"links[0].a: missing"});
  expect_error(R"({"nodes": [{"id": "g0"}]})", {"links: missing"});
  expect_error(R"({"nodes": [{"id": "s", "switch": true}], "links": []})", {"no endpoints"});
  std::string ranks = explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": 1},
                                       {"a": "g1", "b": "sw", "bandwidth_gbps": 1})");
  ranks.insert(ranks.rfind('}'), R"(, "ranks": ["g0", "sw"])");
  expect_error(ranks, {"ranks[1]", "\"sw\" is a switch"});
  ranks.replace(ranks.find("\"sw\"]"), 4, "\"g0\"");
  expect_error(ranks, {"ranks[1]", "\"g0\" listed twice"});
}

TEST(Validation, UnknownKindsListTheValidOnes) {
  expect_error(R"({"generator": {"kind": "mesh", "ranks": 4, "bandwidth_gbps": 1}})",
               {"generator.kind", "\"mesh\"",
                "ring, fully_connected, switch, torus, hypercube, "
                "fat_tree, hierarchical"});
  expect_error(R"({"dims": [{"kind": "ring", "size": 2, "bandwidth_gbps": 1},
                            {"kind": "tree", "size": 2, "bandwidth_gbps": 1}]})",
               {"dims[1].kind", "\"tree\"", "ring, switch, fully_connected"});
  expect_error(R"({"generator": {"kind": "torus", "shape": [2, 2], "bandwidth_gbps": 1,
                   "routing": "adaptive"}})",
               {"generator.routing", "\"adaptive\"", "dimension_order, shortest"});
}

TEST(Validation, WrongTypes) {
  expect_error(R"({"generator": {"kind": "ring", "ranks": "8", "bandwidth_gbps": 1}})",
               {"generator.ranks: expected an integer", "\"8\""});
  expect_error(R"({"generator": {"kind": "ring", "ranks": 8.5, "bandwidth_gbps": 1}})",
               {"generator.ranks: expected an integer", "8.5"});
  expect_error(explicit_with(R"({"a": "g0", "b": "sw", "bandwidth_gbps": "fast"})"),
               {"links[0].bandwidth_gbps: expected a number", "\"fast\""});
  expect_error(R"({"nodes": [{"id": "g0", "switch": "yes"}], "links": []})",
               {"nodes[0].switch: expected true or false", "\"yes\""});
  expect_error(R"({"nodes": [{"id": 7}], "links": []})", {"nodes[0].id: expected a string", "7"});
  expect_error(R"({"name": 3, "generator": {"kind": "ring", "ranks": 2, "bandwidth_gbps": 1}})",
               {"bad.json: name: expected a string", "3"});
  expect_error(R"({"nodes": {"id": "g0"}, "links": []})", {"nodes: expected an array"});
  expect_error(R"({"generator": [1]})", {"generator: expected an object"});
  expect_error(R"({"generator": {"kind": "torus", "shape": [4, "x"], "bandwidth_gbps": 1}})",
               {"generator.shape[1]: expected an integer", "\"x\""});
}

TEST(Validation, GeneratorParameters) {
  expect_error(R"({"generator": {"kind": "ring", "ranks": 0, "bandwidth_gbps": 1}})",
               {"generator.ranks: must be at least 1", "got 0"});
  expect_error(R"({"generator": {"kind": "hypercube", "ranks": 12, "bandwidth_gbps": 1}})",
               {"generator.ranks", "power of two", "12"});
  expect_error(R"({"generator": {"kind": "hypercube", "ranks": 16, "dimension": 3,
                   "bandwidth_gbps": 1}})",
               {"generator.ranks", "disagrees with dimension 3"});
  expect_error(R"({"generator": {"kind": "fat_tree", "k": 5, "bandwidth_gbps": 1}})",
               {"generator.k: must be even", "5"});
  expect_error(R"({"generator": {"kind": "fat_tree", "k": 4, "oversubscription": 0.5,
                   "bandwidth_gbps": 1}})",
               {"generator.oversubscription: must be >= 1", "0.5"});
  expect_error(R"({"generator": {"kind": "torus", "shape": [], "bandwidth_gbps": 1}})",
               {"generator.shape", "at least one dimension"});
  expect_error(R"({"generator": {"kind": "torus", "shape": [1024, 1024, 1024, 2],
                   "bandwidth_gbps": 1}})",
               {"generator.shape[3]", "2^30"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 2,
                   "intra": {"bandwidth_gbps": 1}}})",
               {"generator.inter: missing"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 2,
                   "intra": {"bandwidth_gbps": 1}, "nics_per_node": 3,
                   "inter": {"bandwidth_gbps": 1}}})",
               {"generator.nics_per_node: must be at most 2", "3"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 8, "devices_per_node": 4,
                   "intra": {"bandwidth_gbps": 1}, "nics_per_node": 4,
                   "inter": {"kind": "fat_tree", "k": 4, "bandwidth_gbps": 1}}})",
               {"generator.inter.k", "16 host ports", "32 NICs"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 1, "devices_per_node": 2,
                   "intra": {"bandwidth_gbps": 1}, "nic_latency_us": 1}})",
               {"generator.nic_latency_us", "needs an inter fabric"});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 1, "devices_per_node": 2,
                   "intra": {"kind": "mesh", "bandwidth_gbps": 1}}})",
               {"generator.intra.kind", "\"mesh\""});
  expect_error(R"({"generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 2,
                   "intra": {"bandwidth_gbps": 1},
                   "inter": {"kind": "switch", "k": 4, "bandwidth_gbps": 1}}})",
               {"generator.inter.k", "only for kind fat_tree"});
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(Validation, FilesOnDiskAreNamedInErrors) {
  std::string path =
      write_temp("collkit_bad_topology.json", R"({"generator": {"kind": "ring", "ranks": 4}})");
  try {
    load_topology(path);
    ADD_FAILURE() << "loaded";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": generator.bandwidth_gbps: missing"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_topology("/nonexistent/topology.json"), FileError);
  std::filesystem::remove(path);
}

TEST(Validation, AstraYamlErrors) {
  auto astra_error = [](const std::string& yaml) -> std::string {
    std::string path = write_temp("collkit_bad_astra.yml", yaml);
    try {
      load_topology("astra:" + path);
    } catch (const FileError& e) {
      std::filesystem::remove(path);
      return e.what();
    }
    ADD_FAILURE() << "loaded: " << yaml;
    return "";
  };
  auto has = [](const std::string& msg, const char* part) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg << "\n  lacks: " << part;
  };
  std::string msg =
      astra_error("topology: [Ring]\nnpus_count: [4]\nbandwidth: [50]\nlatency: [5]\nfoo: 1\n");
  has(msg, "astra:");
  has(msg, "foo: unknown key");
  msg = astra_error(
      "topology: [Ring, Mesh]\nnpus_count: [4, 2]\nbandwidth: [50, 5]\nlatency: [5, 5]\n");
  has(msg, "topology[1]");
  has(msg, "'Mesh'");
  msg = astra_error(
      "topology: [Ring, Switch]\nnpus_count: [4]\nbandwidth: [50, 5]\nlatency: [5, 5]\n");
  has(msg, "npus_count: has 1 entries but topology has 2");
  msg = astra_error("topology: [Ring]\nnpus_count: [4]\nbandwidth: [0]\nlatency: [5]\n");
  has(msg, "bandwidth[0]: must be > 0");
  msg = astra_error("topology: [Ring]\nnpus_count: [4]\nbandwidth: [fast]\nlatency: [5]\n");
  has(msg, "bandwidth[0]: expected a number, got 'fast'");
  msg = astra_error("topology: [Ring]\nnpus_count: [4]\nlatency: [5]\n");
  has(msg, "bandwidth: missing");
  msg = astra_error("topology: [Ring\nnpus_count: [4]\n");
  has(msg, "malformed YAML");
}

}  // namespace
}  // namespace collkit
