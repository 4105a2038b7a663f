// Channel orders on a topology, the way NCCL's topology search lays out its
// channels (docs/NCCL.md, "Channels"): inside a node a path through every
// device along the intra-node fabric; across nodes each channel leaves and
// enters every node through its own NIC, so the channels together use all
// NICs and every inter-node hop stays on one rail. The result is plain data
// (core/channel_plan.h) that the nccl generators read.
#pragma once

#include <vector>

#include "core/channel_plan.h"
#include "topologies/topology.h"

namespace collkit {

struct ChannelSearch {
  ChannelPlan plan;          // rings and trees (graph channels x lanes), node_of
  int graph_channels = 1;    // distinct orders (NCCL's graph channels)
  int runtime_channels = 1;  // channels at run time (sum of lanes)
  double channel_bw = 0;     // bytes per second NCCL's search gives one graph channel
  int nodes = 1;
  int ranks_per_node = 1;  // 0 when nodes differ in size
  int nics_per_node = 0;   // distinct ways out of a node (0 for one node)
};

// The channels of the first `ranks` ranks of `topology`. Graph channels:
// across nodes one per NIC of a node; inside one node the topology's
// declared NCCL ring graph (Topology::nccl), else the count NCCL's speed
// search gives the devices' bandwidth (docs/NCCL.md). Runtime channels: the
// declared count, else twice the graph's, at most 32.
ChannelSearch search_channels(const Topology& topology, int ranks);

// The plan restricted to the first `channels` runtime channels (NCCL uses
// fewer channels for small messages): runtime channel c runs graph order
// c mod G, so order g keeps one lane per such c. channels >= 1.
ChannelPlan first_channels(const ChannelPlan& plan, int channels);

}  // namespace collkit
