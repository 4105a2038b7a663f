#include "topologies/channels.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "core/error.h"
#include "core/nccl_tree.h"

namespace collkit {
namespace {

// NCCL's per-channel bandwidth candidates for one node on sm90
// (src/graph/search.cc, sm90SpeedArrayIntra), GB/s.
constexpr double kSpeedsIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr int kMaxGraphChannels = 16;    // MAXCHANNELS / 2
constexpr int kMaxRuntimeChannels = 32;  // MAXCHANNELS

double route_latency(const Topology& t, int a, int b) {
  std::vector<LinkId> r;
  t.route(a, b, r);
  double lat = 0;
  for (LinkId id : r) lat += t.link(id).latency;
  return lat;
}

double route_bandwidth(const Topology& t, int a, int b) {
  std::vector<LinkId> r;
  t.route(a, b, r);
  double bw = 0;
  for (LinkId id : r) bw = bw == 0 ? t.link(id).bandwidth : std::min(bw, t.link(id).bandwidth);
  return bw;
}

// A path through every member of a node from `first` to `last` along the
// node's nearest pairs (those at the smallest route latency): any order on a
// switch, the fabric's own order on a ring or mesh. Depth-first search; when
// none exists (or the node is large) the members in cyclic order.
std::vector<int> node_path(const Topology& t, const std::vector<int>& m, int first, int last) {
  const int d = static_cast<int>(m.size());
  const auto cyclic = [&] {
    std::vector<int> out{first};
    const int at = static_cast<int>(std::find(m.begin(), m.end(), first) - m.begin());
    for (int k = 1; k < d; ++k) {
      const int v = m[(at + k) % d];
      if (v != last) out.push_back(v);
    }
    if (last != first) out.push_back(last);
    return out;
  };
  if (d <= 2) return cyclic();
  // Nearest pairs.
  std::vector<std::vector<double>> lat(d, std::vector<double>(d, 0));
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j)
      if (i != j) {
        lat[i][j] = route_latency(t, m[i], m[j]);
        best = std::min(best, lat[i][j]);
      }
  bool all_near = true;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j)
      if (i != j && lat[i][j] > best * (1 + 1e-9)) all_near = false;
  if (all_near || d > 16) return cyclic();
  const int fi = static_cast<int>(std::find(m.begin(), m.end(), first) - m.begin());
  const int li = static_cast<int>(std::find(m.begin(), m.end(), last) - m.begin());
  std::vector<int> path{fi};
  std::vector<bool> used(d, false);
  used[fi] = true;
  long budget = 200000;  // search steps before falling back
  std::function<bool()> dfs = [&]() -> bool {
    if (--budget < 0) return false;
    if (static_cast<int>(path.size()) == d) return path.back() == li;
    const int at = path.back();
    for (int k = 1; k < d; ++k) {
      const int v = (at + k) % d;
      if (used[v] || lat[at][v] > best * (1 + 1e-9)) continue;
      if (v == li && static_cast<int>(path.size()) != d - 1) continue;
      used[v] = true;
      path.push_back(v);
      if (dfs()) return true;
      path.pop_back();
      used[v] = false;
    }
    return false;
  };
  if (!dfs()) return cyclic();
  std::vector<int> out;
  out.reserve(path.size());
  for (int i : path) out.push_back(m[i]);
  return out;
}

// The devices of a node joined pairwise by links of their own (a full
// mesh, as AMD's xGMI: one link to each peer, no switch): every pair's
// route is one link.
bool is_mesh(const Topology& t, const std::vector<int>& m) {
  if (m.size() < 3) return false;
  std::vector<LinkId> r;
  for (int a : m)
    for (int b : m) {
      if (a == b) continue;
      t.route(a, b, r);
      if (r.size() != 1) return false;
    }
  return true;
}

// Arc-disjoint directed Hamiltonian cycles of the complete digraph on d
// vertices, each starting at 0, found by depth-first search: d - 1 of them
// use every arc once (they exist for every d but 4 and 6, Tillson 1980),
// so rings laid along them load every link of a mesh alike, as RCCL's
// MI300X ring sets do. Where the search stops short (d 4 and 6, or its
// step budget) the cycles found so far.
std::vector<std::vector<int>> mesh_cycles(int d) {
  std::vector<std::vector<char>> used(static_cast<std::size_t>(d), std::vector<char>(d, 0));
  std::vector<std::vector<int>> cycles, best;
  long steps = 0;
  constexpr long kBudget = 200000;
  std::function<bool(int)> next_cycle = [&](int k) -> bool {
    if (k == d - 1) return true;
    std::vector<int> path{0};
    std::vector<char> on(static_cast<std::size_t>(d), 0);
    on[0] = 1;
    std::function<bool()> extend = [&]() -> bool {
      if (++steps > kBudget) return false;
      const int u = path.back();
      if (static_cast<int>(path.size()) == d) {
        if (used[u][0]) return false;
        used[u][0] = 1;
        cycles.push_back(path);
        if (cycles.size() > best.size()) best = cycles;
        if (next_cycle(k + 1)) return true;
        cycles.pop_back();
        used[u][0] = 0;
        return false;
      }
      for (int j = 1; j < d; ++j) {
        const int v = (u + j) % d;
        if (v == 0 || on[v] || used[u][v]) continue;
        used[u][v] = on[v] = 1;
        path.push_back(v);
        if (extend()) return true;
        path.pop_back();
        used[u][v] = on[v] = 0;
        if (steps > kBudget) return false;
      }
      return false;
    };
    return extend();
  };
  if (next_cycle(0)) return cycles;
  return best;
}

// The zigzag Hamiltonian path of d (even) vertices, 0, 1, d-1, 2, d-2, ...,
// translated by `start` (mod d): its steps are +1, -2, +3, -4, ..., one of
// each nonzero difference mod d, so the d translates together use every arc
// of the complete digraph once (Walecki's construction), each starting and
// ending at a vertex of its own.
std::vector<int> zigzag_path(int d, int start) {
  std::vector<int> p;
  for (int k = 0; k < d; ++k) {
    const int v = k % 2 == 0 ? (d - k / 2) % d : (k + 1) / 2;
    p.push_back((v + start) % d);
  }
  return p;
}

// The path from local index `first` to `last` along the mesh cycle that
// holds the arc last -> first (cut there); empty when none does.
std::vector<int> mesh_path(const std::vector<std::vector<int>>& cycles, const std::vector<int>& m,
                           int first, int last) {
  const int d = static_cast<int>(m.size());
  for (const std::vector<int>& c : cycles)
    for (int i = 0; i < d; ++i)
      if (c[i] == first && c[(i + d - 1) % d] == last) {
        std::vector<int> out;
        out.reserve(static_cast<std::size_t>(d));
        for (int k = 0; k < d; ++k) out.push_back(m[c[(i + k) % d]]);
        return out;
      }
  return {};
}

ChannelPlan::Tree empty_tree(int p) {
  ChannelPlan::Tree t;
  t.parent.assign(static_cast<std::size_t>(p), -1);
  t.child.assign(3 * static_cast<std::size_t>(p), -1);
  return t;
}

void add_child(ChannelPlan::Tree& t, int parent, int child) {
  t.parent[child] = parent;
  for (int k = 0; k < 3; ++k) {
    int& slot = t.child[3 * static_cast<std::size_t>(parent) + k];
    if (slot < 0) {
      slot = child;
      return;
    }
  }
  throw Error("channel search: rank " + std::to_string(parent) + " given a fourth child");
}

// What the search knows of the ranks: their nodes (dense ids in order of
// first appearance; no node structure = every rank a node of its own),
// whether every node has as many, the ways out of a node, and on a mesh
// node its Hamiltonian cycles.
struct Nodes {
  std::vector<std::vector<int>> members;
  int n = 0;  // nodes
  int d = 0;  // ranks of node 0
  bool uniform = true;
  // Local indices per NIC of node 0: the first link of each device's route
  // to the device of equal local index on the next node (a NIC's send side).
  std::vector<std::vector<int>> nic_groups;
  bool is_mesh_node = false;
  std::vector<std::vector<int>> cycles;  // arc-disjoint, on a mesh node
};

Nodes find_nodes(const Topology& topology, int p, ChannelPlan& plan) {
  Nodes s;
  std::map<int, int> dense;
  plan.node_of.assign(static_cast<std::size_t>(p), 0);
  for (int r = 0; r < p; ++r) {
    const int key = topology.has_nodes() ? topology.node_of(r) : r;
    auto [it, added] = dense.try_emplace(key, static_cast<int>(s.members.size()));
    if (added) s.members.emplace_back();
    s.members[it->second].push_back(r);
    plan.node_of[r] = it->second;
  }
  s.n = static_cast<int>(s.members.size());
  s.d = static_cast<int>(s.members[0].size());
  for (const auto& m : s.members) s.uniform = s.uniform && static_cast<int>(m.size()) == s.d;
  if (s.n > 1 && s.uniform) {
    std::map<LinkId, int> by_link;
    std::vector<LinkId> r;
    for (int j = 0; j < s.d; ++j) {
      topology.route(s.members[0][j], s.members[1][j], r);
      auto [it, added] = by_link.try_emplace(r.front(), static_cast<int>(s.nic_groups.size()));
      if (added) s.nic_groups.emplace_back();
      s.nic_groups[it->second].push_back(j);
    }
  }
  // A mesh inside the node: rings along arc-disjoint Hamiltonian cycles.
  s.is_mesh_node = s.uniform && is_mesh(topology, s.members[0]);
  if (s.is_mesh_node && s.d <= 16) s.cycles = mesh_cycles(s.d);
  return s;
}

// Graph channels and their bandwidth, and the run-time channels.
void count_channels(const Topology& topology, int p, const Nodes& s, ChannelSearch& out) {
  const int n = s.n;
  const bool uniform = s.uniform;
  const auto& members = s.members;
  const auto& nic_groups = s.nic_groups;
  const auto& cycles = s.cycles;
  int graph = 1;
  if (n > 1 && uniform) {
    graph = std::min(kMaxGraphChannels, static_cast<int>(nic_groups.size()));
    out.channel_bw =
        route_bandwidth(topology, members[0][nic_groups[0][0]], members[1][nic_groups[0][0]]);
  } else if (topology.nccl.ring_channels > 0) {
    graph = std::min(kMaxGraphChannels, topology.nccl.ring_channels);
    out.channel_bw = topology.nccl.ring_bw;
  } else if (p > 1) {
    // NCCL's speed search, first found: the fastest per-channel speed, and
    // as many channels at it as the device's bandwidth holds.
    const double bw = route_bandwidth(topology, 0, 1) / 1e9;
    double best_total = 0;
    for (double speed : kSpeedsIntra) {
      const int c = std::min(kMaxGraphChannels, static_cast<int>(std::floor(bw / speed + 1e-9)));
      if (c >= 1 && c * speed > best_total + 1e-9) {
        best_total = c * speed;
        graph = c;
        out.channel_bw = speed * 1e9;
      }
    }
  }
  if (n > 1 && topology.nccl.ring_channels > 0 && topology.nccl.ring_channels < graph)
    graph = topology.nccl.ring_channels;
  // On one mesh node a whole number of rounds of the cycles, so that every
  // link carries as many rings as any other.
  const int k_cycles = static_cast<int>(cycles.size());
  if (n == 1 && k_cycles > 0 && graph >= k_cycles) graph -= graph % k_cycles;
  out.graph_channels = graph;
  // A declared run-time count is NCCL's on one node, as the declared graphs
  // are; across nodes NCCL doubles the multi-node graph's (docs/NCCL.md).
  int runtime = topology.nccl.runtime_channels > 0 && n == 1
                    ? topology.nccl.runtime_channels
                    : std::min(kMaxRuntimeChannels, 2 * graph);
  runtime = std::max(runtime, graph);
  out.runtime_channels = runtime;
}

// Channel c's ring (`lanes` run-time channels).
ChannelPlan::Ring channel_ring(const Topology& topology, int p, const Nodes& s, int c, int lanes) {
  const int n = s.n, d = s.d;
  const auto& members = s.members;
  const auto& nic_groups = s.nic_groups;
  const auto& cycles = s.cycles;
  const bool uniform = s.uniform, is_mesh_node = s.is_mesh_node;
  ChannelPlan::Ring ring;
  ring.lanes = lanes;
  if (!uniform) {
    for (int r = 0; r < p; ++r) ring.order.push_back(r);
  } else if (n == 1 && !cycles.empty()) {
    // One mesh node: channel c along cycle c mod K, started at a device
    // of its own.
    const std::vector<int>& cyc = cycles[c % cycles.size()];
    const int start = (c / static_cast<int>(cycles.size())) % d;
    for (int k = 0; k < d; ++k) ring.order.push_back(members[0][cyc[(start + k) % d]]);
  } else if (n == 1) {
    // One node: rotations of one path, so channels start at different devices.
    const std::vector<int>& m = members[0];
    const int first = m[c % d];
    const int last = m[(c + d - 1) % d];
    ring.order = node_path(topology, m, first, last);
  } else {
    // Channel c enters even nodes at rail a and leaves at rail b; odd
    // nodes the other way, so every inter-node hop stays on one rail.
    const int nics = static_cast<int>(nic_groups.size());
    const int a = nic_groups[c % nics][0];
    int b = nic_groups[(c + 1) % nics][0];
    if (b == a) b = nic_groups[c % nics].size() > 1 ? nic_groups[c % nics][1] : (a + d - 1) % d;
    // On a mesh of an even number of devices, channel c crosses the node
    // along the zigzag path translated to start at a (zigzag_path): the d
    // translates use every link of the node once and end at d distinct
    // devices, so the rings load every link and every rail alike; odd
    // nodes run it backwards, from b to a. (The next channel's NIC as
    // exit would put every channel's ring on the arcs i + 1 -> i.)
    std::vector<int> zig;
    if (is_mesh_node && d % 2 == 0) {
      zig = zigzag_path(d, a);
      b = zig.back();
    }
    for (int node = 0; node < n; ++node) {
      const std::vector<int>& m = members[node];
      const bool even = node % 2 == 0;
      std::vector<int> path;
      if (!zig.empty()) {
        for (int k = 0; k < d; ++k)
          path.push_back(m[zig[static_cast<std::size_t>(even ? k : d - 1 - k)]]);
      } else if (d > 1 && !cycles.empty()) {
        path = mesh_path(cycles, m, even ? a : b, even ? b : a);
      }
      if (path.empty())
        path = d == 1 ? std::vector<int>{m[0]}
                      : node_path(topology, m, m[even ? a : b], m[even ? b : a]);
      ring.order.insert(ring.order.end(), path.begin(), path.end());
    }
  }
  return ring;
}

// Channel c's tree: a chain through each node from its head (the device on
// the channel's NIC), and NCCL's double binary tree between the heads (tree
// c mod 2).
ChannelPlan::Tree channel_tree(const Topology& topology, int p, const Nodes& s, int c, int lanes) {
  const int n = s.n, d = s.d;
  const auto& members = s.members;
  const auto& nic_groups = s.nic_groups;
  const auto& cycles = s.cycles;
  const bool uniform = s.uniform, is_mesh_node = s.is_mesh_node;
  ChannelPlan::Tree t = empty_tree(p);
  t.lanes = lanes;
  if (!uniform) {
    for (int r = 0; r < p; ++r) {
      const TreeLinks l = nccl_dbt_links(p, c % 2, r);
      t.parent[r] = l.parent;
      t.child[3 * static_cast<std::size_t>(r)] = l.child[0];
      t.child[3 * static_cast<std::size_t>(r) + 1] = l.child[1];
    }
  } else {
    const int head_local = nic_groups.empty() ? c % d : nic_groups[c % nic_groups.size()][0];
    std::vector<int> heads(static_cast<std::size_t>(n));
    for (int node = 0; node < n; ++node) {
      const std::vector<int>& m = members[node];
      const int head = m[head_local];
      heads[node] = head;
      if (d > 1) {
        // On a mesh the chain follows cycle c mod K from the head.
        std::vector<int> chain;
        if (is_mesh_node && d % 2 == 0) {
          for (int v : zigzag_path(d, head_local)) chain.push_back(m[v]);
        } else if (!cycles.empty()) {
          const std::vector<int>& cyc = cycles[static_cast<std::size_t>(c) % cycles.size()];
          const int at =
              static_cast<int>(std::find(cyc.begin(), cyc.end(), head_local) - cyc.begin());
          for (int k = 0; k < d; ++k)
            chain.push_back(m[cyc[static_cast<std::size_t>((at + k) % d)]]);
        } else {
          chain = node_path(topology, m, head,
                            m[(head_local + d - 1) % d] == head ? m[(head_local + 1) % d]
                                                                : m[(head_local + d - 1) % d]);
        }
        for (std::size_t k = 1; k < chain.size(); ++k) add_child(t, chain[k - 1], chain[k]);
      }
    }
    // Node tree: children first listed get the chain second, so the head
    // serves its chain and its child nodes.
    for (int node = 0; node < n; ++node) {
      for (int k : nccl_dbt_links(n, c % 2, node).child)
        if (k >= 0) add_child(t, heads[node], heads[k]);
    }
  }
  return t;
}

}  // namespace

ChannelSearch search_channels(const Topology& topology, int ranks) {
  const int p = ranks;
  ChannelSearch out;
  ChannelPlan& plan = out.plan;
  const Nodes s = find_nodes(topology, p, plan);
  out.nodes = s.n;
  out.ranks_per_node = s.uniform ? s.d : 0;
  if (s.n > 1 && s.uniform) out.nics_per_node = static_cast<int>(s.nic_groups.size());
  count_channels(topology, p, s, out);
  const int graph = out.graph_channels, runtime = out.runtime_channels;
  for (int c = 0; c < graph; ++c)
    plan.rings.push_back(
        channel_ring(topology, p, s, c, runtime / graph + (c < runtime % graph ? 1 : 0)));
  for (int c = 0; c < graph; ++c)
    plan.trees.push_back(
        channel_tree(topology, p, s, c, runtime / graph + (c < runtime % graph ? 1 : 0)));
  plan.finish(p);
  return out;
}

ChannelPlan first_channels(const ChannelPlan& plan, int channels) {
  if (channels < 1) throw UsageError("channel count must be >= 1");
  ChannelPlan out = plan;
  const auto keep = [&](auto& units) {
    const int g = static_cast<int>(units.size());
    if (g == 0) return;
    std::vector<int> lanes(static_cast<std::size_t>(g), 0);
    int total = 0;
    for (const auto& u : units) total += u.lanes;
    const int use = std::min(channels, total);
    for (int c = 0; c < use; ++c) ++lanes[c % g];
    std::vector<typename std::decay_t<decltype(units)>::value_type> kept;
    for (int i = 0; i < g; ++i)
      if (lanes[i] > 0) {
        kept.push_back(units[i]);
        kept.back().lanes = lanes[i];
      }
    units = std::move(kept);
  };
  keep(out.rings);
  keep(out.trees);
  out.finish(static_cast<int>(
      plan.node_of.empty()
          ? (plan.rings.empty() ? plan.trees[0].parent.size() : plan.rings[0].order.size())
          : plan.node_of.size()));
  return out;
}

}  // namespace collkit
