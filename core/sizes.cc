#include "core/sizes.h"

#include <cstdint>
#include <string>

#include "core/error.h"

namespace collkit {

namespace {

constexpr char kUnits[] =
    "K, M, G, T, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)";

// Bytes per unit, or 0 for an unknown unit; "" and "B" are bytes.
std::int64_t unit_bytes(const std::string& unit) {
  if (unit.empty() || unit == "B") return 1;
  const char c = static_cast<char>(unit[0] & ~0x20);  // upper case
  int power = 0;
  switch (c) {
    case 'K':
      power = 1;
      break;
    case 'M':
      power = 2;
      break;
    case 'G':
      power = 3;
      break;
    case 'T':
      power = 4;
      break;
    default:
      return 0;
  }
  const std::string rest = unit.substr(1);
  std::int64_t base = 0;
  if (rest.empty() || rest == "iB") {
    base = 1024;
  } else if (rest == "B") {  // KB or SI's kB
    base = 1000;
  } else {
    return 0;
  }
  std::int64_t v = 1;
  for (int i = 0; i < power; ++i) v *= base;
  return v;
}

}  // namespace

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError(flag + " '" + text + "': " + why);
  };
  const std::string expected =
      std::string("expected a whole number of bytes with an optional unit ") + kUnits +
      " (e.g. 8, 64K, 1G, 80GB)";
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    if (!text.empty() && text[0] == '-') throw bad("sizes must be > 0 bytes");
    throw bad(expected);
  }
  const std::int64_t unit = unit_bytes(text.substr(digits));
  if (unit == 0) throw bad(expected);
  std::int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (value > (INT64_MAX - 9) / 10) throw bad("too large");
    value = value * 10 + (text[i] - '0');
  }
  if (value > INT64_MAX / unit) throw bad("too large");
  return value * unit;
}

std::int64_t parse_memory_bytes(const std::string& flag, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError(flag + " '" + text + "': " + why);
  };
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  const size_t whole_end = i;
  size_t frac_begin = i;
  if (i < text.size() && text[i] == '.') {
    frac_begin = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  }
  const std::string unit_text = text.substr(i);
  const std::string expected = std::string("expected a memory size with a unit: ") + kUnits +
                               ", or B for bytes (e.g. 80GiB, 80GB, 141GB)";
  if (whole_end == 0 && i == frac_begin) throw bad(expected);
  if (unit_text.empty())
    throw bad("a memory size needs a unit (80 could be bytes or gigabytes): " +
              std::string(kUnits) + ", or B for bytes, e.g. '" + text + "GiB' or '" + text + "GB'");
  const std::int64_t unit = unit_bytes(unit_text);
  if (unit == 0) throw bad(expected);
  // Exact: value = digits / 10^decimals * unit, in integers.
  std::string digits = text.substr(0, whole_end) + text.substr(frac_begin, i - frac_begin);
  std::int64_t scale = 1;
  for (size_t d = frac_begin; d < i; ++d) {
    if (scale > INT64_MAX / 10) throw bad("too many decimals");
    scale *= 10;
  }
  __int128 value = 0;
  for (char c : digits) {
    value = value * 10 + (c - '0');
    if (value > static_cast<__int128>(INT64_MAX) * scale) throw bad("too large");
  }
  const __int128 bytes_scaled = value * unit;
  if (bytes_scaled % scale != 0) throw bad("not a whole number of bytes");
  const __int128 bytes = bytes_scaled / scale;
  if (bytes > INT64_MAX) throw bad("too large");
  if (bytes <= 0) throw bad("must be > 0 bytes");
  return static_cast<std::int64_t>(bytes);
}

std::int64_t parse_segment_bytes(const std::string& flag, const std::string& text, DataType type) {
  if (text == "0") return 0;
  const std::int64_t bytes = parse_size(flag, text);
  const int elem = size_of(type);
  const std::string what = std::string(to_string(type)) + " is " + std::to_string(elem) +
                           (elem == 1 ? " byte" : " bytes");
  if (bytes < elem)
    throw UsageError(flag + " '" + text + "': below one element (" + what + "); give at least " +
                     std::to_string(elem) + ", or 0 for automatic");
  if (bytes % elem != 0)
    throw UsageError(flag + " '" + text + "': not a whole number of elements (" + what + ")");
  return bytes;
}

std::int64_t parse_nccl_buffsize(const std::string& flag, const std::string& text) {
  if (text == "0") return 0;
  const std::int64_t bytes = parse_size(flag, text);
  if (bytes < 8 || bytes > INT32_MAX)
    throw UsageError(flag + " '" + text + "': NCCL_BUFFSIZE must be 8 .. " +
                     std::to_string(INT32_MAX) +
                     " bytes (an int split into 8 steps), or 0 for NCCL's default");
  return bytes;
}

std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t lo,
                           std::int64_t hi) {
  const std::string kind = lo == 0   ? "a non-negative integer"
                           : lo == 1 ? "a positive integer"
                                     : "an integer";
  size_t i = !text.empty() && text[0] == '-' ? 1 : 0;
  bool ok = i < text.size();
  for (size_t k = i; ok && k < text.size(); ++k) ok = text[k] >= '0' && text[k] <= '9';
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  if (!ok) {
    // "-3" for a non-negative flag is a number, just out of range.
    throw UsageError(flag + " '" + text + "': expected " + kind);
  }
  const bool negative = i == 1;
  // Accumulated as a negative number, whose range includes INT64_MIN.
  std::int64_t v = 0;
  for (; i < text.size(); ++i) {
    const int d = text[i] - '0';
    if (v < (INT64_MIN + d) / 10)
      throw UsageError(flag + " '" + text + "': out of range (must be in " + range + ")");
    v = v * 10 - d;
  }
  if (!negative) {
    if (v == INT64_MIN)
      throw UsageError(flag + " '" + text + "': out of range (must be in " + range + ")");
    v = -v;
  }
  if (v < lo || v > hi)
    throw UsageError(flag + " '" + text + "': out of range (must be in " + range + ")");
  return v;
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
