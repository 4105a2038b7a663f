#include "core/sizes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

using Sizes = std::vector<std::int64_t>;

TEST(ParseSize, SuffixesArePowersOf1024) {
  EXPECT_EQ(parse_size("-b", "8"), 8);
  EXPECT_EQ(parse_size("-b", "64K"), 65536);
  EXPECT_EQ(parse_size("-b", "64k"), 65536);
  EXPECT_EQ(parse_size("-e", "32M"), 32 << 20);
  EXPECT_EQ(parse_size("-e", "1G"), std::int64_t{1} << 30);
  EXPECT_EQ(parse_size("-e", "0"), 0);
}

std::string size_error(const std::string& flag, const std::string& text) {
  try {
    parse_size(flag, text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseSize, ErrorsNameTheFlagAndValue) {
  const std::string units =
      "expected a whole number of bytes with an optional unit K, M, G, T, KiB, MiB, GiB, TiB "
      "(powers of 1024) or KB, MB, GB, TB (powers of 1000) (e.g. 8, 64K, 1G, 80GB)";
  EXPECT_EQ(size_error("-b", "12X"), "-b '12X': " + units);
  EXPECT_EQ(size_error("-e", "1GiBs"), "-e '1GiBs': " + units);
  EXPECT_EQ(size_error("-b", ""), "-b '': " + units);
  EXPECT_EQ(size_error("-b", "1.5K"), "-b '1.5K': " + units);
  EXPECT_EQ(size_error("-b", "-8"), "-b '-8': sizes must be > 0 bytes");
  EXPECT_EQ(size_error("-e", "99999999999G"), "-e '99999999999G': too large");
  EXPECT_EQ(size_error("-e", "99999999999999999999"), "-e '99999999999999999999': too large");
  EXPECT_EQ(size_error("--segment", "10000000TB"), "--segment '10000000TB': too large");
}

TEST(ParseSize, UnitsPowersOfTwoAndTen) {
  const std::int64_t kib = 1024, kb = 1000;
  EXPECT_EQ(parse_size("-b", "80G"), 80 * kib * kib * kib);
  EXPECT_EQ(parse_size("-b", "80GiB"), 80 * kib * kib * kib);
  EXPECT_EQ(parse_size("-b", "80GB"), 80 * kb * kb * kb);
  EXPECT_EQ(parse_size("-b", "3KB"), 3000);
  EXPECT_EQ(parse_size("-b", "3kB"), 3000);
  EXPECT_EQ(parse_size("-b", "3KiB"), 3072);
  EXPECT_EQ(parse_size("-b", "5MB"), 5000000);
  EXPECT_EQ(parse_size("-b", "5MiB"), 5 * kib * kib);
  EXPECT_EQ(parse_size("-b", "2T"), 2 * kib * kib * kib * kib);
  EXPECT_EQ(parse_size("-b", "2TB"), 2 * kb * kb * kb * kb);
  EXPECT_EQ(parse_size("-b", "7B"), 7);
}

std::string memory_error(const std::string& text) {
  try {
    parse_memory_bytes("--device-memory", text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseMemoryBytes, NeedsAUnitAndGivesWholeBytes) {
  EXPECT_EQ(parse_memory_bytes("--device-memory", "80GiB"), std::int64_t{80} << 30);
  EXPECT_EQ(parse_memory_bytes("--device-memory", "80G"), std::int64_t{80} << 30);
  EXPECT_EQ(parse_memory_bytes("--device-memory", "80GB"), 80'000'000'000);
  EXPECT_EQ(parse_memory_bytes("--device-memory", "141GB"), 141'000'000'000);
  EXPECT_EQ(parse_memory_bytes("--device-memory", "1.5TB"), 1'500'000'000'000);
  EXPECT_EQ(parse_memory_bytes("--device-memory", "0.5KiB"), 512);
  EXPECT_EQ(parse_memory_bytes("--device-memory", "1024B"), 1024);
  EXPECT_EQ(memory_error("80"),
            "--device-memory '80': a memory size needs a unit (80 could be bytes or gigabytes): "
            "K, M, G, T, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), "
            "or B for bytes, e.g. '80GiB' or '80GB'");
  EXPECT_EQ(memory_error("0.3B"), "--device-memory '0.3B': not a whole number of bytes");
  EXPECT_EQ(memory_error("0GB"), "--device-memory '0GB': must be > 0 bytes");
  EXPECT_EQ(memory_error("99999999999TB"), "--device-memory '99999999999TB': too large");
  EXPECT_NE(memory_error("80GX").find("expected a memory size with a unit"), std::string::npos);
  EXPECT_NE(memory_error("GB").find("expected a memory size with a unit"), std::string::npos);
  EXPECT_NE(memory_error("-80GB").find("expected a memory size with a unit"), std::string::npos);
}

std::string integer_error(const std::string& text, std::int64_t lo, std::int64_t hi) {
  try {
    parse_integer("--count", text, lo, hi);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseInteger, OutOfRangeIsAnErrorNeverAClamp) {
  EXPECT_EQ(parse_integer("--count", "9223372036854775807", 0, INT64_MAX), INT64_MAX);
  EXPECT_EQ(parse_integer("--count", "-9223372036854775808", INT64_MIN, 0), INT64_MIN);
  EXPECT_EQ(parse_integer("--count", "-5", -10, 10), -5);
  EXPECT_EQ(integer_error("99999999999999999999", 0, INT64_MAX),
            "--count '99999999999999999999': out of range (must be in 0..9223372036854775807)");
  EXPECT_EQ(integer_error("9223372036854775808", INT64_MIN, INT64_MAX),
            "--count '9223372036854775808': out of range (must be in "
            "-9223372036854775808..9223372036854775807)");
  EXPECT_EQ(integer_error("-9223372036854775809", INT64_MIN, INT64_MAX),
            "--count '-9223372036854775809': out of range (must be in "
            "-9223372036854775808..9223372036854775807)");
  EXPECT_EQ(integer_error("11", 1, 10), "--count '11': out of range (must be in 1..10)");
  EXPECT_EQ(integer_error("x", 1, 10), "--count 'x': expected a positive integer");
  EXPECT_EQ(integer_error("1.5", 0, 10), "--count '1.5': expected a non-negative integer");
  EXPECT_EQ(integer_error("", 0, 10), "--count '': expected a non-negative integer");
  EXPECT_EQ(integer_error("-", -1, 10), "--count '-': expected an integer");
}

TEST(ParseSegmentBytes, WholeElementsOnly) {
  EXPECT_EQ(parse_segment_bytes("--segment", "0", DataType::float32), 0);
  EXPECT_EQ(parse_segment_bytes("--segment", "8", DataType::float32), 8);
  EXPECT_EQ(parse_segment_bytes("--segment", "1K", DataType::float64), 1024);
  EXPECT_EQ(parse_segment_bytes("--segment", "1", DataType::int8), 1);
  try {
    parse_segment_bytes("--segment", "2", DataType::float32);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--segment '2': below one element (float is 4 bytes); give at least 4, or 0 for "
              "automatic");
  }
  try {
    parse_segment_bytes("--segment", "6", DataType::float32);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--segment '6': not a whole number of elements (float is 4 bytes)");
  }
  EXPECT_THROW(parse_segment_bytes("--segment", "99999999999999999999", DataType::float32),
               UsageError);
}

TEST(SweepSizes, LikeNcclTestsLoop) {
  EXPECT_EQ(sweep_sizes(8, 128, 2, 0), (Sizes{8, 16, 32, 64, 128}));
  EXPECT_EQ(sweep_sizes(8, 100, 2, 0), (Sizes{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(10, 20, 2, 0), (Sizes{10, 20}));
  EXPECT_EQ(sweep_sizes(1024, 4096, 1, 1024), (Sizes{1024, 2048, 3072, 4096}));
  EXPECT_EQ(sweep_sizes(1000, 3500, 1, 1000), (Sizes{1000, 2000, 3000}));
  EXPECT_EQ(sweep_sizes(32 << 20, 32 << 20, 1, 1 << 20), (Sizes{32 << 20}));
  EXPECT_EQ(sweep_sizes(5, 5, 1, 0), (Sizes{5}));
  // 8 B .. 1 GiB by 2: 28 sizes.
  EXPECT_EQ(sweep_sizes(8, std::int64_t{1} << 30, 2, 0).size(), 28u);
  // Near the top of int64 the loop stops instead of overflowing.
  EXPECT_EQ(sweep_sizes(INT64_MAX / 2, INT64_MAX, 4, 0).size(), 1u);
  EXPECT_EQ(sweep_sizes(INT64_MAX - 10, INT64_MAX, 1, 8).size(), 2u);
}

TEST(SweepSizes, RejectsBadFlags) {
  EXPECT_THROW(sweep_sizes(0, 8, 2, 0), UsageError);
  EXPECT_THROW(sweep_sizes(-8, 8, 2, 0), UsageError);
  EXPECT_THROW(sweep_sizes(8, 0, 2, 0), UsageError);
  EXPECT_THROW(sweep_sizes(8, 16, 0, 0), UsageError);
  EXPECT_THROW(sweep_sizes(8, 16, 1, 0), UsageError);
  EXPECT_THROW(sweep_sizes(1, std::int64_t{1} << 30, 1, 1), UsageError);
  try {
    sweep_sizes(64, 8, 2, 0);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "-b 64 is larger than -e 8");
  }
}

}  // namespace
}  // namespace collkit
