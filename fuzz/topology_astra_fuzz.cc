// Fuzzes the ASTRA-sim analytical network reader (topologies/astra.cc): any
// YAML either gives dimensions the product topology accepts or throws
// FileError.
#include <cmath>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "topologies/astra.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  std::vector<Dim> dims;
  try {
    dims = parse_astra_dims(fuzz::text(data, size), "fuzz.yml");
  } catch (const FileError& e) {
    fuzz::check_message(e);
    return 0;
  }
  if (dims.empty()) fuzz::property_failed("no dimensions");
  std::int64_t total = 1;
  for (const Dim& d : dims) {
    if (d.size < 1) fuzz::property_failed("dimension size < 1");
    if (!(d.link.bandwidth > 0) || !std::isfinite(d.link.bandwidth) || !(d.link.latency >= 0) ||
        !std::isfinite(d.link.latency))
      fuzz::property_failed("dimension with invalid link properties");
    total *= d.size;
    if (total > (std::int64_t{1} << 30)) fuzz::property_failed("more than 2^30 NPUs accepted");
  }
  ProductTopology t(dims, EndpointProps{});
  const int p = t.num_ranks();
  std::vector<LinkId> route;
  if (p > 1) {
    t.route(0, p - 1, route);
    t.route(p - 1, 0, route);
    for (LinkId id : route)
      if (id < 0 || id >= t.num_links()) fuzz::property_failed("route uses a bad link id");
  }
  return 0;
}
