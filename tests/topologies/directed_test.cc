// Directed links in the explicit form (`"directed": true`): one link a->b,
// no way back. A shared bus every transfer crosses (the host calibration base
// topologies/bases/host-bus-4.json) routes through it; a rank that can be
// reached but cannot answer is a disconnected graph; the key is checked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "route_check.h"

namespace collkit {
namespace {

using testing::load_text;
using testing::route_names;

const std::string kBus = R"({"nodes": [{"id": "r0"}, {"id": "r1"}, {"id": "r2"},
  {"id": "in", "switch": true}, {"id": "out", "switch": true}],
  "links": [{"a": "r0", "b": "in", "bandwidth_gbps": 5, "latency_us": 1, "directed": true},
            {"a": "r1", "b": "in", "bandwidth_gbps": 5, "latency_us": 1, "directed": true},
            {"a": "r2", "b": "in", "bandwidth_gbps": 5, "latency_us": 1, "directed": true},
            {"a": "in", "b": "out", "bandwidth_gbps": 8, "latency_us": 2, "directed": true},
            {"a": "out", "b": "r0", "bandwidth_gbps": 6, "latency_us": 3, "directed": true},
            {"a": "out", "b": "r1", "bandwidth_gbps": 6, "latency_us": 3, "directed": true},
            {"a": "out", "b": "r2", "bandwidth_gbps": 6, "latency_us": 3, "directed": true}]})";

TEST(DirectedLinks, OneLinkPerEntryAndEveryRouteCrossesTheBus) {
  const auto t = load_text(kBus);
  EXPECT_EQ(t->num_ranks(), 3);
  EXPECT_EQ(t->num_links(), 7);  // a cable would have made 14
  EXPECT_EQ(t->link_name(3), "in->out");
  EXPECT_DOUBLE_EQ(t->link(3).bandwidth, 8e9);
  for (int s = 0; s < 3; ++s)
    for (int d = 0; d < 3; ++d) {
      if (s == d) continue;
      const std::vector<std::string> want = {"r" + std::to_string(s) + "->in", "in->out",
                                             "out->r" + std::to_string(d)};
      EXPECT_EQ(route_names(*t, s, d), want);
    }
}

TEST(DirectedLinks, MixesWithCablesInFileOrder) {
  const auto t = load_text(R"({"nodes": [{"id": "a"}, {"id": "b"}],
    "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1},
              {"a": "b", "b": "a", "bandwidth_gbps": 2, "directed": true}]})");
  ASSERT_EQ(t->num_links(), 3);
  EXPECT_EQ(t->link_name(0), "a->b");
  EXPECT_EQ(t->link_name(1), "b->a");
  EXPECT_EQ(t->link_name(2), "b->a");
  EXPECT_DOUBLE_EQ(t->link(2).bandwidth, 2e9);
}

TEST(DirectedLinks, ARankThatCannotAnswerIsDisconnected) {
  try {
    load_text(R"({"nodes": [{"id": "a"}, {"id": "b"}],
      "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1, "directed": true}]})");
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test.json"), std::string::npos) << what;
    EXPECT_NE(what.find("disconnected"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
  }
}

TEST(DirectedLinks, TheKeyMustBeABoolean) {
  try {
    load_text(R"({"nodes": [{"id": "a"}, {"id": "b"}],
      "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1, "directed": "yes"}]})");
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("links[0].directed"), std::string::npos) << what;
    EXPECT_NE(what.find("true or false"), std::string::npos) << what;
  }
}

TEST(DirectedLinks, TheShippedHostBaseLoads) {
  const auto t =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/bases/host-bus-4.json");
  EXPECT_EQ(t->num_ranks(), 4);
  EXPECT_EQ(t->num_links(), 9);
  EXPECT_EQ(route_names(*t, 2, 0),
            (std::vector<std::string>{"r2->bus_in", "bus_in->bus_out", "bus_out->r0"}));
}

}  // namespace
}  // namespace collkit
