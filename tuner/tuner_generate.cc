#include "tuner/tuner_generate.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "algorithms/nccl_variant.h"
#include "algorithms/registry.h"
#include "core/nccl_sizes.h"
#include "sim/nccl.h"

namespace collkit {
namespace {

// The nccl family's variants NCCL's tuner table has a row for, with the row
// (NCCL_ALGO_*: tuner_algorithm_name names it in the files).
struct Variant {
  NcclVariant variant;
  int algorithm;
};
constexpr std::array<Variant, 7> kVariants = {{{NcclVariant::tree, 0},
                                               {NcclVariant::ring, 1},
                                               {NcclVariant::collnet_direct, 2},
                                               {NcclVariant::collnet_chain, 3},
                                               {NcclVariant::nvls, 4},
                                               {NcclVariant::nvls_tree, 5},
                                               {NcclVariant::pat, 6}}};

// Protocol id (NCCL_PROTO_*) as collkit's Protocol: LL, LL128, Simple.
Protocol protocol_of(int id) { return kAllProtocols[id]; }

SweepSpec sweep_of(const Topology& topology, int ranks, const TunerSpec& spec, Collective c) {
  SweepSpec sweep;
  sweep.collective = c;
  sweep.ranks = ranks;
  sweep.dtype = spec.dtype;
  sweep.op = spec.op;
  sweep.model = cost_params_of(topology, ranks);
  return sweep;
}

// The sizes of the grid for one collective: NCCL's nBytes, increasing, > 0.
std::vector<SizeMapping> grid_of(Collective c, const TunerSpec& spec, int ranks) {
  std::vector<SizeMapping> grid;
  const int elem = size_of(spec.dtype);
  for (std::int64_t b : spec.sizes) {
    const SizeMapping m = map_size(c, b, elem, ranks);
    const std::int64_t bytes = m.spec_count * elem;
    if (bytes <= 0 || (!grid.empty() && bytes <= grid.back().spec_count * elem)) continue;
    grid.push_back(m);
  }
  return grid;
}

// NCCL's nBytes nearest `bytes` that the collective can have: at most
// `bytes` (up = false) or at least (up = true); allgather and reducescatter
// move whole per-rank elements (map_size).
std::int64_t achievable(Collective c, std::int64_t bytes, int elem, int ranks, bool up) {
  const auto mapped = [&](std::int64_t b) { return map_size(c, b, elem, ranks).spec_count * elem; };
  std::int64_t x = mapped(bytes);
  if (!up || x >= bytes) return x;
  std::int64_t probe = bytes;
  while (x < bytes) {
    probe += bytes - x;
    x = mapped(probe);
  }
  return x;
}

// The sizes of one (collective, variant, protocol): the grid, plus the two
// sizes either side of every size in the grid's range where NCCL's channel
// rule changes the count, so that no interval interpolates between two
// channel counts.
std::vector<std::int64_t> sizes_of(const NcclContext& ctx, Collective c, const Variant& v, int p,
                                   const std::vector<SizeMapping>& grid, const TunerSpec& spec,
                                   int ranks) {
  const int elem = size_of(spec.dtype);
  const Protocol pr = protocol_of(p);
  const auto ch = [&](std::int64_t b) { return nccl_channels(ctx, c, b, v.variant, pr); };
  std::vector<std::int64_t> out;
  out.reserve(grid.size());
  for (const SizeMapping& m : grid) out.push_back(m.spec_count * elem);
  std::vector<std::int64_t> steps;
  // Channel counts only grow with the size: bisect each grid interval.
  std::vector<std::pair<std::int64_t, std::int64_t>> todo;
  for (std::size_t i = 0; i + 1 < out.size(); ++i) todo.emplace_back(out[i], out[i + 1]);
  while (!todo.empty()) {
    const auto [lo, hi] = todo.back();
    todo.pop_back();
    if (ch(lo) == ch(hi)) continue;
    if (hi - lo == 1) {
      steps.push_back(hi);
      continue;
    }
    const std::int64_t mid = lo + (hi - lo) / 2;
    todo.emplace_back(lo, mid);
    todo.emplace_back(mid, hi);
  }
  for (std::int64_t s : steps) {
    out.push_back(achievable(c, s - 1, elem, ranks, false));
    out.push_back(achievable(c, s, elem, ranks, true));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  std::erase_if(out, [](std::int64_t b) { return b <= 0; });
  return out;
}

template <typename Fn>
void for_each_point(const Topology& topology, int ranks, const TunerSpec& spec, Fn&& fn) {
  const NcclContext ctx = nccl_context(topology, ranks);
  const int elem = size_of(spec.dtype);
  for (int id = 0; id < kTunerCollectives; ++id) {
    const Collective c = tuner_collective(id);
    const std::vector<SizeMapping> grid = grid_of(c, spec, ranks);
    for (const Variant& v : kVariants)
      for (int p = 0; p < kTunerProtocols; ++p)
        for (std::int64_t bytes : sizes_of(ctx, c, v, p, grid, spec, ranks)) {
          if (!nccl_model_time(ctx, c, v.variant, protocol_of(p), bytes, spec.dtype, spec.op))
            continue;
          // NCCL weighs pairs collkit cannot simulate (NVLS all_gather):
          // the tuner leaves NCCL's own estimate for those.
          if (!nccl_has_schedule(c, v.variant)) continue;
          // nccl-tests' size loop maps a size to the same nBytes back.
          const SizeMapping size = map_size(c, bytes, elem, ranks);
          fn(ctx, id, c, v, p, size, bytes);
        }
  }
}

}  // namespace

Collective tuner_collective(int id) {
  constexpr std::array<Collective, kTunerCollectives> kColls = {
      Collective::broadcast, Collective::reduce, Collective::all_gather, Collective::reduce_scatter,
      Collective::all_reduce};
  return kColls.at(static_cast<std::size_t>(id));
}

std::size_t tuner_comm_points(const Topology& topology, int ranks, const TunerSpec& spec) {
  std::size_t n = 0;
  for_each_point(topology, ranks, spec, [&](auto&&...) { ++n; });
  return n;
}

TunerComm tuner_comm(const Topology& topology, int ranks, const TunerSpec& spec,
                     const ProgressFn& progress) {
  TunerComm comm;
  comm.ranks = ranks;
  const std::size_t total = progress ? tuner_comm_points(topology, ranks, spec) : 0;
  std::size_t done = 0;
  for_each_point(
      topology, ranks, spec,
      [&](const NcclContext& ctx, int id, Collective c, const Variant& v, int p,
          const SizeMapping& size, std::int64_t bytes) {
        comm.nodes = ctx.nodes;
        NcclChoice choice;
        choice.variant = v.variant;
        choice.protocol = protocol_of(p);
        choice.channels = nccl_channels(ctx, c, bytes, v.variant, choice.protocol);
        const SweepSpec sweep = sweep_of(topology, ranks, spec, c);
        const ScheduleSpec s = nccl_schedule_spec(
            schedule_spec(sweep, "nccl:" + std::string(to_string(v.variant)), size), ctx, choice,
            topology);
        const double us = simulate(*make_schedule(s), topology, spec.options).time * 1e6;
        TunerTable* t = nullptr;
        for (TunerTable& x : comm.tables)
          if (x.collective == id && x.algorithm == v.algorithm && x.protocol == p) t = &x;
        if (!t) {
          comm.tables.push_back(TunerTable{id, v.algorithm, p, {}});
          t = &comm.tables.back();
        }
        t->points.push_back(TunerPoint{static_cast<std::uint64_t>(bytes), us, choice.channels});
        if (progress) progress(++done, total);
      });
  if (comm.tables.empty()) comm.nodes = nccl_context(topology, ranks).nodes;
  return comm;
}

std::vector<TunerConfigLine> tuner_config_lines(const TunerModel& model) {
  std::vector<TunerConfigLine> lines;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (const TunerComm& comm : model.comms)
    for (int id = 0; id < kTunerCollectives; ++id) {
      // Segment starts: 0 and every grid size of the collective's tables.
      std::vector<std::uint64_t> starts = {0};
      for (const TunerTable& t : comm.tables)
        if (t.collective == id)
          for (const TunerPoint& p : t.points) starts.push_back(p.bytes);
      std::sort(starts.begin(), starts.end());
      starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
      const auto same = [](const TunerChoice& a, const TunerChoice& b) {
        return a.algorithm == b.algorithm && a.protocol == b.protocol && a.channels == b.channels;
      };
      const auto emit = [&](std::uint64_t lo, std::uint64_t hi, const TunerChoice& c) {
        if (!lines.empty() && lines.back().collective == id && lines.back().ranks == comm.ranks &&
            lines.back().nodes == comm.nodes && lines.back().max_bytes + 1 == lo &&
            lines.back().algorithm == c.algorithm && lines.back().protocol == c.protocol &&
            lines.back().channels == c.channels) {
          lines.back().max_bytes = hi;
          return;
        }
        lines.push_back(TunerConfigLine{id, lo, hi, c.algorithm, c.protocol, c.channels, comm.nodes,
                                        comm.ranks});
      };
      if (tuner_best(comm, id, 0).algorithm < 0) continue;
      for (std::size_t i = 0; i < starts.size(); ++i) {
        const std::uint64_t end = i + 1 < starts.size() ? starts[i + 1] - 1 : kMax;
        std::uint64_t cur = starts[i];
        while (true) {
          const TunerChoice c = tuner_best(comm, id, cur);
          if (same(c, tuner_best(comm, id, end))) {
            emit(cur, end, c);
            break;
          }
          // The first size after cur whose choice differs (one crossing assumed
          // between cur and it; a second is found on the next turn).
          std::uint64_t lo = cur, hi = end;
          while (hi - lo > 1) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            (same(tuner_best(comm, id, mid), c) ? lo : hi) = mid;
          }
          emit(cur, lo, c);
          cur = hi;
        }
      }
    }
  return lines;
}

std::string tuner_config_text(const TunerModel& model, const std::vector<std::string>& comments) {
  std::string out;
  for (const std::string& c : comments) out += "# " + c + "\n";
  out += "# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n";
  for (const TunerConfigLine& l : tuner_config_lines(model))
    out += std::string(tuner_collective_name(l.collective)) + "," + std::to_string(l.min_bytes) +
           "," + std::to_string(l.max_bytes) + "," +
           std::string(tuner_algorithm_name(l.algorithm)) + "," +
           std::string(tuner_protocol_name(l.protocol)) + "," + std::to_string(l.channels) + "," +
           std::to_string(l.nodes) + "," + std::to_string(l.ranks) + "\n";
  return out;
}

}  // namespace collkit
