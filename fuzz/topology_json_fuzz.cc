// Fuzzes the JSON topology loader (topologies/loader.cc): any text either
// loads or throws FileError; a loaded topology answers routes between its
// first, middle and last ranks with valid link ids, and a small one runs a
// ring all_reduce through the simulator.
#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/registry.h"
#include "fuzz/fuzz_support.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace {

void check_route(const collkit::Topology& t, int src, int dst, std::vector<collkit::LinkId>& out) {
  if (src == dst) return;
  t.route(src, dst, out);
  if (out.empty()) collkit::fuzz::property_failed("empty route between two different ranks");
  for (collkit::LinkId id : out) {
    if (id < 0 || id >= t.num_links()) collkit::fuzz::property_failed("route uses a bad link id");
    const collkit::LinkProps l = t.link(id);
    if (!(l.bandwidth > 0) || !(l.latency >= 0) || !std::isfinite(l.bandwidth))
      collkit::fuzz::property_failed("link with invalid properties");
    const int c = t.link_class(id);
    if (c < 0 || c >= t.num_link_classes()) collkit::fuzz::property_failed("bad link class");
    (void)t.link_name(id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  std::unique_ptr<Topology> t;
  try {
    t = parse_topology(fuzz::text(data, size), "fuzz.json");
  } catch (const FileError& e) {
    fuzz::check_message(e);
    return 0;
  }
  const int p = t->num_ranks();
  if (p < 1 || p > t->num_endpoints()) fuzz::property_failed("rank count out of range");
  std::vector<LinkId> route;
  for (int a : {0, p / 2, p - 1})
    for (int b : {0, p / 2, p - 1}) check_route(*t, a, b, route);
  if (p <= 16) {
    ScheduleSpec spec;
    spec.algorithm = "ring";
    spec.ranks = p;
    spec.count = 64;
    const auto s = make_schedule(spec);
    const SimResult r = simulate(*s, *t);
    if (!(r.time >= 0) || !std::isfinite(r.time)) fuzz::property_failed("simulated time invalid");
  }
  return 0;
}
