#include "realrun/check_data.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "realrun/half.h"
#include "realrun/reduce_host.h"

namespace collkit::realrun {
namespace {

// Stores the integer v as element i of a buffer of type `type`.
void store(DataType type, std::byte* out, std::int64_t i, std::int64_t v) {
  switch (type) {
    case DataType::int8:
      reinterpret_cast<std::int8_t*>(out)[i] = static_cast<std::int8_t>(v);
      return;
    case DataType::uint8:
      reinterpret_cast<std::uint8_t*>(out)[i] = static_cast<std::uint8_t>(v);
      return;
    case DataType::int32:
      reinterpret_cast<std::int32_t*>(out)[i] = static_cast<std::int32_t>(v);
      return;
    case DataType::uint32:
      reinterpret_cast<std::uint32_t*>(out)[i] = static_cast<std::uint32_t>(v);
      return;
    case DataType::int64:
      reinterpret_cast<std::int64_t*>(out)[i] = v;
      return;
    case DataType::uint64:
      reinterpret_cast<std::uint64_t*>(out)[i] = static_cast<std::uint64_t>(v);
      return;
    case DataType::half:
      reinterpret_cast<std::uint16_t*>(out)[i] = float_to_half(static_cast<float>(v));
      return;
    case DataType::bfloat16:
      reinterpret_cast<std::uint16_t*>(out)[i] = float_to_bf16(static_cast<float>(v));
      return;
    case DataType::float32:
      reinterpret_cast<float*>(out)[i] = static_cast<float>(v);
      return;
    case DataType::float64:
      reinterpret_cast<double*>(out)[i] = static_cast<double>(v);
      return;
  }
}

void fill_values(Collective c, DataType type, RedOp op, int ranks, int rank, std::int64_t first,
                 std::int64_t iter, std::byte* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    store(type, out, i, check_value(c, type, op, ranks, rank, first + i, iter));
}

// Combined value over every rank of elements [first, first + count) of the
// input vectors, into `out`.
void reduced_values(Collective c, DataType type, RedOp op, int ranks, std::int64_t first,
                    std::int64_t iter, std::byte* out, std::int64_t count) {
  const int e = size_of(type);
  constexpr std::int64_t kChunk = 4096;
  std::vector<std::byte> tmp(static_cast<std::size_t>(kChunk * e));
  for (std::int64_t base = 0; base < count; base += kChunk) {
    const std::int64_t n = std::min(kChunk, count - base);
    std::byte* acc = out + base * e;
    fill_values(c, type, op, ranks, 0, first + base, iter, acc, n);
    for (int r = 1; r < ranks; ++r) {
      fill_values(c, type, op, ranks, r, first + base, iter, tmp.data(), n);
      reduce_into(type, op, acc, tmp.data(), n);
    }
    if (op == RedOp::avg) finish_avg(type, acc, n, ranks);
  }
}

template <typename T>
std::int64_t count_wrong_typed(const std::byte* a, const std::byte* b, std::int64_t n) {
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b + i * sizeof(T), sizeof(T));
    wrong += x == y ? 0 : 1;
  }
  return wrong;
}

}  // namespace

CheckPattern check_pattern(Collective c, RedOp op) {
  if (!is_reduction(c)) return CheckPattern::data;
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return CheckPattern::sum;
    case RedOp::prod:
      return CheckPattern::prod;
    case RedOp::min:
    case RedOp::max:
      return CheckPattern::minmax;
  }
  throw UsageError("unknown reduction op code " + std::to_string(static_cast<int>(op)));
}

bool is_unsigned_type(DataType type) {
  return type == DataType::uint8 || type == DataType::uint32 || type == DataType::uint64;
}

std::int64_t check_value(Collective c, DataType type, RedOp op, int ranks, int rank,
                         std::int64_t index, std::int64_t iter) {
  return check_pattern_value(check_pattern(c, op), is_unsigned_type(type), ranks, rank, index,
                             iter);
}

void fill_check_input(Collective c, DataType type, RedOp op, int ranks, int rank, std::int64_t iter,
                      std::span<std::byte> input) {
  fill_values(c, type, op, ranks, rank, 0, iter, input.data(),
              static_cast<std::int64_t>(input.size()) / size_of(type));
}

void expected_output(Collective c, DataType type, RedOp op, int ranks, int rank, int root,
                     std::int64_t count, std::int64_t iter, std::span<std::byte> expected) {
  const int e = size_of(type);
  const BufferSizes io = io_sizes(c, ranks, rank, root, count);
  if (static_cast<std::int64_t>(expected.size()) != io.output * e)
    throw UsageError("expected buffer of " + std::to_string(expected.size()) + " bytes for an " +
                     "output of " + std::to_string(io.output) + " elements");
  const Partition part{count, ranks};
  std::byte* out = expected.data();
  switch (c) {
    case Collective::broadcast:
      fill_values(c, type, op, ranks, root, 0, iter, out, io.output);
      return;
    case Collective::reduce:
    case Collective::all_reduce:
      reduced_values(c, type, op, ranks, 0, iter, out, io.output);
      return;
    case Collective::reduce_scatter:
      reduced_values(c, type, op, ranks, part.offset(rank), iter, out, io.output);
      return;
    case Collective::all_gather:
    case Collective::gather:
      // Block q of the output is rank q's whole input.
      for (int q = 0; q < ranks && io.output > 0; ++q)
        fill_values(c, type, op, ranks, q, 0, iter, out + part.offset(q) * e, part.size(q));
      return;
    case Collective::scatter:
      fill_values(c, type, op, ranks, root, part.offset(rank), iter, out, io.output);
      return;
    case Collective::all_to_all: {
      // Rank q sends block `rank` of its input (part.size(rank) elements),
      // which lands as block q of this rank's output.
      const std::int64_t block = part.size(rank);
      for (int q = 0; q < ranks; ++q)
        fill_values(c, type, op, ranks, q, part.offset(rank), iter, out + q * block * e, block);
      return;
    }
    case Collective::barrier:
      return;
  }
}

std::int64_t count_wrong(DataType type, std::span<const std::byte> actual,
                         std::span<const std::byte> expected) {
  if (actual.size() != expected.size())
    throw UsageError("cannot compare " + std::to_string(actual.size()) + " bytes with " +
                     std::to_string(expected.size()));
  const std::int64_t n = static_cast<std::int64_t>(actual.size()) / size_of(type);
  const std::byte* a = actual.data();
  const std::byte* b = expected.data();
  switch (type) {
    case DataType::float32:
      return count_wrong_typed<float>(a, b, n);
    case DataType::float64:
      return count_wrong_typed<double>(a, b, n);
    case DataType::half:
    case DataType::bfloat16: {
      std::int64_t wrong = 0;
      const bool is_half = type == DataType::half;
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t x, y;
        std::memcpy(&x, a + 2 * i, 2);
        std::memcpy(&y, b + 2 * i, 2);
        const float fx = is_half ? half_to_float(x) : bf16_to_float(x);
        const float fy = is_half ? half_to_float(y) : bf16_to_float(y);
        wrong += fx == fy ? 0 : 1;
      }
      return wrong;
    }
    case DataType::int8:
    case DataType::uint8:
      return count_wrong_typed<std::uint8_t>(a, b, n);
    case DataType::int32:
    case DataType::uint32:
      return count_wrong_typed<std::uint32_t>(a, b, n);
    case DataType::int64:
    case DataType::uint64:
      return count_wrong_typed<std::uint64_t>(a, b, n);
  }
  return n;
}

void poison(std::span<std::byte> buffer) {
  // 0x7F7F... is far outside every check value for every type (a large
  // integer, a float near 3.4e38, a half/bfloat16 NaN or huge value).
  // An empty span may have a null pointer, which memset must not get.
  if (!buffer.empty()) std::memset(buffer.data(), 0x7F, buffer.size());
}

}  // namespace collkit::realrun
