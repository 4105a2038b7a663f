// Scatter and gather (linear, binomial tree) and the binomial_scatter /
// binomial_gather building blocks of blocks.h.
//
// Binomial tree in virtual-rank space (v = (rank - root) mod p, MPICH
// numbering): v > 0 has parent v - lowbit(v) and owns the subtree of virtual
// ranks [v, v + lowbit(v)) clipped to p; the root owns everything. A parent
// serves its children largest subtree first, so the tree finishes in
// ceil(log2 p) steps. Every message is sent even when it carries no element
// (n < p): the step structure then depends on p only, which keeps the
// closed-form step counts exact.
#include <algorithm>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/registry.h"

namespace collkit {
namespace {

int lowbit(int v) { return v & -v; }

// The mask of the largest subtree a virtual rank owns: its lowest set bit, or
// the smallest power of two >= p for the root.
int top_mask(int p, int v) { return v == 0 ? 1 << ceil_log2(p) : lowbit(v); }

// Number of virtual ranks in the subtree rooted at v.
int subtree(int p, int v) { return std::min(top_mask(p, v), p - v); }

}  // namespace

Generator<Step> binomial_scatter(BlockLayout layout) {
  const int p = layout.p;
  const int v = layout.vrank();
  const int top = top_mask(p, v);
  if (v != 0) {
    Step s;
    s.ops.push_back(recv_op(layout.real(v - top), layout.blocks(v, subtree(p, v))));
    co_yield std::move(s);
  }
  for (int mask = top >> 1; mask >= 1; mask >>= 1) {
    const int c = v + mask;
    if (c >= p) continue;
    Step s;
    s.ops.push_back(send_op(layout.real(c), layout.blocks(c, subtree(p, c))));
    co_yield std::move(s);
  }
}

Generator<Step> binomial_gather(BlockLayout layout) {
  const int p = layout.p;
  const int v = layout.vrank();
  const int top = top_mask(p, v);
  for (int mask = 1; mask < top; mask <<= 1) {
    const int c = v + mask;
    if (c >= p) break;
    Step s;
    s.ops.push_back(recv_op(layout.real(c), layout.blocks(c, subtree(p, c))));
    co_yield std::move(s);
  }
  if (v != 0) {
    Step s;
    s.ops.push_back(send_op(layout.real(v - top), layout.blocks(v, subtree(p, v))));
    co_yield std::move(s);
  }
}

namespace {

// The root's vector in virtual order: virtual block w is real rank
// (w + root) mod p's block of Partition{n, p}. Offsets are within that
// rotated vector, so a subtree's blocks are one contiguous range.
struct RotatedBlocks {
  Partition part;
  int root = 0;
  int real(int w) const { return (w + root) % part.p; }
  std::int64_t size(int w) const { return part.size(real(w)); }
  // Elements of virtual blocks [0, w).
  std::int64_t offset(int w) const {
    const int head = part.p - root;  // virtual blocks 0..head-1 are real root..p-1
    if (w <= head) return part.span(root, w);
    return part.span(root, head) + part.span(0, w - head);
  }
  std::int64_t span(int w, int k) const { return offset(w + k) - offset(w); }
};

// Scratch of a binomial scatter/gather rank: the root keeps a rotated copy of
// the whole vector unless root == 0; an inner rank its subtree; a leaf nothing.
std::int64_t binomial_sg_scratch(const ScheduleSpec& spec, int rank) {
  const int p = spec.ranks;
  if (spec.count == 0) return 0;
  const RotatedBlocks rb{{spec.count, p}, spec.root};
  const int v = (rank - spec.root + p) % p;
  if (v == 0) return spec.root == 0 ? 0 : spec.count;
  const int k = subtree(p, v);
  return k > 1 ? rb.span(v, k) : 0;
}

Generator<Step> binomial_scatter_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  const RotatedBlocks rb{{n, p}, spec.root};
  const Partition& part = rb.part;
  const int v = (rank - spec.root + p) % p;
  const int top = top_mask(p, v);
  // Where this rank holds virtual blocks [w, ...): buffer and the offset of
  // virtual block v's start within it.
  Buf hold = Buf::scratch;
  std::int64_t base = 0;  // rb.offset(w) - base is the position of block w
  bool copy_own_pending = false;
  if (v == 0) {
    Step s;
    s.ops.push_back(copy_op({Buf::input, part.offset(rank), part.size(rank)},
                            {Buf::output, 0, part.size(rank)}));
    if (spec.root == 0) {
      hold = Buf::input;
    } else {
      // Rotate so that every subtree is contiguous: real blocks root..p-1 first.
      const std::int64_t head = n - part.offset(spec.root);
      s.ops.push_back(copy_op({Buf::input, part.offset(spec.root), head}, {Buf::scratch, 0, head}));
      s.ops.push_back(
          copy_op({Buf::input, 0, part.offset(spec.root)}, {Buf::scratch, head, n - head}));
    }
    co_yield std::move(s);
  } else {
    const int k = subtree(p, v);
    Step s;
    if (k == 1) {
      s.ops.push_back(recv_op((v - top + spec.root) % p, {Buf::output, 0, part.size(rank)}));
    } else {
      base = rb.offset(v);
      s.ops.push_back(recv_op((v - top + spec.root) % p, {Buf::scratch, 0, rb.span(v, k)}));
      copy_own_pending = true;
    }
    co_yield std::move(s);
  }
  for (int mask = top >> 1; mask >= 1; mask >>= 1) {
    const int c = v + mask;
    if (c >= p) continue;
    Step s;
    s.ops.push_back(
        send_op((c + spec.root) % p, {hold, rb.offset(c) - base, rb.span(c, subtree(p, c))}));
    if (copy_own_pending) {
      s.ops.push_back(
          copy_op({Buf::scratch, 0, part.size(rank)}, {Buf::output, 0, part.size(rank)}));
      copy_own_pending = false;
    }
    co_yield std::move(s);
  }
}

Generator<Step> binomial_gather_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  const RotatedBlocks rb{{n, p}, spec.root};
  const Partition& part = rb.part;
  const int v = (rank - spec.root + p) % p;
  const int top = top_mask(p, v);
  const int k = subtree(p, v);
  const Region own_in{Buf::input, 0, part.size(rank)};
  if (v != 0 && k == 1) {
    Step s;
    s.ops.push_back(send_op((v - top + spec.root) % p, own_in));
    co_yield std::move(s);
    co_return;
  }
  // The buffer collecting virtual blocks [v, v + k): the root with root == 0
  // gathers straight into its output (virtual order = real order).
  const bool direct = v == 0 && spec.root == 0;
  const Buf hold = direct ? Buf::output : Buf::scratch;
  const std::int64_t base = rb.offset(v);
  Step own;
  own.ops.push_back(copy_op(own_in, v == 0 ? Region{Buf::output, part.offset(rank), part.size(rank)}
                                           : Region{hold, 0, part.size(rank)}));
  bool own_pending = true;
  for (int mask = 1; mask < top; mask <<= 1) {
    const int c = v + mask;
    if (c >= p) break;
    Step s;
    s.ops.push_back(
        recv_op((c + spec.root) % p, {hold, rb.offset(c) - base, rb.span(c, subtree(p, c))}));
    if (own_pending) {
      s.ops.push_back(own.ops.front());
      own_pending = false;
    }
    co_yield std::move(s);
  }
  if (own_pending) co_yield std::move(own);  // p == 1: no child
  if (v != 0) {
    Step s;
    s.ops.push_back(send_op((v - top + spec.root) % p, {hold, 0, rb.span(v, k)}));
    co_yield std::move(s);
  } else if (!direct) {
    // Undo the rotation: virtual blocks 0..p-root-1 are real root..p-1.
    const std::int64_t head = n - part.offset(spec.root);
    Step s;
    s.ops.push_back(copy_op(
        {Buf::scratch, part.size(spec.root), head - part.size(spec.root)},
        {Buf::output, part.offset(spec.root) + part.size(spec.root), head - part.size(spec.root)}));
    s.ops.push_back(
        copy_op({Buf::scratch, head, n - head}, {Buf::output, 0, part.offset(spec.root)}));
    co_yield std::move(s);
  }
}

// Linear: the root sends every other rank its block (scatter) or receives
// every other rank's block (gather), in rank order from root + 1.
Generator<Step> linear_sg_program(ScheduleSpec spec, int rank) {
  const bool scatter = spec.collective == Collective::scatter;
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  if (spec.count == 0) co_return;
  const std::int64_t size = part.size(rank);
  if (rank != spec.root) {
    Step s;
    s.ops.push_back(scatter ? recv_op(spec.root, {Buf::output, 0, size})
                            : send_op(spec.root, {Buf::input, 0, size}));
    co_yield std::move(s);
    co_return;
  }
  // The root's own block moves locally, from its place in the input vector
  // (scatter) or to its place in the output vector (gather).
  const Region whole_vector_block{scatter ? Buf::input : Buf::output, part.offset(rank), size};
  const Region own_block{scatter ? Buf::output : Buf::input, 0, size};
  Step own;
  own.ops.push_back(scatter ? copy_op(whole_vector_block, own_block)
                            : copy_op(own_block, whole_vector_block));
  co_yield std::move(own);
  for (int i = 1; i < p; ++i) {
    const int peer = (spec.root + i) % p;
    const Region block{scatter ? Buf::input : Buf::output, part.offset(peer), part.size(peer)};
    Step s;
    s.ops.push_back(scatter ? send_op(peer, block) : recv_op(peer, block));
    co_yield std::move(s);
  }
}

// Linear: the root handles the p-1 other blocks one after the other, so time
// is exact for any p and n.
CostEstimate linear_sg_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  CostEstimate e;
  if (spec.count == 0 || p == 1) return e;
  const double moved = static_cast<double>(spec.count - part.size(spec.root)) * spec.elem_size;
  e.steps = p - 1;
  e.time = (p - 1) * m.alpha + moved * m.beta;
  // Gather: every non-root rank sends its block; sizes do not grow with the rank.
  e.bytes_sent = spec.collective == Collective::scatter
                     ? moved
                     : static_cast<double>(part.size(spec.root == 0 ? 1 : 0)) * spec.elem_size;
  return e;
}

// Binomial: ceil(log2 p) steps; the root (scatter) or the root's children
// (gather) move everything but one block. Time L a + (n - n/p) b is exact for
// p a power of two and n divisible by p; otherwise the critical path may
// differ by a few uneven blocks (an approximation).
CostEstimate binomial_sg_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  CostEstimate e;
  if (spec.count == 0 || p == 1) return e;
  const RotatedBlocks rb{part, spec.root};
  const double elem = spec.elem_size;
  e.steps = ceil_log2(p);
  const double moved = static_cast<double>(spec.count - part.size(spec.root)) * elem;
  e.time = e.steps * m.alpha + moved * m.beta;
  if (spec.collective == Collective::scatter) {
    e.bytes_sent = moved;
  } else {
    // The largest subtree sent to the root: the child with the biggest mask.
    std::int64_t most = 0;
    for (int mask = 1; mask < p; mask <<= 1) most = std::max(most, rb.span(mask, subtree(p, mask)));
    e.bytes_sent = static_cast<double>(most) * elem;
  }
  return e;
}

}  // namespace

void add_scatter_gather(std::vector<AlgorithmDef>& defs) {
  for (Collective c : {Collective::scatter, Collective::gather}) {
    const bool scatter = c == Collective::scatter;
    defs.push_back(AlgorithmDef{c,
                                "linear",
                                {},
                                "(p-1) a + (p-1)/p n b",
                                kCostExact,
                                "any p",
                                linear_sg_program,
                                nullptr,
                                linear_sg_cost});
    defs.push_back(
        AlgorithmDef{c,
                     "binomial_tree",
                     {},
                     "ceil(log2 p) a + (p-1)/p n b (exact for p a power of two, n divisible by p)",
                     kCostExactForPowersOfTwo,
                     "any p",
                     scatter ? binomial_scatter_program : binomial_gather_program,
                     binomial_sg_scratch,
                     binomial_sg_cost});
  }
}

}  // namespace collkit
