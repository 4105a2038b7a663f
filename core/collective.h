// The nine collectives, the one word every folder of collkit shares: schedules
// are built for one, reports and sizes are keyed by one.
#pragma once

#include <cstdint>
#include <string_view>

namespace collkit {

enum class Collective : std::uint8_t {
  broadcast,
  reduce,
  all_gather,
  scatter,
  gather,
  reduce_scatter,
  all_reduce,
  all_to_all,
  barrier,
};

inline constexpr Collective kAllCollectives[] = {
    Collective::broadcast,  Collective::reduce,     Collective::all_gather,
    Collective::scatter,    Collective::gather,     Collective::reduce_scatter,
    Collective::all_reduce, Collective::all_to_all, Collective::barrier};

std::string_view to_string(Collective c);
// collkit's names and NCCL's, MPI's and nccl-tests' spellings of them
// (case, '_' and '-' aside: AllReduce, allreduce, alltoall, reducescatter,
// MPI_Bcast, ncclAllGather, all_reduce_perf). Throws UsageError with the
// nearest names and the valid ones.
Collective parse_collective(std::string_view name);
// True for collectives whose result depends on the root (broadcast, reduce,
// scatter, gather).
bool is_rooted(Collective c);
// True for collectives that combine values (reduce, reduce_scatter, all_reduce).
bool is_reduction(Collective c);

}  // namespace collkit
