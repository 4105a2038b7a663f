#include "core/collective.h"

#include <string>

#include "core/error.h"

namespace collkit {

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::broadcast:
      return "broadcast";
    case Collective::reduce:
      return "reduce";
    case Collective::all_gather:
      return "all_gather";
    case Collective::scatter:
      return "scatter";
    case Collective::gather:
      return "gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::all_to_all:
      return "all_to_all";
    case Collective::barrier:
      return "barrier";
  }
  return "?";
}

Collective parse_collective(std::string_view name) {
  std::string valid;
  for (Collective c : kAllCollectives) {
    if (to_string(c) == name) return c;
    if (!valid.empty()) valid += ", ";
    valid += to_string(c);
  }
  throw UsageError("unknown collective '" + std::string(name) + "'; valid: " + valid);
}

bool is_rooted(Collective c) {
  return c == Collective::broadcast || c == Collective::reduce || c == Collective::scatter ||
         c == Collective::gather;
}

bool is_reduction(Collective c) {
  return c == Collective::reduce || c == Collective::reduce_scatter || c == Collective::all_reduce;
}

}  // namespace collkit
