// The what-if grid file (whatif/grid.h): its points in order, the machines
// its axes make (checked against the shipped files they should equal), and
// one line naming file, field and value for every kind of bad file.
#include "whatif/grid.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/error.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

const std::string kSource = COLLKIT_SOURCE_DIR;

// A grid file written next to the shipped grids, so its relative paths
// resolve as theirs do.
std::string write_grid(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "collkit_whatif";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string topology_path() { return kSource + "/topologies/h100-cluster-2x8.json"; }

std::string grid_text(const std::string& body) {
  return "{\"sweep\": \"simulate\", \"topology\": \"" + topology_path() + "\", " + body + "}";
}

TEST(Grid, ShippedSmallGridHasItsPointsInNestedLoopOrder) {
  const Grid g = read_grid(kSource + "/sweeps/small.json");
  ASSERT_EQ(g.axes.size(), 2u);
  EXPECT_EQ(g.machines(), 6u);     // nodes 1, 2, 4 x nic_gbps 24, 48
  EXPECT_EQ(g.per_machine(), 4u);  // 2 collectives x 2 sizes
  EXPECT_EQ(g.points(), 24u);
  // The last axis varies fastest.
  EXPECT_EQ(machine_label(g, 0), "nodes=1 nic_gbps=24");
  EXPECT_EQ(machine_label(g, 1), "nodes=1 nic_gbps=48");
  EXPECT_EQ(machine_label(g, 2), "nodes=2 nic_gbps=24");
  EXPECT_EQ(machine_label(g, 5), "nodes=4 nic_gbps=48");
  EXPECT_EQ(machine_coordinates(g, 3), (std::vector<std::size_t>{1, 1}));
  EXPECT_EQ(g.algorithms, (std::vector<std::string>{"nccl", "ring"}));
  EXPECT_EQ(g.sizes, (std::vector<std::int64_t>{64 << 10, 16 << 20}));
  EXPECT_EQ(g.topology_file, kSource + "/topologies/h100-cluster-2x8.json");
  EXPECT_FALSE(machine_nccl_version(g, 0).has_value());
}

TEST(Grid, AxesSetTheTopologyFields) {
  const Grid g = read_grid(kSource + "/sweeps/small.json");
  const Json t = machine_topology(g, 4);  // nodes=4 nic_gbps=24
  EXPECT_EQ(t["generator"]["nodes"], 4);
  EXPECT_EQ(t["generator"]["inter"]["bandwidth_gbps"], 24);
  // "set" removed the line rate (a 96 GB/s NIC would be above it).
  EXPECT_FALSE(t["generator"]["inter"].contains("line_rate_gbps"));
  // Everything else is the base file's.
  const Json base = Json::parse(std::ifstream(topology_path()));
  EXPECT_EQ(t["generator"]["intra"], base["generator"]["intra"]);
  EXPECT_EQ(t["nccl"], base["nccl"]);
  const std::unique_ptr<Topology> topo = parse_topology(t.dump(), "x");
  EXPECT_EQ(topo->num_ranks(), 32);
  // nodes=4 nic_gbps=48 builds the shipped 4x8 cluster's links.
  const std::unique_ptr<Topology> ours = parse_topology(machine_topology(g, 5).dump(), "x");
  const std::unique_ptr<Topology> shipped =
      load_topology(kSource + "/topologies/h100-cluster-4x8.json");
  ASSERT_EQ(ours->num_ranks(), shipped->num_ranks());
  std::vector<LinkId> a, b;
  ours->route(0, 31, a);
  shipped->route(0, 31, b);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(ours->link(a[i]).bandwidth, shipped->link(b[i]).bandwidth);
    EXPECT_DOUBLE_EQ(ours->link(a[i]).latency, shipped->link(b[i]).latency);
  }
}

TEST(Grid, NcclVersionAxisAndJsonPointers) {
  const std::string path = write_grid(
      "versions.json",
      grid_text("\"vary\": {\"nccl_version\": [\"2.18.3\", \"2.29.2\"], "
                "\"/generator/inter/latency_us\": [1.35, 3]}, \"collectives\": \"reduce_scatter\", "
                "\"sizes\": [1048576]"));
  const Grid g = read_grid(path);
  EXPECT_EQ(g.machines(), 4u);
  EXPECT_EQ(machine_label(g, 3), "nccl_version=2.29.2 /generator/inter/latency_us=3");
  ASSERT_TRUE(machine_nccl_version(g, 2).has_value());
  EXPECT_EQ(to_string(*machine_nccl_version(g, 2)), "2.29.2");
  EXPECT_EQ(machine_topology(g, 3)["generator"]["inter"]["latency_us"], 3);
  EXPECT_EQ(g.collectives, (std::vector<Collective>{Collective::reduce_scatter}));
  EXPECT_EQ(g.algorithms, (std::vector<std::string>{"nccl"}));
}

// Every bad file: a FileError whose one line names the file, the field and
// the value.
TEST(Grid, BadFilesNameFileFieldAndValue) {
  struct Case {
    std::string body;
    std::string expected;
  };
  const std::string ok_rest = "\"collectives\": [\"all_reduce\"], \"sizes\": [\"1M\"]";
  const Case cases[] = {
      {"\"vary\": {\"nodes\": [2]}, " + ok_rest + ", \"colour\": 1", "colour: unknown key"},
      {"\"vary\": {\"node\": [2]}, " + ok_rest, "vary.node: unknown parameter"},
      {"\"vary\": {\"nodes\": []}, " + ok_rest, "vary.nodes: expected a non-empty list"},
      {"\"vary\": {\"nodes\": [2, 2]}, " + ok_rest, "vary.nodes[1]: 2 appears twice"},
      {"\"vary\": {\"nodes\": [2, 0]}, " + ok_rest, "(nodes=0)"},
      {"\"vary\": {\"/generator/fabric/x\": [2]}, " + ok_rest,
       "vary./generator/fabric/x: the topology"},
      {"\"vary\": {\"nccl_version\": [\"2.10.3\"]}, " + ok_rest, "vary.nccl_version[0]"},
      {"\"vary\": {\"nodes\": [2]}, \"collectives\": [\"allreduse\"], \"sizes\": [\"1M\"]",
       "collectives: \"allreduse\""},
      {"\"vary\": {\"nodes\": [2]}, \"collectives\": [\"all_reduce\"], \"sizes\": [\"1Q\"]",
       "sizes: expected a size in bytes (K/M/G suffixes), got \"1Q\""},
      {"\"vary\": {\"nodes\": [2]}, \"collectives\": [\"all_reduce\"], \"sizes\": []",
       "sizes: an empty list"},
      {"\"vary\": {\"nodes\": [2]}, \"collectives\": [\"all_reduce\"], \"sizes\": [\"1M\"], "
       "\"algorithms\": [\"rign\"]",
       "(nodes=2)"},
      {"\"vary\": {\"nodes\": [2]}, \"collectives\": [\"all_reduce\"], \"sizes\": [\"1M\"], "
       "\"algorithms\": [\"all\"]",
       "algorithms: \"all\": name one algorithm per entry"},
      {"\"set\": {\"/nope/x\": 1}, " + ok_rest, "set./nope/x: the topology"},
      {"\"vary\": {\"nic_gbps\": [96]}, " + ok_rest, "line_rate_gbps"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path = write_grid("bad" + std::to_string(i++) + ".json", grid_text(c.body));
    try {
      read_grid(path);
      ADD_FAILURE() << "accepted: " << c.body;
    } catch (const FileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path, 0), 0u) << what;
      EXPECT_NE(what.find(c.expected), std::string::npos) << what << "\nexpected: " << c.expected;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(e.exit_code(), 2);
    }
  }
  // Not JSON, no kind, a wrong kind, a missing topology file.
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{", "not JSON"},
           {"{}", "sweep: missing"},
           {"{\"sweep\": \"bench\"}", "sweep: expected simulate or plan, got \"bench\""},
           {"{\"sweep\": \"plan\", \"topology\": \"nowhere.json\"}", "topology: \"nowhere.json\""},
       }) {
    const std::string path = write_grid("bad" + std::to_string(i++) + ".json", text);
    try {
      read_grid(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

TEST(Grid, PlanGridReadsModelsAndBatches) {
  const Grid g = read_grid(kSource + "/sweeps/plan-small.json");
  EXPECT_EQ(g.kind, GridKind::plan);
  EXPECT_EQ(g.models.size(), 2u);
  EXPECT_EQ(g.batches, (std::vector<std::int64_t>{64, 256}));
  EXPECT_EQ(g.device_memory, 40.0 * (1ull << 30));
  EXPECT_EQ(g.model_names, (std::vector<std::string>{"gpt2-1.5b", "llama2-7b"}));
  EXPECT_EQ(g.points(), 4u * 4u);
  const std::string bad =
      write_grid("badplan.json", "{\"sweep\": \"plan\", \"topology\": \"" + topology_path() +
                                     "\", \"models\": [\"" + kSource +
                                     "/models/gpt2-124m.json\"], \"batch\": [0]}");
  EXPECT_THROW(
      {
        try {
          read_grid(bad);
        } catch (const FileError& e) {
          EXPECT_NE(std::string(e.what()).find("batch: expected an integer >= 1, got 0"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      FileError);
}

}  // namespace
}  // namespace collkit
