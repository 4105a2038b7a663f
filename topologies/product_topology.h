// Cartesian-product networks computed arithmetically: no link or graph is
// stored, so a fully connected network of 2^20 ranks costs a few bytes. One
// class serves the generators ring, fully_connected, switch, torus
// (dimension-order routing), hypercube and the ASTRA-sim style `dims` form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace collkit {

enum class DimKind { kRing, kSwitch, kFullyConnected };

// One dimension: ranks whose coordinates differ only in this dimension are
// joined by a ring, by one switch per line, or all to all.
struct Dim {
  DimKind kind = DimKind::kRing;
  int size = 1;
  LinkProps link;
  // kSwitch only: the switches multicast and reduce (NVLS, SHARP) at this
  // rate per port and direction, bytes per second; 0 = they do not.
  double in_network_bw = 0;
};

const char* dim_kind_name(DimKind kind);

// Ranks are coordinates with dimension 0 varying fastest (ASTRA-sim's order):
// rank = c0 + s0 * (c1 + s1 * (c2 + ...)). Routes correct dimension 0 first,
// then 1, ...: in a product network that is a shortest path, because every
// dimension's part of the cost is independent of the other coordinates.
// Directed link ids: dimension d owns [base_d, base_d + endpoints * per_rank_d)
// and rank r's links in it start at base_d + r * per_rank_d:
//   fully_connected: one link to each other coordinate (skipping its own),
//   ring: size 2 has one link (to the peer), size >= 3 two (+1 then -1),
//   switch: two, rank->switch then switch->rank.
class ProductTopology : public Topology {
 public:
  // `dims` must be validated by the caller (sizes >= 1, product <= 2^30).
  ProductTopology(std::vector<Dim> dims, EndpointProps endpoint);

  void set_num_ranks(int ranks) { ranks_ = ranks; }
  const std::vector<Dim>& dims() const { return dims_; }

  int num_ranks() const override { return ranks_; }
  int num_endpoints() const override { return endpoints_; }
  std::int64_t num_nodes() const override;
  std::int64_t num_links() const override { return base_.back(); }
  EndpointProps endpoint(int) const override { return endpoint_; }
  LinkProps link(LinkId id) const override;
  std::string link_name(LinkId id) const override;
  void route(int src, int dst, std::vector<LinkId>& out) const override;
  int num_link_classes() const override { return static_cast<int>(classes_.size()); }
  int link_class(LinkId id) const override;
  int in_network_side(LinkId id, double& bandwidth) const override;

 private:
  int dim_of(LinkId id) const;
  std::string switch_name(int d, std::int64_t rank) const;

  std::vector<Dim> dims_;
  EndpointProps endpoint_;
  int endpoints_ = 1;
  int ranks_ = 1;
  std::vector<std::int64_t> stride_;    // rank distance of one coordinate step
  std::vector<std::int64_t> per_rank_;  // out links per rank in each dimension
  std::vector<std::int64_t> base_;      // first link id of each dim, plus the total
  std::vector<int> class_of_dim_;
  std::vector<LinkProps> classes_;
};

}  // namespace collkit
