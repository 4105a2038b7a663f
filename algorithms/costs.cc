#include "algorithms/costs.h"

#include <algorithm>
#include <cmath>

#include "algorithms/registry.h"

namespace collkit {

int floor_log2(std::int64_t p) {
  int l = 0;
  while ((std::int64_t{1} << (l + 1)) <= p) ++l;
  return l;
}

int ceil_log2(std::int64_t p) {
  int l = 0;
  while ((std::int64_t{1} << l) < p) ++l;
  return l;
}

bool is_power_of_two(std::int64_t p) { return p > 0 && (p & (p - 1)) == 0; }

std::int64_t optimal_segments(int depth, double n_bytes, double alpha, double beta_eff,
                              std::int64_t n_elems) {
  // A pipeline of depth 1 gains nothing from segments; without latency every
  // extra segment is free, so the finest split is optimal.
  if (n_elems <= 1 || depth <= 1) return 1;
  if (alpha <= 0) return n_elems;
  const double k = std::sqrt((depth - 1) * n_bytes * beta_eff / alpha);
  const auto rounded = static_cast<std::int64_t>(std::llround(k));
  return std::clamp<std::int64_t>(rounded, 1, n_elems);
}

std::int64_t segment_elems(const ScheduleSpec& spec, int depth, bool reduction) {
  const std::int64_t n = spec.count;
  if (n <= 0) return 1;
  if (spec.segment > 0) return std::min(spec.segment, n);
  const double beta_eff = spec.model.beta + (reduction ? spec.model.gamma : 0.0);
  const std::int64_t k = optimal_segments(depth, static_cast<double>(n) * spec.elem_size,
                                          spec.model.alpha, beta_eff, n);
  return (n + k - 1) / k;
}

CostEstimate lower_bound(Collective c, int p, std::int64_t count, int elem_size,
                         const CostParams& m) {
  const double n = static_cast<double>(count) * elem_size;
  const double frac = p > 0 ? static_cast<double>(p - 1) / p : 0.0;
  // Nothing has to move when there is no data (or one rank): only a barrier
  // pays the latency term then.
  const bool moves = p > 1 && (count > 0 || c == Collective::barrier);
  const double L = moves ? ceil_log2(p) : 0.0;
  // Scatter and gather: the root keeps its own block, and with uneven blocks
  // that may be the larger one, so only n - ceil(n/p) elements must cross.
  const std::int64_t own_block = (count + p - 1) / std::max(p, 1);  // ceil(n/p), integer
  const double rooted_part = static_cast<double>(count - own_block) * elem_size;
  CostEstimate e;
  e.steps = static_cast<std::int64_t>(L);
  switch (c) {
    case Collective::broadcast:
      e.time = L * m.alpha + (moves ? n * m.beta : 0.0);
      e.bytes_sent = moves ? n : 0.0;
      break;
    case Collective::reduce:
      e.time = L * m.alpha + (moves ? n * m.beta : 0.0) + frac * n * m.gamma;
      e.bytes_sent = moves ? n : 0.0;
      break;
    case Collective::scatter:
    case Collective::gather:
      e.time = L * m.alpha + rooted_part * m.beta;
      e.bytes_sent = rooted_part;
      break;
    case Collective::all_gather:
    case Collective::all_to_all:
      e.time = L * m.alpha + frac * n * m.beta;
      e.bytes_sent = frac * n;
      break;
    case Collective::reduce_scatter:
      e.time = L * m.alpha + frac * n * m.beta + frac * n * m.gamma;
      e.bytes_sent = frac * n;
      break;
    case Collective::all_reduce:
      e.time = L * m.alpha + 2 * frac * n * m.beta + frac * n * m.gamma;
      e.bytes_sent = 2 * frac * n;
      break;
    case Collective::barrier:
      e.time = L * m.alpha;
      break;
  }
  return e;
}

}  // namespace collkit
