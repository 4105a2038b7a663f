#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/nccl_version.h"
#include "core/sizes.h"
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
  std::string device_memory = "80GiB";
  std::string net_model = "flow";
  std::string device_tflops = "400";
  std::string json_path;
  std::string devices_per_node = "0";
  std::string collectives = "auto";
  // A layout to price (--tp --pp --dp --zero); empty = not given.
  std::string tp, pp, dp, zero;
  std::string nccl_version;
  bool explain = false;
};

std::int64_t parse_positive(const std::string& flag, const std::string& text, bool allow_zero) {
  const std::int64_t v = parse_integer(flag, text, 0, INT64_MAX);
  if (v == 0 && !allow_zero) throw UsageError(flag + " '" + text + "': must be >= 1");
  return v;
}

void run_plan(const PlanArgs& a) {
  PlanOptions opts;
  opts.batch = parse_positive("--batch", a.batch, false);
  opts.micro_batch = parse_positive("--micro-batch", a.micro_batch, true);
  const std::int64_t ranks = parse_positive("--ranks", a.ranks, true);
  if (ranks > (1 << 24)) throw UsageError("--ranks '" + a.ranks + "': too large");
  opts.dtype = parse_training_data_type("--dtype", a.dtype);
  opts.device_memory = static_cast<double>(parse_memory_bytes("--device-memory", a.device_memory));
  opts.sim.model = parse_net_model(a.net_model);
  try {
    std::size_t used = 0;
    opts.device_tflops = std::stod(a.device_tflops, &used);
    if (used != a.device_tflops.size() || !(opts.device_tflops > 0))
      throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError("--device-tflops '" + a.device_tflops + "': expected a positive number");
  }
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
  if (!a.tp.empty() || !a.pp.empty() || !a.dp.empty() || !a.zero.empty()) {
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
    opts.user = u;
  }
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

  const PlanResult result = make_plan(model, *topology, opts);
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
      "Choose per layer data parallel, ZeRO 1/2/3, the model-parallel FC split or tensor "
      "parallel from simulated communication time and memory (docs/PLANNER.md)");
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
                  "Memory per device, with a unit: 80GiB (default; KiB MiB GiB TiB and K M G T are "
                  "powers of 1024), 80GB (KB MB GB TB: powers of 1000), 141GB, ...");
  cmd->add_option("--device-tflops", a->device_tflops,
                  "Achieved dense TFLOPS per device, prices the pipeline bubble (400)");
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
  cmd->callback([a] { run_plan(*a); });
}

}  // namespace collkit::cli
