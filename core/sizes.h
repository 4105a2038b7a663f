// Byte sizes as the size flags give them, and nccl-tests' size loop
// (-b -e -f -i), shared by `simulate`, `bench` and every flag that takes a size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collkit {

// Most sizes one sweep may have; "-i 1" up to 1G would otherwise run for days.
inline constexpr std::size_t kMaxSweepSizes = 100000;

// A size flag's value: an integer number of bytes with an optional K, M or G
// suffix (either case; powers of 1024), as nccl-tests' parsesize. Throws
// UsageError naming the flag and the value, e.g. "-b 12X: ...".
std::int64_t parse_size(const std::string& flag, const std::string& text);

// nccl-tests' loop: size = min, then size * factor when factor > 1, else
// size + increment, while size <= max. Throws UsageError naming the flag
// (-b, -e, -f, -i) for min <= 0, min > max, factor < 1, an increment <= 0
// when it is needed, or more than kMaxSweepSizes sizes.
std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                      std::int64_t factor, std::int64_t increment);

}  // namespace collkit
