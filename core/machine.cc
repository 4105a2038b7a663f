#include "core/machine.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace collkit {

std::uint64_t machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t bytes = pages > 0 && page > 0
                            ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                            : UINT64_MAX;
  // "max" or a number of bytes.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string limit;
  if (cgroup >> limit && !limit.empty() &&
      std::all_of(limit.begin(), limit.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      limit.size() < 20)
    bytes = std::min<std::uint64_t>(bytes, std::stoull(limit));
  return bytes;
}

}  // namespace collkit
