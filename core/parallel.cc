#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace collkit {
namespace {

thread_local bool tl_inside = false;

}  // namespace

int hardware_jobs() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

bool in_parallel_for() { return tl_inside; }

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (jobs <= 0) jobs = hardware_jobs();
  const std::size_t threads =
      tl_inside ? 1 : std::min<std::size_t>(n, static_cast<std::size_t>(jobs));
  if (threads <= 1) {
    const bool outer = tl_inside;
    tl_inside = true;
    try {
      for (std::size_t i = 0; i < n; ++i) fn(i);
    } catch (...) {
      tl_inside = outer;
      throw;
    }
    tl_inside = outer;
    return;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::size_t failed_at = n;
  std::exception_ptr failure;
  const auto work = [&] {
    tl_inside = true;
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) break;
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) break;
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (i < failed_at) {
          failed_at = i;
          failure = std::current_exception();
        }
        stop.store(true, std::memory_order_relaxed);
      }
    }
    tl_inside = false;
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace collkit
