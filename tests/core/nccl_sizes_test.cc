#include "core/nccl_sizes.h"

#include <gtest/gtest.h>

#include <tuple>

#include "core/dtypes.h"
#include "core/error.h"

namespace collkit {
namespace {

class BusbwFactorTest : public ::testing::TestWithParam<std::tuple<Collective, int>> {};

TEST_P(BusbwFactorTest, MatchesNcclTestsFormula) {
  const auto [c, p] = GetParam();
  const double n = p;
  double expected = 0;
  switch (c) {
    case Collective::all_reduce:
      expected = 2 * (n - 1) / n;
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::scatter:
    case Collective::gather:
      expected = (n - 1) / n;
      break;
    case Collective::broadcast:
    case Collective::reduce:
      expected = 1;
      break;
    case Collective::barrier:
      expected = 0;
      break;
  }
  EXPECT_DOUBLE_EQ(busbw_factor(c, p), expected);
}

INSTANTIATE_TEST_SUITE_P(All, BusbwFactorTest,
                         ::testing::Combine(::testing::ValuesIn(kAllCollectives),
                                            ::testing::Values(1, 2, 3, 7, 8, 16, 17, 24, 32, 33, 64,
                                                              100)));

TEST(BusbwFactor, HandValues) {
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::broadcast, 1), 1.0);
}

TEST(Algbw, BytesPerMicrosecondInGBs) {
  // 1 MiB in 100 us = 10.48576 GB/s (1 GB = 1e9 B).
  EXPECT_DOUBLE_EQ(algbw_gbps(1048576, 100.0), 10.48576);
  EXPECT_DOUBLE_EQ(algbw_gbps(0, 5.0), 0.0);
  EXPECT_DOUBLE_EQ(algbw_gbps(1024, 0.0), 0.0);
}

struct SizeCase {
  Collective c;
  std::int64_t user_bytes;
  DataType dtype;
  int p;
  SizeMapping expected;
};

class MapSizeTest : public ::testing::TestWithParam<SizeCase> {};

TEST_P(MapSizeTest, HandExample) {
  const SizeCase& k = GetParam();
  const SizeMapping m = map_size(k.c, k.user_bytes, size_of(k.dtype), k.p);
  EXPECT_EQ(m.bytes, k.expected.bytes);
  EXPECT_EQ(m.count, k.expected.count);
  EXPECT_EQ(m.spec_count, k.expected.spec_count);
}

// Worked by hand from NCCL_TESTS.md: count = bytes / sizeof(dtype); the
// partitioned collectives take count / p per rank, rounded down to 16 bytes.
INSTANTIATE_TEST_SUITE_P(
    NcclTests, MapSizeTest,
    ::testing::Values(
        // 1 MiB of float on 8 ranks: the vector itself.
        SizeCase{Collective::all_reduce, 1048576, DataType::float32, 8, {1048576, 262144, 262144}},
        // 10 bytes of float: 2 whole elements, printed as 8 bytes.
        SizeCase{Collective::all_reduce, 10, DataType::float32, 8, {8, 2, 2}},
        SizeCase{Collective::broadcast, 7, DataType::float64, 4, {0, 0, 0}},
        SizeCase{Collective::reduce, 4096, DataType::half, 3, {4096, 2048, 2048}},
        // all_gather: 262144 floats / 8 = 32768 per rank (a multiple of 4
        // floats); printed count is per rank, size the total output; collkit's
        // count is the total output.
        SizeCase{Collective::all_gather, 1048576, DataType::float32, 8, {1048576, 32768, 262144}},
        // 250 floats / 3 = 83 -> 80 (16 B = 4 floats); 80 x 3 x 4 = 960 B.
        SizeCase{Collective::all_gather, 1000, DataType::float32, 3, {960, 80, 240}},
        // 12 doubles / 3 = 4 (16 B = 2 doubles): already aligned.
        SizeCase{Collective::reduce_scatter, 100, DataType::float64, 3, {96, 4, 12}},
        // 2 floats / 8 ranks = 0 per rank.
        SizeCase{Collective::all_to_all, 8, DataType::float32, 8, {0, 0, 0}},
        SizeCase{Collective::all_to_all, 65536, DataType::int32, 4, {65536, 4096, 16384}},
        // 1000 int8 / 7 = 142 -> 128 (16 B = 16 elements); 128 x 7 = 896.
        SizeCase{Collective::scatter, 1000, DataType::int8, 7, {896, 128, 896}},
        // 524288 halves / 6 = 87381 -> 87376 (16 B = 8 halves).
        SizeCase{Collective::gather, 1048576, DataType::half, 6, {1048512, 87376, 524256}},
        SizeCase{Collective::all_gather, 64, DataType::bfloat16, 1, {64, 32, 32}},
        SizeCase{Collective::barrier, 1048576, DataType::float32, 8, {0, 0, 0}}));

TEST(MapSize, RejectsBadArguments) {
  EXPECT_THROW(map_size(Collective::all_reduce, -1, 4, 2), UsageError);
  EXPECT_THROW(map_size(Collective::all_reduce, 8, 0, 2), UsageError);
  EXPECT_THROW(map_size(Collective::all_reduce, 8, 4, 0), UsageError);
}

TEST(DataTypes, NamesAndSizesAsNcclTests) {
  const std::pair<const char*, int> expected[] = {
      {"int8", 1},   {"uint8", 1}, {"int32", 4},    {"uint32", 4}, {"int64", 8},
      {"uint64", 8}, {"half", 2},  {"bfloat16", 2}, {"float", 4},  {"double", 8}};
  for (const auto& [name, size] : expected) {
    const DataType t = parse_data_type(name);
    EXPECT_EQ(to_string(t), name);
    EXPECT_EQ(size_of(t), size) << name;
  }
  EXPECT_THROW(parse_data_type("float33"), UsageError);
  EXPECT_EQ(to_string(parse_data_type("float32")), "float");  // an alias (core/dtypes.h)
  for (const char* name : {"sum", "prod", "min", "max", "avg"})
    EXPECT_EQ(to_string(parse_red_op(name)), name);
  try {
    parse_red_op("mean");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown reduction op 'mean'; valid: sum, prod, min, max, avg");
  }
}

}  // namespace
}  // namespace collkit
