// What the machine collkit runs on can hold, for checks made before a long
// run rather than an out-of-memory kill after it.
#pragma once

#include <cstdint>

namespace collkit {

// The memory this process may use: the machine's physical memory, or the
// control group's limit (cgroup v2 memory.max) where that is smaller.
std::uint64_t machine_memory_bytes();

}  // namespace collkit
