// Building blocks shared by composite algorithms (van de Geijn broadcast,
// Rabenseifner reduce/all_reduce, gather+broadcast all_gather, ...). Each block
// works on a "work vector" of part.n elements split into part.p blocks, in
// virtual-rank space: this rank's virtual rank is v = (rank - shift) mod p and
// virtual rank w is the real rank (w + shift) mod p. Block w of the work vector
// (part.offset(w), part.size(w)) belongs to virtual rank w. The work vector
// lives at [base, base + part.n) of buffer `buf` on every rank.
//
// Received data is combined with recv(..., Combine::reduce), so no scratch is
// needed. binomial_scatter/gather live in scatter_gather.cc; the ring and
// recursive blocks in all_gather.cc and reduce_scatter.cc.
#pragma once

#include "algorithms/schedule.h"

namespace collkit {

struct BlockLayout {
  int p = 1;
  int rank = 0;
  int shift = 0;
  Partition part{};
  Buf buf = Buf::output;
  std::int64_t base = 0;

  int vrank() const { return ((rank - shift) % p + p) % p; }
  int real(int v) const { return ((v + shift) % p + p) % p; }
  Region block(int w) const { return {buf, base + part.offset(w), part.size(w)}; }
  // Blocks [w, w + k) as one region (no wrap-around).
  Region blocks(int w, int k) const { return {buf, base + part.offset(w), part.span(w, k)}; }
};

// Before: virtual rank 0 holds every block. After: virtual rank w holds block
// w (and possibly others it forwarded). Binomial tree, ceil(log2 p) steps.
Generator<Step> binomial_scatter(BlockLayout layout);
// Before: virtual rank w holds block w. After: virtual rank 0 holds all blocks.
Generator<Step> binomial_gather(BlockLayout layout);

// The ring both ring blocks are made of: in step k (k < p - 1) virtual rank
// v sends block v - k - lag to v + 1 and receives block v - k - lag - 1 from
// v - 1, combining it as `combine` says.
Generator<Step> ring_pass(BlockLayout layout, int lag, Combine combine);
// Before: virtual rank w holds block w. After: every rank holds every block.
Generator<Step> ring_all_gather(BlockLayout layout);
// Same postcondition; p must be a power of two (callers fold otherwise).
Generator<Step> recursive_doubling_all_gather(BlockLayout layout);
// Before: every rank holds a full work vector of its own contribution.
// After: virtual rank w holds block w reduced over all ranks. Ring, p-1 steps.
Generator<Step> ring_reduce_scatter(BlockLayout layout);
// Same postcondition; p must be a power of two (callers fold otherwise).
Generator<Step> recursive_halving_reduce_scatter(BlockLayout layout);

}  // namespace collkit
