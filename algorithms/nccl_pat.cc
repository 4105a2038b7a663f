// nccl:pat (docs/NCCL.md, "PAT"). PAT (S. Jeaugey, "PAT: a new algorithm
// for all-gather and reduce-scatter operations at scale", arXiv 2506.20252,
// 2025) is the Bruck all-gather with its dimensions reversed: rank r talks
// to r -+ d for d = 2^(K-1), ..., 2, 1 (K = ceil(log2 p)), so the round that
// carries the most data goes to the nearest rank, and any p works.
// Reduce-scatter is its mirror image: d = 1, 2, ..., 2^(K-1), partial sums
// flowing to r + d. NCCL connects exactly these peers (rank + 2^j for
// reduce-scatter sends, rank - 2^j for all-gather sends) over the tree
// graph's transports.
//
// All-gather, rank r, offsets relative to r (block (r + o) mod p): it holds
// S = {0} and, at distance d, sends the blocks of S with o + d < p to r - d
// and receives those of r + d, which are its offsets o + d; S grows by them.
// The offsets held are the sums of the distances used so far, so every
// offset < p arrives exactly once, through its binary digits from the
// highest.
//
// Reduce-scatter: every rank starts with its own contribution to every
// block (a scratch copy of the input, as nccl:ring); at distance d = 2^j it
// sends its partial sums of the offsets with bit j set to r + d, which adds
// them into its offset o - d, and keeps those with bit j clear. The
// contribution of rank b - o to block b moves up by o's binary digits from
// the lowest and lands at b after K rounds; offset 0 is the rank's result.
//
// Blocks of one round are not contiguous (offsets strided by 2d): each is
// its own transfer, all of a round's at once. NCCL aggregates them through a
// bounded buffer; here they share the links as concurrent flows. Every
// transfer carries the plan's channels as lanes (PAT's channels all connect
// the same peers).
#include "algorithms/nccl_pat.h"

#include <algorithm>

#include "algorithms/fold.h"

namespace collkit {
namespace {

int lanes_of(const ScheduleSpec& spec) {
  int lanes = 0;
  if (spec.plan)
    for (const ChannelPlan::Tree& t : spec.plan->trees) lanes += t.lanes;
  return std::clamp(lanes, 1, 65535);
}

// Every transfer of PAT carries all of the plan's channels.
Op laned(Op op, int lanes) {
  op.lanes = static_cast<std::uint16_t>(lanes);
  return op;
}

Step local_step(Op op) {
  Step s;
  s.ops.push_back(op);
  return s;
}

int ceil_log2(int p) {
  int k = 0;
  while ((1LL << k) < p) ++k;
  return k;
}

}  // namespace

std::vector<int> pat_distances(int p, bool all_gather) {
  const int k = ceil_log2(p);
  std::vector<int> d;
  d.reserve(static_cast<std::size_t>(k));
  for (int j = 0; j < k; ++j) d.push_back(1 << (all_gather ? k - 1 - j : j));
  return d;
}

std::vector<std::vector<int>> pat_send_offsets(int p, bool all_gather) {
  std::vector<std::vector<int>> rounds;
  if (all_gather) {
    std::vector<int> held = {0};
    for (int d : pat_distances(p, true)) {
      std::vector<int> send;
      for (int o : held)
        if (o + d < p) send.push_back(o);
      rounds.push_back(send);
      for (int o : send) held.push_back(o + d);
      std::sort(held.begin(), held.end());
    }
  } else {
    for (int d : pat_distances(p, false)) {
      // Offsets still held at this round have no bit below log2(d); those
      // with bit log2(d) set leave.
      std::vector<int> send;
      for (int o = d; o < p; o += 2 * d) send.push_back(o);
      rounds.push_back(send);
    }
  }
  return rounds;
}

Generator<Step> pat_all_gather(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const auto block = [&](int o) {
    const int b = mod(rank + o, p);
    return Region{Buf::output, part.offset(b), part.size(b)};
  };
  co_yield local_step(copy_op({Buf::input, 0, part.size(rank)}, block(0)));
  const int lanes = lanes_of(spec);
  const std::vector<int> dist = pat_distances(p, true);
  const std::vector<std::vector<int>> sends = pat_send_offsets(p, true);
  for (std::size_t k = 0; k < dist.size(); ++k) {
    const int d = dist[k];
    Step s;
    for (int o : sends[k]) {
      if (block(o).count == 0) continue;  // the peer's block o + d - d is empty too
      s.ops.push_back(laned(send_op(mod(rank - d, p), block(o)), lanes));
    }
    for (int o : sends[k]) {
      const Region into = block(o + d);
      if (into.count == 0) continue;
      s.ops.push_back(laned(recv_op(mod(rank + d, p), into), lanes));
    }
    if (!s.ops.empty()) co_yield std::move(s);
  }
}

Generator<Step> pat_reduce_scatter(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const auto block = [&](int o) {
    const int b = mod(rank + o, p);
    return Region{Buf::scratch, part.offset(b), part.size(b)};
  };
  co_yield local_step(copy_op({Buf::input, 0, spec.count}, {Buf::scratch, 0, spec.count}));
  const int lanes = lanes_of(spec);
  const std::vector<int> dist = pat_distances(p, false);
  const std::vector<std::vector<int>> sends = pat_send_offsets(p, false);
  for (std::size_t k = 0; k < dist.size(); ++k) {
    const int d = dist[k];
    Step s;
    for (int o : sends[k]) {
      if (block(o).count == 0) continue;
      s.ops.push_back(laned(send_op(mod(rank + d, p), block(o)), lanes));
    }
    // Rank r - d sends its offsets o (bit log2(d) set): block r - d + o,
    // which is offset o - d here.
    for (int o : sends[k]) {
      const Region into = block(o - d);
      if (into.count == 0) continue;
      s.ops.push_back(laned(recv_op(mod(rank - d, p), into, Combine::reduce), lanes));
    }
    if (!s.ops.empty()) co_yield std::move(s);
  }
  co_yield local_step(copy_op(block(0), {Buf::output, 0, part.size(rank)}));
}

// Lock-step rounds, one-port: the blocks of a round are concurrent
// transfers, so a round costs a + (its largest block) b where they do not
// share a link (as nccl:p2p's formula; on one shared link they add up), plus
// g for its largest received block (each reduces as its own transfer lands,
// side by side, as the simulator does). Steps, bytes and time are those of the
// rank with the most (blocks are uneven when p does not divide the count;
// empty blocks are not sent, as in the programs).
CostEstimate pat_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const bool ag = spec.collective == Collective::all_gather;
  const Partition part{spec.count, p};
  const std::vector<int> dist = pat_distances(p, ag);
  const std::vector<std::vector<int>> rounds = pat_send_offsets(p, ag);
  double time = 0;
  std::int64_t steps = 0, sent = 0;
  for (int r = 0; r < p; ++r) {
    double t = 0;
    std::int64_t s = 0, out = 0;
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      // Received blocks: all_gather offsets o + d, reduce_scatter o - d.
      const int shift = ag ? dist[k] : -dist[k];
      std::int64_t elems = 0, largest = 0, largest_in = 0;
      for (int o : rounds[k]) {
        const std::int64_t mine = part.size(mod(r + o, p));
        const std::int64_t theirs = part.size(mod(r + o + shift, p));
        elems += mine;
        largest = std::max({largest, mine, theirs});
        largest_in = std::max(largest_in, theirs);
      }
      if (largest == 0) continue;
      ++s;
      out += elems;
      t += c.alpha + static_cast<double>(largest) * spec.elem_size * c.beta +
           (ag ? 0.0 : static_cast<double>(largest_in) * spec.elem_size * c.gamma);
    }
    time = std::max(time, t);
    steps = std::max(steps, s);
    sent = std::max(sent, out);
  }
  return make_cost(time, steps, sent, spec.elem_size);
}

}  // namespace collkit
