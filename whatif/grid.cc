#include "whatif/grid.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/sizes.h"
#include "planner/planner_model.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

// The named parameters of "vary" and the field of a hierarchical topology
// file each sets (docs/TOPOLOGY.md, "generator").
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table = {
      {"nodes", "/generator/nodes"},
      {"devices_per_node", "/generator/devices_per_node"},
      {"nics_per_node", "/generator/nics_per_node"},
      {"nic_gbps", "/generator/inter/bandwidth_gbps"},
      {"nvlink_gbps", "/generator/intra/bandwidth_gbps"},
      {"nccl_version", ""},
  };
  return table;
}

std::string show(const Json& v) { return v.dump(); }

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw FileError(file_ + ": " + field + ": " + message);
  }

  const Json* find(const Json& obj, const std::string& key) const {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  void keys(const Json& obj, const std::string& where, const std::set<std::string>& known) const {
    for (const auto& [key, value] : obj.items()) {
      if (known.count(key)) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(where.empty() ? key : where + "." + key, "unknown key (known: " + list + ")");
    }
  }

  std::string string(const Json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "expected a string, got " + show(v));
    return v.get<std::string>();
  }

  // A non-empty array, or one value standing for an array of one.
  std::vector<Json> list(const Json& obj, const std::string& key) const {
    const Json* v = find(obj, key);
    if (!v) fail(key, "missing");
    if (!v->is_array()) return {*v};
    if (v->empty()) fail(key, "an empty list: the grid would have no point");
    return std::vector<Json>(v->begin(), v->end());
  }

  std::int64_t positive(const Json& v, const std::string& field) const {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
      fail(field, "expected an integer >= 1, got " + show(v));
    return v.get<std::int64_t>();
  }

  double positive_number(const Json& v, const std::string& field) const {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      fail(field, "expected a number > 0, got " + show(v));
    return v.get<double>();
  }

  // A size as nccl-tests' -b takes it: a number of bytes or "64K", "1G".
  std::int64_t size(const Json& v, const std::string& field) const {
    try {
      if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::int64_t>();
      if (v.is_string()) return parse_size(field, v.get<std::string>());
    } catch (const UsageError& e) {
      fail(field, "expected a size in bytes (K/M/G suffixes), got " + show(v));
    }
    fail(field, "expected a size in bytes (K/M/G suffixes), got " + show(v));
  }

  // Runs `parse` on a string field, turning its UsageError into this file's error.
  template <typename T, typename Parse>
  T named(const Json& v, const std::string& field, Parse parse) const {
    const std::string text = string(v, field);
    try {
      return parse(text);
    } catch (const UsageError& e) {
      fail(field, show(v) + ": " + e.what());
    }
  }

 private:
  std::string file_;
};

std::string index_field(const std::string& key, std::size_t i, std::size_t n) {
  return n == 1 ? key : key + "[" + std::to_string(i) + "]";
}

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path + ": cannot open the " + what);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A path of the grid file, relative to the grid file's folder.
std::string resolve(const std::string& grid_path, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  const std::filesystem::path folder = std::filesystem::path(grid_path).parent_path();
  return folder.empty() ? path : (folder / path).lexically_normal().string();
}

// Sets `value` at `pointer` in `doc`; the parent must exist, and a null
// value removes the key.
void set_pointer(Json& doc, const std::string& pointer, const Json& value, const Reader& rd,
                 const std::string& field, const std::string& topology_file) {
  Json::json_pointer p;
  try {
    p = Json::json_pointer(pointer);
  } catch (const Json::exception& e) {
    rd.fail(field, "'" + pointer + "' is not a JSON pointer (\"/generator/nodes\")");
  }
  if (p.empty()) rd.fail(field, "the pointer '' names the whole topology");
  const Json::json_pointer parent = p.parent_pointer();
  if (!doc.contains(parent) || !doc.at(parent).is_object())
    rd.fail(field, "the topology " + topology_file + " has no object at '" + parent.to_string() +
                       "' to set '" + p.back() + "' in");
  Json& obj = doc.at(parent);
  if (value.is_null())
    obj.erase(p.back());
  else
    obj[p.back()] = value;
}

}  // namespace

std::size_t Grid::machines() const {
  std::size_t n = 1;
  for (const GridAxis& a : axes) n *= a.values.size();
  return n;
}

std::size_t Grid::per_machine() const {
  return kind == GridKind::simulate ? collectives.size() * sizes.size()
                                    : models.size() * batches.size();
}

std::vector<std::size_t> machine_coordinates(const Grid& grid, std::size_t machine) {
  // The last axis varies fastest, as nested loops in the file's order.
  std::vector<std::size_t> at(grid.axes.size());
  for (std::size_t i = grid.axes.size(); i-- > 0;) {
    at[i] = machine % grid.axes[i].values.size();
    machine /= grid.axes[i].values.size();
  }
  return at;
}

Json machine_topology(const Grid& grid, std::size_t machine) {
  Json doc = grid.topology;
  const std::vector<std::size_t> at = machine_coordinates(grid, machine);
  for (std::size_t i = 0; i < grid.axes.size(); ++i) {
    const GridAxis& axis = grid.axes[i];
    if (axis.pointer.empty()) continue;
    doc[Json::json_pointer(axis.pointer)] = axis.values[at[i]];
  }
  // The name says which point of the grid it is.
  doc["name"] =
      doc.value("name", std::string("topology")) + " [" + machine_label(grid, machine) + "]";
  return doc;
}

std::optional<NcclVersion> machine_nccl_version(const Grid& grid, std::size_t machine) {
  const std::vector<std::size_t> at = machine_coordinates(grid, machine);
  for (std::size_t i = 0; i < grid.axes.size(); ++i)
    if (grid.axes[i].pointer.empty())
      return parse_nccl_version(grid.axes[i].values[at[i]].get<std::string>());
  return std::nullopt;
}

std::string machine_label(const Grid& grid, std::size_t machine) {
  const std::vector<std::size_t> at = machine_coordinates(grid, machine);
  std::string label;
  for (std::size_t i = 0; i < grid.axes.size(); ++i) {
    const Json& v = grid.axes[i].values[at[i]];
    label += (label.empty() ? "" : " ") + grid.axes[i].name + "=" +
             (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return label.empty() ? "base" : label;
}

Grid read_grid(const std::string& path) { return parse_grid(read_text(path, "grid file"), path); }

namespace {

// The base topology of "topology", with the fixed edits of "set".
void read_base(const Json& doc, const std::string& path, const Reader& rd, Grid& g) {
  const Json* topo = rd.find(doc, "topology");
  if (!topo) rd.fail("topology", "missing (a JSON topology file)");
  const std::string topo_name = rd.string(*topo, "topology");
  if (topo_name.rfind("astra:", 0) == 0)
    rd.fail("topology", show(*topo) + ": a sweep varies fields of a JSON topology file");
  g.topology_file = resolve(path, topo_name);
  try {
    g.topology = Json::parse(read_text(g.topology_file, "topology file"));
  } catch (const Json::parse_error& e) {
    throw FileError(g.topology_file + ": not JSON (" + e.what() + ")");
  } catch (const FileError& e) {
    rd.fail("topology", show(*topo) + ": " + e.what());
  }
  if (!g.topology.is_object()) throw FileError(g.topology_file + ": expected a JSON object");
  if (const Json* set = rd.find(doc, "set")) {
    if (!set->is_object()) rd.fail("set", "expected an object of JSON pointers, got " + show(*set));
    for (const auto& [pointer, value] : set->items())
      set_pointer(g.topology, pointer, value, rd, "set." + pointer, g.topology_file);
  }
}

// One axis of "vary": a named parameter or a JSON pointer, and its values.
GridAxis read_axis(const std::string& name, const Json& values, const Reader& rd, const Grid& g) {
  const std::string field = "vary." + name;
  GridAxis axis;
  axis.name = name;
  if (name.empty() || name.front() != '/') {
    const auto it = aliases().find(name);
    if (it == aliases().end()) {
      std::string list;
      for (const auto& [alias, target] : aliases()) list += (list.empty() ? "" : ", ") + alias;
      rd.fail(field, "unknown parameter (known: " + list +
                         ", or a JSON pointer into the topology such as "
                         "\"/generator/inter/latency_us\")");
    }
    axis.pointer = it->second;
  } else {
    axis.pointer = name;
  }
  if (!values.is_array() || values.empty())
    rd.fail(field, "expected a non-empty list of values, got " + show(values));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Json& v = values[i];
    const std::string vf = field + "[" + std::to_string(i) + "]";
    if (axis.pointer.empty()) {
      rd.named<NcclVersion>(v, vf,
                            [&](const std::string& s) { return checked_nccl_version(vf, s); });
    } else if (v.is_null()) {
      rd.fail(vf, "null: a varied field needs a value");
    }
    for (const Json& before : axis.values)
      if (before == v) rd.fail(vf, show(v) + " appears twice");
    axis.values.push_back(v);
  }
  if (!axis.pointer.empty()) {
    // The field's parent must be in the base: a typo in a pointer is
    // an error, not a new key the loader would then refuse far away.
    Json probe = g.topology;
    set_pointer(probe, axis.pointer, axis.values.front(), rd, field, g.topology_file);
  }
  for (const GridAxis& other : g.axes)
    if (other.pointer == axis.pointer) rd.fail(field, "sets the same field as vary." + other.name);
  return axis;
}

// A simulate grid's collectives, algorithms, sizes, dtype and op.
void read_simulate_points(const Json& doc, const Reader& rd, Grid& g) {
  const std::vector<Json> cs = rd.list(doc, "collectives");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::string f = index_field("collectives", i, cs.size());
    const Collective c =
        rd.named<Collective>(cs[i], f, [](const std::string& s) { return parse_collective(s); });
    for (Collective before : g.collectives)
      if (before == c) rd.fail(f, show(cs[i]) + " appears twice");
    g.collectives.push_back(c);
  }
  if (rd.find(doc, "algorithms")) {
    const std::vector<Json> as = rd.list(doc, "algorithms");
    for (std::size_t i = 0; i < as.size(); ++i) {
      const std::string f = index_field("algorithms", i, as.size());
      const std::string name = rd.string(as[i], f);
      if (name == "all" || name.find(',') != std::string::npos)
        rd.fail(f, show(as[i]) + ": name one algorithm per entry (\"all\" differs by machine)");
      for (const std::string& before : g.algorithms)
        if (before == name) rd.fail(f, show(as[i]) + " appears twice");
      g.algorithms.push_back(name);
    }
  } else {
    g.algorithms = {"nccl"};
  }
  const std::vector<Json> ss = rd.list(doc, "sizes");
  for (std::size_t i = 0; i < ss.size(); ++i) {
    const std::string f = index_field("sizes", i, ss.size());
    const std::int64_t bytes = rd.size(ss[i], f);
    for (std::int64_t before : g.sizes)
      if (before == bytes) rd.fail(f, show(ss[i]) + " appears twice");
    g.sizes.push_back(bytes);
  }
  if (const Json* d = rd.find(doc, "dtype"))
    g.dtype =
        rd.named<DataType>(*d, "dtype", [](const std::string& s) { return parse_data_type(s); });
  if (const Json* o = rd.find(doc, "op"))
    g.op = rd.named<RedOp>(*o, "op", [](const std::string& s) { return parse_red_op(s); });
}

// A plan grid's models, batches, dtype and device overrides.
void read_plan_points(const Json& doc, const std::string& path, const Reader& rd, Grid& g) {
  const std::vector<Json> ms = rd.list(doc, "models");
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const std::string f = index_field("models", i, ms.size());
    const std::string model = resolve(path, rd.string(ms[i], f));
    try {
      g.model_names.push_back(load_model(model).name);
    } catch (const FileError& e) {
      rd.fail(f, show(ms[i]) + ": " + e.what());
    }
    g.models.push_back(model);
  }
  const std::vector<Json> bs = rd.list(doc, "batch");
  for (std::size_t i = 0; i < bs.size(); ++i)
    g.batches.push_back(rd.positive(bs[i], index_field("batch", i, bs.size())));
  if (const Json* d = rd.find(doc, "dtype"))
    g.plan_dtype = rd.named<DataType>(
        *d, "dtype", [](const std::string& s) { return parse_training_data_type("dtype", s); });
  if (const Json* m = rd.find(doc, "device_memory"))
    g.device_memory =
        static_cast<double>(rd.named<std::int64_t>(*m, "device_memory", [](const std::string& s) {
          return parse_memory_bytes("device_memory", s);
        }));
  if (const Json* t = rd.find(doc, "device_tflops"))
    g.device_tflops = rd.positive_number(*t, "device_tflops");
}

// Every machine of the grid, built once: a value the topology loader
// refuses is named with the axis values that gave it; a simulate grid's
// algorithms are checked on each machine as simulate checks them (names,
// variants, and whether a named nccl variant applies).
void check_machines(const Grid& g, const std::string& path) {
  for (std::size_t m = 0; m < g.machines(); ++m) {
    const Json topology = machine_topology(g, m);
    const std::string where = path + " (" + machine_label(g, m) + ")";
    try {
      const std::unique_ptr<Topology> t = parse_topology(topology.dump(), g.topology_file);
      if (g.kind != GridKind::simulate) continue;
      for (Collective c : g.collectives) {
        if (c == Collective::barrier) continue;
        SweepSpec spec;
        spec.collective = c;
        spec.algorithms = g.algorithms;
        spec.ranks = t->num_ranks();
        spec.dtype = g.dtype;
        spec.op = g.op;
        spec.nccl_version = machine_nccl_version(g, m);
        spec.model = cost_params_of(*t, spec.ranks);
        simulate_sweep(spec, *t, SimOptions{});
      }
    } catch (const Error& e) {
      throw FileError(where + ": " + e.what());
    }
  }
}

}  // namespace

Grid parse_grid(const std::string& text, const std::string& path) {
  const Reader rd(path);
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw FileError(path + ": not JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) throw FileError(path + ": expected a JSON object, got " + show(doc));
  Grid g;
  g.file = path;
  const Json* kind = rd.find(doc, "sweep");
  if (!kind) rd.fail("sweep", "missing (simulate or plan)");
  const std::string k = rd.string(*kind, "sweep");
  if (k != "simulate" && k != "plan")
    rd.fail("sweep", "expected simulate or plan, got " + show(*kind));
  g.kind = k == "simulate" ? GridKind::simulate : GridKind::plan;
  if (g.kind == GridKind::simulate)
    rd.keys(
        doc, "",
        {"sweep", "topology", "set", "vary", "collectives", "algorithms", "sizes", "dtype", "op"});
  else
    rd.keys(doc, "",
            {"sweep", "topology", "set", "vary", "models", "batch", "dtype", "device_memory",
             "device_tflops"});
  read_base(doc, path, rd, g);
  // The axes, in the file's order.
  if (const Json* vary = rd.find(doc, "vary")) {
    if (!vary->is_object()) rd.fail("vary", "expected an object, got " + show(*vary));
    for (const auto& [name, values] : vary->items())
      g.axes.push_back(read_axis(name, values, rd, g));
  }
  if (g.kind == GridKind::simulate)
    read_simulate_points(doc, rd, g);
  else
    read_plan_points(doc, path, rd, g);
  check_machines(g, path);
  return g;
}

}  // namespace collkit
