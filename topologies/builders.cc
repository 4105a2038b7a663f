#include "topologies/builders.h"

#include <cstddef>
#include <numeric>
#include <string>

namespace collkit {
namespace {

// Names are built by appending: GCC 12 falsely warns (-Wrestrict) on
// "literal" + std::to_string(...).
std::string num(std::int64_t i) { return std::to_string(i); }

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  ((s += parts), ...);
  return s;
}

// Joins `members` (node ids) the way one dimension of kind `kind` does.
void connect_group(GraphTopology& g, const std::vector<int>& members, DimKind kind, LinkProps link,
                   const std::string& switch_name, double in_network = 0) {
  const int s = static_cast<int>(members.size());
  if (s <= 1) return;
  switch (kind) {
    case DimKind::kSwitch: {
      int sw = g.add_node(switch_name, true);
      if (in_network > 0) g.set_in_network(sw, in_network);
      for (int m : members) g.add_cable(m, sw, link);
      break;
    }
    case DimKind::kFullyConnected:
      for (int i = 0; i < s; ++i) {
        for (int j = i + 1; j < s; ++j) g.add_cable(members[i], members[j], link);
      }
      break;
    case DimKind::kRing:
      for (int i = 0; i < (s == 2 ? 1 : s); ++i)
        g.add_cable(members[i], members[(i + 1) % s], link);
      break;
  }
}

}  // namespace

int fat_tree_k_for(int hosts) {
  int k = 2;
  while (static_cast<std::int64_t>(k) * k * k / 4 < hosts) k += 2;
  return k;
}

namespace {

// Joins a port to a switch: one cable, or a pair of directed links when the
// port's two sides are different nodes.
void attach(GraphTopology& g, Port port, int sw, LinkProps link) {
  if (port.up == port.down) {
    g.add_cable(port.up, sw, link);
  } else {
    g.add_link(port.up, sw, link);
    g.add_link(sw, port.down, link);
  }
}

}  // namespace

void add_fat_tree(GraphTopology& g, const std::vector<Port>& hosts, int k, double oversubscription,
                  LinkProps link) {
  const int half = k / 2;
  LinkProps uplink = link;
  uplink.bandwidth = link.bandwidth / oversubscription;
  std::vector<int> core(static_cast<std::size_t>(half) * half);
  std::vector<int> edge(static_cast<std::size_t>(k) * half),
      agg(static_cast<std::size_t>(k) * half);
  for (int p = 0; p < k; ++p) {
    for (int j = 0; j < half; ++j) {
      edge[p * half + j] = g.add_node(cat("p", num(p), ".e", num(j)), true);
    }
    for (int j = 0; j < half; ++j) {
      agg[p * half + j] = g.add_node(cat("p", num(p), ".a", num(j)), true);
    }
  }
  for (int c = 0; c < half * half; ++c) core[c] = g.add_node(cat("c", num(c)), true);
  for (std::size_t h = 0; h < hosts.size(); ++h) attach(g, hosts[h], edge[h / half], link);
  for (int p = 0; p < k; ++p) {
    for (int e = 0; e < half; ++e) {
      for (int a = 0; a < half; ++a) g.add_cable(edge[p * half + e], agg[p * half + a], uplink);
    }
    // Aggregation switch a of every pod reaches core switches a*half ..
    // a*half+half-1: the standard wiring, which gives (k/2)^2 disjoint paths
    // between pods.
    for (int a = 0; a < half; ++a) {
      for (int c = 0; c < half; ++c) g.add_cable(agg[p * half + a], core[a * half + c], link);
    }
  }
}

std::unique_ptr<GraphTopology> build_fat_tree(int k, double oversubscription, LinkProps link,
                                              EndpointProps endpoint) {
  auto g = std::make_unique<GraphTopology>();
  const int hosts = k * k * k / 4;
  std::vector<Port> ports(hosts);
  for (int h = 0; h < hosts; ++h) {
    int v = g->add_node(cat("h", num(h)), false, endpoint);
    ports[h] = {v, v};
  }
  add_fat_tree(*g, ports, k, oversubscription, link);
  g->finalize();
  return g;
}

std::unique_ptr<GraphTopology> build_hierarchical(const HierarchicalSpec& spec) {
  auto g = std::make_unique<GraphTopology>();
  const int nodes = spec.nodes;
  const int dev = spec.devices_per_node;
  const int nics = spec.nics_per_node;
  // Devices first, so rank r is node r: destination-based spreading of
  // equal-cost routes then follows rank numbers.
  std::vector<int> gpu(static_cast<std::size_t>(nodes) * dev);
  // The server each node belongs to (-1: the fabric between servers).
  std::vector<int> owner;
  const auto own = [&](int n) { owner.resize(static_cast<std::size_t>(g->num_nodes()), n); };
  for (int n = 0; n < nodes; ++n) {
    for (int j = 0; j < dev; ++j) {
      gpu[n * dev + j] = g->add_node(cat("n", num(n), ".g", num(j)), false, spec.endpoint);
    }
    own(n);
  }
  for (int n = 0; n < nodes; ++n) {
    const std::ptrdiff_t first = static_cast<std::ptrdiff_t>(n) * dev;
    std::vector<int> members(gpu.begin() + first, gpu.begin() + first + dev);
    connect_group(*g, members, spec.intra_kind, spec.intra, cat("n", num(n), ".nvs"),
                  spec.intra_in_network);
    own(n);
  }
  std::vector<Port> nic;
  std::vector<int> rail;
  if (nodes > 1) {
    nic.resize(static_cast<std::size_t>(nodes) * nics);
    for (int n = 0; n < nodes; ++n) {
      for (int i = 0; i < nics; ++i) {
        std::string name = cat("n", num(n), ".nic", num(i));
        nic[n * nics + i] = {g->add_node(cat(name, ".tx"), true),
                             g->add_node(cat(name, ".rx"), true)};
      }
      own(n);
      for (int j = 0; j < dev; ++j) {
        const Port& port = nic[n * nics + j * nics / dev];
        g->add_link(gpu[n * dev + j], port.up, spec.nic_link);
        g->add_link(port.down, gpu[n * dev + j], spec.nic_link);
      }
    }
    if (spec.inter_kind == InterKind::kSwitch) {
      if (spec.rail_optimized) {
        for (int i = 0; i < nics; ++i) {
          int sw = g->add_node(cat("rail", num(i)), true);
          rail.push_back(sw);
          if (spec.inter_in_network > 0) g->set_in_network(sw, spec.inter_in_network);
          for (int n = 0; n < nodes; ++n) attach(*g, nic[n * nics + i], sw, spec.inter);
        }
      } else {
        int sw = g->add_node("sw", true);
        if (spec.inter_in_network > 0) g->set_in_network(sw, spec.inter_in_network);
        for (const Port& x : nic) attach(*g, x, sw, spec.inter);
      }
    } else {
      std::vector<Port> hosts;
      hosts.reserve(nic.size());
      if (spec.rail_optimized) {
        for (int i = 0; i < nics; ++i) {
          for (int n = 0; n < nodes; ++n) hosts.push_back(nic[n * nics + i]);
        }
      } else {
        hosts = nic;
      }
      int k = spec.k > 0 ? spec.k : fat_tree_k_for(static_cast<int>(hosts.size()));
      add_fat_tree(*g, hosts, k, spec.oversubscription, spec.inter);
    }
  }
  g->set_endpoints(gpu);
  // Server n's nodes (GPUs, NVSwitch, NICs) form block n: finalize() checks
  // that swapping two servers maps the network onto itself (so with a
  // single or rail-optimised switch between nodes, not a fat tree, whose
  // servers sit on different edge switches) and then routes with one search
  // per node of server 0.
  if (nodes > 1) {
    owner.resize(static_cast<std::size_t>(g->num_nodes()), -1);
    g->set_blocks(std::move(owner));
  }
  // The rail turn (RankTurn): GPU j of every node to GPU j + 1, with its NIC
  // and rail switch where each GPU has its own (or all share one NIC), the
  // node's switch and a single switch between nodes fixed. A fat tree
  // between nodes is not claimed; finalize() checks the claim.
  const bool own_nics = nics == dev || nics == 1;
  if (dev > 1 && own_nics && (nodes == 1 || spec.inter_kind == InterKind::kSwitch)) {
    std::vector<int> sigma(static_cast<std::size_t>(g->num_nodes()));
    std::iota(sigma.begin(), sigma.end(), 0);
    for (int n = 0; n < nodes; ++n)
      for (int j = 0; j < dev; ++j) sigma[gpu[n * dev + j]] = gpu[n * dev + (j + 1) % dev];
    if (nics == dev) {
      for (int n = 0; n < nodes && !nic.empty(); ++n) {
        for (int i = 0; i < nics; ++i) {
          const Port& from = nic[n * nics + i];
          const Port& to = nic[n * nics + (i + 1) % nics];
          sigma[from.up] = to.up;
          sigma[from.down] = to.down;
        }
      }
      for (std::size_t i = 0; i < rail.size(); ++i) sigma[rail[i]] = rail[(i + 1) % rail.size()];
    }
    g->set_turn(TurnKind::local, std::move(sigma), nodes, dev);
  }
  g->finalize();
  return g;
}

std::unique_ptr<GraphTopology> build_product_graph(const std::vector<Dim>& dims,
                                                   EndpointProps endpoint) {
  auto g = std::make_unique<GraphTopology>();
  std::int64_t p = 1;
  for (const Dim& d : dims) p *= d.size;
  for (std::int64_t r = 0; r < p; ++r) g->add_node(cat("r", num(r)), false, endpoint);
  std::int64_t stride = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const int s = dims[d].size;
    // One group per line: the ranks whose coordinates differ only in d; its
    // first member has coordinate 0 in d.
    for (std::int64_t r = 0; r < p; ++r) {
      if (r / stride % s != 0) continue;
      std::vector<int> members(s);
      for (int c = 0; c < s; ++c) members[c] = static_cast<int>(r + c * stride);
      std::int64_t line = r % stride + r / (stride * s) * stride;
      connect_group(*g, members, dims[d].kind, dims[d].link,
                    cat("d", num(static_cast<std::int64_t>(d)), ".sw", num(line)),
                    dims[d].in_network_bw);
    }
    stride *= s;
  }
  g->finalize();
  return g;
}

}  // namespace collkit
