// Graph generators behind the `generator` form (and usable directly by tests
// and tools). Parameters must already be validated: the JSON loader reports
// bad values with the file and field; these functions only build. The build_*
// functions return finalized graphs, connected by construction.
#pragma once

#include <memory>
#include <vector>

#include "topologies/graph_topology.h"
#include "topologies/product_topology.h"

namespace collkit {

// k-ary 3-level fat tree (k even): k pods of k/2 edge and k/2 aggregation
// switches, (k/2)^2 core switches, k^3/4 hosts h0.. (nodes 0..k^3/4-1, so
// host i is rank i). Every cable has `link`, except that edge->aggregation
// cables carry link.bandwidth / oversubscription (oversubscription 2 = edge
// uplinks have half the bandwidth of the host links below them).
std::unique_ptr<GraphTopology> build_fat_tree(int k, double oversubscription, LinkProps link,
                                              EndpointProps endpoint);

// A host port of a fabric: the node sending into it and the node receiving
// from it (the same node for a host; a NIC's send and receive sides).
struct Port {
  int up = 0;
  int down = 0;
};

// Adds the switches of a k-ary fat tree to `g` and attaches hosts[i] to edge
// switch i / (k/2) (hosts.size() <= k^3/4; empty edge ports stay empty).
void add_fat_tree(GraphTopology& g, const std::vector<Port>& hosts, int k, double oversubscription,
                  LinkProps link);

// Smallest even k whose fat tree has at least `hosts` hosts.
int fat_tree_k_for(int hosts);

enum class InterKind { kSwitch, kFatTree };

struct HierarchicalSpec {
  int nodes = 1;
  int devices_per_node = 1;
  DimKind intra_kind = DimKind::kSwitch;
  LinkProps intra;
  double intra_in_network = 0;  // intra kSwitch: the NVSwitch multicasts and reduces (NVLS)
  int nics_per_node = 1;
  LinkProps nic_link;  // device <-> NIC (inside the node)
  InterKind inter_kind = InterKind::kSwitch;
  LinkProps inter;              // NIC <-> fabric, and inside the fabric
  double inter_in_network = 0;  // inter kSwitch: the switches reduce in the network (SHARP)
  int k = 0;                    // fat tree arity; 0 = smallest that fits
  double oversubscription = 1;
  bool rail_optimized = false;
  EndpointProps endpoint;
};

// nodes x devices_per_node devices (ranks node-major: rank = node * devices +
// device). Inside a node the devices form intra_kind (a switch: one NVSwitch
// node per server). Device j uses NIC j * nics / devices. A NIC is two nodes,
// its send side (nX.nicI.tx) and receive side (nX.nicI.rx), so traffic
// between devices sharing a NIC can never turn round in it and bypass the
// intra-node fabric; each side's links carry nic_link inside the node and
// inter towards the fabric (the two directions of one cable). NICs join the inter
// fabric: kSwitch is one switch, or with rail_optimized one switch per rail
// (NIC i of every node on rail switch i, so cross-rail traffic goes through
// a node's own fabric first, as NCCL's PXN does); kFatTree is one fat tree
// whose hosts are the NICs, node-major or, rail-optimized, rail-major so an
// edge switch holds one rail. With one node there is no inter fabric.
std::unique_ptr<GraphTopology> build_hierarchical(const HierarchicalSpec& spec);

// The graph of a product network (for torus with shortest-path routing).
std::unique_ptr<GraphTopology> build_product_graph(const std::vector<Dim>& dims,
                                                   EndpointProps endpoint);

}  // namespace collkit
