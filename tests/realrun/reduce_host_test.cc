// Host reductions against a naive reference, for every data type x op on
// random non-zero data at odd counts; the 16-bit float conversions against
// an independent (search-based) round-to-nearest-even.
#include "realrun/reduce_host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "realrun/half.h"

namespace collkit::realrun {
namespace {

// Decodes binary16 from its fields, as the standard defines it.
double naive_half_value(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return sign ? -v : v;
}

double naive_bf16_value(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Nearest representable value by binary search over the (monotone) positive
// encodings [0, inf_bits], ties to the even encoding.
template <typename Decode>
std::uint16_t naive_round(double x, std::uint16_t inf_bits, Decode decode) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  x = std::fabs(x);
  std::uint32_t lo = 0, hi = inf_bits;  // decode(lo) <= x < decode(hi) unless x >= max
  if (x >= decode(inf_bits)) return sign | inf_bits;
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (decode(static_cast<std::uint16_t>(mid)) <= x ? lo : hi) = mid;
  }
  const double dlo = x - decode(static_cast<std::uint16_t>(lo));
  const double dhi = decode(static_cast<std::uint16_t>(hi)) - x;
  // The largest finite value rounds to infinity only past the halfway point
  // to the next (unrepresentable) step, which decode(inf) = inf hides.
  if (hi == inf_bits) {
    const double step =
        decode(static_cast<std::uint16_t>(lo)) - decode(static_cast<std::uint16_t>(lo - 1));
    return sign | (dlo < step / 2 ? lo : hi);
  }
  std::uint32_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<std::uint16_t>(sign | pick);
}

std::uint16_t naive_float_to_half(float f) { return naive_round(f, 0x7C00, naive_half_value); }
std::uint16_t naive_float_to_bf16(float f) { return naive_round(f, 0x7F80, naive_bf16_value); }

TEST(HalfTest, HalfToFloatIsExactForEveryEncoding) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const double want = naive_half_value(static_cast<std::uint16_t>(h));
    const float got = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << "bits " << h;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << "bits " << h;
    }
  }
}

TEST(HalfTest, FloatToHalfRoundsToNearestEven) {
  // Every encoding round-trips, and midpoints (the hard case) and random
  // floats round like the search-based reference.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    EXPECT_EQ(float_to_half(f), bits);
    if ((h & 0x7FFF) < 0x7BFF) {
      const float next = half_to_float(static_cast<std::uint16_t>(h + 1));
      const float mid = (f + next) / 2;  // exact in float
      EXPECT_EQ(float_to_half(mid), naive_float_to_half(mid)) << "midpoint above " << h;
    }
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-70000.f, 70000.f);
  for (int i = 0; i < 100000; ++i) {
    const float f = i % 2 ? dist(gen) : dist(gen) * 1e-6f;
    EXPECT_EQ(float_to_half(f), naive_float_to_half(f)) << f;
  }
}

TEST(HalfTest, Bfloat16RoundsToNearestEven) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0xFFFFFFFFu);
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = bits(gen);
    if (i % 3 == 0) u = (u & 0xFFFF0000u) | 0x8000u;  // exact midpoints
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f))));
      continue;
    }
    EXPECT_EQ(float_to_bf16(f), naive_float_to_bf16(f)) << std::hex << u;
  }
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    if (std::isnan(bf16_to_float(static_cast<std::uint16_t>(b)))) continue;
    EXPECT_EQ(float_to_bf16(bf16_to_float(static_cast<std::uint16_t>(b))), b);
  }
}

// Naive element-wise reference: decode to double (or exact wrapping
// integer arithmetic), combine, encode.
template <typename T>
T naive_combine(RedOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case RedOp::prod:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case RedOp::min:
      return std::min(a, b);
    case RedOp::max:
      return std::max(a, b);
  }
  return a;
}

double naive_float_combine(RedOp op, double a, double b) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return a + b;
    case RedOp::prod:
      return a * b;
    case RedOp::min:
      return std::min(a, b);
    case RedOp::max:
      return std::max(a, b);
  }
  return a;
}

struct Data {
  std::vector<std::byte> dst, src, want;
};

// Random non-zero inputs of `n` elements and the naive result.
Data make_data(DataType type, RedOp op, std::int64_t n, std::uint32_t seed) {
  const int e = size_of(type);
  Data d;
  d.dst.resize(n * e);
  d.src.resize(n * e);
  d.want.resize(n * e);
  std::mt19937_64 gen(seed);
  const auto put = [](std::vector<std::byte>& v, std::int64_t i, const auto& x) {
    std::memcpy(v.data() + i * sizeof(x), &x, sizeof(x));
  };
  const auto ints = [&](auto zero) {
    using T = decltype(zero);
    for (std::int64_t i = 0; i < n; ++i) {
      T a = 0, b = 0;
      while (a == 0) a = static_cast<T>(gen());
      while (b == 0) b = static_cast<T>(gen());
      put(d.dst, i, a);
      put(d.src, i, b);
      put(d.want, i, naive_combine<T>(op, a, b));
    }
  };
  // Products stay near 1 so they neither overflow nor underflow.
  std::uniform_real_distribution<double> mag(op == RedOp::prod ? 0.5 : 0.01,
                                             op == RedOp::prod ? 2.0 : 100.0);
  const auto value = [&] { return (gen() & 1 ? -1 : 1) * mag(gen); };
  for (std::int64_t i = 0; i < n && type == DataType::float32; ++i) {
    const float a = static_cast<float>(value()), b = static_cast<float>(value());
    put(d.dst, i, a);
    put(d.src, i, b);
    put(d.want, i, static_cast<float>(naive_float_combine(op, a, b)));
  }
  for (std::int64_t i = 0; i < n && type == DataType::float64; ++i) {
    const double a = value(), b = value();
    put(d.dst, i, a);
    put(d.src, i, b);
    put(d.want, i, naive_float_combine(op, a, b));
  }
  for (std::int64_t i = 0; i < n && (type == DataType::half || type == DataType::bfloat16); ++i) {
    const bool h = type == DataType::half;
    const auto enc = [&](double x) {
      return h ? naive_float_to_half(static_cast<float>(x))
               : naive_float_to_bf16(static_cast<float>(x));
    };
    const auto dec = [&](std::uint16_t x) { return h ? naive_half_value(x) : naive_bf16_value(x); };
    const std::uint16_t a = enc(value()), b = enc(value());
    put(d.dst, i, a);
    put(d.src, i, b);
    // The reduction computes in float: the float result, then rounded once.
    const float r = static_cast<float>(naive_float_combine(op, dec(a), dec(b)));
    put(d.want, i, enc(r));
  }
  switch (type) {
    case DataType::int8:
      ints(std::int8_t{});
      break;
    case DataType::uint8:
      ints(std::uint8_t{});
      break;
    case DataType::int32:
      ints(std::int32_t{});
      break;
    case DataType::uint32:
      ints(std::uint32_t{});
      break;
    case DataType::int64:
      ints(std::int64_t{});
      break;
    case DataType::uint64:
      ints(std::uint64_t{});
      break;
    default:
      break;
  }
  return d;
}

class ReduceHostTest : public ::testing::TestWithParam<std::tuple<DataType, RedOp, int>> {};

TEST_P(ReduceHostTest, MatchesNaiveReference) {
  const auto [type, op, n] = GetParam();
  Data d = make_data(type, op, n, 1234 + n);
  reduce_into(type, op, d.dst.data(), d.src.data(), n);
  EXPECT_EQ(d.dst, d.want);
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceHostTest,
                         ::testing::Combine(::testing::ValuesIn(kAllDataTypes),
                                            ::testing::ValuesIn(kAllRedOps),
                                            ::testing::Values(1, 7, 63, 1001, 4099)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::string(to_string(std::get<1>(info.param))) + "_" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST(ReduceHostTest, ReducingARegionIntoItself) {
  std::vector<std::int32_t> v{1, -2, 3};
  reduce_into(DataType::int32, RedOp::sum, v.data(), v.data(), 3);
  EXPECT_EQ(v, (std::vector<std::int32_t>{2, -4, 6}));
}

TEST(ReduceHostTest, AvgDividesAtTheEnd) {
  std::vector<std::int32_t> i{7, -7, 9};
  finish_avg(DataType::int32, i.data(), 3, 2);
  EXPECT_EQ(i, (std::vector<std::int32_t>{3, -3, 4}));  // truncation, as C++ and NCCL
  std::vector<std::uint8_t> u{255, 10};
  finish_avg(DataType::uint8, u.data(), 2, 4);
  EXPECT_EQ(u, (std::vector<std::uint8_t>{63, 2}));
  std::vector<float> f{1.f, 3.f};
  finish_avg(DataType::float32, f.data(), 2, 4);
  EXPECT_EQ(f, (std::vector<float>{0.25f, 0.75f}));
  std::vector<std::uint16_t> h{float_to_half(1.f), float_to_half(2.f)};
  finish_avg(DataType::half, h.data(), 2, 3);
  EXPECT_EQ(h[0], float_to_half(1.f / 3.f));
  EXPECT_EQ(h[1], float_to_half(2.f / 3.f));
  std::vector<std::uint16_t> b{float_to_bf16(5.f)};
  finish_avg(DataType::bfloat16, b.data(), 1, 3);
  EXPECT_EQ(b[0], float_to_bf16(5.f / 3.f));
}

}  // namespace
}  // namespace collkit::realrun
