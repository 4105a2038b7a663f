#include "core/collective.h"

#include <cctype>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/names.h"

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

namespace {

// A collective's name as NCCL, MPI and nccl-tests spell it, reduced to its
// letters: "AllReduce", "allreduce", "all-reduce", "MPI_Allreduce",
// "ncclAllReduce" and "all_reduce_perf" all give "allreduce"; MPI's "Bcast"
// is broadcast.
std::string spelling_key(std::string_view name) {
  std::string k;
  for (const char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string_view prefix : {"mpi", "nccl"})
    if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0)
      k.erase(0, prefix.size());
  if (k.size() > 4 && k.compare(k.size() - 4, 4, "perf") == 0) k.resize(k.size() - 4);
  if (k == "bcast") k = "broadcast";
  return k;
}

}  // namespace

Collective parse_collective(std::string_view name) {
  std::string valid;
  std::vector<std::string> names;
  for (Collective c : kAllCollectives) {
    if (to_string(c) == name) return c;
    if (!valid.empty()) valid += ", ";
    valid += to_string(c);
    names.emplace_back(to_string(c));
  }
  const std::string key = spelling_key(name);
  for (Collective c : kAllCollectives)
    if (!key.empty() && spelling_key(to_string(c)) == key) return c;
  throw UsageError("unknown collective '" + std::string(name) + "'" +
                   did_you_mean(std::string(name), names) + " (valid: " + valid + ")");
}

bool is_rooted(Collective c) {
  return c == Collective::broadcast || c == Collective::reduce || c == Collective::scatter ||
         c == Collective::gather;
}

bool is_reduction(Collective c) {
  return c == Collective::reduce || c == Collective::reduce_scatter || c == Collective::all_reduce;
}

}  // namespace collkit
