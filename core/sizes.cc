#include "core/sizes.h"

#include <cstdint>
#include <string>

#include "core/error.h"

namespace collkit {

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError(flag + " '" + text + "': " + why);
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    if (!text.empty() && text[0] == '-') throw bad("sizes must be > 0 bytes");
    throw bad("expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
  }
  std::int64_t unit = 1;
  if (digits < text.size()) {
    switch (text[digits]) {
      case 'K':
      case 'k':
        unit = std::int64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        unit = std::int64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        unit = std::int64_t{1} << 30;
        break;
      default:
        throw bad("expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
    }
    if (digits + 1 != text.size())
      throw bad("expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
  }
  std::int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (value > (INT64_MAX - 9) / 10) throw bad("too large");
    value = value * 10 + (text[i] - '0');
  }
  if (value > INT64_MAX / unit) throw bad("too large");
  return value * unit;
}

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                      std::int64_t factor, std::int64_t increment) {
  if (min_bytes <= 0)
    throw UsageError("-b " + std::to_string(min_bytes) + ": the minimum size must be > 0 bytes");
  if (max_bytes <= 0)
    throw UsageError("-e " + std::to_string(max_bytes) + ": the maximum size must be > 0 bytes");
  if (min_bytes > max_bytes)
    throw UsageError("-b " + std::to_string(min_bytes) + " is larger than -e " +
                     std::to_string(max_bytes));
  if (factor < 1)
    throw UsageError("-f " + std::to_string(factor) + ": the step factor must be >= 1");
  if (factor == 1 && increment <= 0 && min_bytes < max_bytes)
    throw UsageError("-i " + std::to_string(increment) + ": the step must be > 0 bytes");
  std::vector<std::int64_t> sizes;
  for (std::int64_t size = min_bytes;;) {
    if (sizes.size() == kMaxSweepSizes)
      throw UsageError(
          "-b " + std::to_string(min_bytes) + " -e " + std::to_string(max_bytes) +
          (factor > 1 ? " -f " + std::to_string(factor) : " -i " + std::to_string(increment)) +
          " gives more than " + std::to_string(kMaxSweepSizes) + " sizes");
    sizes.push_back(size);
    if (min_bytes == max_bytes) break;
    // Stop before the next size would overflow rather than wrap around.
    if (factor > 1) {
      if (size > max_bytes / factor) break;
      size *= factor;
    } else {
      if (size > max_bytes - increment) break;
      size += increment;
    }
  }
  return sizes;
}

}  // namespace collkit
