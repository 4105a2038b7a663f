// The layer planner (`collkit plan`, docs/PLANNER.md): for every layer of a
// model, data parallel, ZeRO stage 1/2/3, the seeds' model-parallel FC split
// or Megatron tensor parallelism, chosen from the communication time the
// simulator predicts on a topology and from the memory each rank needs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "core/json.h"
#include "core/nccl_version.h"
#include "planner/planner_model.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit {

enum class Strategy : std::uint8_t { dp, zero1, zero2, zero3, fc_split, tensor_parallel };
std::string_view to_string(Strategy s);

// Bytes per rank of one category; all figures in bytes.
struct Memory {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;
  double total() const { return params + grads + optimizer + activations; }
  Memory& operator+=(const Memory& o);
};

// Model states of `psi` parameters under ZeRO stage 0 (plain data parallel)
// to 3 over `n_d` data-parallel ranks (Rajbhandari et al., table 1): weights
// and gradients of `elem_bytes` each, `optimizer_bytes` per parameter of
// optimizer state (12 for mixed-precision Adam: fp32 master, momentum,
// variance). Activations are left at 0.
Memory model_state_memory(double psi, int zero_stage, int n_d, int elem_bytes, int optimizer_bytes);

// How the ranks are arranged: rank = (stage x dp + dp_index) x tp + tp_index,
// so a tensor-parallel group is tp consecutive ranks (inside one node), a
// data-parallel group takes every tp-th rank of a stage, and pipeline stages
// are consecutive blocks of whole nodes.
struct Layout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  std::int64_t micro_batch = 1;    // samples per rank per micro-batch
  std::int64_t micro_batches = 1;  // per step (gradient accumulation)
};

// The ranks a collective runs over, as topology ranks first + i x stride.
enum class GroupKind : std::uint8_t { data_parallel, tensor_parallel, pipeline };
std::string_view to_string(GroupKind g);

struct CollectiveUse {
  Collective collective = Collective::all_reduce;
  GroupKind group = GroupKind::data_parallel;
  int group_size = 1;
  int stride = 1;  // topology ranks between consecutive group members
  // nccl-tests' size: the whole buffer (all_gather: the gathered output;
  // reduce_scatter: the input; all_reduce: the vector; pipeline: the message).
  std::int64_t bytes = 0;
  std::int64_t count = 0;  // times per training step (all instances of the layer)
  double time = 0;         // seconds for one, best algorithm, simulated
  std::string algorithm;
  std::string phase;  // "forward", "backward" or "step" (once per step, after backward)
};

// One candidate for one layer: strategy plus the ZeRO stage of its
// data-parallel part (dp..zero3 carry 0..3; tensor_parallel any of them).
struct Choice {
  Strategy strategy = Strategy::dp;
  int zero_stage = 0;
  bool operator==(const Choice&) const = default;
};
std::string choice_name(const Choice& c);  // "dp", "zero2", "tensor_parallel+zero1", ...

// Collectives one layer entry (all its repeats) causes per training step.
// Times are left at 0; the planner fills them from the simulator.
std::vector<CollectiveUse> layer_collectives(const Layer& layer, const Choice& choice,
                                             const Layout& layout, int elem_bytes);
// Memory per rank of one layer entry (all its repeats, before any pipeline
// split), activations of one micro-batch included.
Memory layer_memory(const Layer& layer, const Choice& choice, const Layout& layout, int elem_bytes,
                    int optimizer_bytes);

// The layout a user runs today, priced as given (`plan --tp --pp --dp
// --zero --micro-batch`): layers that tensor parallelism splits are split
// over tp, every layer's data-parallel part uses ZeRO stage `zero`.
struct UserLayout {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0 = the most the ranks and the batch allow
  int zero = 0;
  std::int64_t micro_batch = 0;  // 0 = --micro-batch, else the per-rank batch
};

struct PlanOptions {
  int ranks = 0;
  std::int64_t batch = 0;        // global samples per step
  std::int64_t micro_batch = 0;  // per rank; 0 = the planner chooses
  DataType dtype = DataType::bfloat16;
  double device_memory = 80.0 * (1ull << 30);  // bytes
  // Achieved dense FLOP/s per device, in TFLOPS: prices the pipeline bubble.
  // 400 is about 40% of an H100 SXM's 989 bf16 TFLOPS, what large training
  // runs report.
  double device_tflops = 400;
  SimOptions sim{};
  std::string topology_file;  // for the report only
  // Ranks per node for tensor and pipeline parallelism; 0 = the topology's
  // node structure (--devices-per-node overrides it).
  int devices_per_node = 0;
  // A layout to price beside the planner's choice (--tp --pp --dp --zero).
  std::optional<UserLayout> user;
  // How a collective is priced (--collectives): the fastest registered
  // algorithm (false), or what NCCL runs, its own choice of algorithm,
  // protocol and channels on the group's ranks (sim/nccl.h; true). The
  // command's default is gpu_topology(): NCCL on GPUs, best elsewhere.
  bool nccl = false;
  // With nccl: the NCCL version whose cost model chooses (--nccl-version;
  // none: the topology's nccl.version, else collkit's default), and whether
  // plan_json explains each collective's choice (--explain).
  std::optional<NcclVersion> nccl_version;
  bool explain = false;
  // Threads that price layouts at once (--jobs; core/parallel.h; <= 0:
  // every core). The plan is the same, bit for bit, whatever it is.
  int jobs = 1;
};

// Whether the topology's first `ranks` ranks are GPUs, where a training job's
// collectives are NCCL's: every such endpoint is pipelined (its kernels
// forward and reduce chunk by chunk, docs/NCCL.md "Pipelines"), as in the
// shipped GPU files. The plan command prices collectives as NCCL runs them
// there unless --collectives best says otherwise.
bool gpu_topology(const Topology& topology, int ranks);

struct LayerPlan {
  std::string name;
  LayerKind kind = LayerKind::linear;
  std::int64_t params = 0;  // all repeats
  std::int64_t repeat = 1;
  Choice choice;
  std::vector<CollectiveUse> collectives;
  double time = 0;  // seconds per step, all its collectives
  Memory memory;    // per rank, all repeats
  int first_stage = 0;
  int last_stage = 0;
  // Instances on one rank: repeat, or with pipelining the most any stage
  // holds. Counts, time and memory of the row are for those instances.
  std::int64_t instances_per_rank = 1;
  std::string reason;
};

struct Plan {
  Layout layout;
  std::vector<LayerPlan> layers;
  std::vector<CollectiveUse> pipeline;  // stage-to-stage transfers
  // Seconds per step the planner minimises: communication (not overlapped
  // with computation) plus the pipeline bubble.
  double time = 0;
  double comm_time = 0;     // communication alone
  double bubble_time = 0;   // bubble x compute_time
  double compute_time = 0;  // per rank per step, from FLOPs and --device-tflops
  Memory memory;            // per rank (the fullest stage)
  bool fits = false;
  double bubble = 0;  // pipeline bubble fraction (pp - 1) / m
  // Seconds per step all told: compute + communication + bubble. Layouts
  // (which differ in the work per rank) compete on it.
  double step_time() const { return compute_time + time; }
  int ranks_used() const { return layout.tp * layout.pp * layout.dp; }
};

// Every layer with the same strategy, with tp = pp = 1: what plain data
// parallelism and each ZeRO stage would cost and need.
struct Alternative {
  std::string name;
  bool valid = false;  // false when the batch does not split over the ranks
  Layout layout;       // tp = pp = 1; the chosen plan's micro-batch where it divides
  double time = 0;     // communication
  double step_time = 0;
  Memory memory;
  bool fits = false;
};

struct PlanResult {
  Plan plan;
  bool fits = false;
  Plan cheapest;  // the cheapest plan ignoring memory
  std::vector<Alternative> uniform;
  std::string verdict;       // one or two lines: what was chosen and why
  int devices_per_node = 0;  // 0: the topology has no nodes and none were given
  std::int64_t simulations = 0;
  int optimizer_bytes = 12;
  // The fastest fitting plan without tensor or pipeline parallelism (0 when
  // none fits) and its data-parallel degree.
  double simple_step_time = 0;
  int simple_ranks = 0;
  // --tp/--pp/--dp/--zero: that layout priced, and how it differs from the
  // planner's choice (lines without a leading '#').
  std::optional<Plan> user;
  std::vector<std::string> user_diff;
};

// Plans `model` on the first opts.ranks ranks of `topology`. Throws
// UsageError when the batch cannot be split over any data-parallel degree.
PlanResult make_plan(const Model& model, const Topology& topology, const PlanOptions& opts);

Json plan_json(const PlanResult& result, const Model& model, const Topology& topology,
               const PlanOptions& opts);
std::string format_plan(const PlanResult& result, const Model& model, const PlanOptions& opts);

// "80GiB", "80GB", "81920MiB", "85899345920" -> bytes (GiB = 2^30, GB = 1e9).
// Throws UsageError naming the flag.
double parse_memory_size(const std::string& flag, const std::string& text);

}  // namespace collkit
