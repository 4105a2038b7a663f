#include "algorithms/verify.h"

#include <algorithm>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"

namespace collkit {
namespace {

// Symbolic runs carry a bitset of ranks per element; past this many ranks
// the large count is checked numerically only (as the project sweep does).
constexpr int kSymbolicLargeMaxRanks = 17;
constexpr std::int64_t kLarge = 65537;

}  // namespace

std::vector<VerifyCount> default_verify_counts(Collective c, int ranks, std::int64_t unit) {
  std::vector<VerifyCount> out;
  const auto add = [&](std::int64_t n, std::string why) {
    if (n < 0) return;
    for (const VerifyCount& v : out)
      if (v.count == n) return;
    out.push_back({n, std::move(why)});
  };
  if (c == Collective::barrier) {
    add(0, "a barrier moves no data");
    return out;
  }
  const std::int64_t p = ranks;
  if (unit <= 1) {
    add(0, "empty");
    add(1, "one element");
    add(p - 1, "p-1: fewer elements than ranks");
    add(p, "p: one per rank");
    add(p + 1, "p+1: uneven blocks");
    add(kLarge, "65537: large, uneven for every p > 1");
    return out;
  }
  add(unit, "the smallest count the algorithm accepts");
  add(2 * unit, "2 x that");
  add(3 * unit, "3 x that");
  add((p + 1) * unit, "(p+1) x that");
  add((kLarge + unit - 1) / unit * unit, "large: the first multiple past 65536");
  return out;
}

VerifyResult verify_counts(const ScheduleSpec& base, const std::vector<VerifyCount>& counts,
                           const std::function<std::string(const Schedule&)>& note,
                           const std::function<void(const VerifyRow&)>& on_row) {
  VerifyResult result;
  for (const VerifyCount& vc : counts) {
    ScheduleSpec spec = base;
    spec.count = vc.count;
    VerifyRow row;
    row.count = vc.count;
    row.why = vc.why;
    try {
      const auto schedule = make_schedule(spec);
      ExecutionStats stats;
      const bool reduction = is_reduction(spec.collective);
      for (ReduceOp op : kAllReduceOps) {
        if (!reduction && op != ReduceOp::sum) continue;
        stats =
            verify_numeric(*schedule, DType::int32, op, 1 + static_cast<std::uint64_t>(vc.count));
        ++row.numeric_runs;
      }
      for (DType t : {DType::int64, DType::float32, DType::float64}) {
        verify_numeric(*schedule, t, reduction ? ReduceOp::max : ReduceOp::sum, 7);
        verify_numeric(*schedule, t, ReduceOp::sum, 11);
        row.numeric_runs += 2;
      }
      if (vc.count < kLarge || spec.ranks <= kSymbolicLargeMaxRanks) {
        verify_symbolic(*schedule);
        row.symbolic = true;
      }
      row.steps = stats.max_steps;
      row.comm_steps = stats.max_comm_steps;
      row.messages = stats.total_messages;
      if (note) row.note = note(*schedule);
    } catch (const ScheduleError& e) {
      result.ok = false;
      result.failed_count = vc.count;
      result.failure = e.what();
      return result;
    }
    if (on_row) on_row(row);
    result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace collkit
