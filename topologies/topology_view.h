// A topology seen through another: every virtual of Topology forwards to the
// base but turn() (a view may change what made the base symmetric, so it
// offers no turn: the simulator then runs every rank), and the base's metadata (TopologyMetadata:
// nodes, protocols, NCCL's graph, name) is carried whole, by one copy. A wrapper derives from it
// and overrides only what it changes: calibration's trial network (fitted link and endpoint
// figures), its cache-size candidates, the planner's subgroups (a rank mapping).
// docs/ARCHITECTURE.md, "Topology views".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace collkit {

class TopologyView : public Topology {
 public:
  // `base` must outlive the view.
  explicit TopologyView(const Topology& base) : base_(base) {
    static_cast<TopologyMetadata&>(*this) = base;
  }

  int num_ranks() const override { return base_.num_ranks(); }
  std::int64_t num_links() const override { return base_.num_links(); }
  EndpointProps endpoint(int rank) const override { return base_.endpoint(rank); }
  LinkProps link(LinkId id) const override { return base_.link(id); }
  std::string link_name(LinkId id) const override { return base_.link_name(id); }
  void route(int src, int dst, std::vector<LinkId>& out) const override {
    base_.route(src, dst, out);
  }
  int num_link_classes() const override { return base_.num_link_classes(); }
  int link_class(LinkId id) const override { return base_.link_class(id); }
  int in_network_side(LinkId id, double& bandwidth) const override {
    return base_.in_network_side(id, bandwidth);
  }
  int num_endpoints() const override { return base_.num_endpoints(); }
  std::int64_t num_nodes() const override { return base_.num_nodes(); }

 protected:
  const Topology& base() const { return base_; }

 private:
  const Topology& base_;
};

}  // namespace collkit
