// parallel_for: every index once, results by index whatever the thread
// count, nested loops inline, and the lowest throwing index's exception.
#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace collkit {
namespace {

TEST(ParallelFor, EveryIndexOnceForAnyJobCount) {
  for (int jobs : {-1, 0, 1, 2, 3, 8, 100})
    for (std::size_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      parallel_for(n, jobs, [&](std::size_t i) { ++hits[i]; });
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << n << " " << jobs;
    }
}

TEST(ParallelFor, UsesSeveralThreadsAndNestsInline) {
  std::mutex m;
  std::set<std::thread::id> outer, inner;
  std::atomic<int> nested_inside{0};
  parallel_for(8, 4, [&](std::size_t) {
    {
      const std::lock_guard<std::mutex> lock(m);
      outer.insert(std::this_thread::get_id());
    }
    EXPECT_TRUE(in_parallel_for());
    const std::thread::id me = std::this_thread::get_id();
    parallel_for(4, 4, [&](std::size_t) {
      // Inline: the same thread as the outer index.
      if (std::this_thread::get_id() == me) ++nested_inside;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  EXPECT_EQ(nested_inside.load(), 32);
  EXPECT_GT(outer.size(), 1u);
  EXPECT_LE(outer.size(), 4u);
  EXPECT_FALSE(in_parallel_for());
}

TEST(ParallelFor, RethrowsTheLowestThrowingIndex) {
  for (int jobs : {1, 2, 4}) {
    std::atomic<int> ran{0};
    try {
      parallel_for(100, jobs, [&](std::size_t i) {
        ++ran;
        if (i == 37 || i == 61) throw std::runtime_error("index " + std::to_string(i));
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "index 37") << jobs;
    }
    EXPECT_LT(ran.load(), 100) << "no index starts after a failure";
    EXPECT_FALSE(in_parallel_for());
  }
}

}  // namespace
}  // namespace collkit
