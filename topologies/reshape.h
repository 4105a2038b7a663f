// A cluster file at another scale: its hierarchical generator with another
// node count, or only some GPUs of each node in use (a run of g processes a
// node, GPUs 0..g-1, each sending through its own NIC j). What calibrate
// fits on a small run of a cluster is its figures; this is how the fitted
// file then describes the same cluster at the size to predict
// (`--topology FILE@NODESxGPUS`, calibrate's `MEASURED@NODESxGPUS`;
// docs/TOPOLOGY.md, "Other scales").
#pragma once

#include <string>

namespace collkit {

struct ClusterShape {
  int nodes = 0;    // 0 = the file's
  int devices = 0;  // per node; 0 = the file's; at most the file's
};

// "10x2" -> {10, 2}; UsageError naming `what` otherwise.
ClusterShape parse_cluster_shape(const std::string& text, const std::string& what);

// The topology file's JSON text (`file` names it in errors) with its
// hierarchical generator set to `shape`: `nodes` nodes of `devices`
// devices, and as many NICs a node as devices in use where that is fewer
// than the file's (GPU j keeps NIC j). NCCL's graph figures of the file's
// `nccl` block (ring, tree, nvls, runtime_channels) describe its search on
// the file's node and are dropped when the devices change; the channel
// search derives them. Everything else is the file's. FileError naming the
// file when it has no hierarchical generator or asks for more devices
// than its nodes hold.
std::string reshape_topology_text(const std::string& text, const std::string& file,
                                  const ClusterShape& shape);

}  // namespace collkit
