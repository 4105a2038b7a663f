// Independent work over the machine's cores, with the standard library's
// threads: fn(i) for every i of [0, n), each once, on up to `jobs` threads
// (the caller's among them). What a caller computes per index it stores by
// index, so the result is the same, bit for bit, whatever `jobs` is; only
// the order in which indices run differs. A parallel_for inside another's
// work runs inline on its thread, so nested loops never start more threads
// than the outer one asked for. docs/ARCHITECTURE.md, "Parallel evaluation".
//
// Threads are started per call rather than kept in a pool: the work handed
// out here (a simulation, a fit's descent) takes milliseconds to seconds,
// against tens of microseconds to start a thread, and no state outlives the
// call. oneTBB would add a dependency for no measured gain.
#pragma once

#include <cstddef>
#include <functional>

namespace collkit {

// The threads a default `--jobs` uses: the cores this process may run on
// (std::thread::hardware_concurrency), at least 1.
int hardware_jobs();

// Runs fn(0) .. fn(n - 1). jobs <= 0 means hardware_jobs(). Indices are
// handed out in increasing order; when fn throws, no further index starts,
// the ones running finish, and the exception of the lowest index that threw
// is rethrown (the same one whatever `jobs` is).
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn);

// Whether the calling thread is running an index of some parallel_for.
bool in_parallel_for();

}  // namespace collkit
