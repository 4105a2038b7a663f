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
  EXPECT_EQ(size_error("-b", "12X"),
            "-b '12X': expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, "
            "1G)");
  EXPECT_EQ(size_error("-e", "1GB"),
            "-e '1GB': expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, "
            "1G)");
  EXPECT_EQ(size_error("-b", ""),
            "-b '': expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
  EXPECT_EQ(size_error("-b", "-8"), "-b '-8': sizes must be > 0 bytes");
  EXPECT_EQ(size_error("-e", "99999999999G"), "-e '99999999999G': too large");
  EXPECT_EQ(size_error("-e", "99999999999999999999"), "-e '99999999999999999999': too large");
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
