// A collective over a subgroup runs on the group's own topology ranks, so its
// traffic takes the links it would really take (NVSwitch inside a node, one
// NIC rail across nodes). Group rank i is topology rank first + i x stride.
#pragma once

#include <cstddef>
#include <vector>

#include "topologies/topology_view.h"

namespace collkit {

class GroupTopology : public TopologyView {
 public:
  GroupTopology(const Topology& base, int first, int stride, int size)
      : TopologyView(base), first_(first), stride_(stride), size_(size) {
    // The members' nodes, so that defaults that follow nodes (hierarchical's
    // group) see the group's own node structure. The machine's protocols
    // stay: on a GPU network the classic algorithms move their data as
    // NCCL's kernels would (the topology's default protocol, with its base
    // latency and wire efficiency), so a group's collective costs what
    // `collkit simulate` gives on the same ranks.
    if (base.has_nodes()) {
      rank_node.resize(static_cast<std::size_t>(size));
      for (int r = 0; r < size; ++r) rank_node[static_cast<std::size_t>(r)] = base.node_of(map(r));
    }
    // NCCL's graph as the file declares it (its INFO log) holds for the
    // whole machine; on a subset of its ranks NCCL searches anew, and so
    // does nccl_context.
    if (!(first == 0 && stride == 1 && size == base.num_ranks())) nccl = NcclGraphInfo{};
  }
  int num_ranks() const override { return size_; }
  EndpointProps endpoint(int rank) const override { return base().endpoint(map(rank)); }
  void route(int src, int dst, std::vector<LinkId>& out) const override {
    base().route(map(src), map(dst), out);
  }

 private:
  int map(int rank) const { return first_ + rank * stride_; }
  int first_, stride_, size_;
};

}  // namespace collkit
