// collkit's NCCL cost model (sim/nccl.h) against what NCCL itself printed:
// the tuning table (NCCL_DEBUG_SUBSYS=TUNING, latency/bandwidth of every
// collective x algorithm x protocol) and the algorithm, protocol and
// channels it picked for each call, in public INFO logs
// (tests/data/nccl-logs/SOURCES.md). Nothing here comes from NCCL's source:
// the expected figures are the ones NCCL computed on the machine.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/nccl_version.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

const std::string kData = std::string(COLLKIT_SOURCE_DIR) + "/tests/data/nccl-logs/";
const std::string kTopologies = std::string(COLLKIT_SOURCE_DIR) + "/topologies/";

struct Cell {
  std::string function;   // NCCL's name: "AllReduce"
  std::string algorithm;  // "Ring"
  std::string protocol;   // "LL128"
  double latency = 0, bandwidth = 0;
};
struct Pick {
  std::string function;
  std::int64_t bytes = 0;
  std::string algorithm;  // "RING", "NVLS", ...
  std::string protocol;   // "LL", "SIMPLE"
  int channels = 0;
};
struct Log {
  std::optional<NcclVersion> version;
  std::vector<Cell> cells;
  std::vector<Pick> picks;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  const auto e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Reads NCCL's INFO lines: the version, the table's blocks (an "Algorithm"
// line naming up to three algorithms, a "Protocol" line, then a row per
// collective of "lat/bw" cells) and the pick lines.
Log read_log(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  Log log;
  std::vector<std::string> algorithms, protocols;
  const std::regex version(R"(NCCL INFO NCCL version (\S+))");
  const std::regex pick(
      R"(NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, version)) {
      log.version = parse_nccl_version(m[1].str());
      continue;
    }
    if (std::regex_search(line, m, pick)) {
      log.picks.push_back(
          {m[1], std::stoll(m[2]), m[3], m[4], std::stoi(m[6]) - std::stoi(m[5]) + 1});
      continue;
    }
    const auto info = line.find("NCCL INFO ");
    if (info == std::string::npos || line.find('|') == std::string::npos) continue;
    std::vector<std::string> fields = split(line.substr(info + 10), '|');
    const std::string head = trim(fields[0]);
    fields.erase(fields.begin());
    if (head == "Algorithm") {
      algorithms.clear();
      for (const std::string& f : fields)
        if (!trim(f).empty()) algorithms.push_back(trim(f));
    } else if (head == "Protocol") {
      protocols.clear();
      for (const std::string& f : fields)
        if (!trim(f).empty()) protocols.push_back(trim(f));
    } else if (head != "Max NThreads") {
      std::size_t k = 0;
      for (const std::string& f : fields) {
        if (trim(f).empty()) continue;
        const std::vector<std::string> lb = split(f, '/');
        EXPECT_EQ(lb.size(), 2u) << line;
        if (lb.size() != 2 || k / 3 >= algorithms.size()) break;
        log.cells.push_back(
            {head, algorithms[k / 3], protocols[k], std::stod(lb[0]), std::stod(lb[1])});
        ++k;
      }
    }
  }
  return log;
}

Collective collective_of(const std::string& f) {
  if (f == "Broadcast") return Collective::broadcast;
  if (f == "Reduce") return Collective::reduce;
  if (f == "AllGather") return Collective::all_gather;
  if (f == "ReduceScatter") return Collective::reduce_scatter;
  EXPECT_EQ(f, "AllReduce");
  return Collective::all_reduce;
}

NcclVariant variant_of(const std::string& name) {
  // The table's names (ncclAlgoStr) and the pick lines' (upper case, "_").
  const std::map<std::string, NcclVariant> names = {{"Tree", NcclVariant::tree},
                                                    {"TREE", NcclVariant::tree},
                                                    {"Ring", NcclVariant::ring},
                                                    {"RING", NcclVariant::ring},
                                                    {"CollNetDirect", NcclVariant::collnet_direct},
                                                    {"COLLNET_DIRECT", NcclVariant::collnet_direct},
                                                    {"CollNetChain", NcclVariant::collnet_chain},
                                                    {"COLLNET_CHAIN", NcclVariant::collnet_chain},
                                                    {"NVLS", NcclVariant::nvls},
                                                    {"NVLSTree", NcclVariant::nvls_tree},
                                                    {"NVLS_TREE", NcclVariant::nvls_tree},
                                                    {"PAT", NcclVariant::pat}};
  const auto it = names.find(name);
  EXPECT_NE(it, names.end()) << name;
  return it == names.end() ? NcclVariant::p2p : it->second;
}

Protocol protocol_of(const std::string& name) {
  if (name == "LL") return Protocol::ll;
  if (name == "LL128") return Protocol::ll128;
  EXPECT_TRUE(name == "Simple" || name == "SIMPLE") << name;
  return Protocol::simple;
}

// 8x H200, NCCL 2.30.4: every entry of the table NCCL printed (the ones it
// enabled, to its printed precision of 0.1; the ones it left at bandwidth 0
// are not applicable in collkit either) and every all_reduce pick, channels
// included.
TEST(NcclTuningLog, H200NodeNccl2304TableAndPicks) {
  const Log log = read_log(kData + "h200x8_nccl2.30.4_tuning.log");
  ASSERT_EQ(log.version, (NcclVersion{2, 30, 4}));
  ASSERT_EQ(log.cells.size(), 5u * 7 * 3);  // five collectives x 7 algorithms x 3 protocols
  const std::unique_ptr<Topology> t = load_topology(kTopologies + "dgx-h100.json");
  const NcclContext ctx = nccl_context(*t, 8, log.version);
  int enabled = 0;
  for (const Cell& cell : log.cells) {
    SCOPED_TRACE(cell.function + " " + cell.algorithm + " " + cell.protocol);
    const std::optional<NcclModelEntry> e =
        nccl_model_entry(ctx, collective_of(cell.function), variant_of(cell.algorithm),
                         protocol_of(cell.protocol), DataType::float32, RedOp::sum);
    if (cell.bandwidth == 0) {
      EXPECT_FALSE(e) << "collkit weighs what NCCL left out: " << e->latency_us << "/"
                      << e->bandwidth_gbps;
      continue;
    }
    ++enabled;
    ASSERT_TRUE(e) << "NCCL weighs it, collkit does not";
    EXPECT_NEAR(e->latency_us, cell.latency, 0.051);
    EXPECT_NEAR(e->bandwidth_gbps, cell.bandwidth, 0.051);
  }
  EXPECT_EQ(enabled, 21);
  ASSERT_EQ(log.picks.size(), 24u);
  for (const Pick& p : log.picks) {
    const NcclChoice ch = nccl_choose(ctx, collective_of(p.function), p.bytes, DataType::float32,
                                      RedOp::sum, std::nullopt);
    EXPECT_EQ(ch.variant, variant_of(p.algorithm)) << p.bytes;
    EXPECT_EQ(ch.protocol, protocol_of(p.protocol)) << p.bytes;
    EXPECT_EQ(ch.channels, p.channels) << p.bytes;
  }
}

}  // namespace
}  // namespace collkit
