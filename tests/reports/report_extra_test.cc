// The typed accessors of Report::extra (reports/report_extra.h): each key
// present and well typed, absent, of another type, and an extra that is not
// an object.
#include "reports/report_extra.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace collkit {
namespace {

Report with(Json extra) {
  Report r;
  r.extra = std::move(extra);
  return r;
}

TEST(ReportExtraTest, PresentKeys) {
  const Report r = with({{"segment_bytes", 8589934592LL},
                         {"group_size", 4},
                         {"iters", 20},
                         {"source_format", "nccl-tests text"},
                         {"devices", Json::array({{{"rank", 0}, {"host_cpus", 16}},
                                                  {{"rank", 1}, {"host_cpus", 8}},
                                                  {{"rank", 2}, {"host_cpus", 12}}})}});
  EXPECT_EQ(extra_segment_bytes(r), std::optional<std::int64_t>(8589934592LL));
  EXPECT_EQ(extra_group_size(r), std::optional<int>(4));
  EXPECT_EQ(extra_integer(r, "iters"), std::optional<std::int64_t>(20));
  EXPECT_EQ(extra_string(r, "source_format"), std::optional<std::string>("nccl-tests text"));
  ASSERT_NE(extra_devices(r), nullptr);
  EXPECT_EQ(extra_devices(r)->size(), 3u);
  EXPECT_EQ(extra_host_cpus(r), (std::vector<int>{16, 8, 12}));
  EXPECT_EQ(extra_fewest_host_cpus(r), std::optional<int>(8));
}

TEST(ReportExtraTest, UnsignedIntegersCount) {
  // JSON parsed from a file holds non-negative integers as unsigned.
  const Report r = with(Json::parse(R"({"segment_bytes": 65536, "group_size": 2,
                           "devices": [{"host_cpus": 4}]})"));
  EXPECT_TRUE(r.extra["segment_bytes"].is_number_unsigned());
  EXPECT_EQ(extra_segment_bytes(r), std::optional<std::int64_t>(65536));
  EXPECT_EQ(extra_group_size(r), std::optional<int>(2));
  EXPECT_EQ(extra_fewest_host_cpus(r), std::optional<int>(4));
}

TEST(ReportExtraTest, AbsentKeys) {
  for (const Json& extra : {Json::object(), Json{{"hosts", 1}, {"model", "flow"}}}) {
    const Report r = with(extra);
    EXPECT_EQ(extra_segment_bytes(r), std::nullopt);
    EXPECT_EQ(extra_group_size(r), std::nullopt);
    EXPECT_EQ(extra_integer(r, "iters"), std::nullopt);
    EXPECT_EQ(extra_string(r, "source_format"), std::nullopt);
    EXPECT_EQ(extra_devices(r), nullptr);
    EXPECT_TRUE(extra_host_cpus(r).empty());
    EXPECT_EQ(extra_fewest_host_cpus(r), std::nullopt);
  }
}

TEST(ReportExtraTest, WrongTypesReadAsAbsent) {
  const Report r = with({{"segment_bytes", "64K"},
                         {"group_size", 2.5},
                         {"iters", true},
                         {"source_format", 3},
                         {"devices", Json{{"rank", 0}, {"host_cpus", 4}}}});  // not an array
  EXPECT_EQ(extra_segment_bytes(r), std::nullopt);
  EXPECT_EQ(extra_group_size(r), std::nullopt);
  EXPECT_EQ(extra_integer(r, "iters"), std::nullopt);
  EXPECT_EQ(extra_string(r, "source_format"), std::nullopt);
  EXPECT_EQ(extra_devices(r), nullptr);
  EXPECT_TRUE(extra_host_cpus(r).empty());
  EXPECT_EQ(extra_fewest_host_cpus(r), std::nullopt);

  // group_size beyond an int, and segment_bytes beyond an int64, are not read.
  const Report big = with(Json::parse(R"({"group_size": 4294967296,
                                          "segment_bytes": 18446744073709551615})"));
  EXPECT_EQ(extra_group_size(big), std::nullopt);
  EXPECT_EQ(extra_segment_bytes(big), std::nullopt);
}

TEST(ReportExtraTest, HostCpusKeepsOnlyPositiveIntegers) {
  // Devices without host_cpus (nccl-tests logs, the cuda backend), with a
  // wrong type, zero, negative or non-object entries are skipped.
  const Report r = with({{"devices", Json::array({{{"rank", 0}},
                                                  {{"rank", 1}, {"host_cpus", "8"}},
                                                  {{"rank", 2}, {"host_cpus", 0}},
                                                  {{"rank", 3}, {"host_cpus", -4}},
                                                  {{"rank", 4}, {"host_cpus", 6.0}},
                                                  7,
                                                  {{"rank", 6}, {"host_cpus", 32}},
                                                  {{"rank", 7}, {"host_cpus", 24}}})}});
  EXPECT_EQ(extra_host_cpus(r), (std::vector<int>{32, 24}));
  EXPECT_EQ(extra_fewest_host_cpus(r), std::optional<int>(24));

  const Report none = with({{"devices", Json::array({{{"rank", 0}, {"host_cpus", 0}}})}});
  EXPECT_NE(extra_devices(none), nullptr);
  EXPECT_TRUE(extra_host_cpus(none).empty());
  EXPECT_EQ(extra_fewest_host_cpus(none), std::nullopt);
}

TEST(ReportExtraTest, ExtraThatIsNotAnObject) {
  for (const Json& extra : {Json(), Json::array({1, 2}), Json("segment_bytes"), Json(7)}) {
    const Report r = with(extra);
    EXPECT_EQ(extra_segment_bytes(r), std::nullopt) << extra.dump();
    EXPECT_EQ(extra_group_size(r), std::nullopt) << extra.dump();
    EXPECT_EQ(extra_integer(r, "segment_bytes"), std::nullopt) << extra.dump();
    EXPECT_EQ(extra_string(r, "segment_bytes"), std::nullopt) << extra.dump();
    EXPECT_EQ(extra_devices(r), nullptr) << extra.dump();
    EXPECT_TRUE(extra_host_cpus(r).empty()) << extra.dump();
    EXPECT_EQ(extra_fewest_host_cpus(r), std::nullopt) << extra.dump();
  }
}

}  // namespace
}  // namespace collkit
