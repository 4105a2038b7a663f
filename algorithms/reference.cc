// The reference executor. One engine (Engine<Data>) implements the schedule
// semantics shared by every backend: per-rank programs pulled one step at a
// time, rendezvous FIFO matching per ordered pair, local ops after the step's
// communication, and every structural check (bounds, peers, hazards,
// initialised reads, deadlock). The Data policy decides what an element is:
// nothing (check_structure), a number (verify_numeric) or a set of
// contributions (verify_symbolic).
#include "algorithms/reference.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace collkit {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::float32:
      return "float";
    case DType::float64:
      return "double";
  }
  return "?";
}

std::string_view to_string(ReduceOp o) {
  switch (o) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

namespace {

constexpr int kBufCount = 3;
// Barrier causality needs p bits per rank (p^2 / 8 bytes in all); beyond this
// many ranks the check is skipped rather than exhausting memory.
constexpr int kMaxCausalityRanks = 16384;
// Deadlock reports list at most this many stuck ranks: enough to see the
// pattern without a megabyte-long message at large p.
constexpr int kMaxReportedRanks = 16;

int buf_index(Buf b) { return static_cast<int>(b); }

std::string region_str(const Region& r) {
  return std::string(to_string(r.buf)) + "[" + std::to_string(r.offset) + ",+" +
         std::to_string(r.count) + ")";
}

std::string op_str(const Op& op) {
  switch (op.kind) {
    case OpKind::send:
      return "send to " + std::to_string(op.peer) + " from " + region_str(op.src);
    case OpKind::recv:
      return std::string(op.combine == Combine::reduce ? "recv-reduce" : "recv") + " from " +
             std::to_string(op.peer) + " into " + region_str(op.dst);
    case OpKind::copy:
      return "copy " + region_str(op.src) + " -> " + region_str(op.dst);
    case OpKind::reduce:
      return "reduce " + region_str(op.src) + " into " + region_str(op.dst);
  }
  return "?";
}

std::string spec_str(const ScheduleSpec& s) {
  std::string out = std::string(to_string(s.collective)) + "/" + s.algorithm;
  if (!s.variant.empty()) out += ":" + s.variant;
  out += " p=" + std::to_string(s.ranks);
  if (is_rooted(s.collective)) out += " root=" + std::to_string(s.root);
  out += " n=" + std::to_string(s.count);
  return out;
}

// " [origin]" of an element, for schedules that translate (Schedule::describe_element).
std::string element_origin(const Schedule& s, int rank, Buf buf, std::int64_t index) {
  const std::string o = s.describe_element(rank, buf, index);
  return o.empty() ? std::string() : " [" + o + "]";
}

bool overlaps(const Region& a, const Region& b) {
  return a.buf == b.buf && a.count > 0 && b.count > 0 && a.offset < b.offset + b.count &&
         b.offset < a.offset + a.count;
}

// One bit per element: has it ever been written? Input starts all set, output
// and scratch all clear. Word-wise so that large regions cost n/64.
class Bitmap {
 public:
  void reset(std::int64_t n, bool value) {
    n_ = n;
    words_.assign(static_cast<std::size_t>((n + 63) / 64), value ? ~std::uint64_t{0} : 0);
  }
  // The first clear bit in [b, e), or -1.
  std::int64_t first_clear(std::int64_t b, std::int64_t e) const {
    while (b < e) {
      const std::int64_t w = b / 64;
      const int lo = static_cast<int>(b % 64);
      const std::int64_t word_end = std::min(e, (w + 1) * 64);
      const int hi = static_cast<int>(word_end - w * 64);  // exclusive, 1..64
      std::uint64_t mask = (hi == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << hi) - 1));
      mask &= ~((std::uint64_t{1} << lo) - 1);
      const std::uint64_t clear = ~words_[static_cast<std::size_t>(w)] & mask;
      if (clear) return w * 64 + std::countr_zero(clear);
      b = word_end;
    }
    return -1;
  }
  std::int64_t count_clear(std::int64_t b, std::int64_t e) const {
    std::int64_t c = 0;
    for (std::int64_t i = b; i < e; ++i)
      if (!(words_[static_cast<std::size_t>(i / 64)] >> (i % 64) & 1)) ++c;
    return c;
  }
  void set(std::int64_t b, std::int64_t e) {
    while (b < e) {
      const std::int64_t w = b / 64;
      const int lo = static_cast<int>(b % 64);
      const std::int64_t word_end = std::min(e, (w + 1) * 64);
      const int hi = static_cast<int>(word_end - w * 64);
      std::uint64_t mask = (hi == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << hi) - 1));
      mask &= ~((std::uint64_t{1} << lo) - 1);
      words_[static_cast<std::size_t>(w)] |= mask;
      b = word_end;
    }
  }
  std::int64_t size() const { return n_; }

 private:
  std::int64_t n_ = 0;
  std::vector<std::uint64_t> words_;
};

// Element storage reused from one run to the next on the same thread. Fresh
// multi-megabyte buffers cost a page fault per 4 KiB on first touch, which
// dominated sweeps of thousands of schedules; recycled memory does not. The
// memory is handed out uninitialised: the engine's bitmaps guarantee that no
// element is read before it is written.
class Arena {
 public:
  // Starts a run: everything handed out before is free again. Only the
  // largest block is kept: blocks grow geometrically, so it soon covers the
  // peak, and a fresh merged block would fault every page in again.
  void reset() {
    if (blocks_.size() > 1) {
      auto largest =
          std::max_element(blocks_.begin(), blocks_.end(),
                           [](const Block& a, const Block& b) { return a.size < b.size; });
      Block keep = std::move(*largest);
      blocks_.clear();
      blocks_.push_back(std::move(keep));
    }
    // A huge run must not pin its memory for the rest of the process.
    if (!blocks_.empty() && blocks_.front().size > kKeepBytes) blocks_.clear();
    for (Block& b : blocks_) b.used = 0;
  }

  template <typename T>
  T* allocate(std::int64_t count) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= kAlign);
    const std::size_t bytes =
        (static_cast<std::size_t>(count) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    if (blocks_.empty() || blocks_.back().size - blocks_.back().used < bytes) {
      std::size_t total = 0;
      for (const Block& b : blocks_) total += b.size;
      blocks_.push_back(make_block(std::max({bytes, total, kMinBlock})));
    }
    Block& b = blocks_.back();
    T* out = reinterpret_cast<T*>(b.data.get() + b.used);
    b.used += bytes;
    return out;
  }

 private:
  static constexpr std::size_t kAlign = 64;
  static constexpr std::size_t kMinBlock = std::size_t{1} << 20;
  static constexpr std::size_t kKeepBytes = std::size_t{1} << 30;
  struct Block {
    std::unique_ptr<std::byte[]> data;
    std::size_t size;
    std::size_t used;
  };
  // new std::byte[n] without () leaves the bytes uninitialised: no memset.
  static Block make_block(std::size_t size) {
    return {std::unique_ptr<std::byte[]>(new std::byte[size]), size, 0};
  }
  std::vector<Block> blocks_;
};

// The thread's arena for the duration of one run, or a private one when a run
// on this thread already holds it.
class ArenaLease {
 public:
  ArenaLease() {
    if (busy_) {
      own_ = std::make_unique<Arena>();
      arena_ = own_.get();
    } else {
      busy_ = true;
      leased_ = true;
      arena_ = &shared_;
    }
    arena_->reset();
  }
  ~ArenaLease() {
    if (leased_) busy_ = false;
  }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  Arena& arena() { return *arena_; }

 private:
  static thread_local Arena shared_;
  static thread_local bool busy_;
  std::unique_ptr<Arena> own_;
  Arena* arena_ = nullptr;
  bool leased_ = false;
};
thread_local Arena ArenaLease::shared_;
thread_local bool ArenaLease::busy_ = false;

// A contiguous piece of a rank's required output: out[out_offset, +count)
// must equal input[src_offset, +count) of src_rank, or (src_rank == kAllRanks)
// the reduction over all ranks of input[src_offset, +count).
constexpr int kAllRanks = -1;
struct OutputPiece {
  std::int64_t out_offset;
  std::int64_t count;
  int src_rank;
  std::int64_t src_offset;
};

// The collective's postcondition for one rank, as pieces of its output.
std::vector<OutputPiece> required_output(const ScheduleSpec& spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  const Partition part{n, p};
  std::vector<OutputPiece> out;
  auto add = [&](std::int64_t off, std::int64_t cnt, int src, std::int64_t src_off) {
    if (cnt > 0) out.push_back({off, cnt, src, src_off});
  };
  switch (spec.collective) {
    case Collective::broadcast:
      add(0, n, spec.root, 0);
      break;
    case Collective::reduce:
      if (rank == spec.root) add(0, n, kAllRanks, 0);
      break;
    case Collective::all_gather:
      for (int i = 0; i < p; ++i) add(part.offset(i), part.size(i), i, 0);
      break;
    case Collective::scatter:
      add(0, part.size(rank), spec.root, part.offset(rank));
      break;
    case Collective::gather:
      if (rank == spec.root)
        for (int i = 0; i < p; ++i) add(part.offset(i), part.size(i), i, 0);
      break;
    case Collective::reduce_scatter:
      add(0, part.size(rank), kAllRanks, part.offset(rank));
      break;
    case Collective::all_reduce:
      add(0, n, kAllRanks, 0);
      break;
    case Collective::all_to_all:
      for (int i = 0; i < p; ++i) add(i * part.size(rank), part.size(rank), i, part.offset(rank));
      break;
    case Collective::barrier:
      break;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Data policies. Each returns an empty string on success or a description of
// the problem; the engine adds rank/step/op context and throws.

// check_structure: no data at all.
struct NoData {
  int first_bad_rank = -1;
  std::int64_t first_bad_index = -1;
  void setup(const ScheduleSpec&, const std::vector<BufferSizes>&) {}
  std::string transfer(int, const Region&, int, const Region&, Combine) { return {}; }
  std::string local(int, const Op&) { return {}; }
  void check_result(const Schedule&) {}
};

// Deterministic test values: small non-zero integers (sum/min/max) or +-1
// (prod), so every dtype represents every partial result exactly and every
// contribution changes a sum.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One mix per element keeps the setup of p x n inputs cheap; `key` carries
// the seed and the rank.
std::uint64_t seed_key(std::uint64_t seed, int rank) {
  return mix(mix(seed) ^ static_cast<std::uint64_t>(rank));
}

int test_value(std::uint64_t key, std::int64_t i, ReduceOp op) {
  const std::uint64_t h = mix(key ^ static_cast<std::uint64_t>(i) * 0xd1b54a32d192ed03ULL);
  if (op == ReduceOp::prod) return (h & 1) ? 1 : -1;
  const int v = static_cast<int>(h % 8);  // 0..7 -> -4..-1, 1..4
  return v < 4 ? v - 4 : v - 3;
}

template <typename T>
void combine_into(T* dst, const T* src, std::int64_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
      break;
    case ReduceOp::prod:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(dst[i] * src[i]);
      break;
    case ReduceOp::min:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = std::min(dst[i], src[i]);
      break;
    case ReduceOp::max:
      for (std::int64_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], src[i]);
      break;
  }
}

template <typename T>
std::string value_str(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return std::to_string(v);
  }
}

template <typename T>
class NumericData {
 public:
  // The first wrong output element found by check_result (rank -1: none).
  int first_bad_rank = -1;
  std::int64_t first_bad_index = -1;

  NumericData(ReduceOp op, std::uint64_t seed) : op_(op), seed_(seed) {}

  void setup(const ScheduleSpec&, const std::vector<BufferSizes>& sizes) {
    Arena& arena = lease_.arena();
    bufs_.resize(sizes.size());
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      auto& b = bufs_[r];
      b[0] = arena.allocate<T>(sizes[r].input);
      const std::uint64_t key = seed_key(seed_, static_cast<int>(r));
      for (std::int64_t i = 0; i < sizes[r].input; ++i)
        b[0][i] = static_cast<T>(test_value(key, i, op_));
      b[1] = arena.allocate<T>(sizes[r].output);
      b[2] = arena.allocate<T>(sizes[r].scratch);
    }
  }

  std::string transfer(int src_rank, const Region& src, int dst_rank, const Region& dst,
                       Combine c) {
    const T* s = ptr(src_rank, src);
    T* d = ptr(dst_rank, dst);
    if (c == Combine::copy)
      std::copy(s, s + src.count, d);
    else
      combine_into(d, s, src.count, op_);
    return {};
  }

  std::string local(int rank, const Op& op) {
    const T* s = ptr(rank, op.src);
    T* d = ptr(rank, op.dst);
    if (op.kind == OpKind::copy)
      std::copy(s, s + op.src.count, d);
    else
      combine_into(d, s, op.src.count, op_);
    return {};
  }

  void check_result(const Schedule& schedule) {
    const ScheduleSpec& spec = schedule.spec();
    const int p = spec.ranks;
    // The reduction over all ranks, computed once: O(p n), not O(p^2 n). It is
    // recomputed from the seed because a schedule may overwrite its input.
    std::vector<T> reduced;
    if (is_reduction(spec.collective)) {
      reduced.resize(static_cast<std::size_t>(spec.count));
      for (int r = 0; r < p; ++r) {
        const std::uint64_t key = seed_key(seed_, r);
        for (std::int64_t i = 0; i < spec.count; ++i) {
          const T v = static_cast<T>(test_value(key, i, op_));
          if (r == 0)
            reduced[static_cast<std::size_t>(i)] = v;
          else
            combine_into(&reduced[static_cast<std::size_t>(i)], &v, 1, op_);
        }
      }
    }
    std::int64_t wrong = 0;
    std::string first;
    for (int r = 0; r < p; ++r) {
      const T* out = bufs_[static_cast<std::size_t>(r)][1];
      for (const OutputPiece& piece : required_output(spec, r)) {
        const std::uint64_t key = seed_key(seed_, piece.src_rank);
        for (std::int64_t k = 0; k < piece.count; ++k) {
          const T want = piece.src_rank == kAllRanks
                             ? reduced[static_cast<std::size_t>(piece.src_offset + k)]
                             : static_cast<T>(test_value(key, piece.src_offset + k, op_));
          const T got = out[piece.out_offset + k];
          if (got == want) continue;
          if (wrong++ == 0) {
            first_bad_rank = r;
            first_bad_index = piece.out_offset + k;
          }
          if (wrong == 1)
            first = "rank " + std::to_string(r) + " output[" +
                    std::to_string(piece.out_offset + k) + "]" +
                    element_origin(schedule, r, Buf::output, piece.out_offset + k) + ": expected " +
                    value_str(want) + ", got " + value_str(got);
        }
      }
    }
    if (wrong > 0)
      throw ScheduleError(spec_str(spec) + ": wrong result (" + std::string(to_string(op_)) +
                          "): " + first + " (" + std::to_string(wrong) + " wrong elements)");
  }

 private:
  T* ptr(int rank, const Region& r) {
    return bufs_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(buf_index(r.buf))] +
           r.offset;
  }

  ReduceOp op_;
  std::uint64_t seed_;
  ArenaLease lease_;
  std::vector<std::array<T*, kBufCount>> bufs_;
};

// Symbolic elements: the set of (rank, index) contributions an element holds,
// stored as one index plus a bitset of ranks (words_ words per element).
// kMixed = holds contributions of different indices (never a correct output,
// so its exact set does not matter). Unwritten elements hold garbage: the
// engine never lets them be read. The input of a rank is implicit ({(rank,
// i)} at element i) until something writes into it, which keeps memory at
// one buffer per rank for most schedules.
class SymbolicData {
 public:
  int first_bad_rank = -1;
  std::int64_t first_bad_index = -1;

  static constexpr std::int64_t kMixed = -2;

  void setup(const ScheduleSpec& spec, const std::vector<BufferSizes>& sizes) {
    p_ = spec.ranks;
    words_ = (p_ + 63) / 64;
    bufs_.resize(sizes.size());
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      bufs_[r][0].size = sizes[r].input;
      bufs_[r][0].implicit = true;
      bufs_[r][1].size = sizes[r].output;
      bufs_[r][2].size = sizes[r].scratch;
    }
  }

  std::string transfer(int src_rank, const Region& src, int dst_rank, const Region& dst,
                       Combine c) {
    return apply(src_rank, src, dst_rank, dst, c == Combine::reduce);
  }

  std::string local(int rank, const Op& op) {
    return apply(rank, op.src, rank, op.dst, op.kind == OpKind::reduce);
  }

  void check_result(const Schedule& schedule) {
    const ScheduleSpec& spec = schedule.spec();
    std::int64_t wrong = 0;
    std::string first;
    for (int r = 0; r < p_; ++r) {
      Buffer& out = bufs_[static_cast<std::size_t>(r)][1];
      for (const OutputPiece& piece : required_output(spec, r)) {
        for (std::int64_t k = 0; k < piece.count; ++k) {
          const std::int64_t e = piece.out_offset + k;
          const std::int64_t want_index = piece.src_offset + k;
          const std::uint64_t* bits = out.bits + e * words_;
          bool ok = out.index[e] == want_index;
          if (ok)
            ok = piece.src_rank == kAllRanks ? all_ranks(bits) : only_rank(bits, piece.src_rank);
          if (ok) continue;
          if (wrong++ == 0) {
            first_bad_rank = r;
            first_bad_index = e;
            const std::string want = piece.src_rank == kAllRanks
                                         ? "index " + std::to_string(want_index) + " from all " +
                                               std::to_string(p_) + " ranks"
                                         : "{(rank " + std::to_string(piece.src_rank) + ", index " +
                                               std::to_string(want_index) + ")}";
            first = "rank " + std::to_string(r) + " output[" + std::to_string(e) + "]" +
                    element_origin(schedule, r, Buf::output, e) + ": expected " + want + ", got " +
                    describe(out.index[e], bits);
          }
        }
      }
    }
    if (wrong > 0)
      throw ScheduleError(spec_str(spec) + ": wrong result (symbolic): " + first + " (" +
                          std::to_string(wrong) + " wrong elements)");
  }

 private:
  struct Buffer {
    std::int64_t size = 0;
    bool implicit = false;  // an untouched input: element i = {(rank, i)}
    std::int64_t* index = nullptr;
    std::uint64_t* bits = nullptr;
  };

  void materialise(Buffer& b, int rank) {
    if (b.index) return;
    Arena& arena = lease_.arena();
    b.index = arena.allocate<std::int64_t>(b.size);
    b.bits = arena.allocate<std::uint64_t>(b.size * words_);
    if (b.implicit) {
      std::fill(b.bits, b.bits + b.size * words_, 0);
      for (std::int64_t i = 0; i < b.size; ++i) {
        b.index[i] = i;
        b.bits[i * words_ + rank / 64] = std::uint64_t{1} << (rank % 64);
      }
      b.implicit = false;
    }
  }

  std::string apply(int src_rank, const Region& src, int dst_rank, const Region& dst, bool reduce) {
    Buffer& d =
        bufs_[static_cast<std::size_t>(dst_rank)][static_cast<std::size_t>(buf_index(dst.buf))];
    materialise(d, dst_rank);
    const Buffer& s =
        bufs_[static_cast<std::size_t>(src_rank)][static_cast<std::size_t>(buf_index(src.buf))];
    const std::int64_t n = src.count;
    const int w = words_;
    std::int64_t* di = d.index + dst.offset;
    std::uint64_t* db = d.bits + dst.offset * w;
    if (s.implicit) {
      const int word = src_rank / 64;
      const std::uint64_t bit = std::uint64_t{1} << (src_rank % 64);
      if (!reduce) {
        std::fill(db, db + n * w, 0);
        for (std::int64_t k = 0; k < n; ++k) {
          di[k] = src.offset + k;
          db[k * w + word] = bit;
        }
        return {};
      }
      for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t si = src.offset + k;
        std::uint64_t& eb = db[k * w + word];
        if (di[k] != si)
          di[k] = kMixed;
        else if (eb & bit)
          return double_count(dst, k, src_rank, si);
        eb |= bit;
      }
      return {};
    }
    // Different ranks or disjoint regions of one buffer (the engine rejects
    // overlapping local ops), so plain copies are safe.
    const std::int64_t* si = s.index + src.offset;
    const std::uint64_t* sb = s.bits + src.offset * w;
    if (!reduce) {
      std::memcpy(di, si, static_cast<std::size_t>(n) * sizeof(std::int64_t));
      std::memcpy(db, sb, static_cast<std::size_t>(n * w) * sizeof(std::uint64_t));
      return {};
    }
    for (std::int64_t k = 0; k < n; ++k) {
      std::uint64_t* eb = db + k * w;
      const std::uint64_t* fb = sb + k * w;
      if (di[k] != si[k] || si[k] == kMixed) {
        di[k] = kMixed;
      } else {
        for (int j = 0; j < w; ++j)
          if (eb[j] & fb[j])
            return double_count(dst, k, j * 64 + std::countr_zero(eb[j] & fb[j]), si[k]);
      }
      for (int j = 0; j < w; ++j) eb[j] |= fb[j];
    }
    return {};
  }

  static std::string double_count(const Region& dst, std::int64_t k, int rank, std::int64_t index) {
    return "contribution counted twice: element " + std::string(to_string(dst.buf)) + "[" +
           std::to_string(dst.offset + k) + "] already holds (rank " + std::to_string(rank) +
           ", index " + std::to_string(index) + ")";
  }

  bool only_rank(const std::uint64_t* bits, int rank) const {
    for (int j = 0; j < words_; ++j) {
      const std::uint64_t want = j == rank / 64 ? std::uint64_t{1} << (rank % 64) : 0;
      if (bits[j] != want) return false;
    }
    return true;
  }

  bool all_ranks(const std::uint64_t* bits) const {
    for (int j = 0; j < words_; ++j) {
      const int in_word = std::min(64, p_ - j * 64);
      const std::uint64_t want =
          in_word == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << in_word) - 1;
      if (bits[j] != want) return false;
    }
    return true;
  }

  std::string describe(std::int64_t index, const std::uint64_t* bits) const {
    std::vector<int> ranks;
    for (int j = 0; j < words_; ++j)
      for (std::uint64_t b = bits[j]; b; b &= b - 1) ranks.push_back(j * 64 + std::countr_zero(b));
    std::string out =
        index == kMixed ? "contributions of different indices" : "index " + std::to_string(index);
    out += " from " + std::to_string(ranks.size()) + " ranks {";
    for (std::size_t i = 0; i < ranks.size() && i < 8; ++i)
      out += (i ? "," : "") + std::to_string(ranks[i]);
    if (ranks.size() > 8) out += ",...";
    out += "}";
    // Name the missing ranks when only a few are missing: the usual bug.
    const std::size_t p = static_cast<std::size_t>(p_);
    if (ranks.size() < p && ranks.size() + 8 >= p) {
      std::string missing;
      std::size_t at = 0;
      for (int r = 0; r < p_; ++r) {
        if (at < ranks.size() && ranks[at] == r) {
          ++at;
          continue;
        }
        missing += (missing.empty() ? "" : ",") + std::to_string(r);
      }
      out += " (missing " + missing + ")";
    }
    return out;
  }

  int p_ = 1;
  int words_ = 1;
  ArenaLease lease_;
  std::vector<std::array<Buffer, kBufCount>> bufs_;
};

// ---------------------------------------------------------------------------
// The engine.

// The ops of a rank's current step that go to (or come from) one peer:
// order[begin, end) in op order, order[head] the first still unmatched.
struct PeerGroup {
  int peer;
  int begin, end, head;
};

PeerGroup* find_group(std::vector<PeerGroup>& groups, int peer) {
  auto it = std::lower_bound(groups.begin(), groups.end(), peer,
                             [](const PeerGroup& g, int v) { return g.peer < v; });
  return it != groups.end() && it->peer == peer ? &*it : nullptr;
}

std::string last_writer(const Schedule& s, int rank, std::int64_t index);

template <typename Data>
class Engine {
 public:
  Engine(const Schedule& schedule, Data& data)
      : schedule_(schedule), spec_(schedule.spec()), p_(schedule.ranks()), data_(data) {}

  ExecutionStats run() {
    if (p_ < 1) throw ScheduleError(spec_str(spec_) + ": schedule has no ranks");
    ranks_.resize(static_cast<std::size_t>(p_));
    std::vector<BufferSizes> sizes(static_cast<std::size_t>(p_));
    for (int r = 0; r < p_; ++r) {
      RankState& st = ranks_[static_cast<std::size_t>(r)];
      sizes[static_cast<std::size_t>(r)] = st.sizes = schedule_.buffer_sizes(r);
      if (st.sizes.input < 0 || st.sizes.output < 0 || st.sizes.scratch < 0)
        throw ScheduleError(spec_str(spec_) + ": rank " + std::to_string(r) +
                            " has a negative buffer size (scratch " +
                            std::to_string(st.sizes.scratch) + ")");
      st.init[1].reset(st.sizes.output, false);
      st.init[2].reset(st.sizes.scratch, false);
    }
    track_causality_ = spec_.collective == Collective::barrier && p_ <= kMaxCausalityRanks;
    if (track_causality_) {
      words_ = (p_ + 63) / 64;
      heard_.assign(static_cast<std::size_t>(p_) * words_, 0);
      heard_at_post_.assign(static_cast<std::size_t>(p_) * words_, 0);
      for (int r = 0; r < p_; ++r)
        heard_[static_cast<std::size_t>(r) * words_ + r / 64] |= std::uint64_t{1} << (r % 64);
    }
    data_.setup(spec_, sizes);

    for (int r = 0; r < p_; ++r) {
      ranks_[static_cast<std::size_t>(r)].program = schedule_.program(r);
      advance(r);
    }
    while (!ready_.empty()) {
      const int r = ready_.back();
      ready_.pop_back();
      finish_step(r);
      advance(r);
    }
    if (finished_ < p_) report_stuck();

    check_outputs_written();
    if (track_causality_) check_causality();
    try {
      data_.check_result(schedule_);
    } catch (const ScheduleError& e) {
      if (data_.first_bad_rank < 0) throw;
      throw ScheduleError(std::string(e.what()) +
                          last_writer(schedule_, data_.first_bad_rank, data_.first_bad_index));
    }

    ExecutionStats stats;
    stats.barrier_causality_checked = track_causality_;
    for (const RankState& st : ranks_) {
      stats.max_comm_steps = std::max(stats.max_comm_steps, st.comm_steps);
      stats.max_elems_sent = std::max(stats.max_elems_sent, st.elems_sent);
      stats.total_messages += st.messages;
      stats.max_steps = std::max(stats.max_steps, st.steps);
    }
    return stats;
  }

  // Records which op writes output element `index` of `rank` last (for the
  // message about a wrong result).
  void watch(int rank, std::int64_t index) {
    watch_rank_ = rank;
    watch_index_ = index;
  }
  const std::string& watched_writer() const { return watched_writer_; }

 private:
  struct RankState {
    Generator<Step> program;
    Step step;
    std::vector<std::uint8_t> matched;  // per op of the current step
    std::int64_t step_index = -1;
    int pending = 0;  // sends/recvs of the current step not yet matched
    bool done = false;
    BufferSizes sizes;
    // Output and scratch only: input is initialised from the start.
    std::array<Bitmap, kBufCount> init;
    // The current step's sends (and recvs) grouped by peer, each group in op
    // order. Every earlier send from this rank to a peer has matched (the
    // rank only moved on once its step completed), so a group's first
    // unmatched op is the next one in that pair's FIFO order. Keeping this
    // per rank instead of a global map keyed by pair makes matching a binary
    // search in the peer's current step, with no allocation per message.
    std::vector<int> order;                           // comm op indices, grouped
    std::vector<PeerGroup> send_groups, recv_groups;  // sorted by peer
    std::int64_t comm_steps = 0, elems_sent = 0, messages = 0, steps = 0;
  };

  std::string where(int rank, std::int64_t step, int op_index, const Op& op) const {
    const std::string origin = schedule_.describe_op(rank, step, op_index);
    return spec_str(spec_) + ": rank " + std::to_string(rank) + ", step " + std::to_string(step) +
           ", op " + std::to_string(op_index) + " (" + op_str(op) + ")" +
           (origin.empty() ? "" : " [" + origin + "]");
  }

  [[noreturn]] void fail(int rank, int op_index, const std::string& what) const {
    const RankState& st = ranks_[static_cast<std::size_t>(rank)];
    throw ScheduleError(
        where(rank, st.step_index, op_index, st.step.ops[static_cast<std::size_t>(op_index)]) +
        ": " + what);
  }

  std::int64_t buffer_size(const RankState& st, Buf b) const {
    switch (b) {
      case Buf::input:
        return st.sizes.input;
      case Buf::output:
        return st.sizes.output;
      case Buf::scratch:
        return st.sizes.scratch;
    }
    return 0;
  }

  void check_bounds(int rank, int op_index, const Region& r, const char* role) const {
    const RankState& st = ranks_[static_cast<std::size_t>(rank)];
    const std::int64_t size = buffer_size(st, r.buf);
    if (static_cast<int>(r.buf) >= kBufCount || r.offset < 0 || r.count < 0 || r.offset > size ||
        r.count > size - r.offset)
      fail(rank, op_index,
           std::string(role) + " region " + region_str(r) + " is out of bounds (" +
               std::string(to_string(r.buf)) + " has " + std::to_string(size) + " elements)");
  }

  void check_initialised(int rank, int op_index, const Region& r, const char* role) const {
    if (r.buf == Buf::input) return;
    const Bitmap& bm =
        ranks_[static_cast<std::size_t>(rank)].init[static_cast<std::size_t>(buf_index(r.buf))];
    const std::int64_t bad = bm.first_clear(r.offset, r.offset + r.count);
    if (bad >= 0)
      fail(rank, op_index,
           std::string(role) + " " + region_str(r) + " reads uninitialised element " +
               std::string(to_string(r.buf)) + "[" + std::to_string(bad) + "]");
  }

  void check_peer(int rank, int op_index, int peer) const {
    if (peer < 0 || peer >= p_)
      fail(rank, op_index,
           "peer " + std::to_string(peer) + " is out of range [0," + std::to_string(p_) + ")");
    if (peer == rank) fail(rank, op_index, "peer is the rank itself");
  }

  // Within one step a recv's destination must be disjoint from every other
  // region of the step: the step's ops run concurrently, so any overlap is a
  // race in a real backend. Sorting by offset keeps this O(k log k) for steps
  // with many ops (linear algorithms post p-1 of them).
  void check_hazards(int rank) {
    const RankState& st = ranks_[static_cast<std::size_t>(rank)];
    intervals_.clear();
    for (std::size_t j = 0; j < st.step.ops.size(); ++j) {
      const Op& op = st.step.ops[j];
      auto add = [&](const Region& r, bool written_by_recv) {
        if (r.count > 0) intervals_.push_back({r, static_cast<int>(j), written_by_recv});
      };
      switch (op.kind) {
        case OpKind::send:
          add(op.src, false);
          break;
        case OpKind::recv:
          add(op.dst, true);
          break;
        case OpKind::copy:
        case OpKind::reduce:
          add(op.src, false);
          add(op.dst, false);
          break;
      }
    }
    if (intervals_.size() < 2) return;
    std::sort(intervals_.begin(), intervals_.end(), [](const Interval& a, const Interval& b) {
      if (a.region.buf != b.region.buf) return a.region.buf < b.region.buf;
      return a.region.offset < b.region.offset;
    });
    const Interval* furthest = nullptr;       // furthest-reaching interval so far
    const Interval* furthest_recv = nullptr;  // same, among recv destinations
    auto end_of = [](const Interval* i) { return i->region.offset + i->region.count; };
    for (std::size_t k = 0; k < intervals_.size(); ++k) {
      const Interval& cur = intervals_[k];
      if (k > 0 && intervals_[k - 1].region.buf != cur.region.buf)
        furthest = furthest_recv = nullptr;
      const Interval* other = nullptr;
      if (cur.recv && furthest && end_of(furthest) > cur.region.offset)
        other = furthest;
      else if (!cur.recv && furthest_recv && end_of(furthest_recv) > cur.region.offset)
        other = furthest_recv;
      if (other) {
        const Interval& r = cur.recv ? cur : *other;
        const Interval& o = cur.recv ? *other : cur;
        const Op& oop = st.step.ops[static_cast<std::size_t>(o.op)];
        fail(rank, r.op,
             "hazard: recv destination " + region_str(r.region) + " overlaps " +
                 region_str(o.region) + " of op " + std::to_string(o.op) + " (" + op_str(oop) +
                 ") in the same step");
      }
      if (!furthest || end_of(&cur) > end_of(furthest)) furthest = &cur;
      if (cur.recv && (!furthest_recv || end_of(&cur) > end_of(furthest_recv)))
        furthest_recv = &cur;
    }
  }

  // Pulls the rank's next step and posts its sends and recvs.
  void advance(int rank) {
    RankState& st = ranks_[static_cast<std::size_t>(rank)];
    if (!st.program.next()) {
      st.done = true;
      st.step = Step{};
      st.program = Generator<Step>{};  // frees the coroutine frame early
      ++finished_;
      return;
    }
    st.step = std::move(st.program.value());
    ++st.step_index;
    ++st.steps;
    const auto& ops = st.step.ops;
    st.matched.assign(ops.size(), 0);
    bool communicates = false;
    for (std::size_t j = 0; j < ops.size(); ++j) {
      const Op& op = ops[j];
      const int oj = static_cast<int>(j);
      switch (op.kind) {
        case OpKind::send:
          check_peer(rank, oj, op.peer);
          check_bounds(rank, oj, op.src, "send source");
          check_initialised(rank, oj, op.src, "send source");
          communicates = true;
          ++st.messages;
          st.elems_sent += op.src.count;
          break;
        case OpKind::recv:
          check_peer(rank, oj, op.peer);
          check_bounds(rank, oj, op.dst, "recv destination");
          if (op.combine == Combine::reduce)
            check_initialised(rank, oj, op.dst, "recv-reduce destination");
          communicates = true;
          break;
        case OpKind::copy:
        case OpKind::reduce:
          check_bounds(rank, oj, op.src, "source");
          check_bounds(rank, oj, op.dst, "destination");
          if (op.src.count != op.dst.count)
            fail(rank, oj,
                 "source has " + std::to_string(op.src.count) + " elements but destination " +
                     std::to_string(op.dst.count));
          // A reduce with overlapping operands is as ill-defined as a copy:
          // the result would depend on the element order a backend uses.
          if (overlaps(op.src, op.dst)) fail(rank, oj, "source and destination overlap");
          break;
        default:
          fail(rank, oj, "unknown op kind");
      }
    }
    if (communicates) ++st.comm_steps;
    check_hazards(rank);
    if (track_causality_)
      std::copy_n(heard_.begin() + static_cast<std::ptrdiff_t>(rank) * words_, words_,
                  heard_at_post_.begin() + static_cast<std::ptrdiff_t>(rank) * words_);

    group_ops(st);
    if (st.pending == 0) {
      ready_.push_back(rank);
      return;
    }
    // Match against peers already waiting at their own current steps. Peers
    // that match become ready but do not advance until popped, so the groups
    // looked at here stay valid.
    for (PeerGroup& g : st.send_groups) {
      RankState& peer = ranks_[static_cast<std::size_t>(g.peer)];
      if (peer.done) continue;
      if (PeerGroup* pg = find_group(peer.recv_groups, rank)) match(rank, g, g.peer, *pg);
    }
    for (PeerGroup& g : st.recv_groups) {
      RankState& peer = ranks_[static_cast<std::size_t>(g.peer)];
      if (peer.done) continue;
      if (PeerGroup* pg = find_group(peer.send_groups, rank)) match(g.peer, *pg, rank, g);
    }
  }

  void group_ops(RankState& st) {
    const auto& ops = st.step.ops;
    scratch_pairs_.clear();
    for (std::size_t j = 0; j < ops.size(); ++j) {
      const OpKind k = ops[j].kind;
      if (k == OpKind::send || k == OpKind::recv)
        scratch_pairs_.emplace_back(k == OpKind::send ? 0 : 1, ops[j].peer, static_cast<int>(j));
    }
    std::sort(scratch_pairs_.begin(), scratch_pairs_.end());
    st.order.clear();
    st.send_groups.clear();
    st.recv_groups.clear();
    for (const auto& [kind, peer, j] : scratch_pairs_) {
      auto& groups = kind == 0 ? st.send_groups : st.recv_groups;
      const int at = static_cast<int>(st.order.size());
      if (groups.empty() || groups.back().peer != peer) groups.push_back({peer, at, at, at});
      ++groups.back().end;
      st.order.push_back(j);
    }
    st.pending = static_cast<int>(st.order.size());
  }

  void match(int from, PeerGroup& sends, int to, PeerGroup& recvs) {
    RankState& a = ranks_[static_cast<std::size_t>(from)];
    RankState& b = ranks_[static_cast<std::size_t>(to)];
    while (sends.head < sends.end && recvs.head < recvs.end) {
      const int js = a.order[static_cast<std::size_t>(sends.head++)];
      const int jr = b.order[static_cast<std::size_t>(recvs.head++)];
      const Op& send = a.step.ops[static_cast<std::size_t>(js)];
      const Op& recv = b.step.ops[static_cast<std::size_t>(jr)];
      if (send.src.count != recv.dst.count)
        fail(to, jr,
             "receives " + std::to_string(recv.dst.count) + " elements but the matching " +
                 where(from, a.step_index, js, send) + " sends " + std::to_string(send.src.count));
      std::string problem = data_.transfer(from, send.src, to, recv.dst, recv.combine);
      if (!problem.empty()) fail(to, jr, problem);
      mark_written(b, recv.dst);
      if (to == watch_rank_ && watched(recv.dst))
        watched_writer_ = where(to, b.step_index, jr, recv);
      if (track_causality_) {
        std::uint64_t* dst = heard_.data() + static_cast<std::ptrdiff_t>(to) * words_;
        const std::uint64_t* src =
            heard_at_post_.data() + static_cast<std::ptrdiff_t>(from) * words_;
        for (int w = 0; w < words_; ++w) dst[w] |= src[w];
      }
      a.matched[static_cast<std::size_t>(js)] = 1;
      b.matched[static_cast<std::size_t>(jr)] = 1;
      if (--a.pending == 0) ready_.push_back(from);
      if (--b.pending == 0) ready_.push_back(to);
    }
  }

  static void mark_written(RankState& st, const Region& r) {
    if (r.buf != Buf::input)
      st.init[static_cast<std::size_t>(buf_index(r.buf))].set(r.offset, r.offset + r.count);
  }

  // Communication of the step is complete: run its local ops in order.
  void finish_step(int rank) {
    RankState& st = ranks_[static_cast<std::size_t>(rank)];
    for (std::size_t j = 0; j < st.step.ops.size(); ++j) {
      const Op& op = st.step.ops[j];
      if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
      const int oj = static_cast<int>(j);
      check_initialised(rank, oj, op.src, "source");
      if (op.kind == OpKind::reduce) check_initialised(rank, oj, op.dst, "reduce destination");
      std::string problem = data_.local(rank, op);
      if (!problem.empty()) fail(rank, oj, problem);
      mark_written(st, op.dst);
      if (rank == watch_rank_ && watched(op.dst))
        watched_writer_ = where(rank, st.step_index, oj, op);
    }
  }

  [[noreturn]] void report_stuck() const {
    bool unmatched = false;
    std::string detail;
    int listed = 0, stuck = 0;
    for (int r = 0; r < p_; ++r) {
      const RankState& st = ranks_[static_cast<std::size_t>(r)];
      if (st.done) continue;
      ++stuck;
      std::string pending;
      for (std::size_t j = 0; j < st.step.ops.size(); ++j) {
        const Op& op = st.step.ops[j];
        if ((op.kind != OpKind::send && op.kind != OpKind::recv) || st.matched[j]) continue;
        const bool peer_done = ranks_[static_cast<std::size_t>(op.peer)].done;
        unmatched |= peer_done;
        const std::string origin = schedule_.describe_op(r, st.step_index, static_cast<int>(j));
        pending += std::string(pending.empty() ? "" : "; ") + "op " + std::to_string(j) + " " +
                   op_str(op) + (origin.empty() ? "" : " [" + origin + "]") +
                   (peer_done ? " [peer finished all its steps]" : "");
      }
      if (listed++ < kMaxReportedRanks)
        detail += "\n  rank " + std::to_string(r) + " at step " + std::to_string(st.step_index) +
                  ": " + pending;
    }
    if (stuck > kMaxReportedRanks)
      detail += "\n  ... and " + std::to_string(stuck - kMaxReportedRanks) + " more stuck ranks";
    throw ScheduleError(spec_str(spec_) + ": " + (unmatched ? "unmatched send/recv" : "deadlock") +
                        ": " + std::to_string(stuck) + " of " + std::to_string(p_) +
                        " ranks cannot progress:" + detail);
  }

  void check_outputs_written() const {
    for (int r = 0; r < p_; ++r) {
      const RankState& st = ranks_[static_cast<std::size_t>(r)];
      const Bitmap& bm = st.init[1];
      const std::int64_t bad = bm.first_clear(0, bm.size());
      if (bad >= 0)
        throw ScheduleError(
            spec_str(spec_) + ": rank " + std::to_string(r) + " output[" + std::to_string(bad) +
            "]" + element_origin(schedule_, r, Buf::output, bad) + " is never written (" +
            std::to_string(bm.count_clear(0, bm.size())) + " output elements unwritten)");
    }
  }

  // A barrier's completion at every rank must causally follow every rank's
  // start; heard_ carries the set of ranks whose start precedes each rank's
  // current point along message edges.
  void check_causality() const {
    for (int r = 0; r < p_; ++r) {
      const std::uint64_t* h = heard_.data() + static_cast<std::ptrdiff_t>(r) * words_;
      for (int q = 0; q < p_; ++q) {
        if (h[q / 64] >> (q % 64) & 1) continue;
        int missing = 0;
        for (int x = 0; x < p_; ++x) missing += !(h[x / 64] >> (x % 64) & 1);
        throw ScheduleError(spec_str(spec_) + ": not a barrier: rank " + std::to_string(r) +
                            " can complete before rank " + std::to_string(q) +
                            " starts (it hears from " + std::to_string(p_ - missing) + " of " +
                            std::to_string(p_) + " ranks)");
      }
    }
  }

  struct Interval {
    Region region;
    int op;
    bool recv;
  };

  bool watched(const Region& r) const {
    return r.buf == Buf::output && r.offset <= watch_index_ && watch_index_ < r.offset + r.count;
  }
  int watch_rank_ = -1;
  std::int64_t watch_index_ = -1;
  std::string watched_writer_;

  const Schedule& schedule_;
  const ScheduleSpec& spec_;
  const int p_;
  Data& data_;
  std::vector<RankState> ranks_;
  std::vector<int> ready_;
  std::vector<std::tuple<int, int, int>> scratch_pairs_;  // (send 0 / recv 1, peer, op)
  std::vector<Interval> intervals_;
  int finished_ = 0;
  bool track_causality_ = false;
  int words_ = 1;
  std::vector<std::uint64_t> heard_, heard_at_post_;
};

// " (last written by rank r, step s, op o (...))": a second, data-free run
// of the schedule that watches one output element.
std::string last_writer(const Schedule& s, int rank, std::int64_t index) {
  NoData none;
  Engine<NoData> engine(s, none);
  engine.watch(rank, index);
  try {
    engine.run();
  } catch (const ScheduleError&) {
    return {};
  }
  const std::string& w = engine.watched_writer();
  return w.empty() ? std::string() : "; last written by " + w.substr(w.find(": rank ") + 2);
}

template <typename Data>
ExecutionStats run_engine(const Schedule& s, Data& data) {
  Engine<Data> engine(s, data);
  return engine.run();
}

template <typename T>
ExecutionStats run_numeric(const Schedule& s, ReduceOp op, std::uint64_t seed) {
  NumericData<T> data(op, seed);
  return run_engine(s, data);
}

}  // namespace

ExecutionStats verify_numeric(const Schedule& s, DType dtype, ReduceOp op, std::uint64_t seed) {
  switch (dtype) {
    case DType::int32:
      return run_numeric<std::int32_t>(s, op, seed);
    case DType::int64:
      return run_numeric<std::int64_t>(s, op, seed);
    case DType::float32:
      return run_numeric<float>(s, op, seed);
    case DType::float64:
      return run_numeric<double>(s, op, seed);
  }
  throw ScheduleError("unknown dtype");
}

ExecutionStats verify_symbolic(const Schedule& s) {
  SymbolicData data;
  return run_engine(s, data);
}

ExecutionStats check_structure(const Schedule& s) {
  NoData data;
  return run_engine(s, data);
}

}  // namespace collkit
