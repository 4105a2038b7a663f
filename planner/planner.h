// The layer planner (`collkit plan`, docs/PLANNER.md): for every layer of a
// model, data parallel, ZeRO stage 1/2/3, the seeds' model-parallel FC split
// or Megatron tensor parallelism, and for the whole model the tensor,
// pipeline and data-parallel degrees, micro-batch, virtual stages and
// activation recomputation, chosen from the predicted training step (compute
// priced on the device, planner/compute.h; communication simulated on the
// topology; what overlaps hidden) and from the memory each rank needs.
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
#include "core/progress.h"
#include "planner/compute.h"
#include "planner/device.h"
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
// are consecutive blocks of whole nodes. With v virtual stages each rank
// holds v chunks of its stage's layers (interleaved 1F1B).
struct Layout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  std::int64_t micro_batch = 1;    // samples per rank per micro-batch
  std::int64_t micro_batches = 1;  // per step (gradient accumulation)
  int virtual_stages = 1;
  Recompute recompute = Recompute::none;
  bool sequence_parallel =
      false;  // tensor parallelism's all_reduces as reduce_scatter + all_gather
};

// The training software's behaviour (docs/PLANNER.md, "The training step"),
// the same for the planner's search and a layout given with --tp ...
struct StepOptions {
  AttentionKernel attention = AttentionKernel::flash;
  // Megatron-LM's overlaps: gradient reduction in buckets during the last
  // micro-batch's backward (DDP's hooks), the distributed optimizer's
  // parameter all_gather behind the next forward, pipeline sends behind
  // compute, tensor-parallel collectives behind their GEMMs.
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool overlap_p2p = true;
  bool overlap_tp = false;
  bool fused_grad_accumulation = true;  // gradient_accumulation_fusion
  // Bytes per gradient bucket: 0 = Megatron-Core's default, max(40M, 1M x
  // dp) parameters; < 0 = one bucket (all gradients at once).
  double bucket_bytes = 0;
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
  // "forward", "backward", "recompute" (the forward's again, before the
  // backward) or "step" (once per step, after the backward).
  std::string phase;
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
// Times are left at 0; the planner fills them from the simulator. Gradient
// and parameter collectives go in buckets of at most `bucket_bytes` (0: one
// message per instance).
std::vector<CollectiveUse> layer_collectives(const Layer& layer, const Choice& choice,
                                             const Layout& layout, int elem_bytes,
                                             double bucket_bytes = 0);
// Memory per rank of one layer entry's model states (all its repeats,
// before any pipeline split); activations are the compute model's.
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
  int virtual_stages = 1;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
};

// What a training process holds on a GPU besides the model states and
// activations the planner counts (docs/PLANNER.md, "Memory per rank"): the
// CUDA context and the kernels it loads, 1.42 GiB measured under PyTorch
// (ml-engineering, debug/pytorch.md), and NCCL's buffers, 9,633,792 bytes per
// connection (NCCL's defaults: Simple 4 MiB, LL128 4,915,200, LL 524,288;
// src/init.cc) for 32 channels of a ring and a tree connection each, 0.57
// GiB. About 2 GiB; allocator fragmentation is not included here but in
// default_memory_reserve (5% of the device on top).
inline constexpr double kDefaultMemoryReserve = 2.0 * (1ull << 30);

struct PlanOptions {
  int ranks = 0;
  std::int64_t batch = 0;        // global samples per step
  std::int64_t micro_batch = 0;  // per rank; 0 = the planner chooses
  DataType dtype = DataType::bfloat16;
  // Memory per device (--device-memory, else the device's, else 80 GiB) and
  // what stays reserved of it for the CUDA context, NCCL's buffers and the
  // allocator's fragmentation (--memory-reserve; docs/PLANNER.md, "Memory").
  double device_memory = 80.0 * (1ull << 30);  // bytes
  double memory_reserve = -1;                  // bytes; < 0 = the default
  // The GPU (--device, else the topology's "device"), and --device-tflops:
  // the achieved matmul rate instead of the device's (0 = the device's).
  // Without a device and a rate, 400 TFLOP/s (no memory-bound work priced).
  std::optional<Device> device;
  double device_tflops = 0;
  StepOptions step{};
  // --recompute / --virtual-stages / --sequence-parallel narrow the search
  // (unset: the planner chooses).
  std::optional<Recompute> recompute;
  SimOptions sim{};
  std::string topology_file;  // for the report only
  // Ranks per node for tensor and pipeline parallelism; 0 = the topology's
  // node structure (--devices-per-node overrides it).
  int devices_per_node = 0;
  // A layout to price beside the planner's choice (--tp --pp --dp --zero).
  std::optional<UserLayout> user;
  // false (--no-search): price `user` alone, as the plan, without searching.
  bool search = true;
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
  // --measured-step: a measured step time in seconds to compare with (0: none).
  double measured_step = 0;
  // Where the search reports how many layouts it has considered (the
  // command's reporter, core/progress.h); null: nowhere.
  Progress* progress = nullptr;
  int jobs = 0;  // simulations in parallel (0: every core)
  // false: price every layout whose memory bound fits, flat layouts first
  // (no layout skipped for its step bound): the search the pruned one must
  // agree with (tests/planner/planner_test.cc).
  bool prune = true;
};

// How a group (ranks 0, stride, 2 x stride, ... of `size` members) leaves
// the first member's node: the bandwidth of the links by which the routes
// from its members there to its members on other nodes leave that node
// (the first link of each route that no route between the node's own ranks
// takes), and how many members the node holds. Zero bandwidth when the
// topology has no nodes, the group is one node, or a route never leaves.
struct NodeExit {
  double bandwidth = 0;  // bytes per second
  int members = 0;
};
NodeExit node_exit(const Topology& topology, int stride, int size);

// A lower bound of the time of any gradient reduction (reduce_scatter or
// all_reduce) of `bytes` over that group that no simulation of any schedule
// beats: for every element that a member on another node owns, the members
// on this node must send out at least one partial sum, bytes x (size -
// members) / size in all, and all of it crosses the exit links (the search
// skips layouts whose step cannot beat the best so far with it;
// docs/PLANNER.md, "Search"). 0 where node_exit has no bandwidth.
double reduction_bound_seconds(const NodeExit& exit, std::int64_t bytes, int size);

// The default memory reserve on a device of `bytes`: 5% of it for the
// allocator's fragmentation plus kDefaultMemoryReserve for the CUDA context,
// its kernels and NCCL's buffers (docs/PLANNER.md, "Memory").
double default_memory_reserve(double bytes);

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
  double time = 0;       // seconds per step, all its collectives
  Memory memory;         // per rank, all repeats (activations: the micro-batches in flight)
  LayerCompute compute;  // one instance, one micro-batch
  int first_stage = 0;
  int last_stage = 0;
  // Instances on one rank: repeat, or with pipelining the most any stage
  // holds. Counts, time and memory of the row are for those instances.
  std::int64_t instances_per_rank = 1;
  std::string reason;
};

// Where a step's time goes (docs/PLANNER.md, "The training step"): the
// critical stage's kernels, the communication left exposed, the pipeline's
// fill and drain, the optimizer; and what overlapped and is hidden.
struct StepBreakdown {
  double compute = 0;    // kernels on the critical path
  double tp = 0;         // exposed tensor-parallel collectives
  double pp = 0;         // exposed pipeline sends (and the tied embedding's sync)
  double dp = 0;         // exposed data-parallel collectives (gradients, ZeRO, fc_split)
  double bubble = 0;     // pipeline fill and drain
  double optimizer = 0;  // the optimizer step (memory-bound)
  double hidden_tp = 0, hidden_pp = 0, hidden_dp = 0;  // overlapped with compute
  double comm() const { return tp + pp + dp; }
  double total() const { return compute + tp + pp + dp + bubble + optimizer; }
};

struct Plan {
  Layout layout;
  std::vector<LayerPlan> layers;
  std::vector<CollectiveUse> pipeline;  // stage-to-stage transfers
  StepBreakdown step;
  // The same, as the older fields read: time = everything but compute.
  double time = 0;
  double comm_time = 0;     // exposed communication
  double bubble_time = 0;   // pipeline fill and drain
  double compute_time = 0;  // kernels on the critical path (+ the optimizer step)
  Memory memory;            // per rank (the fullest stage)
  bool fits = false;
  double bubble = 0;  // pipeline bubble fraction (pp - 1) / (v m)
  // FLOPs of one step, all ranks: the model's (forward + backward, 3x the
  // forward: Megatron-LM's count, MFU) and with the recomputed forward
  // added (SC21 Table 1's count with full recomputation).
  double model_flops = 0;
  double hardware_flops = 0;
  double step_time() const { return step.total(); }
  int ranks_used() const { return layout.tp * layout.pp * layout.dp; }
};

// Every layer with the same strategy, with tp = pp = 1: what plain data
// parallelism and each ZeRO stage would cost and need.
struct Alternative {
  std::string name;
  bool valid = false;    // false when the batch does not split over the ranks
  Layout layout;         // tp = pp = 1; the chosen plan's micro-batch where it divides
  double time = 0;       // communication (0 when not priced)
  double step_time = 0;  // (0 when not priced)
  Memory memory;
  bool fits = false;
  bool priced = false;  // only a row that fits is priced
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
  // What the step was priced with: the device (or the flat rate), the
  // reserve kept, tokens per sample (0: the model has no sequence).
  std::string compute_source;
  double usable_memory = 0;
  double peak_flops = 0;  // the device's peak for the data type (0: unknown)
  std::int64_t tokens_per_sample = 0;
  std::int64_t layouts_priced = 0;
};

// Plans `model` on the first opts.ranks ranks of `topology`. Throws
// UsageError when the batch cannot be split over any data-parallel degree.
PlanResult make_plan(const Model& model, const Topology& topology, const PlanOptions& opts);

Json plan_json(const PlanResult& result, const Model& model, const Topology& topology,
               const PlanOptions& opts);
// Throughput of a plan: tokens (or samples) per second, TFLOP/s per GPU by
// both counts, MFU against the device's peak.
struct Throughput {
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;  // 0 when the peak is unknown
};
Throughput throughput(const Plan& plan, const PlanResult& result, const PlanOptions& opts);
std::string format_plan(const PlanResult& result, const Model& model, const PlanOptions& opts);

// "80GiB", "80GB", "81920MiB", "85899345920" -> bytes (GiB = 2^30, GB = 1e9).
// Throws UsageError naming the flag.
double parse_memory_size(const std::string& flag, const std::string& text);

}  // namespace collkit
