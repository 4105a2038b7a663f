// The catalogue of algorithms. Adding an algorithm = one generator in a family
// file plus one AlgorithmDef line in that file's add_<family>() function.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.h"

namespace collkit {

// Closed-form cost of a schedule under the alpha-beta-gamma model (one-port,
// full duplex; COSTS.md). `steps` and `bytes_sent` are exact properties of the
// generated schedule (tests compare them with the generator's output):
//   steps      = max over ranks of the number of steps that communicate
//   bytes_sent = max over ranks of the bytes that rank sends
// `time` is exact where AlgorithmDef::exactness says so (docs/ALGORITHMS.md
// in words).
struct CostEstimate {
  double time = 0;
  std::int64_t steps = 0;
  double bytes_sent = 0;
};

// Where a closed form's `time` is exact (steps and bytes_sent always are):
// what the algorithm's cost_formula says in words, as fields.
// tests/sim/closed_form_test.cc compares the simulator with the closed form
// on every algorithm, within these conditions.
struct CostExactness {
  bool exact = true;               // false: an estimate (approximate), never compared
  bool power_of_two_only = false;  // exact for p a power of two only
  bool segment_divides_n = false;  // exact where the segment divides n only
};
inline constexpr CostExactness kCostExact{};
inline constexpr CostExactness kCostApproximate{.exact = false};
inline constexpr CostExactness kCostExactForPowersOfTwo{.power_of_two_only = true};
inline constexpr CostExactness kCostExactWhenSegmentDivides{.segment_divides_n = true};

struct AlgorithmDef {
  Collective collective;
  std::string name;
  // Selectable variants (first = default), e.g. {"fold", "blocks"}; empty if none.
  std::vector<std::string> variants;
  // One line for `collkit algorithms`: the closed-form cost in words.
  std::string cost_formula;
  // Where `cost` is exact, as cost_formula states it.
  CostExactness exactness;
  // Which p the algorithm accepts and how (e.g. "any p (fold to 2^floor(log2 p))").
  std::string accepts;
  // The rank's program. Must accept any p >= 1, any root, any count >= 0.
  std::function<Generator<Step>(const ScheduleSpec&, int rank)> program;
  // Scratch elements the rank needs.
  std::function<std::int64_t(const ScheduleSpec&, int rank)> scratch;
  // Closed-form cost; n in bytes = spec.count * spec.elem_size.
  std::function<CostEstimate(const ScheduleSpec&, const CostParams&)> cost;
  // Optional: completes a validated spec before the schedule is built (the
  // nccl family fills its default channel plan here, once for all ranks),
  // or rejects it with a UsageError.
  std::function<void(ScheduleSpec&)> prepare = {};
  // The default variant cannot be built from a spec alone: it is chosen per
  // size on a topology (the nccl family's "auto", resolved by the simulator).
  // expand_algorithms leaves it out of "all" where there is no topology.
  bool default_needs_topology = false;
  // Reads ScheduleSpec::group_size (hierarchical). Only then is a group size
  // checked (1..p, dividing p): elsewhere --group is ignored, so one given
  // for the hierarchical algorithm does not fail the others of a sweep.
  bool uses_group = false;
};

const std::vector<AlgorithmDef>& algorithm_registry();
// Throws UsageError naming the valid algorithms for the collective.
const AlgorithmDef& find_algorithm(Collective c, const std::string& name);
std::vector<const AlgorithmDef*> algorithms_for(Collective c);

// Validates the spec (ranks >= 1, 0 <= root < ranks, count >= 0, known
// algorithm and variant, barrier count 0, ...) and builds the schedule. Throws
// UsageError with one clear line on bad input. `name` may carry a variant as
// "algorithm:variant", or name a schedule source as "prefix:argument".
std::unique_ptr<Schedule> make_schedule(ScheduleSpec spec);

// Schedule sources: schedules defined outside this registry, named
// "<prefix>:<argument>" wherever an algorithm name is taken (for instance
// "msccl:FILE.xml", interop/msccl_source.h). A layer above algorithms/
// registers its sources at startup: the collkit command's main and the tests
// call the registration, since a static initialiser in a static library is
// dropped by the linker. make_schedule checks the generic spec fields
// (ranks, root, count >= 0, element size) and hands the spec, its algorithm
// name unchanged, to the source's `make`. Registering a prefix again
// replaces the earlier source. Thread-safe.
struct ScheduleSource {
  std::string prefix;       // "msccl": handles every name "msccl:..."
  std::string description;  // one line, e.g. "msccl:FILE.xml  an MSCCL XML algorithm"
  // Builds the schedule; throws UsageError/FileError (bad name, file or
  // parameters) or ScheduleError (a definition that cannot run correctly).
  std::function<std::unique_ptr<Schedule>(const ScheduleSpec&)> make;
  // The rank count the named schedule is fixed to, 0 = any (optional).
  std::function<int(const std::string& name)> fixed_ranks;
  // Counts must be multiples of this for the spec (count ignored; optional,
  // 1 when absent).
  std::function<std::int64_t(const ScheduleSpec&)> count_unit;
  // Sizes the runtime the named schedule comes from cannot complete
  // (optional): "" when it runs the spec's count, else one line saying
  // from which size it hangs and why (msccl: a connection's buffer fills,
  // docs/MSCCL.md). `make` throws ScheduleError at such a count; commands
  // that sweep sizes (simulate, bench) ask first and refuse them.
  std::function<std::string(const ScheduleSpec&)> runtime_hang;
  // Why a call is outside what the named definition declares it serves ("" =
  // inside): MSCCL's minBytes/maxBytes and inplace/outofplace. Optional; a
  // runtime would not choose the definition for such a call, so engines say
  // so per row (simulate) or leave the row out (bench).
  std::function<std::string(const ScheduleSpec&, bool in_place)> outside;
};
void register_schedule_source(ScheduleSource source);
// The source whose prefix the name starts with ("prefix:..."), or nullptr.
std::shared_ptr<const ScheduleSource> find_schedule_source(const std::string& name);
// The source's `outside` for the spec's algorithm; "" for registered
// algorithms and sources that declare nothing.
std::string outside_declaration(const ScheduleSpec& spec, bool in_place);
// Every registered source, in registration order.
std::vector<std::shared_ptr<const ScheduleSource>> schedule_sources();
// The source's runtime_hang for spec (after the checks make_schedule makes
// of a spec); "" for a registered algorithm or a source without the hook.
std::string runtime_hang(const ScheduleSpec& spec);

// "all" = every registered algorithm of the collective, each variant of it
// ("name" for the default, "name:variant" for the others; without a topology
// the defaults that need one, such as nccl's own choice, are left out); otherwise the
// comma-separated names, duplicates dropped. Throws UsageError for an empty
// name or when no algorithm is registered.
std::vector<std::string> expand_algorithms(Collective c, const std::string& list,
                                           bool with_topology = true);

// The variants a spec alone can build ("" for an algorithm without
// variants): every one but a default that needs a topology.
std::vector<std::string> buildable_variants(const AlgorithmDef& def);

// Splits "rabenseifner:blocks" into {"rabenseifner", "blocks"}.
std::pair<std::string, std::string> split_algorithm_name(const std::string& name);

// Registered algorithms only (UsageError for a schedule source's name).
CostEstimate closed_form_cost(const ScheduleSpec& spec, const CostParams& params);

// Lower bounds (COSTS.md table) for `count` elements of `elem_size` bytes
// (count means what ScheduleSpec::count means for the collective).
CostEstimate lower_bound(Collective c, int p, std::int64_t count, int elem_size,
                         const CostParams& params);

// Family registration functions (one per algorithms/<family>.cc).
void add_broadcast(std::vector<AlgorithmDef>& defs);
void add_reduce(std::vector<AlgorithmDef>& defs);
void add_reduce_rabenseifner(std::vector<AlgorithmDef>& defs);
void add_scatter_gather(std::vector<AlgorithmDef>& defs);
void add_all_gather(std::vector<AlgorithmDef>& defs);
void add_reduce_scatter(std::vector<AlgorithmDef>& defs);
void add_all_reduce(std::vector<AlgorithmDef>& defs);
void add_all_reduce_trees(std::vector<AlgorithmDef>& defs);
void add_all_to_all(std::vector<AlgorithmDef>& defs);
void add_barrier(std::vector<AlgorithmDef>& defs);
void add_nccl(std::vector<AlgorithmDef>& defs);

}  // namespace collkit
