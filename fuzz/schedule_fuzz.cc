// Fuzzes the schedule generators through make_schedule (algorithms/registry.h):
// the fuzz bytes choose the collective, algorithm and variant, ranks, root,
// count, element size, segment and group size (sizes bounded so one run stays
// cheap). Parameters make_schedule rejects must throw UsageError; every
// schedule it accepts must pass the reference executor's numeric and symbolic
// checks (a ScheduleError is a crash here), agree with check_structure, and,
// with default segments and groups, match its closed-form step and byte counts.
#include <cmath>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "fuzz/fuzz_support.h"

namespace {

constexpr int kMaxRanks = 40;
constexpr std::int64_t kMaxCount = 200;

// Reads small integers from the fuzz bytes; zeros once they run out.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint32_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint32_t next16() { return next() | (next() << 8); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  Bytes in(data, size);
  const Collective c = kAllCollectives[in.next() % std::size(kAllCollectives)];
  const std::vector<const AlgorithmDef*> algos = algorithms_for(c);
  if (algos.empty()) return 0;
  const AlgorithmDef& def = *algos[in.next() % algos.size()];
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = def.name;
  const std::uint32_t v = in.next();
  // One value in 8 names no variant; a variant index past the list is invalid.
  if (v % 8 != 0) spec.variant = v % 8 <= def.variants.size() ? def.variants[v % 8 - 1] : "bogus";
  // Ranks 1..40 mostly; the last values probe rejected ones (0, -1).
  const std::uint32_t pr = in.next();
  spec.ranks = pr < 250 ? 1 + static_cast<int>(pr % kMaxRanks) : 250 - static_cast<int>(pr);
  const std::uint32_t rr = in.next();
  spec.root = rr < 240 ? static_cast<int>(rr) % std::max(spec.ranks, 1)
                       : static_cast<int>(rr) - 245;  // -5..10: some out of range
  const std::uint32_t cr = in.next16();
  spec.count = c == Collective::barrier && cr % 16 != 0 ? 0
               : cr < 65000 ? static_cast<std::int64_t>(cr % (kMaxCount + 1))
                            : -1;
  static constexpr int kElem[] = {4, 1, 2, 8, 4, 4, 0, 3};
  spec.elem_size = kElem[in.next() % 8];
  const std::uint32_t sr = in.next();
  spec.segment = sr < 128 ? 0 : sr < 250 ? static_cast<std::int64_t>(sr % 64) : -1;
  const std::uint32_t gr = in.next();
  spec.group_size = gr < 128 ? 0 : static_cast<int>(gr % (kMaxRanks + 2)) - 1;
  const DType dtype = kAllDTypes[in.next() % std::size(kAllDTypes)];
  const ReduceOp op = kAllReduceOps[in.next() % std::size(kAllReduceOps)];
  const std::uint64_t seed = in.next16();

  std::unique_ptr<Schedule> s;
  try {
    s = make_schedule(spec);
  } catch (const UsageError& e) {
    fuzz::check_message(e);
    return 0;
  }
  const ExecutionStats num = verify_numeric(*s, dtype, op, seed);
  const ExecutionStats sym = verify_symbolic(*s);
  const ExecutionStats str = check_structure(*s);
  if (str.max_comm_steps != num.max_comm_steps || str.max_elems_sent != num.max_elems_sent ||
      str.total_messages != num.total_messages || str.max_steps != num.max_steps)
    fuzz::property_failed("check_structure stats differ from verify_numeric stats");
  if (sym.max_elems_sent != num.max_elems_sent || sym.total_messages != num.total_messages)
    fuzz::property_failed("verify_symbolic stats differ from verify_numeric stats");
  const ScheduleSpec& used = s->spec();
  const CostEstimate cost = closed_form_cost(used, used.model);
  if (!std::isfinite(cost.time) || cost.time < 0) fuzz::property_failed("closed-form time invalid");
  if (spec.segment == 0 && spec.group_size == 0 && spec.elem_size == 4) {
    if (cost.steps != num.max_comm_steps)
      fuzz::property_failed("closed-form steps " + std::to_string(cost.steps) +
                            " but the schedule has " + std::to_string(num.max_comm_steps));
    const double bytes = static_cast<double>(num.max_elems_sent) * used.elem_size;
    if (std::abs(cost.bytes_sent - bytes) > 1e-9 * std::max(1.0, bytes))
      fuzz::property_failed("closed-form bytes_sent differs from the schedule's");
  }
  return 0;
}
