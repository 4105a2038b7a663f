// Generator: the two ways a coroutine yields (a copy, or by reference with
// co_yield std::ref(x), which the node-sharded nccl programs use to refill
// one Step per round).
#include "algorithms/generator.h"

#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

namespace collkit {
namespace {

// Yields `rounds` vectors {r, r, ..., r} (r + 1 entries) from one vector it
// clears and refills, by reference, and records where that vector lives.
Generator<std::vector<int>> refilled(int rounds, const std::vector<int>** where) {
  std::vector<int> v;
  *where = &v;
  for (int r = 0; r < rounds; ++r) {
    v.clear();
    v.assign(static_cast<std::size_t>(r) + 1, r);
    co_yield std::ref(v);
  }
}

// The same values yielded as copies, alternating with references.
Generator<std::vector<int>> mixed(int rounds) {
  std::vector<int> v;
  for (int r = 0; r < rounds; ++r) {
    v.assign(static_cast<std::size_t>(r) + 1, r);
    if (r % 2 == 0) {
      co_yield std::ref(v);
    } else {
      co_yield v;
    }
  }
}

TEST(Generator, YieldByReferenceShowsTheCoroutinesOwnObject) {
  const std::vector<int>* where = nullptr;
  Generator<std::vector<int>> g = refilled(5, &where);
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(g.next());
    EXPECT_EQ(&g.value(), where) << "round " << r << ": a reference yield is not copied";
    EXPECT_EQ(g.value(), std::vector<int>(static_cast<std::size_t>(r) + 1, r));
  }
  EXPECT_FALSE(g.next());
}

TEST(Generator, AConsumerMayMoveFromABorrowedValue) {
  const std::vector<int>* where = nullptr;
  Generator<std::vector<int>> g = refilled(6, &where);
  std::vector<std::vector<int>> taken;
  while (g.next()) taken.push_back(std::move(g.value()));
  ASSERT_EQ(taken.size(), 6u);
  for (int r = 0; r < 6; ++r)
    EXPECT_EQ(taken[static_cast<std::size_t>(r)],
              std::vector<int>(static_cast<std::size_t>(r) + 1, r));
}

TEST(Generator, CopiesAndReferencesMixInOneCoroutine) {
  std::vector<std::vector<int>> seen;
  for (std::vector<int>& v : mixed(7)) seen.push_back(v);
  ASSERT_EQ(seen.size(), 7u);
  for (int r = 0; r < 7; ++r)
    EXPECT_EQ(seen[static_cast<std::size_t>(r)],
              std::vector<int>(static_cast<std::size_t>(r) + 1, r));
}

}  // namespace
}  // namespace collkit
