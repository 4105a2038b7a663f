// The CUDA reduction kernels against the host reductions (realrun/
// reduce_host.h, themselves tested against a naive reference): every type x
// op on random non-zero data, odd counts, offsets that break the 16-byte
// alignment of one or both pointers, the fused copy, aliasing dst == src,
// the avg division, the on-device comparison and the on-device fill of the
// check inputs. Skips without a device.
#include <gtest/gtest.h>

#ifdef COLLKIT_HAVE_CUDA

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "realrun/check_data.h"
#include "realrun/device/cuda_util.h"
#include "realrun/device/reduce.h"
#include "realrun/half.h"
#include "realrun/reduce_host.h"

namespace collkit::realrun {
namespace {

class DeviceReduceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string problem = cuda_device_problem();
    if (!problem.empty()) GTEST_SKIP() << "GPU test skipped: " << problem;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

// Random bytes that are valid, non-zero values of `t` (floats in [-8, 8]
// without zeros; 16-bit floats likewise, so sums round in interesting ways).
std::vector<std::byte> random_values(DataType t, std::int64_t n, std::mt19937_64& rng) {
  const int e = size_of(t);
  std::vector<std::byte> v(static_cast<std::size_t>(n * e));
  std::uniform_real_distribution<float> real(-8.0f, 8.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    std::byte* p = v.data() + i * e;
    float f = real(rng);
    if (f == 0.0f) f = 1.0f;
    const std::uint64_t bits = rng() | 1;  // never zero
    switch (t) {
      case DataType::half: {
        const std::uint16_t h = float_to_half(f);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::bfloat16: {
        const std::uint16_t b = float_to_bf16(f);
        std::memcpy(p, &b, 2);
        break;
      }
      case DataType::float32:
        std::memcpy(p, &f, 4);
        break;
      case DataType::float64: {
        const double d = static_cast<double>(f) * 1.000001;
        std::memcpy(p, &d, 8);
        break;
      }
      default:
        std::memcpy(p, &bits, static_cast<std::size_t>(e));
    }
  }
  return v;
}

TEST_F(DeviceReduceTest, MatchesTheHostForEveryTypeOpCountAndAlignment) {
  std::mt19937_64 rng(12345);
  // COLLKIT_GPU_TEST_QUICK (set under compute-sanitizer) drops the large count.
  std::vector<std::int64_t> counts = {1, 7, 15, 16, 17, 33, 1000, 4099};
  if (!std::getenv("COLLKIT_GPU_TEST_QUICK")) counts.push_back((1 << 20) + 3);
  // Element offsets of dst, src and also into their buffers.
  const int offsets[][3] = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {0, 1, 2}, {5, 5, 2}};
  for (DataType t : kAllDataTypes) {
    const int e = size_of(t);
    for (RedOp op : kAllRedOps) {
      for (std::int64_t n : counts) {
        for (const auto& off : offsets) {
          for (bool also : {false, true}) {
            const auto a = random_values(t, n, rng);
            const auto b = random_values(t, n, rng);
            auto expected = a;
            reduce_into(t, op, expected.data(), b.data(), n);
            const std::size_t bytes = static_cast<std::size_t>(n * e);
            DeviceBuffer d(bytes + 64, 0), s(bytes + 64, 0), x(bytes + 64, 0);
            std::byte* dp = d.data() + off[0] * e;
            std::byte* sp = s.data() + off[1] * e;
            std::byte* xp = x.data() + off[2] * e;
            CUDA_CHECK(cudaMemcpy(dp, a.data(), bytes, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(sp, b.data(), bytes, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemset(x.data(), 0x7F, bytes + 64));
            device_reduce(t, op, dp, sp, n, stream_, also ? xp : nullptr);
            CUDA_CHECK(cudaStreamSynchronize(stream_));
            std::vector<std::byte> got(bytes), got_also(bytes);
            CUDA_CHECK(cudaMemcpy(got.data(), dp, bytes, cudaMemcpyDeviceToHost));
            const std::string where = std::string(to_string(t)) + " " + std::string(to_string(op)) +
                                      " n=" + std::to_string(n) + " offsets " +
                                      std::to_string(off[0]) + "," + std::to_string(off[1]) + "," +
                                      std::to_string(off[2]) + (also ? " +copy" : "");
            // Bit-exact: the kernels promise the host's arithmetic.
            ASSERT_EQ(std::memcmp(got.data(), expected.data(), bytes), 0) << where;
            if (also) {
              CUDA_CHECK(cudaMemcpy(got_also.data(), xp, bytes, cudaMemcpyDeviceToHost));
              ASSERT_EQ(std::memcmp(got_also.data(), expected.data(), bytes), 0) << where;
            }
          }
        }
      }
    }
  }
}

TEST_F(DeviceReduceTest, ReduceIntoItself) {
  std::mt19937_64 rng(7);
  for (DataType t : kAllDataTypes) {
    const std::int64_t n = 1001;
    const auto a = random_values(t, n, rng);
    auto copy = a;
    auto expected = a;
    reduce_into(t, RedOp::sum, expected.data(), copy.data(), n);
    DeviceBuffer d(a.size(), 0);
    CUDA_CHECK(cudaMemcpy(d.data(), a.data(), a.size(), cudaMemcpyHostToDevice));
    device_reduce(t, RedOp::sum, d.data(), d.data(), n, stream_);
    std::vector<std::byte> got(a.size());
    CUDA_CHECK(cudaMemcpyAsync(got.data(), d.data(), a.size(), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), a.size()), 0) << to_string(t);
  }
}

TEST_F(DeviceReduceTest, AvgAndCheckKernelsMatchTheHost) {
  std::mt19937_64 rng(99);
  for (DataType t : kAllDataTypes) {
    for (int ranks : {1, 3, 7, 64}) {
      const std::int64_t n = 4097;
      auto a = random_values(t, n, rng);
      DeviceBuffer d(a.size(), 0), wrong(8, 0);
      CUDA_CHECK(cudaMemcpy(d.data(), a.data(), a.size(), cudaMemcpyHostToDevice));
      device_finish_avg(t, d.data(), n, ranks, stream_);
      finish_avg(t, a.data(), n, ranks);
      std::vector<std::byte> got(a.size());
      CUDA_CHECK(cudaMemcpyAsync(got.data(), d.data(), a.size(), cudaMemcpyDeviceToHost, stream_));
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      ASSERT_EQ(std::memcmp(got.data(), a.data(), a.size()), 0) << to_string(t) << " " << ranks;

      // The on-device comparison counts exactly what count_wrong counts.
      auto other = a;
      const std::int64_t changes[] = {0, 1, n / 2, n - 1};
      for (std::int64_t i : changes)
        poison({other.data() + i * size_of(t), std::size_t(size_of(t))});
      DeviceBuffer o(other.size(), 0);
      CUDA_CHECK(cudaMemcpy(o.data(), other.data(), other.size(), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemset(wrong.data(), 0, 8));
      device_count_wrong(t, d.data(), o.data(), n,
                         reinterpret_cast<unsigned long long*>(wrong.data()), stream_);
      unsigned long long w = 0;
      CUDA_CHECK(cudaMemcpyAsync(&w, wrong.data(), 8, cudaMemcpyDeviceToHost, stream_));
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      EXPECT_EQ(static_cast<std::int64_t>(w), count_wrong(t, a, other)) << to_string(t);
      EXPECT_EQ(w, 4u) << to_string(t);
    }
  }
}

// The inputs a bench generates on the device are, byte for byte, the host's
// fill_check_input (which the expected outputs are computed from): every
// pattern (data movement and each op), every type, rank counts that make the
// prod pattern's modulus matter, two check iterations, and a count large
// enough for the grid-stride loop to go round. The buffer is poisoned first,
// so an element the kernel skips differs.
TEST_F(DeviceReduceTest, FillKernelMatchesTheHostFill) {
  const std::pair<Collective, RedOp> patterns[] = {
      {Collective::all_gather, RedOp::sum}, {Collective::all_reduce, RedOp::sum},
      {Collective::reduce, RedOp::avg},     {Collective::reduce_scatter, RedOp::prod},
      {Collective::all_reduce, RedOp::min}, {Collective::all_reduce, RedOp::max}};
  for (auto [c, op] : patterns) {
    for (DataType t : kAllDataTypes) {
      for (int ranks : {1, 3, 64}) {
        for (std::int64_t iter : {0, 5}) {
          const int rank = ranks - 1;
          const std::int64_t n = ranks == 3 ? (std::int64_t{1} << 22) + 3 : 4097;
          std::vector<std::byte> want(static_cast<std::size_t>(n * size_of(t)));
          fill_check_input(c, t, op, ranks, rank, iter, want);
          DeviceBuffer d(want.size(), 0);
          CUDA_CHECK(cudaMemset(d.data(), 0x7F, want.size()));
          device_fill_check(t, check_pattern(c, op), ranks, rank, iter, d.data(), n, stream_);
          std::vector<std::byte> got(want.size());
          CUDA_CHECK(
              cudaMemcpyAsync(got.data(), d.data(), got.size(), cudaMemcpyDeviceToHost, stream_));
          CUDA_CHECK(cudaStreamSynchronize(stream_));
          ASSERT_EQ(count_wrong(t, got, want), 0)
              << to_string(c) << " " << to_string(op) << " " << to_string(t) << " ranks " << ranks
              << " iter " << iter;
          ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << to_string(t);
        }
      }
    }
  }
}

TEST_F(DeviceReduceTest, LaunchConfigComesFromTheDevice) {
  const DeviceInfo info = device_info(0);
  const LaunchConfig small = launch_config(100);
  EXPECT_EQ(small.blocks, 1);
  EXPECT_GT(small.threads, 0);
  const LaunchConfig big = launch_config(std::int64_t{1} << 30);
  EXPECT_GE(big.blocks, info.sms);
  EXPECT_EQ(big.blocks % info.sms, 0);
}

}  // namespace
}  // namespace collkit::realrun

#else

TEST(DeviceReduceTest, SkippedWithoutCuda) {
  GTEST_SKIP() << "GPU test skipped: this collkit was built without CUDA";
}

#endif
