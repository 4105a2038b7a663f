#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/nccl_version.h"
#include "core/progress.h"
#include "core/sizes.h"
#include "planner/device.h"
#include "planner/planner.h"
#include "planner/planner_model.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit::cli {
namespace {

struct PlanArgs {
  std::string model;
  std::string topology;
  // Numbers are kept as text so that a bad value is reported with the flag's
  // name in one line, exit 2, like every other usage error.
  std::string ranks = "0";
  std::string batch;
  std::string micro_batch = "0";
  std::string dtype = "bfloat16";
  std::string device_memory;  // empty: the device's, else 80GiB
  std::string memory_reserve;
  std::string net_model = "flow";
  std::string device;
  std::string device_tflops;
  std::string json_path;
  std::string devices_per_node = "0";
  std::string collectives = "auto";
  // A layout to price (--tp --pp --dp --zero); empty = not given.
  std::string tp, pp, dp, zero;
  std::string virtual_stages, recompute;
  bool sequence_parallel = false;
  std::string attention = "flash";
  std::string overlap = "grad,param,p2p";
  std::string grad_accumulation = "fused";
  std::string bucket_size;
  std::string measured_step;
  std::string nccl_version;
  std::string jobs = "0";
  bool explain = false;
  bool quiet = false;
  bool no_search = false;
};

double parse_positive_number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size() || !(v > 0) || !(v < 1e30)) throw std::invalid_argument("");
    return v;
  } catch (const std::exception&) {
    throw UsageError(flag + " '" + text + "': expected a positive number");
  }
}

// "3.5" (seconds), "3.5s", "3500ms" -> seconds.
double parse_seconds(const std::string& flag, const std::string& text) {
  std::string num = text;
  double scale = 1;
  if (num.size() > 2 && num.compare(num.size() - 2, 2, "ms") == 0) {
    num.resize(num.size() - 2);
    scale = 1e-3;
  } else if (num.size() > 1 && num.back() == 's') {
    num.pop_back();
  }
  try {
    std::size_t used = 0;
    const double v = std::stod(num, &used);
    if (used != num.size() || !(v > 0) || !(v < 1e9)) throw std::invalid_argument("");
    return v * scale;
  } catch (const std::exception&) {
    throw UsageError(flag + " '" + text +
                     "': expected a time such as 3.5 (seconds), 3.5s or 3500ms");
  }
}

Recompute parse_recompute(const std::string& text) {
  if (text == "none") return Recompute::none;
  if (text == "selective") return Recompute::selective;
  if (text == "full") return Recompute::full;
  throw UsageError("--recompute '" + text + "': expected none, selective or full");
}

std::int64_t parse_positive(const std::string& flag, const std::string& text, bool allow_zero) {
  const std::int64_t v = parse_integer(flag, text, 0, INT64_MAX);
  if (v == 0 && !allow_zero) throw UsageError(flag + " '" + text + "': must be >= 1");
  return v;
}

// The training step as the run makes it: attention kernels, what overlaps,
// gradient accumulation and buckets (PlanOptions::step).
void read_step_flags(const PlanArgs& a, PlanOptions& opts) {
  if (a.attention == "flash")
    opts.step.attention = AttentionKernel::flash;
  else if (a.attention == "unfused")
    opts.step.attention = AttentionKernel::unfused;
  else
    throw UsageError("--attention '" + a.attention +
                     "': expected flash (fused attention kernels) or unfused (Megatron's "
                     "softmax between two batched GEMMs)");
  opts.step.overlap_grad_reduce = opts.step.overlap_param_gather = opts.step.overlap_p2p = false;
  if (a.overlap != "none") {
    std::size_t start = 0;
    while (start <= a.overlap.size()) {
      const std::size_t comma = std::min(a.overlap.find(',', start), a.overlap.size());
      const std::string item = a.overlap.substr(start, comma - start);
      if (item == "grad")
        opts.step.overlap_grad_reduce = true;
      else if (item == "param")
        opts.step.overlap_param_gather = true;
      else if (item == "p2p")
        opts.step.overlap_p2p = true;
      else if (item == "tp")
        opts.step.overlap_tp = true;
      else
        throw UsageError("--overlap '" + a.overlap + "': '" + item +
                         "' is none of grad, param, p2p, tp (comma-separated) or none");
      start = comma + 1;
    }
  }
  if (a.grad_accumulation == "fused")
    opts.step.fused_grad_accumulation = true;
  else if (a.grad_accumulation == "separate")
    opts.step.fused_grad_accumulation = false;
  else
    throw UsageError("--grad-accumulation '" + a.grad_accumulation +
                     "': expected fused (into the weight-gradient GEMM) or separate (an add per "
                     "micro-batch)");
  if (!a.bucket_size.empty())
    opts.step.bucket_bytes =
        a.bucket_size == "all"
            ? -1.0
            : static_cast<double>(parse_memory_bytes("--bucket-size", a.bucket_size));
}

// A layout the user gives (--tp, --pp, --dp, --zero, ...): priced as given.
UserLayout read_user_layout(const PlanArgs& a, const PlanOptions& opts) {
  UserLayout u;
  auto degree = [](const char* flag, const std::string& text) {
    if (text.empty()) return 1;
    const std::int64_t v = parse_positive(flag, text, false);
    if (v > (1 << 24)) throw UsageError(std::string(flag) + " '" + text + "': too large");
    return static_cast<int>(v);
  };
  u.tp = degree("--tp", a.tp);
  u.pp = degree("--pp", a.pp);
  u.dp = a.dp.empty() ? 0 : degree("--dp", a.dp);
  if (!a.zero.empty()) {
    if (a.zero.size() != 1 || a.zero[0] < '0' || a.zero[0] > '3')
      throw UsageError("--zero '" + a.zero + "': expected 0, 1, 2 or 3");
    u.zero = a.zero[0] - '0';
  }
  u.micro_batch = opts.micro_batch;
  u.virtual_stages = degree("--virtual-stages", a.virtual_stages);
  u.recompute = opts.recompute.value_or(Recompute::none);
  u.sequence_parallel = a.sequence_parallel;
  if (u.sequence_parallel && u.tp == 1)
    throw UsageError("--sequence-parallel: splits tensor parallelism's activations; give --tp > 1");
  return u;
}

// The GPU (--device, else the topology's "device", relative to its file)
// and its memory (--device-memory, else the device's).
void read_device(const PlanArgs& a, const Topology& topology, PlanOptions& opts) {
  if (!a.device.empty()) {
    opts.device = load_device(a.device);
  } else if (!topology.device.empty()) {
    const std::filesystem::path dir =
        std::filesystem::path(topology_file(a.topology)).parent_path();
    const std::string path = (dir / topology.device).lexically_normal().string();
    try {
      opts.device = load_device(path);
    } catch (const FileError& e) {
      throw FileError(topology_file(a.topology) + ".device = '" + topology.device +
                      "': " + e.what() + " (give --device FILE)");
    }
  }
  if (!a.device_memory.empty())
    opts.device_memory =
        static_cast<double>(parse_memory_bytes("--device-memory", a.device_memory));
  else if (opts.device)
    opts.device_memory = opts.device->memory_bytes;
  if (opts.device && opts.device->peak_for(opts.dtype) <= 0 && opts.device_tflops <= 0)
    throw UsageError("--dtype " + std::string(to_string(opts.dtype)) + ": " + opts.device->file +
                     " gives no peak for it (peak_tflops); give --device-tflops");
}

void run_plan(const PlanArgs& a) {
  PlanOptions opts;
  opts.batch = parse_positive("--batch", a.batch, false);
  opts.micro_batch = parse_positive("--micro-batch", a.micro_batch, true);
  const std::int64_t ranks = parse_positive("--ranks", a.ranks, true);
  if (ranks > (1 << 24)) throw UsageError("--ranks '" + a.ranks + "': too large");
  opts.dtype = parse_training_data_type("--dtype", a.dtype);
  opts.sim.model = parse_net_model(a.net_model);
  if (!a.device_tflops.empty())
    opts.device_tflops = parse_positive_number("--device-tflops", a.device_tflops);
  if (!a.memory_reserve.empty()) {
    if (a.memory_reserve == "0")
      opts.memory_reserve = 0;
    else
      opts.memory_reserve =
          static_cast<double>(parse_memory_bytes("--memory-reserve", a.memory_reserve));
  }
  read_step_flags(a, opts);
  if (!a.measured_step.empty())
    opts.measured_step = parse_seconds("--measured-step", a.measured_step);
  if (!a.recompute.empty()) opts.recompute = parse_recompute(a.recompute);
  opts.jobs = static_cast<int>(parse_integer("--jobs", a.jobs, 0, 1 << 16));
  opts.search = !a.no_search;
  opts.topology_file = a.topology;
  const std::int64_t dpn = parse_positive("--devices-per-node", a.devices_per_node, true);
  if (dpn > (1 << 24))
    throw UsageError("--devices-per-node '" + a.devices_per_node + "': too large");
  opts.devices_per_node = static_cast<int>(dpn);
  if (a.collectives != "auto" && a.collectives != "best" && a.collectives != "nccl" &&
      a.collectives != "rccl")
    throw UsageError("--collectives '" + a.collectives +
                     "': expected auto (nccl on GPU topologies, else best), best (the fastest "
                     "registered algorithm), nccl (NCCL's choice, RCCL's on AMD GPUs) or rccl "
                     "(RCCL's choice, AMD GPUs only)");
  if (!a.tp.empty() || !a.pp.empty() || !a.dp.empty() || !a.zero.empty() ||
      !a.virtual_stages.empty() || a.sequence_parallel)
    opts.user = read_user_layout(a, opts);
  if (!a.nccl_version.empty())
    opts.nccl_version = checked_nccl_version("--nccl-version", a.nccl_version);
  opts.explain = a.explain;
  if (opts.explain && a.json_path.empty())
    throw UsageError("--explain: the explanation goes into the plan's JSON; give --json FILE");
  prepare_outputs({{"--json", a.json_path}},
                  {{"--model", a.model}, {"--topology", topology_file(a.topology)}});

  const Model model = load_model(a.model);
  const std::unique_ptr<Topology> topology = load_topology(a.topology, static_cast<int>(ranks));
  opts.ranks = topology->num_ranks();
  check_ranks_fit(opts.ranks, "--topology " + a.topology);
  read_device(a, *topology, opts);
  if (a.collectives == "rccl" && !is_amd(topology->nccl.gpu))
    throw UsageError("--collectives rccl: RCCL runs on AMD GPUs, and " + a.topology + "'s GPU is " +
                     to_string(topology->nccl.gpu) +
                     " (nccl.gpu), whose library is NCCL: use --collectives nccl");
  opts.nccl = a.collectives == "nccl" || a.collectives == "rccl" ||
              (a.collectives == "auto" && gpu_topology(*topology, opts.ranks));
  if (opts.explain && !opts.nccl)
    throw UsageError(
        "--explain: explains NCCL's choice per collective, and the collectives are "
        "priced as the best registered algorithm here (--collectives nccl)");

  PlanResult result;
  {
    // The search says how many layouts it has considered; the elapsed time
    // moves on a timer, so a plan at scale (a minute for GPT-3 on 1024
    // GPUs) is not silence.
    Progress progress("plan " + model.name + " on " + std::to_string(opts.ranks) + " ranks", 0,
                      {a.quiet});
    progress.start_ticker();
    opts.progress = &progress;
    result = make_plan(model, *topology, opts);
    opts.progress = nullptr;
  }
  std::fputs(format_plan(result, model, opts).c_str(), stdout);
  std::fflush(stdout);
  if (!a.json_path.empty()) {
    Json j;
    j["collkit_version"] = COLLKIT_VERSION;
    j.update(plan_json(result, model, *topology, opts));
    write_file_atomic(a.json_path, j.dump(2) + "\n");
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan",
      "Choose tensor, pipeline and data parallelism, ZeRO 1/2/3 per layer, micro-batch and "
      "recomputation from a predicted training step: compute on the device, communication "
      "simulated, overlaps hidden (docs/PLANNER.md)");
  auto a = std::make_shared<PlanArgs>();
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--model", a->model, "Model file (JSON, docs/MODELS.md)")->required();
  cmd->add_option("--topology", a->topology, "Topology file (JSON) or astra:FILE.yml")->required();
  cmd->add_option("--ranks", a->ranks, "Ranks on the topology's first endpoints (0 = all)");
  cmd->add_option("--batch", a->batch, "Global batch (samples per training step)")->required();
  cmd->add_option("--micro-batch", a->micro_batch,
                  "Samples per rank per micro-batch (0 = the planner chooses)");
  cmd->add_option(
      "--dtype", a->dtype,
      "Training data type: bfloat16 (bf16, default), half (fp16, float16) or float (fp32, "
      "float32)");
  cmd->add_option("--device-memory", a->device_memory,
                  "Memory per device, with a unit: 80GiB (KiB MiB GiB TiB and K M G T are "
                  "powers of 1024), 80GB (KB MB GB TB: powers of 1000), 141GB, ... (default: the "
                  "device's, else 80GiB)");
  cmd->add_option("--memory-reserve", a->memory_reserve,
                  "Memory kept free of the device's for the CUDA context, NCCL's buffers and "
                  "fragmentation, with a unit (default: 5% of it + 2GiB; 0: none)");
  cmd->add_option("--device", a->device,
                  "Device file (devices/*.json, docs/DEVICES.md) the compute is priced on "
                  "(default: the topology's \"device\")");
  cmd->add_option("--device-tflops", a->device_tflops,
                  "Achieved matrix-product TFLOP/s per device instead of the device file's "
                  "(without a device: 400, and memory-bound work is not priced)");
  cmd->add_option("--virtual-stages", a->virtual_stages,
                  "Price this layout too: virtual pipeline stages per rank (interleaved 1F1B; 1)");
  cmd->add_option("--recompute", a->recompute,
                  "Activation recomputation: none, selective or full (with --tp...: of that "
                  "layout; else the planner's only choice; default: the planner chooses)");
  cmd->add_flag("--sequence-parallel", a->sequence_parallel,
                "Price this layout too: with sequence parallelism (reduce_scatter + all_gather "
                "instead of tensor parallelism's all_reduces)");
  cmd->add_option("--attention", a->attention,
                  "Attention kernels: flash (fused, default) or unfused (Megatron's softmax "
                  "between two batched GEMMs)");
  cmd->add_option("--overlap", a->overlap,
                  "What overlaps compute, comma-separated: grad (gradient reduction in buckets), "
                  "param (ZeRO parameter all_gather), p2p (pipeline sends), tp (tensor-parallel "
                  "collectives), or none (default: grad,param,p2p)");
  cmd->add_option("--grad-accumulation", a->grad_accumulation,
                  "Gradient accumulation: fused into the weight-gradient GEMM (default) or "
                  "separate (an add per micro-batch)");
  cmd->add_option("--bucket-size", a->bucket_size,
                  "Bytes per gradient bucket, with a unit, or all (one bucket) (default: "
                  "Megatron's max(40M, 1M x dp) parameters)");
  cmd->add_option("--measured-step", a->measured_step,
                  "A measured step time (3.5, 3.5s, 3500ms): prints the prediction's error");
  cmd->add_flag("--no-search", a->no_search,
                "Price the layout given by --tp --pp --dp ... alone, as the plan, without "
                "searching for the planner's choice");
  cmd->add_option("--jobs", a->jobs,
                  "Threads that simulate the collectives of the layouts at once (default 0 = "
                  "every core); the plan is the same whatever the count");
  cmd->add_option("--net-model", a->net_model, "Network model: flow (default) or alpha-beta");
  cmd->add_option("--devices-per-node", a->devices_per_node,
                  "Ranks per node for tensor/pipeline parallelism (0 = the topology's nodes)");
  cmd->add_option("--tp", a->tp, "Price this layout too: tensor-parallel degree (1)");
  cmd->add_option("--pp", a->pp, "Price this layout too: pipeline stages (1)");
  cmd->add_option("--dp", a->dp,
                  "Price this layout too: data-parallel degree (default: the most ranks left)");
  cmd->add_option("--zero", a->zero, "Price this layout too: ZeRO stage 0-3 (0)");
  cmd->add_option("--collectives", a->collectives,
                  "Price each collective as NCCL runs it on the group (nccl) or as the fastest "
                  "registered algorithm (best); rccl: nccl on an AMD machine, refused on "
                  "others; nccl on an AMD machine is RCCL's choice; auto (default): nccl where "
                  "every rank is a GPU (pipelined endpoints), best elsewhere");
  cmd->add_option("--nccl-version", a->nccl_version,
                  "With NCCL's collectives: the NCCL version whose cost model chooses, e.g. "
                  "2.29.2 (default: the topology's nccl.version, else 2.26.2)");
  cmd->add_flag("--explain", a->explain,
                "With NCCL's collectives: explain each collective's choice in the JSON (key "
                "nccl_explain: every candidate NCCL weighs, its estimate and simulated time)");
  cmd->add_option("--json", a->json_path, "Write the plan as JSON to this file (atomically)");
  cmd->add_flag("--quiet", a->quiet,
                "No progress on standard error (the elapsed time, after a few seconds: on a "
                "terminal in place, otherwise a line every 10 s)");
  cmd->callback([a] { run_plan(*a); });
}

}  // namespace collkit::cli
