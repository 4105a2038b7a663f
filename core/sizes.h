// Byte sizes as the size flags give them, and nccl-tests' size loop
// (-b -e -f -i), shared by `simulate`, `bench` and every flag that takes a size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtypes.h"

namespace collkit {

// Most sizes one sweep may have; "-i 1" up to 1G would otherwise run for days.
inline constexpr std::size_t kMaxSweepSizes = 100000;

// A size flag's value (-b, -e, -i, --segment, --min-bytes): a whole number of
// bytes with an optional unit:
//   K, M, G, T (either case) and KiB, MiB, GiB, TiB: powers of 1024 (2^10,
//     2^20, 2^30, 2^40), as nccl-tests' parsesize reads K, M and G;
//   KB, MB, GB, TB: powers of 1000 (10^3, 10^6, 10^9, 10^12);
//   B or none: bytes.
// Throws UsageError naming the flag and the value ("-b '12X': ..."), also
// when the value does not fit in 63 bits (never clamped).
std::int64_t parse_size(const std::string& flag, const std::string& text);

// A memory flag's value (--device-memory): a positive number, decimals
// allowed, with a unit that must be given (the units of parse_size; a bare
// number is an error that names them, as "80" could mean bytes or GB). The
// result must be a whole number of bytes. Throws UsageError naming the flag.
std::int64_t parse_memory_bytes(const std::string& flag, const std::string& text);

// --segment, the same unit in every subcommand: bytes (parse_size's units),
// 0 = automatic. A non-zero value must be a whole number of elements of
// `type`, at least one: "--segment 2" of float is an error, never rounded.
// Returns bytes.
std::int64_t parse_segment_bytes(const std::string& flag, const std::string& text, DataType type);

// --nccl-buffsize (msccl:FILE.xml, docs/MSCCL.md): NCCL_BUFFSIZE in
// parse_size's units; 0 = NCCL's default. Otherwise 8 .. 2^31 - 1 bytes:
// NCCL keeps it in an int and splits it into NCCL_STEPS = 8 steps. Throws
// UsageError naming the flag and the value.
std::int64_t parse_nccl_buffsize(const std::string& flag, const std::string& text);

// An integer flag's value in [lo, hi]: decimal digits with an optional
// leading '-'. Out of range (overflow included) is an error naming the flag,
// the value and the range, never a clamp.
std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t lo,
                           std::int64_t hi);

// nccl-tests' loop: size = min, then size * factor when factor > 1, else
// size + increment, while size <= max. Throws UsageError naming the flag
// (-b, -e, -f, -i) for min <= 0, min > max, factor < 1, an increment <= 0
// when it is needed, or more than kMaxSweepSizes sizes.
std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                      std::int64_t factor, std::int64_t increment);

}  // namespace collkit
