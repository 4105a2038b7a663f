// ASTRA-sim analytical network YAML (topology / npus_count / bandwidth /
// latency lists) read as the equivalent `dims` topology.
#pragma once

#include <string>
#include <vector>

#include "topologies/product_topology.h"

namespace collkit {

// ASTRA-sim's bandwidth unit: its analytical backend converts "GB/s" with
// 1 GB = 2^30 bytes, so a file imported here simulates the network ASTRA-sim
// itself would. Latencies are in nanoseconds.
constexpr double kAstraBytesPerGB = 1073741824.0;

// Throws FileError naming `file`, the key (e.g. `bandwidth[1]`) and the value.
std::vector<Dim> parse_astra_dims(const std::string& text, const std::string& file);

}  // namespace collkit
