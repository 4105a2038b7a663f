// A what-if grid (`collkit sweep`, docs/SWEEP.md): one JSON file that names a
// base topology, the parameters to vary (nodes, NICs per node, NIC and NVLink
// bandwidth, any field of the topology file, the NCCL version) and what to
// evaluate at every combination: collectives x sizes through the simulator,
// or models x batches through the planner. Reading the file checks every
// field and every topology of the grid before anything is evaluated; a bad
// one is a FileError naming the grid file, the field and the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/dtypes.h"
#include "core/json.h"
#include "core/nccl_version.h"

namespace collkit {

enum class GridKind { simulate, plan };

// One varied parameter and its values, in the file's order. `pointer` is
// the JSON pointer into the topology file it sets (empty for nccl_version,
// which is the model's, not the machine's).
struct GridAxis {
  std::string name;     // as written in "vary": "nodes", "/generator/inter/latency_us", ...
  std::string pointer;  // "/generator/nodes"; empty: nccl_version
  std::vector<Json> values;
};

struct Grid {
  std::string file;  // the grid file, for messages
  GridKind kind = GridKind::simulate;
  std::string topology_file;  // resolved against the grid file's folder
  Json topology;              // the base file with "set" applied
  std::vector<GridAxis> axes;
  // simulate
  std::vector<Collective> collectives;
  std::vector<std::string> algorithms;  // default {"nccl"}
  std::vector<std::int64_t> sizes;      // bytes, as nccl-tests' size flag
  DataType dtype = DataType::float32;
  RedOp op = RedOp::sum;
  // plan
  std::vector<std::string> models;       // resolved paths
  std::vector<std::string> model_names;  // their "name"
  std::vector<std::int64_t> batches;
  DataType plan_dtype = DataType::bfloat16;
  double device_memory = 80.0 * (1ull << 30);
  double device_tflops = 400;

  // Combinations of the axes (the machines and NCCL versions of the grid).
  std::size_t machines() const;
  // What is evaluated on each: collectives x sizes, or models x batches.
  std::size_t per_machine() const;
  std::size_t points() const { return machines() * per_machine(); }
};

// One combination of the axes: the value index of each axis.
std::vector<std::size_t> machine_coordinates(const Grid& grid, std::size_t machine);

// The topology file of a combination (the base with the axes' values set),
// and the NCCL version it names, if an axis does.
Json machine_topology(const Grid& grid, std::size_t machine);
std::optional<NcclVersion> machine_nccl_version(const Grid& grid, std::size_t machine);
// "nodes=4 nic_gbps=25 nccl_version=2.26.2": a machine's label.
std::string machine_label(const Grid& grid, std::size_t machine);

// Reads and checks a grid file (FileError: file, field, value). Every
// machine's topology is built once here, so a value the topology loader
// refuses fails before the sweep starts, naming the grid's axis values.
Grid read_grid(const std::string& path);
Grid parse_grid(const std::string& text, const std::string& path);

}  // namespace collkit
