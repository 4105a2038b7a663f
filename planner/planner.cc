#include "planner/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/parallel.h"
#include "planner/group_topology.h"
#include "sim/nccl.h"
#include "sim/nccl_explain.h"
#include "sim/sweep.h"

namespace collkit {
namespace {

// Simulated time of the fastest registered algorithm, or with `nccl` of
// NCCL's own choice, cached by (collective, bytes, group), so a plan that
// asks for the same collective many times (96 identical blocks, many
// micro-batch candidates) simulates it once.
class CommCost {
 public:
  CommCost(const Topology& topology, DataType dtype, SimOptions sim, bool nccl,
           std::optional<NcclVersion> version)
      : topology_(topology), dtype_(dtype), sim_(sim), nccl_(nccl), version_(version) {}

  // Safe to call from several threads (plan --jobs prices layouts at
  // once): the first caller of a key simulates it, later ones wait for its
  // result, so each key is simulated once whatever the threads.
  std::pair<double, std::string> best(Collective c, std::int64_t bytes, int first, int stride,
                                      int size) {
    if (size <= 1 || bytes <= 0) return {0.0, "none"};
    const auto key = std::make_tuple(c, bytes, first, stride, size);
    std::promise<Entry> promise;
    std::unique_lock<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      const std::shared_future<Entry> known = it->second;
      lock.unlock();
      return known.get().result;
    }
    cache_.emplace(key, promise.get_future().share());
    lock.unlock();
    try {
      Entry e = compute(c, bytes, first, stride, size);
      promise.set_value(e);
      return e.result;
    } catch (...) {
      promise.set_exception(std::current_exception());
      throw;
    }
  }
  // Simulations run so far, each key counted once.
  std::int64_t simulations() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::int64_t n = 0;
    for (const auto& [key, entry] : cache_) {
      if (entry.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
      try {
        n += entry.get().simulations;
      } catch (const std::exception&) {
        // a key no algorithm accepts: nothing was simulated
      }
    }
    return n;
  }

 private:
  struct Entry {
    std::pair<double, std::string> result;
    std::int64_t simulations = 0;
  };

  Entry compute(Collective c, std::int64_t bytes, int first, int stride, int size) const {
    std::int64_t simulations = 0;
    GroupTopology group(topology_, first, stride, size);
    const int elem = size_of(dtype_);
    ScheduleSpec spec;
    spec.collective = c;
    spec.ranks = size;
    spec.elem_size = elem;
    spec.count = std::max<std::int64_t>(1, bytes / elem);
    if (nccl_) {
      // NCCL on the group's ranks: its channel search over them, its
      // choice at this size, that schedule simulated (as `collkit simulate
      // --algorithm nccl` on the same ranks).
      spec.algorithm = "nccl";
      const NcclContext ctx = nccl_context(group, size, version_);
      std::optional<NcclChoice> instead;
      const NcclChoice choice = nccl_runnable_choice(ctx, c, spec.count * elem, dtype_, RedOp::sum,
                                                     std::nullopt, &instead);
      const double t =
          simulate(*make_schedule(nccl_schedule_spec(spec, ctx, choice, group)), group, sim_).time;
      return {{t, "nccl " + describe_run(choice, instead)}, 1};
    }
    spec.model = cost_params_of(group, size);
    spec.node_size = group.ranks_per_node(size);
    // Closed-form costs first: an algorithm predicted at more than twice the
    // best one is not simulated. Contention only slows algorithms down, so
    // such an algorithm cannot win, and the pipelined ones it drops at
    // gigabyte sizes would cost seconds of simulation each.
    std::vector<std::pair<double, const AlgorithmDef*>> ranked;
    double best_closed = std::numeric_limits<double>::infinity();
    for (const AlgorithmDef* def : algorithms_for(c)) {
      spec.algorithm = def->name;
      double t = 0;
      try {
        t = closed_form_cost(spec, spec.model).time;
      } catch (const UsageError&) {
        continue;  // the algorithm does not accept this p or size
      }
      ranked.emplace_back(t, def);
      best_closed = std::min(best_closed, t);
    }
    std::pair<double, std::string> best{std::numeric_limits<double>::infinity(), ""};
    for (const auto& [closed, def] : ranked) {
      if (closed > 2 * best_closed) continue;
      spec.algorithm = def->name;
      std::unique_ptr<Schedule> schedule;
      try {
        schedule = make_schedule(spec);
      } catch (const UsageError&) {
        continue;
      }
      const double t = simulate(*schedule, group, sim_).time;
      ++simulations;
      if (t < best.first) best = {t, def->name};
    }
    if (best.second.empty())
      throw UsageError("no " + std::string(to_string(c)) + " algorithm accepts " +
                       std::to_string(size) + " ranks");
    return {best, simulations};
  }

  const Topology& topology_;
  DataType dtype_;
  SimOptions sim_;
  bool nccl_;
  std::optional<NcclVersion> version_;
  mutable std::mutex mutex_;
  std::map<std::tuple<Collective, std::int64_t, int, int, int>, std::shared_future<Entry>> cache_;
};

constexpr double kGB = 1e9;
// How much faster (as a fraction of the step) a plan with tensor or pipeline
// parallelism must be to replace the fastest fitting plain data-parallel one.
constexpr double kLayoutMargin = 0.05;

// Sizes in the terminal table: powers of 1024, as nccl-tests users read them.
std::string format_bytes_for_plan(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / kGB);
  return buf;
}

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

CollectiveUse use(Collective c, GroupKind g, int size, int stride, std::int64_t bytes,
                  std::int64_t count, const char* phase) {
  CollectiveUse u;
  u.collective = c;
  u.group = g;
  u.group_size = size;
  u.stride = stride;
  u.bytes = bytes;
  u.count = count;
  u.phase = phase;
  return u;
}

// ZeRO's data-parallel traffic for `psi` parameters of one instance.
void zero_collectives(std::vector<CollectiveUse>& out, std::int64_t bytes, int stage,
                      const Layout& lay, std::int64_t repeat) {
  const int d = lay.dp;
  const int stride = lay.tp;
  const std::int64_t m = lay.micro_batches;
  if (d <= 1) return;
  const auto g = GroupKind::data_parallel;
  switch (stage) {
    case 0:
      out.push_back(use(Collective::all_reduce, g, d, stride, bytes, repeat, "step"));
      break;
    case 1:
      out.push_back(use(Collective::reduce_scatter, g, d, stride, bytes, repeat, "step"));
      out.push_back(use(Collective::all_gather, g, d, stride, bytes, repeat, "step"));
      break;
    case 2:
      // Gradients are reduce_scattered as each micro-batch's backward makes
      // them: no rank keeps a whole gradient to accumulate into.
      out.push_back(use(Collective::reduce_scatter, g, d, stride, bytes, repeat * m, "backward"));
      out.push_back(use(Collective::all_gather, g, d, stride, bytes, repeat, "step"));
      break;
    default:
      out.push_back(use(Collective::all_gather, g, d, stride, bytes, repeat * m, "forward"));
      out.push_back(use(Collective::all_gather, g, d, stride, bytes, repeat * m, "backward"));
      out.push_back(use(Collective::reduce_scatter, g, d, stride, bytes, repeat * m, "backward"));
      break;
  }
}

int optimizer_bytes_for(DataType t) {
  // Mixed precision keeps an fp32 master copy next to Adam's two moments
  // (12 bytes); full fp32 (or wider) training updates the weights in place.
  return size_of(t) >= 4 ? 8 : 12;
}

}  // namespace

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::dp:
      return "dp";
    case Strategy::zero1:
      return "zero1";
    case Strategy::zero2:
      return "zero2";
    case Strategy::zero3:
      return "zero3";
    case Strategy::fc_split:
      return "fc_split";
    case Strategy::tensor_parallel:
      return "tensor_parallel";
  }
  return "?";
}

std::string_view to_string(GroupKind g) {
  switch (g) {
    case GroupKind::data_parallel:
      return "data_parallel";
    case GroupKind::tensor_parallel:
      return "tensor_parallel";
    case GroupKind::pipeline:
      return "pipeline";
  }
  return "?";
}

std::string choice_name(const Choice& c) {
  if (c.strategy != Strategy::tensor_parallel) return std::string(to_string(c.strategy));
  return "tensor_parallel+" +
         std::string(c.zero_stage ? "zero" + std::to_string(c.zero_stage) : std::string("dp"));
}

Memory& Memory::operator+=(const Memory& o) {
  params += o.params;
  grads += o.grads;
  optimizer += o.optimizer;
  activations += o.activations;
  return *this;
}

Memory model_state_memory(double psi, int zero_stage, int n_d, int elem_bytes,
                          int optimizer_bytes) {
  Memory m;
  m.params = elem_bytes * psi / (zero_stage >= 3 ? n_d : 1);
  m.grads = elem_bytes * psi / (zero_stage >= 2 ? n_d : 1);
  m.optimizer = optimizer_bytes * psi / (zero_stage >= 1 ? n_d : 1);
  return m;
}

std::vector<CollectiveUse> layer_collectives(const Layer& layer, const Choice& choice,
                                             const Layout& lay, int elem_bytes) {
  std::vector<CollectiveUse> out;
  const std::int64_t b = lay.micro_batch;
  const std::int64_t m = lay.micro_batches;
  const std::int64_t r = layer.repeat;
  const std::int64_t param_bytes = layer.params * elem_bytes;
  switch (choice.strategy) {
    case Strategy::dp:
    case Strategy::zero1:
    case Strategy::zero2:
    case Strategy::zero3:
      zero_collectives(out, param_bytes, choice.zero_stage, lay, r);
      break;
    case Strategy::fc_split: {
      // The seeds' layer: inputs of the whole (data-parallel) micro-batch are
      // all_gathered, each rank computes its output columns for all of them,
      // the outputs are all_gathered and each rank keeps its samples; the
      // backward pass reduce_scatters both gradients. No gradient all_reduce.
      const auto g = GroupKind::data_parallel;
      const std::int64_t in = b * lay.dp * layer.act_in * elem_bytes;
      const std::int64_t outb = b * lay.dp * layer.act_out * elem_bytes;
      out.push_back(use(Collective::all_gather, g, lay.dp, lay.tp, in, r * m, "forward"));
      out.push_back(use(Collective::all_gather, g, lay.dp, lay.tp, outb, r * m, "forward"));
      out.push_back(use(Collective::reduce_scatter, g, lay.dp, lay.tp, outb, r * m, "backward"));
      out.push_back(use(Collective::reduce_scatter, g, lay.dp, lay.tp, in, r * m, "backward"));
      break;
    }
    case Strategy::tensor_parallel: {
      // Megatron: the column/row pairs end in an all_reduce of the b x s x h
      // output, forward and backward, inside the tensor-parallel group.
      const std::int64_t act = b * layer.act_out * elem_bytes;
      const std::int64_t half = layer.tp_all_reduces / 2;
      out.push_back(use(Collective::all_reduce, GroupKind::tensor_parallel, lay.tp, 1, act,
                        r * m * half, "forward"));
      out.push_back(use(Collective::all_reduce, GroupKind::tensor_parallel, lay.tp, 1, act,
                        r * m * half, "backward"));
      zero_collectives(out, param_bytes / lay.tp, choice.zero_stage, lay, r);
      break;
    }
  }
  return out;
}

Memory layer_memory(const Layer& layer, const Choice& choice, const Layout& lay, int elem_bytes,
                    int optimizer_bytes) {
  const double psi = static_cast<double>(layer.params) * layer.repeat;
  const double b = static_cast<double>(lay.micro_batch);
  Memory mem;
  // Activations: each instance's output is kept for the backward pass (inner
  // activations of a block are recomputed: checkpointing at layer boundaries).
  double act = b * static_cast<double>(layer.act_out) * layer.repeat * elem_bytes;
  switch (choice.strategy) {
    case Strategy::fc_split:
      mem = model_state_memory(psi / lay.dp, 0, 1, elem_bytes, optimizer_bytes);
      // The gathered input of the whole micro-batch is needed again for the
      // weight gradient.
      act += b * lay.dp * static_cast<double>(layer.act_in) * layer.repeat * elem_bytes;
      break;
    case Strategy::tensor_parallel:
      mem =
          model_state_memory(psi / lay.tp, choice.zero_stage, lay.dp, elem_bytes, optimizer_bytes);
      break;
    default:
      mem = model_state_memory(psi, choice.zero_stage, lay.dp, elem_bytes, optimizer_bytes);
      break;
  }
  mem.activations = act;
  return mem;
}

namespace {

struct Candidate {
  Choice choice;
  double time = 0;
  std::vector<CollectiveUse> uses;
};

class Planner {
 public:
  Planner(const Model& model, const Topology& topology, const PlanOptions& opts)
      : model_(model),
        opts_(opts),
        elem_(size_of(opts.dtype)),
        opt_bytes_(optimizer_bytes_for(opts.dtype)),
        cost_(topology, opts.dtype, opts.sim, opts.nccl, opts.nccl_version) {}

  std::vector<Candidate> candidates(const Layer& layer, const Layout& lay) {
    std::vector<Choice> choices;
    if (lay.tp > 1 && supports_tensor_parallel(layer.kind)) {
      for (int z = 0; z <= (lay.dp > 1 ? 3 : 0); ++z)
        choices.push_back({Strategy::tensor_parallel, z});
    } else {
      choices.push_back({Strategy::dp, 0});
      if (lay.dp > 1) {
        choices.push_back({Strategy::zero1, 1});
        choices.push_back({Strategy::zero2, 2});
        choices.push_back({Strategy::zero3, 3});
        if (layer.kind == LayerKind::linear) choices.push_back({Strategy::fc_split, 0});
      }
    }
    std::vector<Candidate> out;
    for (const Choice& c : choices) {
      Candidate cand{c, 0, layer_collectives(layer, c, lay, elem_)};
      for (CollectiveUse& u : cand.uses) {
        // The representative group: stage 0, first member rank 0.
        const auto [t, algo] = cost_.best(u.collective, u.bytes, 0, u.stride, u.group_size);
        u.time = t;
        u.algorithm = algo;
        cand.time += t * static_cast<double>(u.count);
      }
      out.push_back(std::move(cand));
    }
    return out;
  }

  // Stages of a pipeline: instances (repeats expanded) cut into pp
  // contiguous runs of about equal parameter count.
  std::vector<std::vector<std::int64_t>> stage_instances(int pp) const {
    // result[stage][layer] = instances of that layer in the stage
    std::vector<std::vector<std::int64_t>> st(pp, std::vector<std::int64_t>(model_.layers.size()));
    const double total = static_cast<double>(model_.total_params());
    double seen = 0;
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      for (std::int64_t k = 0; k < l.repeat; ++k) {
        const double mid = seen + l.params / 2.0;
        int s = static_cast<int>(mid / total * pp);
        s = std::clamp(s, 0, pp - 1);
        st[s][i] += 1;
        seen += static_cast<double>(l.params);
      }
    }
    return st;
  }

  void evaluate(Plan& plan, const std::vector<std::vector<std::int64_t>>& stages) {
    const Layout& lay = plan.layout;
    plan.time = 0;
    plan.memory = Memory{};
    std::vector<double> stage_time(lay.pp, 0.0);
    std::vector<Memory> stage_mem(lay.pp);
    // 1F1B keeps up to pp micro-batches in flight on the first stage.
    const double in_flight = static_cast<double>(std::min<std::int64_t>(lay.pp, lay.micro_batches));
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      const LayerPlan& lp = plan.layers[i];
      const double per_instance_time = lp.time / static_cast<double>(lp.repeat);
      for (int s = 0; s < lay.pp; ++s) {
        const double n = static_cast<double>(stages[s][i]);
        if (n == 0) continue;
        const double f = n / static_cast<double>(lp.repeat);
        stage_time[s] += per_instance_time * n;
        Memory m = lp.memory;
        m.params *= f;
        m.grads *= f;
        m.optimizer *= f;
        m.activations *= f * in_flight;
        stage_mem[s] += m;
      }
    }
    int worst = 0;
    for (int s = 0; s < lay.pp; ++s) {
      plan.time = std::max(plan.time, stage_time[s]);
      if (stage_mem[s].total() > stage_mem[worst].total()) worst = s;
    }
    plan.memory = stage_mem[worst];
    for (const CollectiveUse& u : plan.pipeline) plan.time += u.time * static_cast<double>(u.count);
    plan.comm_time = plan.time;
    // Forward + backward = 3 x forward FLOPs for the rank's samples, split
    // over its tensor-parallel group and pipeline stages.
    // A layer that is not split by tensor parallelism is computed whole by
    // every rank of its tensor-parallel group.
    double flops = 0;
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      const bool split =
          i < plan.layers.size() && plan.layers[i].choice.strategy == Strategy::tensor_parallel;
      flops += static_cast<double>(l.flops) * static_cast<double>(l.repeat) / (split ? lay.tp : 1);
    }
    plan.compute_time = 3 * flops * static_cast<double>(lay.micro_batch * lay.micro_batches) /
                        lay.pp / (opts_.device_tflops * 1e12);
    plan.bubble_time = plan.bubble * plan.compute_time;
    plan.time += plan.bubble_time;
    plan.fits = plan.memory.total() <= opts_.device_memory;
  }

  void set_choice(Plan& plan, std::size_t i, const Candidate& c) {
    LayerPlan& lp = plan.layers[i];
    lp.choice = c.choice;
    lp.collectives = c.uses;
    lp.time = c.time;
    lp.memory = layer_memory(model_.layers[i], c.choice, plan.layout, elem_, opt_bytes_);
  }

  // Cheapest choice per layer, then (if memory is short) greedy moves to
  // choices that save the most memory per second of added communication.
  std::pair<Plan, Plan> plan_layout(const Layout& lay) {
    Plan plan;
    plan.layout = lay;
    plan.bubble = lay.pp > 1 ? static_cast<double>(lay.pp - 1) / lay.micro_batches : 0.0;
    const auto stages = stage_instances(lay.pp);
    if (lay.pp > 1) {
      // Stage boundaries: forward activation and backward gradient per
      // micro-batch, b x (elements leaving the boundary layer) each.
      std::int64_t boundary = 0;
      for (int s = 0; s + 1 < lay.pp; ++s)
        for (std::size_t i = 0; i < model_.layers.size(); ++i)
          if (stages[s][i] > 0) boundary = std::max(boundary, model_.layers[i].act_out);
      const std::int64_t bytes = lay.micro_batch * boundary * elem_;
      const int stride = lay.dp * lay.tp;
      const auto [t, algo] = cost_.best(Collective::broadcast, bytes, 0, stride, 2);
      for (const char* phase : {"forward", "backward"}) {
        CollectiveUse u = use(Collective::broadcast, GroupKind::pipeline, 2, stride, bytes,
                              lay.micro_batches, phase);
        u.time = t;
        u.algorithm = algo;
        plan.pipeline.push_back(u);
      }
    }
    std::vector<std::vector<Candidate>> cands;
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      cands.push_back(candidates(l, lay));
      LayerPlan lp;
      lp.name = l.name;
      lp.kind = l.kind;
      lp.params = l.params * l.repeat;
      lp.repeat = l.repeat;
      lp.first_stage = -1;
      for (int s = 0; s < lay.pp; ++s)
        if (stages[s][i] > 0) {
          if (lp.first_stage < 0) lp.first_stage = s;
          lp.last_stage = s;
        }
      plan.layers.push_back(lp);
      // Cheapest; a choice within 1% of it that comes earlier (simpler, less
      // traffic per micro-batch) wins, so equal-volume ZeRO-1 never displaces
      // plain data parallelism on noise alone.
      const auto& cs = cands.back();
      double best = std::numeric_limits<double>::infinity();
      for (const Candidate& c : cs) best = std::min(best, c.time);
      for (const Candidate& c : cs)
        if (c.time <= best * 1.01 + 1e-12) {
          set_choice(plan, i, c);
          break;
        }
    }
    evaluate(plan, stages);
    Plan cheapest = plan;
    // Applies the one-layer change whose key is lowest (nullopt: not a
    // candidate); false when there is none.
    auto apply_best_move = [&](auto key) {
      std::optional<std::pair<double, double>> best;
      std::size_t best_layer = 0;
      const Candidate* best_cand = nullptr;
      for (std::size_t i = 0; i < plan.layers.size(); ++i)
        for (const Candidate& c : cands[i]) {
          if (c.choice == plan.layers[i].choice) continue;
          Plan trial = plan;
          set_choice(trial, i, c);
          evaluate(trial, stages);
          const std::optional<std::pair<double, double>> k = key(trial);
          if (k && (!best || *k < *best)) {
            best = k;
            best_layer = i;
            best_cand = &c;
          }
        }
      if (!best_cand) return false;
      set_choice(plan, best_layer, *best_cand);
      evaluate(plan, stages);
      return true;
    };
    // Memory: the move that adds the least time per byte saved; free moves
    // (no added time) tie at 0 and the one saving most wins.
    while (!plan.fits && apply_best_move([&](const Plan& trial) {
      const double saved = plan.memory.total() - trial.memory.total();
      return saved <= 0
                 ? std::nullopt
                 : std::optional(std::pair{std::max(0.0, trial.time - plan.time) / saved, -saved});
    })) {
    }
    // The greedy moves can overshoot: a cheap early move (a small layer to
    // ZeRO) may not be needed once a later one (the large blocks) has made
    // room. Take back, the biggest saving of time first, every move whose
    // faster choice still fits.
    while (plan.fits && apply_best_move([&](const Plan& trial) {
             const double gain = plan.time - trial.time;
             return trial.fits && gain > 0 ? std::optional(std::pair{-gain, 0.0}) : std::nullopt;
           })) {
    }
    return {plan, cheapest};
  }

  std::vector<std::int64_t> micro_batch_options(std::int64_t per_rank) const {
    if (opts_.micro_batch > 0) {
      if (per_rank % opts_.micro_batch != 0) return {};
      return {opts_.micro_batch};
    }
    // The whole per-rank batch, and smaller powers-of-two micro-batches
    // that trade activation memory for more per-micro-batch traffic.
    std::vector<std::int64_t> out{per_rank};
    for (std::int64_t b = 1; b < per_rank; b *= 2)
      if (per_rank % b == 0) out.push_back(b);
    return out;
  }

  // The largest data-parallel degree that divides the batch and fits in
  // the ranks left by tp x pp, with pipeline stages of whole nodes; 0 when
  // there is none. Ranks beyond tp x pp x d stay idle.
  int data_parallel_degree(int tp, int pp, int dpn) const {
    const std::int64_t b = std::max<std::int64_t>(1, opts_.micro_batch);
    for (int d = opts_.ranks / (tp * pp); d >= 1; --d) {
      if (opts_.batch % (d * b) != 0) continue;
      if (pp > 1 && (dpn <= 0 || (tp * d) % dpn != 0)) continue;
      return d;
    }
    return 0;
  }

  PlanResult run(const Topology& topology) {
    PlanResult res;
    res.optimizer_bytes = opt_bytes_;
    const int n = opts_.ranks;
    int dpn = opts_.devices_per_node;
    if (dpn > 0) {
      if (dpn < n && n % dpn != 0)
        throw UsageError("--devices-per-node " + std::to_string(dpn) + ": must divide the " +
                         std::to_string(n) + " ranks");
      dpn = std::min(dpn, n);
    } else {
      dpn = topology.ranks_per_node(n);
    }
    res.devices_per_node = dpn;
    bool has_tp_kind = false;
    std::int64_t instances = 0;
    for (const Layer& l : model_.layers) {
      has_tp_kind = has_tp_kind || supports_tensor_parallel(l.kind);
      instances += l.repeat;
    }
    // Tensor parallelism inside a node, pipeline stages of whole nodes: both
    // need to know the nodes.
    std::vector<int> tps{1};
    std::vector<int> pps;
    if (dpn > 0) {
      if (has_tp_kind)
        for (int t = 2; t <= dpn; t *= 2)
          if (dpn % t == 0) tps.push_back(t);
      const int nodes = n / dpn;
      for (int p = 2; p <= nodes; ++p)
        if (nodes % p == 0 && p <= instances) pps.push_back(p);
    }

    bool have_best = false;
    bool have_cheapest = false;
    Plan best_fit, least_memory;
    bool have_simple = false;
    Plan best_simple;  // the fastest fitting plan without tensor or pipeline parallelism
    // The layouts of (tp, pp) pairs, priced on opts.jobs threads, then
    // weighed in the order listed, so the choice is the same whatever the
    // threads (ties go to the earlier layout).
    auto consider_all = [&](const std::vector<std::pair<int, int>>& shapes) {
      std::vector<Layout> layouts;
      for (const auto& [tp, pp] : shapes) {
        const int d = data_parallel_degree(tp, pp, dpn);
        if (d == 0) continue;
        const std::int64_t per_rank = opts_.batch / d;
        for (std::int64_t b : micro_batch_options(per_rank))
          layouts.push_back(Layout{tp, pp, d, b, per_rank / b});
      }
      std::vector<std::pair<Plan, Plan>> priced(layouts.size());
      parallel_for(layouts.size(), opts_.jobs,
                   [&](std::size_t i) { priced[i] = plan_layout(layouts[i]); });
      for (std::size_t i = 0; i < layouts.size(); ++i) {
        const int tp = layouts[i].tp, pp = layouts[i].pp;
        auto& [plan, cheapest] = priced[i];
        if (!have_cheapest || cheapest.step_time() < res.cheapest.step_time())
          res.cheapest = cheapest;
        if (plan.fits && (!have_best || plan.step_time() < best_fit.step_time())) best_fit = plan;
        if (plan.fits && tp == 1 && pp == 1 &&
            (!have_simple || plan.step_time() < best_simple.step_time())) {
          best_simple = plan;
          have_simple = true;
        }
        if (!have_cheapest || plan.memory.total() < least_memory.memory.total())
          least_memory = plan;
        have_best = have_best || plan.fits;
        have_cheapest = true;
      }
    };
    std::vector<std::pair<int, int>> shapes;
    for (int tp : tps) shapes.emplace_back(tp, 1);
    consider_all(shapes);
    // Pipelining is for models that do not otherwise fit: when no plan fits
    // without ZeRO-3 sharding the weights themselves (whose gathers every
    // micro-batch cost what pipelining avoids). Pipeline plans then compete
    // on step time.
    bool needs_zero3 = !have_best;
    if (have_best)
      for (const LayerPlan& lp : best_fit.layers)
        needs_zero3 = needs_zero3 || lp.choice.zero_stage == 3;
    if (needs_zero3) {
      shapes.clear();
      for (int tp : tps)
        for (int pp : pps) shapes.emplace_back(tp, pp);
      consider_all(shapes);
    }
    if (!have_cheapest)
      throw UsageError("--micro-batch " + std::to_string(opts_.micro_batch) +
                       " divides no per-rank batch of --batch " + std::to_string(opts_.batch) +
                       " over up to " + std::to_string(n) + " data-parallel ranks");
    // Tensor and pipeline parallelism only where they are needed to fit or
    // clearly lower the step time: the model prices them optimistically
    // (compute split perfectly, no pipeline flush), so a gain within
    // kLayoutMargin of plain data parallelism is not worth their complexity.
    if (have_simple && best_fit.step_time() > best_simple.step_time() * (1 - kLayoutMargin))
      best_fit = best_simple;
    if (!have_best && dpn == 0)
      throw UsageError("--topology " + opts_.topology_file +
                       ": nothing fits without tensor or pipeline parallelism, which need the "
                       "devices per node, and the topology has no nodes (no devices_per_node, "
                       "no \"host\" on its endpoints); give --devices-per-node N");
    res.fits = have_best;
    res.plan = have_best ? best_fit : least_memory;
    res.simple_step_time = have_simple ? best_simple.step_time() : 0;
    res.simple_ranks = have_simple ? best_simple.layout.dp : 0;
    uniform(res);
    rows_per_rank(res.plan);
    explain(res);
    if (opts_.user) price_user(res);
    res.simulations = cost_.simulations();
    return res;
  }

  // Every layer the same strategy, tp = pp = 1, on the data-parallel degree
  // such plans use, with the chosen plan's micro-batch (or the largest
  // divisor of the per-rank batch below it), so rows and plan compare.
  void uniform(PlanResult& res) {
    const char* names[] = {"dp", "zero1", "zero2", "zero3"};
    const int d = data_parallel_degree(1, 1, res.devices_per_node);
    for (int z = 0; z <= 3; ++z) {
      Alternative alt;
      alt.name = names[z];
      if (d > 0) {
        const std::int64_t per_rank = opts_.batch / d;
        std::int64_t b = std::min(res.plan.layout.micro_batch, per_rank);
        while (per_rank % b != 0) --b;
        Plan plan;
        plan.layout = Layout{1, 1, d, b, per_rank / b};
        const Choice c{static_cast<Strategy>(z), z};
        for (const Layer& l : model_.layers) {
          LayerPlan lp;
          lp.repeat = l.repeat;
          lp.params = l.params * l.repeat;
          for (Candidate& cand : candidates(l, plan.layout))
            if (cand.choice == c || d == 1) {
              lp.choice = cand.choice;
              lp.time = cand.time;
              lp.memory = layer_memory(l, cand.choice, plan.layout, elem_, opt_bytes_);
              break;
            }
          plan.layers.push_back(lp);
        }
        evaluate(plan, stage_instances(1));
        alt.valid = true;
        alt.layout = plan.layout;
        alt.time = plan.time;
        alt.step_time = plan.step_time();
        alt.memory = plan.memory;
        alt.fits = plan.fits;
      }
      res.uniform.push_back(alt);
    }
  }

  // Rows of the final plan read per rank: with pipelining a layer's figures
  // are scaled to the instances of its fullest stage (the totals already are).
  void rows_per_rank(Plan& plan) const {
    const Layout& lay = plan.layout;
    const auto stages = stage_instances(lay.pp);
    const double in_flight = static_cast<double>(std::min<std::int64_t>(lay.pp, lay.micro_batches));
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      LayerPlan& lp = plan.layers[i];
      std::int64_t k = 0;
      for (int s = 0; s < lay.pp; ++s) k = std::max(k, stages[s][i]);
      lp.instances_per_rank = k;
      if (lay.pp == 1) continue;
      const double f = static_cast<double>(k) / static_cast<double>(lp.repeat);
      lp.time *= f;
      lp.memory.params *= f;
      lp.memory.grads *= f;
      lp.memory.optimizer *= f;
      lp.memory.activations *= f * in_flight;
      for (CollectiveUse& u : lp.collectives) u.count = u.count / lp.repeat * k;
    }
  }

  // --tp --pp --dp --zero --micro-batch: the user's layout priced as given,
  // and what separates it from the planner's choice.
  void price_user(PlanResult& res) {
    const UserLayout& u = *opts_.user;
    const int n = opts_.ranks;
    auto flags = [&] {
      return "--tp " + std::to_string(u.tp) + " x --pp " + std::to_string(u.pp) + " x --dp " +
             std::to_string(u.dp);
    };
    if (u.tp < 1 || u.pp < 1 || u.dp < 0) throw UsageError("--tp, --pp and --dp must be >= 1");
    if (u.zero < 0 || u.zero > 3)
      throw UsageError("--zero " + std::to_string(u.zero) + ": expected 0, 1, 2 or 3");
    if (static_cast<std::int64_t>(u.tp) * u.pp > n)
      throw UsageError("--tp " + std::to_string(u.tp) + " x --pp " + std::to_string(u.pp) +
                       " needs more than the " + std::to_string(n) + " ranks");
    std::int64_t instances = 0;
    for (const Layer& l : model_.layers) instances += l.repeat;
    if (u.pp > instances)
      throw UsageError("--pp " + std::to_string(u.pp) + ": the model has only " +
                       std::to_string(instances) + " layer instances to cut into stages");
    int d = u.dp;
    // Without --dp: the most ranks the batch (and --micro-batch) splits over.
    for (int k = n / (u.tp * u.pp); k >= 1 && d == 0; --k)
      if (opts_.batch % (k * std::max<std::int64_t>(1, u.micro_batch)) == 0) d = k;
    if (static_cast<std::int64_t>(u.tp) * u.pp * d > n)
      throw UsageError(flags() + " = " +
                       std::to_string(static_cast<std::int64_t>(u.tp) * u.pp * d) +
                       " ranks, more than the " + std::to_string(n) + " of the topology");
    if (opts_.batch % d != 0)
      throw UsageError("--dp " + std::to_string(d) + ": does not divide --batch " +
                       std::to_string(opts_.batch));
    const std::int64_t per_rank = opts_.batch / d;
    const std::int64_t b = u.micro_batch > 0 ? u.micro_batch : per_rank;
    if (per_rank % b != 0)
      throw UsageError("--micro-batch " + std::to_string(b) + ": does not divide the " +
                       std::to_string(per_rank) + " samples per data-parallel rank (--batch " +
                       std::to_string(opts_.batch) + " / --dp " + std::to_string(d) + ")");
    const Layout lay{u.tp, u.pp, d, b, per_rank / b};
    const int z = d > 1 ? u.zero : 0;
    Plan plan = plan_layout(lay).second;  // for the stage sends and the layer rows
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      Choice c{static_cast<Strategy>(z), z};
      if (lay.tp > 1 && supports_tensor_parallel(l.kind)) c = {Strategy::tensor_parallel, z};
      Candidate cand{c, 0, layer_collectives(l, c, lay, elem_)};
      for (CollectiveUse& use : cand.uses) {
        const auto [t, algo] = cost_.best(use.collective, use.bytes, 0, use.stride, use.group_size);
        use.time = t;
        use.algorithm = algo;
        cand.time += t * static_cast<double>(use.count);
      }
      set_choice(plan, i, cand);
      plan.layers[i].reason = "as given";
    }
    evaluate(plan, stage_instances(lay.pp));
    rows_per_rank(plan);

    // The difference, component by component, then per layer.
    const Plan& best = res.plan;
    std::vector<std::string>& out = res.user_diff;
    const double dt = plan.step_time() - best.step_time();
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s is %.3f ms (%.1f%%) %s per step than the planner's choice",
                  "yours", std::abs(dt) * 1e3,
                  best.step_time() > 0 ? std::abs(dt) / best.step_time() * 100 : 0.0,
                  dt > 0 ? "slower" : "faster");
    std::string line = std::abs(dt) < 1e-12 ? std::string("yours takes the planner's step time")
                                            : std::string(buf);
    auto part = [&](const char* what, double mine, double theirs) {
      if (std::abs(mine - theirs) < 1e-9) return;
      std::snprintf(buf, sizeof buf, "; %s %+.3f ms", what, (mine - theirs) * 1e3);
      line += buf;
    };
    part("compute", plan.compute_time, best.compute_time);
    part("communication", plan.comm_time, best.comm_time);
    part("bubble", plan.bubble_time, best.bubble_time);
    out.push_back(line);
    std::snprintf(buf, sizeof buf, "memory per rank %.2f GB against the choice's %.2f GB (%s)",
                  plan.memory.total() / kGB, best.memory.total() / kGB,
                  plan.fits ? "fits" : "does not fit");
    out.emplace_back(buf);
    const Layout& bl = best.layout;
    if (lay.tp != bl.tp || lay.pp != bl.pp || lay.dp != bl.dp || lay.micro_batch != bl.micro_batch)
      out.push_back("layout: yours tensor_parallel " + std::to_string(lay.tp) + " x pipeline " +
                    std::to_string(lay.pp) + " x data_parallel " + std::to_string(lay.dp) +
                    ", micro-batch " + std::to_string(lay.micro_batch) + " x " +
                    std::to_string(lay.micro_batches) + "; the choice's " + std::to_string(bl.tp) +
                    " x " + std::to_string(bl.pp) + " x " + std::to_string(bl.dp) +
                    ", micro-batch " + std::to_string(bl.micro_batch) + " x " +
                    std::to_string(bl.micro_batches));
    if (lay.tp * lay.pp * lay.dp < n && best.ranks_used() != lay.tp * lay.pp * lay.dp)
      out.push_back("yours leaves " + std::to_string(n - lay.tp * lay.pp * lay.dp) +
                    " ranks idle, the choice " + std::to_string(n - best.ranks_used()));
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      const LayerPlan& mine = plan.layers[i];
      const LayerPlan& theirs = best.layers[i];
      if (mine.choice == theirs.choice && std::abs(mine.time - theirs.time) < 1e-9) continue;
      std::snprintf(buf, sizeof buf,
                    "%s: yours %s, %.3f ms and %.3f GB; the choice's %s, %.3f ms and %.3f GB",
                    mine.name.c_str(), choice_name(mine.choice).c_str(), mine.time * 1e3,
                    mine.memory.total() / kGB, choice_name(theirs.choice).c_str(),
                    theirs.time * 1e3, theirs.memory.total() / kGB);
      out.emplace_back(buf);
    }
    res.user = std::move(plan);
  }

  void explain(PlanResult& res) {
    Plan& plan = res.plan;
    const Layout& lay = plan.layout;
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      LayerPlan& lp = plan.layers[i];
      const Layer& l = model_.layers[i];
      auto cs = candidates(l, lay);
      // The cheapest alternative of another strategy, for the comparison.
      const Candidate* other = nullptr;
      for (const Candidate& c : cs)
        if (!(c.choice == lp.choice) && (!other || c.time < other->time)) other = &c;
      const Choice cheapest_choice = res.cheapest.layers.size() == plan.layers.size() &&
                                             res.cheapest.layout.tp == lay.tp &&
                                             res.cheapest.layout.pp == lay.pp &&
                                             res.cheapest.layout.micro_batch == lay.micro_batch
                                         ? res.cheapest.layers[i].choice
                                         : lp.choice;
      std::string r;
      if (lp.choice.strategy == Strategy::fc_split)
        r = "gathering activations (" + ms(lp.time) + ") beats all_reducing " +
            std::to_string(lp.params) + " weights";
      else if (lp.choice.strategy == Strategy::tensor_parallel)
        r = "Megatron split over " + std::to_string(lay.tp) + " GPUs of a node (" + ms(lp.time) +
            ")";
      else
        r = std::string(to_string(lp.choice.strategy)) + " " + ms(lp.time);
      const double per_rank = static_cast<double>(lp.instances_per_rank) / lp.repeat;
      if (other)
        r += "; " + choice_name(other->choice) + " would take " + ms(other->time * per_rank);
      if (!(cheapest_choice == lp.choice))
        r += "; " + choice_name(cheapest_choice) + " (no slower) was given up to fit the memory";
      lp.reason = r;
    }
    std::string v;
    if (res.fits) {
      v = "fits: " + gb(plan.memory.total()) + " per rank of " + gb(opts_.device_memory) + ", " +
          ms(plan.step_time()) + " per step (" + ms(plan.comm_time) + " of communication" +
          (plan.layout.pp > 1 ? " and " + ms(plan.bubble_time) + " of pipeline bubble)"
                              : std::string(")"));
      if (res.cheapest.step_time() < plan.step_time() - 1e-12)
        v += "; the fastest plan (" + ms(res.cheapest.step_time()) + ") needs " +
             gb(res.cheapest.memory.total()) + " per rank and does not fit";
      if (lay.tp > 1 || lay.pp > 1)
        v += res.simple_step_time > 0 ? "; tensor/pipeline parallelism lowers the step from " +
                                            ms(res.simple_step_time) + " (data parallel on " +
                                            std::to_string(res.simple_ranks) + " ranks)"
                                      : "; tensor/pipeline parallelism is needed to fit";
    } else {
      v = "NOTHING FITS: the smallest plan found needs " + gb(plan.memory.total()) +
          " per rank, more than the " + gb(opts_.device_memory) +
          " device memory; use more ranks, a smaller --micro-batch or a larger --device-memory";
    }
    if (plan.ranks_used() < opts_.ranks)
      v += "; " + std::to_string(opts_.ranks - plan.ranks_used()) + " of " +
           std::to_string(opts_.ranks) + " ranks idle: batch " + std::to_string(opts_.batch) +
           " splits over at most " + std::to_string(plan.layout.dp) +
           " data-parallel ranks of this layout";
    if (res.devices_per_node == 0)
      v += "; tensor and pipeline parallelism not considered: the topology has no nodes "
           "(--devices-per-node N)";
    res.verdict = v;
  }

 private:
  const Model& model_;
  const PlanOptions& opts_;
  int elem_;
  int opt_bytes_;
  CommCost cost_;
};

Json memory_json(const Memory& m) {
  Json j;
  j["params_bytes"] = m.params;
  j["grads_bytes"] = m.grads;
  j["optimizer_bytes"] = m.optimizer;
  j["activations_bytes"] = m.activations;
  j["total_bytes"] = m.total();
  return j;
}

// --explain: NCCL's choice for the collective on its group, every
// candidate with NCCL's estimate and its simulated time (sim/nccl_explain.h).
Json nccl_explain_json(const CollectiveUse& u, const Topology& topology, const PlanOptions& opts) {
  if (u.group_size <= 1 || u.bytes <= 0) return nullptr;
  GroupTopology group(topology, 0, u.stride, u.group_size);
  const int elem = size_of(opts.dtype);
  ScheduleSpec spec;
  spec.collective = u.collective;
  spec.algorithm = "nccl";
  spec.ranks = u.group_size;
  spec.elem_size = elem;
  spec.count = std::max<std::int64_t>(1, u.bytes / elem);
  const NcclContext ctx = nccl_context(group, u.group_size, opts.nccl_version);
  NcclExplanation e = explain_nccl_choice(ctx, u.collective, spec.count * elem, opts.dtype,
                                          RedOp::sum, std::nullopt);
  e.algorithm = "nccl";
  e.bytes = u.bytes;
  simulate_candidates(e, spec, ctx, group, opts.sim);
  return nccl_explanation_json(e);
}

Json use_json(const CollectiveUse& u) {
  Json j;
  j["collective"] = to_string(u.collective);
  j["group"] = to_string(u.group);
  j["group_size"] = u.group_size;
  j["stride"] = u.stride;
  j["bytes"] = u.bytes;
  j["count"] = u.count;
  j["phase"] = u.phase;
  j["algorithm"] = u.algorithm;
  j["time_us"] = u.time * 1e6;
  return j;
}

}  // namespace

bool gpu_topology(const Topology& topology, int ranks) {
  if (ranks <= 0) return false;
  for (int r = 0; r < ranks; ++r)
    if (!topology.endpoint(r).pipelined) return false;
  return true;
}

PlanResult make_plan(const Model& model, const Topology& topology, const PlanOptions& opts) {
  if (opts.ranks < 1 || opts.ranks > topology.num_ranks())
    throw UsageError("--ranks " + std::to_string(opts.ranks) + ": the topology has " +
                     std::to_string(topology.num_ranks()) + " ranks");
  if (opts.batch < 1) throw UsageError("--batch " + std::to_string(opts.batch) + ": must be >= 1");
  if (opts.micro_batch < 0)
    throw UsageError("--micro-batch " + std::to_string(opts.micro_batch) + ": must be >= 1");
  if (!(opts.device_memory > 0)) throw UsageError("--device-memory: must be > 0");
  Planner planner(model, topology, opts);
  return planner.run(topology);
}

Json plan_json(const PlanResult& res, const Model& model, const Topology& topology,
               const PlanOptions& opts) {
  Json j;
  j["mode"] = "plan";
  j["model"] = {{"name", model.name}, {"file", model.file}, {"params", model.total_params()}};
  j["topology"] = {
      {"name", topology.name}, {"file", opts.topology_file}, {"sha256", topology.sha256}};
  j["ranks"] = opts.ranks;
  if (res.devices_per_node > 0)
    j["devices_per_node"] = res.devices_per_node;
  else
    j["devices_per_node"] = nullptr;
  j["batch"] = opts.batch;
  j["dtype"] = to_string(opts.dtype);
  j["collectives"] = opts.nccl ? "nccl" : "best";
  if (opts.nccl)
    j["nccl_version"] =
        to_string(opts.nccl_version.value_or(topology.nccl.version.value_or(kDefaultNcclVersion)));
  j["optimizer_bytes_per_param"] = res.optimizer_bytes;
  j["device_memory_bytes"] = opts.device_memory;
  const Layout& lay = res.plan.layout;
  j["layout"] = {{"tensor_parallel", lay.tp},
                 {"pipeline_parallel", lay.pp},
                 {"data_parallel", lay.dp},
                 {"micro_batch", lay.micro_batch},
                 {"micro_batches", lay.micro_batches},
                 {"pipeline_bubble", res.plan.bubble},
                 {"ranks_used", res.plan.ranks_used()}};
  j["device_tflops"] = opts.device_tflops;
  Json layers = Json::array();
  for (const LayerPlan& lp : res.plan.layers) {
    Json l;
    l["name"] = lp.name;
    l["kind"] = to_string(lp.kind);
    l["params"] = lp.params;
    l["repeat"] = lp.repeat;
    l["strategy"] = to_string(lp.choice.strategy);
    l["zero_stage"] = lp.choice.zero_stage;
    l["instances_per_rank"] = lp.instances_per_rank;
    if (lay.pp > 1) l["stages"] = {lp.first_stage, lp.last_stage};
    Json cs = Json::array();
    for (const CollectiveUse& u : lp.collectives) {
      Json cj = use_json(u);
      if (opts.explain && opts.nccl) {
        Json x = nccl_explain_json(u, topology, opts);
        if (!x.is_null()) cj["nccl_explain"] = std::move(x);
      }
      cs.push_back(std::move(cj));
    }
    l["collectives"] = cs;
    l["time_us"] = lp.time * 1e6;
    l["memory"] = memory_json(lp.memory);
    l["reason"] = lp.reason;
    layers.push_back(l);
  }
  j["layers"] = layers;
  Json pipe = Json::array();
  for (const CollectiveUse& u : res.plan.pipeline) {
    Json cj = use_json(u);
    if (opts.explain && opts.nccl) {
      Json x = nccl_explain_json(u, topology, opts);
      if (!x.is_null()) cj["nccl_explain"] = std::move(x);
    }
    pipe.push_back(std::move(cj));
  }
  j["pipeline"] = pipe;
  j["totals"] = {{"step_time_us", res.plan.step_time() * 1e6},
                 {"time_us", res.plan.time * 1e6},
                 {"comm_time_us", res.plan.comm_time * 1e6},
                 {"bubble_time_us", res.plan.bubble_time * 1e6},
                 {"compute_time_us", res.plan.compute_time * 1e6},
                 {"memory", memory_json(res.plan.memory)},
                 {"fits", res.fits}};
  j["cheapest"] = {{"step_time_us", res.cheapest.step_time() * 1e6},
                   {"time_us", res.cheapest.time * 1e6},
                   {"memory_total_bytes", res.cheapest.memory.total()},
                   {"fits", res.cheapest.fits}};
  Json uni = Json::array();
  for (const Alternative& a : res.uniform) {
    Json u;
    u["strategy"] = a.name;
    u["valid"] = a.valid;
    if (a.valid) {
      u["data_parallel"] = a.layout.dp;
      u["micro_batch"] = a.layout.micro_batch;
      u["micro_batches"] = a.layout.micro_batches;
      u["step_time_us"] = a.step_time * 1e6;
      u["time_us"] = a.time * 1e6;
      u["memory"] = memory_json(a.memory);
      u["fits"] = a.fits;
    }
    uni.push_back(u);
  }
  j["uniform"] = uni;
  if (res.user) {
    const Plan& p = *res.user;
    Json layers_u = Json::array();
    for (const LayerPlan& lp : p.layers)
      layers_u.push_back({{"name", lp.name},
                          {"strategy", to_string(lp.choice.strategy)},
                          {"zero_stage", lp.choice.zero_stage},
                          {"time_us", lp.time * 1e6},
                          {"memory", memory_json(lp.memory)}});
    j["user_layout"] = {{"layout",
                         {{"tensor_parallel", p.layout.tp},
                          {"pipeline_parallel", p.layout.pp},
                          {"data_parallel", p.layout.dp},
                          {"zero_stage", opts.user->zero},
                          {"micro_batch", p.layout.micro_batch},
                          {"micro_batches", p.layout.micro_batches},
                          {"pipeline_bubble", p.bubble}}},
                        {"layers", layers_u},
                        {"totals",
                         {{"step_time_us", p.step_time() * 1e6},
                          {"comm_time_us", p.comm_time * 1e6},
                          {"bubble_time_us", p.bubble_time * 1e6},
                          {"compute_time_us", p.compute_time * 1e6},
                          {"memory", memory_json(p.memory)},
                          {"fits", p.fits}}},
                        {"difference", res.user_diff}};
  }
  j["verdict"] = res.verdict;
  j["simulations"] = res.simulations;
  return j;
}

namespace {

std::string total_line(const char* lead, const Plan& plan, const PlanOptions& opts) {
  char buf[512];
  const Memory& m = plan.memory;
  std::snprintf(buf, sizeof buf,
                "%sstep %.3f ms = compute %.3f + communication %.3f + pipeline bubble %.3f; "
                "memory per rank %.2f GB (params %.2f, grads %.2f, optimizer %.2f, activations "
                "%.2f) of %.2f GB\n",
                lead, plan.step_time() * 1e3, plan.compute_time * 1e3, plan.comm_time * 1e3,
                plan.bubble_time * 1e3, m.total() / kGB, m.params / kGB, m.grads / kGB,
                m.optimizer / kGB, m.activations / kGB, opts.device_memory / kGB);
  return buf;
}

}  // namespace

std::string format_plan(const PlanResult& res, const Model& model, const PlanOptions& opts) {
  std::string out;
  char buf[512];
  const Layout& lay = res.plan.layout;
  std::snprintf(buf, sizeof buf,
                "# plan: %s (%.3f B params) on %d ranks (%s), batch %lld, %s\n"
                "# layout: tensor_parallel %d x pipeline %d x data_parallel %d%s, micro-batch %lld "
                "x %lld per step%s\n",
                model.name.c_str(), model.total_params() / 1e9, opts.ranks,
                res.devices_per_node > 0
                    ? (std::to_string(res.devices_per_node) + " per node").c_str()
                    : "no nodes",
                static_cast<long long>(opts.batch), std::string(to_string(opts.dtype)).c_str(),
                lay.tp, lay.pp, lay.dp,
                res.plan.ranks_used() < opts.ranks
                    ? (" (" + std::to_string(res.plan.ranks_used()) + " ranks used)").c_str()
                    : "",
                static_cast<long long>(lay.micro_batch), static_cast<long long>(lay.micro_batches),
                lay.pp > 1 ? (", bubble " + std::to_string(res.plan.bubble * 100).substr(0, 5) +
                              "%; each row: the layer's instances on its fullest stage")
                                 .c_str()
                           : "");
  out += buf;
  if (opts.nccl)
    out +=
        "# collectives: priced as NCCL runs them (its choice of algorithm, protocol and "
        "channels on each group; --collectives best: collkit's fastest algorithm instead)\n";
  std::snprintf(buf, sizeof buf, "%-14s %-24s %12s %10s %10s  %s\n", "layer", "strategy",
                "comm(ms)", "mem(GB)", "params", "collectives per step");
  out += buf;
  for (const LayerPlan& lp : res.plan.layers) {
    std::string cs;
    for (const CollectiveUse& u : lp.collectives) {
      std::snprintf(buf, sizeof buf, "%s%s %s x%lld/%s%d", cs.empty() ? "" : ", ",
                    std::string(to_string(u.collective)).c_str(),
                    format_bytes_for_plan(u.bytes).c_str(), static_cast<long long>(u.count),
                    u.group == GroupKind::tensor_parallel ? "tp" : "dp", u.group_size);
      cs += buf;
    }
    std::snprintf(buf, sizeof buf, "%-14s %-24s %12.3f %10.3f %10.4g  %s\n", lp.name.c_str(),
                  choice_name(lp.choice).c_str(), lp.time * 1e3, lp.memory.total() / kGB,
                  static_cast<double>(lp.params), cs.empty() ? "none" : cs.c_str());
    out += buf;
    out += "               reason: " + lp.reason + "\n";
  }
  for (const CollectiveUse& u : res.plan.pipeline) {
    std::snprintf(buf, sizeof buf, "pipeline       %s send %s x%lld: %.3f ms\n", u.phase.c_str(),
                  format_bytes_for_plan(u.bytes).c_str(), static_cast<long long>(u.count),
                  u.time * u.count * 1e3);
    out += buf;
  }
  out += total_line("# total: ", res.plan, opts);
  if (!res.uniform.empty() && res.uniform.front().valid) {
    const Layout& u = res.uniform.front().layout;
    std::snprintf(buf, sizeof buf,
                  "# uniform plans (every layer the same, no tensor/pipeline parallelism; "
                  "data_parallel %d, micro-batch %lld x %lld per step):\n",
                  u.dp, static_cast<long long>(u.micro_batch),
                  static_cast<long long>(u.micro_batches));
    out += buf;
  }
  for (const Alternative& a : res.uniform) {
    if (!a.valid) continue;
    std::snprintf(buf, sizeof buf,
                  "#   %-6s memory %10.2f GB  comm %12.3f ms  step %12.3f ms  %s\n", a.name.c_str(),
                  a.memory.total() / kGB, a.time * 1e3, a.step_time * 1e3,
                  a.fits ? "fits" : "does not fit");
    out += buf;
  }
  if (res.user) {
    const Plan& p = *res.user;
    const UserLayout& u = *opts.user;
    std::snprintf(
        buf, sizeof buf,
        "# your layout (--tp %d --pp %d --dp %d --zero %d --micro-batch %lld): "
        "micro-batch %lld x %lld per step%s\n",
        p.layout.tp, p.layout.pp, p.layout.dp, u.zero, static_cast<long long>(p.layout.micro_batch),
        static_cast<long long>(p.layout.micro_batch),
        static_cast<long long>(p.layout.micro_batches),
        p.layout.pp > 1 ? (", bubble " + std::to_string(p.bubble * 100).substr(0, 5) + "%").c_str()
                        : "");
    out += buf;
    out += total_line("#   ", p, opts);
    for (const std::string& l : res.user_diff) out += "#   " + l + "\n";
  }
  out += "# " + res.verdict + "\n";
  return out;
}

double parse_memory_size(const std::string& flag, const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string num = text.substr(0, i);
  const std::string unit = text.substr(i);
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(num, &used);
    if (used != num.size()) throw std::invalid_argument(num);
  } catch (const std::exception&) {
    throw UsageError(flag + " '" + text + "': expected a size such as 80GiB or 80GB");
  }
  double scale = 0;
  const std::pair<const char*, double> units[] = {{"", 1},
                                                  {"B", 1},
                                                  {"KiB", 1024.0},
                                                  {"MiB", 1048576.0},
                                                  {"GiB", 1073741824.0},
                                                  {"TiB", 1099511627776.0},
                                                  {"KB", 1e3},
                                                  {"MB", 1e6},
                                                  {"GB", 1e9},
                                                  {"TB", 1e12},
                                                  {"K", 1024.0},
                                                  {"M", 1048576.0},
                                                  {"G", 1073741824.0},
                                                  {"T", 1099511627776.0}};
  for (const auto& [name, s] : units)
    if (unit == name) scale = s;
  if (scale == 0 || !(v > 0))
    throw UsageError(
        flag + " '" + text +
        "': expected a positive size with unit B, KiB, MiB, GiB, TiB, KB, MB, GB or TB");
  return v * scale;
}

}  // namespace collkit
