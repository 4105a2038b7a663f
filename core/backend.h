// What produced a figure: the simulator or one of the real backends. Shared by
// the bench harness (realrun/), which runs one, and the report model
// (reports/), which records it.
#pragma once

#include <cstdint>
#include <string_view>

namespace collkit {

enum class Backend : std::uint8_t { sim, mpi, nccl, cuda };

// "sim", "mpi", "nccl", "cuda".
std::string_view to_string(Backend b);

}  // namespace collkit
