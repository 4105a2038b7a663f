#include "planner/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/parallel.h"
#include "planner/group_topology.h"
#include "sim/nccl.h"
#include "sim/nccl_explain.h"
#include "sim/sweep.h"

namespace collkit {
namespace {

using CommKey = std::tuple<Collective, std::int64_t, int, int, int>;

// Collectives above this size are priced from two simulations, at this size
// and half of it, and the line through them: at such sizes every algorithm
// moves its data in chunks at a steady rate, so the time grows linearly
// (tests/planner/planner_test.cc checks a 1 GiB all_reduce against it).
constexpr std::int64_t kSimCap = 256ll << 20;

// Simulated time of the fastest registered algorithm, or with `nccl` of
// NCCL's own choice, cached by (collective, bytes, group), so a plan that
// asks for the same collective many times (96 identical blocks, many
// micro-batch candidates) simulates it once. prefetch() simulates the
// missing ones of a list in parallel.
class CommCost {
 public:
  CommCost(const Topology& topology, DataType dtype, SimOptions sim, bool nccl,
           std::optional<NcclVersion> version, int jobs)
      : topology_(topology),
        dtype_(dtype),
        sim_(sim),
        nccl_(nccl),
        version_(version),
        jobs_(jobs) {}

  std::pair<double, std::string> best(Collective c, std::int64_t bytes, int first, int stride,
                                      int size) {
    if (size <= 1 || bytes <= 0) return {0.0, "none"};
    if (bytes > kSimCap) {
      const auto hi = best(c, kSimCap, first, stride, size);
      const auto lo = best(c, kSimCap / 2, first, stride, size);
      const double slope = (hi.first - lo.first) / (static_cast<double>(kSimCap) / 2);
      double t = hi.first + slope * static_cast<double>(bytes - kSimCap);
      // NCCL's choice can differ at the two sizes (tree at 128 MiB, ring at
      // 256 MiB for an all_reduce over 8 whole nodes), and the line through
      // them then rises slower than any schedule can: a reduction is never
      // priced below what the group can send out of a node.
      if (first == 0 && (c == Collective::reduce_scatter || c == Collective::all_reduce))
        t = std::max(t, reduction_bound(bytes, stride, size));
      return {t, hi.second + " (linear above 256 MiB)"};
    }
    const CommKey key{c, bytes, first, stride, size};
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    auto r = simulate_one(key);
    ++simulations_;
    return cache_.emplace(key, std::move(r)).first->second;
  }

  // Simulates, in parallel, every key of `keys` not yet known.
  void prefetch(const std::vector<CommKey>& keys) {
    std::set<CommKey> want;
    for (const auto& [c, bytes, first, stride, size] : keys) {
      if (size <= 1 || bytes <= 0) continue;
      if (bytes > kSimCap) {
        want.insert({c, kSimCap, first, stride, size});
        want.insert({c, kSimCap / 2, first, stride, size});
      } else {
        want.insert({c, bytes, first, stride, size});
      }
    }
    std::vector<CommKey> missing;
    for (const CommKey& k : want)
      if (!cache_.count(k)) missing.push_back(k);
    if (missing.empty()) return;
    std::vector<std::pair<double, std::string>> out(missing.size());
    parallel_for(missing.size(), jobs_, [&](std::size_t i) { out[i] = simulate_one(missing[i]); });
    for (std::size_t i = 0; i < missing.size(); ++i) cache_.emplace(missing[i], std::move(out[i]));
    simulations_ += static_cast<std::int64_t>(missing.size());
  }

  std::int64_t simulations() const { return simulations_; }

  // reduction_bound_seconds() of the group (first rank 0, stride, size),
  // its node exit computed once per group shape.
  double reduction_bound(std::int64_t bytes, int stride, int size) {
    if (size <= 1 || bytes <= 0) return 0;
    const auto key = std::pair{stride, size};
    auto it = exits_.find(key);
    if (it == exits_.end()) it = exits_.emplace(key, node_exit(topology_, stride, size)).first;
    return reduction_bound_seconds(it->second, bytes, size);
  }

 private:
  std::pair<double, std::string> simulate_one(const CommKey& key) const {
    const auto& [c, bytes, first, stride, size] = key;
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
      return {t, "nccl " + describe_run(choice, instead)};
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
      if (t < best.first) best = {t, def->name};
    }
    if (best.second.empty())
      throw UsageError("no " + std::string(to_string(c)) + " algorithm accepts " +
                       std::to_string(size) + " ranks");
    return best;
  }

  const Topology& topology_;
  DataType dtype_;
  SimOptions sim_;
  bool nccl_;
  std::optional<NcclVersion> version_;
  int jobs_;
  std::map<CommKey, std::pair<double, std::string>> cache_;
  std::int64_t simulations_ = 0;
  std::map<std::pair<int, int>, NodeExit> exits_;
};

}  // namespace

NodeExit node_exit(const Topology& t, int stride, int size) {
  if (!t.has_nodes() || size <= 1) return {};
  const int node = t.node_of(0);
  std::vector<int> local;  // every rank of the node
  for (int r = 0; r < t.num_ranks() && t.node_of(r) <= node; ++r)
    if (t.node_of(r) == node) local.push_back(r);
  std::set<LinkId> inside;
  std::vector<LinkId> path;
  for (int a : local)
    for (int b : local)
      if (a != b) {
        path.clear();
        t.route(a, b, path);
        inside.insert(path.begin(), path.end());
      }
  std::vector<int> mine, other;
  for (int i = 0; i < size; ++i) {
    const int rank = i * stride;
    (t.node_of(rank) == node ? mine : other).push_back(rank);
  }
  if (other.empty()) return {};
  std::set<LinkId> exits;
  for (int a : mine)
    for (int b : other) {
      path.clear();
      t.route(a, b, path);
      const auto out =
          std::find_if(path.begin(), path.end(), [&](LinkId l) { return inside.count(l) == 0; });
      if (out == path.end()) return {};
      exits.insert(*out);
    }
  NodeExit e;
  for (LinkId l : exits) e.bandwidth += t.link(l).bandwidth;
  e.members = static_cast<int>(mine.size());
  return e;
}

double reduction_bound_seconds(const NodeExit& exit, std::int64_t bytes, int size) {
  if (!(exit.bandwidth > 0) || size <= 1 || bytes <= 0) return 0;
  return static_cast<double>(bytes) * (size - exit.members) / size / exit.bandwidth;
}

namespace {

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

// One message of `bytes` per instance as buckets of at most `bucket`
// bytes: the full ones and the rest.
void bucketed(std::vector<CollectiveUse>& out, Collective c, int d, int stride, std::int64_t bytes,
              double bucket, std::int64_t count, const char* phase) {
  if (bytes <= 0) return;
  const auto g = GroupKind::data_parallel;
  if (!(bucket > 0) || static_cast<double>(bytes) <= bucket) {
    out.push_back(use(c, g, d, stride, bytes, count, phase));
    return;
  }
  const auto b = static_cast<std::int64_t>(bucket);
  const std::int64_t full = bytes / b;
  const std::int64_t rest = bytes - full * b;
  out.push_back(use(c, g, d, stride, b, count * full, phase));
  if (rest > 0) out.push_back(use(c, g, d, stride, rest, count, phase));
}

// ZeRO's data-parallel traffic for `bytes` of parameters of one instance.
void zero_collectives(std::vector<CollectiveUse>& out, std::int64_t bytes, int stage,
                      const Layout& lay, std::int64_t repeat, double bucket) {
  const int d = lay.dp;
  const int stride = lay.tp;
  const std::int64_t m = lay.micro_batches;
  if (d <= 1) return;
  switch (stage) {
    case 0:
      bucketed(out, Collective::all_reduce, d, stride, bytes, bucket, repeat, "step");
      break;
    case 1:
      bucketed(out, Collective::reduce_scatter, d, stride, bytes, bucket, repeat, "step");
      bucketed(out, Collective::all_gather, d, stride, bytes, bucket, repeat, "step");
      break;
    case 2:
      // Gradients are reduce_scattered as each micro-batch's backward makes
      // them: no rank keeps a whole gradient to accumulate into.
      bucketed(out, Collective::reduce_scatter, d, stride, bytes, bucket, repeat * m, "backward");
      bucketed(out, Collective::all_gather, d, stride, bytes, bucket, repeat, "step");
      break;
    default:
      bucketed(out, Collective::all_gather, d, stride, bytes, bucket, repeat * m, "forward");
      bucketed(out, Collective::all_gather, d, stride, bytes, bucket, repeat * m, "backward");
      bucketed(out, Collective::reduce_scatter, d, stride, bytes, bucket, repeat * m, "backward");
      break;
  }
}

int optimizer_bytes_for(DataType t) {
  // Mixed precision keeps an fp32 master copy next to Adam's two moments
  // (12 bytes); full fp32 (or wider) training updates the weights in place.
  return size_of(t) >= 4 ? 8 : 12;
}

bool is_head(const Layer& l) {
  return l.kind == LayerKind::linear && l.shape.is_object() && l.shape.value("head", false);
}
bool is_tied(const Layer& l) {
  return l.kind == LayerKind::linear && l.shape.is_object() && l.shape.value("tied", false);
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

double default_memory_reserve(double bytes) { return 0.05 * bytes + kDefaultMemoryReserve; }

std::vector<CollectiveUse> layer_collectives(const Layer& layer, const Choice& choice,
                                             const Layout& lay, int elem_bytes, double bucket) {
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
      zero_collectives(out, param_bytes, choice.zero_stage, lay, r, bucket);
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
      const auto tpg = GroupKind::tensor_parallel;
      const int t = lay.tp;
      const bool sp = lay.sequence_parallel;
      const std::int64_t n = r * m;  // per step
      if (layer.kind == LayerKind::embedding) {
        // Vocabulary-parallel embedding: the partial lookups are summed
        // (reduce_scattered over the sequence with sequence parallelism).
        const std::int64_t act = b * layer.act_out * elem_bytes;
        out.push_back(use(sp ? Collective::reduce_scatter : Collective::all_reduce, tpg, t, 1, act,
                          n, "forward"));
      } else if (is_head(layer)) {
        // Vocabulary-parallel LM head: its input is copied to (gathered
        // over) the group, its gradient all_reduced (reduce_scattered); the
        // cross entropy sums the logits' max, target logit and exp-sum over
        // the group: three all_reduces of one fp32 per token.
        const std::int64_t act = b * layer.act_in * elem_bytes;
        if (sp) out.push_back(use(Collective::all_gather, tpg, t, 1, act, n, "forward"));
        out.push_back(use(sp ? Collective::reduce_scatter : Collective::all_reduce, tpg, t, 1, act,
                          n, "backward"));
        const std::int64_t tokens = layer.act_in / std::max<std::int64_t>(1, layer.in_features);
        out.push_back(use(Collective::all_reduce, tpg, t, 1, b * tokens * 4, 3 * n, "forward"));
      } else {
        // Megatron: the column/row pairs end in an all_reduce of the b x s x h
        // output, forward and backward; with sequence parallelism each is a
        // reduce_scatter after the pair and an all_gather before it. Full
        // recomputation runs the forward's collectives again.
        const std::int64_t act = b * layer.act_out * elem_bytes;
        const std::int64_t pairs = layer.tp_all_reduces / 2;
        std::vector<const char*> phases{"forward", "backward"};
        if (lay.recompute == Recompute::full) phases.push_back("recompute");
        for (const char* ph : phases) {
          if (sp) {
            out.push_back(use(Collective::all_gather, tpg, t, 1, act, n * pairs, ph));
            out.push_back(use(Collective::reduce_scatter, tpg, t, 1, act, n * pairs, ph));
          } else {
            out.push_back(use(Collective::all_reduce, tpg, t, 1, act, n * pairs, ph));
          }
        }
      }
      zero_collectives(out, param_bytes / t, choice.zero_stage, lay, r, bucket);
      break;
    }
  }
  return out;
}

Memory layer_memory(const Layer& layer, const Choice& choice, const Layout& lay, int elem_bytes,
                    int optimizer_bytes) {
  const double psi = static_cast<double>(layer.params) * layer.repeat;
  switch (choice.strategy) {
    case Strategy::fc_split:
      return model_state_memory(psi / lay.dp, 0, 1, elem_bytes, optimizer_bytes);
    case Strategy::tensor_parallel:
      return model_state_memory(psi / lay.tp, choice.zero_stage, lay.dp, elem_bytes,
                                optimizer_bytes);
    default:
      return model_state_memory(psi, choice.zero_stage, lay.dp, elem_bytes, optimizer_bytes);
  }
}

namespace {

struct Candidate {
  Choice choice;
  double time = 0;
  std::vector<CollectiveUse> uses;
  LayerCompute compute;
};

// Per stage, per micro-batch: what one rank of the stage does.
struct StageWork {
  double fwd = 0, bwd = 0, accumulate = 0;  // kernels
  double tp_fwd = 0, tp_bwd = 0;            // tensor-parallel collectives
  double tp_gemm = 0;                       // GEMM time the TP collectives can hide behind
  double fc = 0;                            // fc_split's activation collectives (exposed)
  double zero_fwd = 0, zero_bwd = 0;        // ZeRO-2/3 per micro-batch (overlappable)
  double zero_fwd_messages = 0, zero_bwd_messages = 0;
  double grads = 0;  // step: gradient reduction
  std::int64_t grad_messages = 0;
  double params = 0;  // step: parameter all_gather
  std::int64_t param_messages = 0;
  double owned = 0, local = 0;  // parameters whose optimizer state / weights this rank holds
  Memory memory;
  double work = 0;  // the largest transient working set
};

class Planner {
 public:
  Planner(const Model& model, const Topology& topology, const PlanOptions& opts)
      : model_(model),
        opts_(opts),
        elem_(size_of(opts.dtype)),
        opt_bytes_(optimizer_bytes_for(opts.dtype)),
        cost_(topology, opts.dtype, opts.sim, opts.nccl, opts.nccl_version, opts.jobs) {
    cm_.device = opts.device;
    cm_.dtype = opts.dtype;
    cm_.flat_tflops = opts.device_tflops > 0 ? opts.device_tflops : (opts.device ? 0.0 : 400.0);
    const double reserve =
        opts.memory_reserve >= 0 ? opts.memory_reserve : default_memory_reserve(opts.device_memory);
    usable_ = opts.device_memory - reserve;
    // The repeated layer pipelines cut evenly (Megatron's transformer layers).
    for (std::size_t i = 0; i < model_.layers.size(); ++i)
      if (model_.layers[i].repeat > 1 &&
          (main_ < 0 || model_.layers[i].repeat * model_.layers[i].params >
                            model_.layers[static_cast<std::size_t>(main_)].repeat *
                                model_.layers[static_cast<std::size_t>(main_)].params))
        main_ = static_cast<int>(i);
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      if (l.kind == LayerKind::embedding) embed_ = static_cast<int>(i);
      if (is_tied(l)) tied_head_ = static_cast<int>(i);
      // Tokens per sample: the embedding's, else a block's sequence.
      if (tokens_ == 0 && l.kind == LayerKind::embedding) tokens_ = l.act_in;
      if (tokens_ == 0 && supports_tensor_parallel(l.kind) && l.shape.is_object())
        tokens_ = l.shape.value("seq", std::int64_t{0});
    }
  }

  double usable() const { return usable_; }
  std::int64_t tokens_per_sample() const { return tokens_; }

  double bucket_bytes(const Layout& lay) const {
    const double b = opts_.step.bucket_bytes;
    if (b < 0) return 0;  // one message
    if (b > 0) return b;
    return std::max(40e6, 1e6 * lay.dp) * elem_;
  }

  const LayerCompute& compute_of(std::size_t i, const Layout& lay, const Choice& c) {
    ComputeSetup st;
    st.tp = lay.tp;
    st.split = c.strategy == Strategy::tensor_parallel;
    st.sequence_parallel = lay.sequence_parallel;
    st.micro_batch = lay.micro_batch;
    st.fc_split = c.strategy == Strategy::fc_split ? lay.dp : 0;
    st.recompute = lay.recompute;
    st.attention = opts_.step.attention;
    st.fused_grad_accumulation = opts_.step.fused_grad_accumulation;
    const auto key = std::make_tuple(i, st.split ? st.tp : 1, st.sequence_parallel && st.split,
                                     st.micro_batch, st.fc_split, st.recompute);
    auto it = compute_cache_.find(key);
    if (it != compute_cache_.end()) return it->second;
    return compute_cache_.emplace(key, layer_compute(model_.layers[i], cm_, st)).first->second;
  }

  std::vector<Choice> choices(const Layer& layer, const Layout& lay) const {
    std::vector<Choice> out;
    if (lay.tp > 1 && splits_over_tp(layer)) {
      for (int z = 0; z <= (lay.dp > 1 && layer.params > 0 ? 3 : 0); ++z)
        out.push_back({Strategy::tensor_parallel, z});
    } else {
      out.push_back({Strategy::dp, 0});
      if (lay.dp > 1 && layer.params > 0) {
        out.push_back({Strategy::zero1, 1});
        out.push_back({Strategy::zero2, 2});
        out.push_back({Strategy::zero3, 3});
        if (layer.kind == LayerKind::linear && !is_head(layer))
          out.push_back({Strategy::fc_split, 0});
      }
    }
    return out;
  }

  // Every choice for layer i with its collectives, priced unless `price` is
  // false (then their times are 0: for the memory alone, which does not
  // depend on them).
  std::vector<Candidate> candidates(std::size_t i, const Layout& lay, bool price = true) {
    const Layer& layer = model_.layers[i];
    std::vector<Candidate> out;
    std::vector<CommKey> keys;
    for (const Choice& c : choices(layer, lay)) {
      Candidate cand{c, 0, layer_collectives(layer, c, lay, elem_, bucket_bytes(lay)),
                     compute_of(i, lay, c)};
      for (const CollectiveUse& u : cand.uses)
        keys.emplace_back(u.collective, u.bytes, 0, u.stride, u.group_size);
      out.push_back(std::move(cand));
    }
    if (!price) return out;
    cost_.prefetch(keys);
    for (Candidate& cand : out)
      for (CollectiveUse& u : cand.uses) {
        // The representative group: stage 0, first member rank 0.
        const auto [t, algo] = cost_.best(u.collective, u.bytes, 0, u.stride, u.group_size);
        u.time = t;
        u.algorithm = algo;
        cand.time += t * static_cast<double>(u.count);
      }
    return out;
  }

  // Stages of a pipeline: result[stage][layer] = instances of that layer in
  // the stage. Megatron's cut: the repeated layer (the transformer blocks)
  // split evenly, the layers before it on the first stage, after it on the
  // last; a model without one is cut by parameter count.
  std::vector<std::vector<std::int64_t>> stage_instances(int pp) const {
    std::vector<std::vector<std::int64_t>> st(pp, std::vector<std::int64_t>(model_.layers.size()));
    if (main_ >= 0 && model_.layers[static_cast<std::size_t>(main_)].repeat >= pp) {
      const auto mi = static_cast<std::size_t>(main_);
      const std::int64_t r = model_.layers[mi].repeat;
      for (int s = 0; s < pp; ++s) st[s][mi] = r / pp + (s < r % pp ? 1 : 0);
      for (std::size_t i = 0; i < model_.layers.size(); ++i)
        if (i != mi) st[i < mi ? 0 : pp - 1][i] = model_.layers[i].repeat;
      return st;
    }
    const double total = std::max(1.0, static_cast<double>(model_.total_params()));
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

  // Of `comm` seconds of k equal messages that each start when a 1/k of
  // `compute` has made their data (gradient buckets in the backward) or run
  // ahead of the compute that needs them (parameter gathers), what is not
  // hidden: one message at least (the last bucket, the first gather), and
  // all that the compute cannot cover.
  static double exposed_behind(double comm, double compute, double k) {
    if (!(k >= 1) || comm <= 0) return comm;
    return std::max(comm / k, comm - compute + compute / k);
  }

  // Micro-batches whose activations a stage holds at once: 1F1B keeps p - s
  // on stage s; the interleaved schedule warms up with 2 (p - s - 1) + (v -
  // 1) p + 1 chunks of 1/v of the stage (Megatron-LM's schedules.py).
  static double in_flight(const Layout& lay, int s) {
    const double m = static_cast<double>(lay.micro_batches);
    const double p = lay.pp;
    const double v = lay.virtual_stages;
    if (lay.pp == 1) return 1;
    if (v <= 1) return std::min(m, p - s);
    return std::min(m, (2 * (p - s - 1) + (v - 1) * p + 1) / v);
  }

  // The step of a plan whose layers have their choices (docs/PLANNER.md,
  // "The training step").
  // Each stage's work per micro-batch and per step, and its memory, from
  // its layers' compute and collectives.
  std::vector<StageWork> stage_work(const Plan& plan,
                                    const std::vector<std::vector<std::int64_t>>& stages) const {
    const Layout& lay = plan.layout;
    const int p = lay.pp;
    const double m = static_cast<double>(lay.micro_batches);
    std::vector<StageWork> w(p);
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      const LayerPlan& lp = plan.layers[i];
      const Layer& l = model_.layers[i];
      const double rep = static_cast<double>(lp.repeat);
      // Per instance: per micro-batch, and per step.
      double tp_f = 0, tp_b = 0, fc = 0, z_f = 0, z_b = 0, grads = 0, params = 0;
      double grad_msgs = 0, param_msgs = 0, z_f_msgs = 0, z_b_msgs = 0;
      for (const CollectiveUse& u : lp.collectives) {
        const double per_inst = u.time * static_cast<double>(u.count) / rep;
        const bool backward = u.phase == "backward" || u.phase == "recompute";
        if (u.group == GroupKind::tensor_parallel) {
          (backward ? tp_b : tp_f) += per_inst / m;
        } else if (u.phase == "step") {
          if (u.collective == Collective::all_gather) {
            params += per_inst;
            param_msgs += static_cast<double>(u.count) / rep;
          } else {
            grads += per_inst;
            grad_msgs += static_cast<double>(u.count) / rep;
          }
        } else if (lp.choice.strategy == Strategy::fc_split) {
          fc += per_inst / m;
        } else {
          (backward ? z_b : z_f) += per_inst / m;
          (backward ? z_b_msgs : z_f_msgs) += static_cast<double>(u.count) / rep / m;
        }
      }
      const LayerCompute& c = lp.compute;
      const double frac = 1.0 / rep;
      for (int s = 0; s < p; ++s) {
        const double n = static_cast<double>(stages[s][i]);
        if (n == 0) continue;
        StageWork& sw = w[s];
        sw.fwd += n * c.fwd;
        sw.bwd += n * (c.bwd + c.recompute);
        sw.accumulate += n * c.grad_accumulation * (m - 1) / m;
        sw.tp_fwd += n * tp_f;
        sw.tp_bwd += n * tp_b;
        sw.tp_gemm += n * c.gemm;
        sw.fc += n * fc;
        sw.zero_fwd += n * z_f;
        sw.zero_bwd += n * z_b;
        sw.zero_fwd_messages += n * z_f_msgs;
        sw.zero_bwd_messages += n * z_b_msgs;
        sw.grads += n * grads;
        sw.grad_messages += static_cast<std::int64_t>(std::llround(n * grad_msgs));
        sw.params += n * params;
        sw.param_messages += static_cast<std::int64_t>(std::llround(n * param_msgs));
        const double t = lp.choice.strategy == Strategy::tensor_parallel ? lay.tp : 1;
        const double psi = static_cast<double>(l.params) * n / t;
        const double dpd = lp.choice.strategy == Strategy::fc_split ? lay.dp : 1;
        sw.owned += psi / dpd / (lp.choice.zero_stage >= 1 ? lay.dp : 1);
        sw.local += psi / dpd;
        Memory mem = lp.memory;
        mem.params *= n * frac;
        mem.grads *= n * frac;
        mem.optimizer *= n * frac;
        mem.activations = n * c.act_bytes * in_flight(lay, s);
        sw.memory += mem;
        sw.work = std::max(sw.work, c.work_bytes);
      }
    }
    return w;
  }

  // Megatron keeps a copy of tied word embeddings on the last stage,
  // updated like a layer and summed with the first stage's every step:
  // its memory and parameters on the last stage, and the sum's time.
  double tied_embedding_sync(const Plan& plan, std::vector<StageWork>& w) {
    const Layout& lay = plan.layout;
    const int p = lay.pp;
    double tied_sync = 0;
    if (p > 1 && tied_head_ >= 0 && embed_ >= 0) {
      const Layer& h = model_.layers[static_cast<std::size_t>(tied_head_)];
      const double t =
          plan.layers[static_cast<std::size_t>(embed_)].choice.strategy == Strategy::tensor_parallel
              ? lay.tp
              : 1;
      const double psi = static_cast<double>(h.in_features * h.out_features) / t;
      const Choice& ec = plan.layers[static_cast<std::size_t>(embed_)].choice;
      w[p - 1].memory += model_state_memory(psi, ec.zero_stage, lay.dp, elem_, opt_bytes_);
      w[p - 1].owned += psi / (ec.zero_stage >= 1 ? lay.dp : 1);
      w[p - 1].local += psi;
      const auto bytes = static_cast<std::int64_t>(psi * elem_);
      tied_sync = cost_.best(Collective::all_reduce, bytes, 0, (p - 1) * lay.dp * lay.tp, 2).first;
    }
    return tied_sync;
  }

  // The step's FLOPs over all ranks: the model's (three passes) and what
  // recomputation adds.
  void step_flops(Plan& plan) const {
    const Layout& lay = plan.layout;
    double model_flops = 0, extra = 0;
    const double batch = static_cast<double>(opts_.batch);
    for (const Layer& l : model_.layers) {
      const double f = static_cast<double>(l.flops) * static_cast<double>(l.repeat) * batch;
      model_flops += 3 * f;
      if (supports_tensor_parallel(l.kind)) {
        if (lay.recompute == Recompute::full) {
          extra += f;
        } else if (lay.recompute == Recompute::selective && l.kind != LayerKind::mlp) {
          const double h = static_cast<double>(l.shape.value("hidden", std::int64_t{0}));
          const double sq = static_cast<double>(l.shape.value("seq", std::int64_t{0}));
          extra += 4 * sq * sq * h * static_cast<double>(l.repeat) * batch;
        }
      }
    }
    plan.model_flops = model_flops;
    plan.hardware_flops = model_flops + extra;
  }

  void evaluate(Plan& plan, const std::vector<std::vector<std::int64_t>>& stages) {
    const Layout& lay = plan.layout;
    const int p = lay.pp;
    const double m = static_cast<double>(lay.micro_batches);
    const double v = lay.virtual_stages;
    const StepOptions& so = opts_.step;
    std::vector<StageWork> w = stage_work(plan, stages);
    const double tied_sync = tied_embedding_sync(plan, w);
    // Pipeline sends per micro-batch and stage: forward activation out,
    // backward gradient in (both directions at once), v times with v chunks.
    double p2p = 0;
    for (const CollectiveUse& u : plan.pipeline) p2p += u.time * static_cast<double>(u.count);
    p2p /= m;
    // Per stage and micro-batch; the critical stage sets the pace.
    std::vector<double> t(p);
    int crit = 0;
    double sum = 0;
    std::vector<double> tp_exp(p), z_exp(p), tp_hid(p), z_hid(p);
    for (int s = 0; s < p; ++s) {
      StageWork& sw = w[s];
      const double tp = sw.tp_fwd + sw.tp_bwd;
      tp_exp[s] = so.overlap_tp ? std::max(0.0, tp - sw.tp_gemm) : tp;
      tp_hid[s] = tp - tp_exp[s];
      // ZeRO-2/3's collectives run beside the compute of the same pass
      // (DeepSpeed's prefetch), each pass's first gather (or last
      // reduce_scatter) with nothing to hide behind.
      // --overlap without param (grad) leaves the forward's (backward's) exposed.
      z_exp[s] =
          (so.overlap_param_gather ? exposed_behind(sw.zero_fwd, sw.fwd, sw.zero_fwd_messages)
                                   : sw.zero_fwd) +
          (so.overlap_grad_reduce ? exposed_behind(sw.zero_bwd, sw.bwd, sw.zero_bwd_messages)
                                  : sw.zero_bwd);
      z_hid[s] = sw.zero_fwd + sw.zero_bwd - z_exp[s];
      t[s] = sw.fwd + sw.bwd + sw.accumulate + tp_exp[s] + sw.fc + z_exp[s] +
             (so.overlap_p2p ? 0.0 : p2p);
      sum += t[s];
      if (t[s] > t[crit]) crit = s;
    }
    const StageWork& cw = w[crit];
    StepBreakdown b;
    b.compute = m * (cw.fwd + cw.bwd + cw.accumulate);
    b.tp = m * tp_exp[crit];
    b.hidden_tp = m * tp_hid[crit];
    b.dp = m * (cw.fc + z_exp[crit]);
    b.hidden_dp = m * z_hid[crit];
    b.pp = so.overlap_p2p ? 0.0 : m * p2p;
    b.hidden_pp = so.overlap_p2p ? m * p2p : 0.0;
    b.bubble = p > 1 ? (sum - t[crit]) / v : 0.0;
    // After the last backward: each stage reduces its gradients (in buckets
    // during its last micro-batch's backward when they overlap), updates
    // its parameters and gathers them back (behind the next step's first
    // forward when that overlaps). Stage s finishes its last backward s
    // chunk-backwards before stage 0.
    const double chunk_bwd = (cw.bwd + cw.tp_bwd) / v;
    double grads_exp = 0, params_exp = 0, grads_hid = 0, opt = 0;
    for (int s = 0; s < p; ++s) {
      const StageWork& sw = w[s];
      double q = sw.grads;
      if (so.overlap_grad_reduce)
        q = exposed_behind(sw.grads, sw.bwd + sw.tp_bwd, static_cast<double>(sw.grad_messages));
      const double g_exp = std::max(0.0, q - s * chunk_bwd);
      if (g_exp >= grads_exp) {
        grads_exp = g_exp;
        grads_hid = sw.grads - g_exp;
      }
      double a = sw.params;
      if (so.overlap_param_gather)
        a = exposed_behind(sw.params, sw.fwd, static_cast<double>(sw.param_messages));
      params_exp = std::max(params_exp, a);
      // The optimizer (Megatron-LM's mixed-precision Adam, megatron/optimizer):
      // per parameter it owns, copy the 16-bit gradient to fp32 (e + 4
      // bytes), unscale and check it (fp16 only, 8), its norm (4), Adam
      // (read weight, gradient, two moments: 16; write three: 12), the
      // 16-bit weight back (4 + e); per local parameter, zero the gradient
      // (e). fp32 training: Adam in place, 28 + 4.
      const double per =
          elem_ >= 4 ? 32.0 : 2.0 * elem_ + 40 + (opts_.dtype == DataType::half ? 8 : 0);
      opt = std::max(opt, memory_seconds(cm_, per * sw.owned + elem_ * sw.local));
    }
    b.dp += grads_exp + params_exp;
    b.hidden_dp += grads_hid;
    b.pp += tied_sync;
    b.optimizer = opt;
    plan.step = b;
    plan.comm_time = b.comm();
    plan.bubble_time = b.bubble;
    plan.compute_time = b.compute + b.optimizer;
    plan.time = b.total() - b.compute;
    // Memory: the fullest stage, with its transient working set.
    int worst = 0;
    for (int s = 0; s < p; ++s) {
      w[s].memory.activations += w[s].work;
      if (w[s].memory.total() > w[worst].memory.total()) worst = s;
    }
    plan.memory = w[worst].memory;
    plan.fits = plan.memory.total() <= usable_;
    step_flops(plan);
  }

  void set_choice(Plan& plan, std::size_t i, const Candidate& c) {
    LayerPlan& lp = plan.layers[i];
    lp.choice = c.choice;
    lp.collectives = c.uses;
    lp.time = c.time;
    lp.compute = c.compute;
    lp.memory = layer_memory(model_.layers[i], c.choice, plan.layout, elem_, opt_bytes_);
  }

  // Stage-to-stage sends: one micro-batch's activation leaving stage 0's
  // last layer (and its gradient back), from each tp rank its 1/tp share
  // over its own NIC; without sequence parallelism the shares are then
  // all_gathered inside the node (Megatron's scatter/gather). v chunks send
  // v times.
  std::vector<CollectiveUse> pipeline_uses(const Layout& lay,
                                           const std::vector<std::vector<std::int64_t>>& stages) {
    std::vector<CollectiveUse> out;
    if (lay.pp <= 1) return out;
    std::int64_t boundary = 0;
    for (std::size_t i = 0; i < model_.layers.size(); ++i)
      if (stages[0][i] > 0) boundary = std::max(boundary, model_.layers[i].act_out);
    const std::int64_t bytes = lay.micro_batch * boundary * elem_;
    const std::int64_t share = bytes / lay.tp;
    const int stride = lay.dp * lay.tp;
    const std::int64_t count = lay.micro_batches * lay.virtual_stages;
    std::vector<CommKey> keys{{Collective::broadcast, share, 0, stride, 2}};
    const bool gather = lay.tp > 1 && !lay.sequence_parallel;
    if (gather) keys.emplace_back(Collective::all_gather, bytes, 0, 1, lay.tp);
    cost_.prefetch(keys);
    for (const char* phase : {"forward", "backward"}) {
      CollectiveUse u =
          use(Collective::broadcast, GroupKind::pipeline, 2, stride, share, count, phase);
      std::tie(u.time, u.algorithm) = cost_.best(Collective::broadcast, share, 0, stride, 2);
      out.push_back(u);
      if (gather) {
        CollectiveUse g =
            use(Collective::all_gather, GroupKind::tensor_parallel, lay.tp, 1, bytes, count, phase);
        std::tie(g.time, g.algorithm) = cost_.best(Collective::all_gather, bytes, 0, 1, lay.tp);
        out.push_back(g);
      }
    }
    return out;
  }

  Plan new_plan(const Layout& lay, const std::vector<std::vector<std::int64_t>>& stages) {
    Plan plan;
    plan.layout = lay;
    plan.bubble = lay.pp > 1 ? static_cast<double>(lay.pp - 1) /
                                   static_cast<double>(lay.virtual_stages * lay.micro_batches)
                             : 0.0;
    plan.pipeline = pipeline_uses(lay, stages);
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
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
    }
    return plan;
  }

  // Each layer's best choice for the step, then (if memory is short) greedy
  // moves to choices that save the most memory per second of added time.
  std::pair<Plan, Plan> plan_layout(const Layout& lay) {
    const auto stages = stage_instances(lay.pp);
    Plan plan = new_plan(lay, stages);
    std::vector<std::vector<Candidate>> cands;
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      cands.push_back(candidates(i, lay));
      set_choice(plan, i, cands.back().front());
    }
    evaluate(plan, stages);
    // Per layer, the choice with the shortest step; one within 1% of it
    // that comes earlier (simpler, less traffic per micro-batch) wins, so
    // equal-volume ZeRO-1 never displaces plain data parallelism on noise.
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      std::vector<double> steps;
      for (const Candidate& c : cands[i]) {
        Plan trial = plan;
        set_choice(trial, i, c);
        evaluate(trial, stages);
        steps.push_back(trial.step_time());
      }
      const double best = *std::min_element(steps.begin(), steps.end());
      for (std::size_t k = 0; k < steps.size(); ++k)
        if (steps[k] <= best * 1.01 + 1e-12) {
          set_choice(plan, i, cands[i][k]);
          break;
        }
      evaluate(plan, stages);
    }
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
      return saved <= 0 ? std::nullopt
                        : std::optional(std::pair{
                              std::max(0.0, trial.step_time() - plan.step_time()) / saved, -saved});
    })) {
    }
    // The greedy moves can overshoot: a cheap early move (a small layer to
    // ZeRO) may not be needed once a later one (the large blocks) has made
    // room. Take back, the biggest saving of time first, every move whose
    // faster choice still fits.
    while (plan.fits && apply_best_move([&](const Plan& trial) {
             const double gain = plan.step_time() - trial.step_time();
             return trial.fits && gain > 0 ? std::optional(std::pair{-gain, 0.0}) : std::nullopt;
           })) {
    }
    return {plan, cheapest};
  }

  // A lower bound of a layout's step and memory without simulating: every
  // layer split as far as it can be; the memory of every layer at its
  // smallest choice (ZeRO-3). Communication: none, except without pipelining
  // when gradient reductions are not overlapped (--overlap without grad):
  // then every choice of a layer with weights but fc_split reduces its
  // gradients over the data-parallel group at least once per step, exposed,
  // and each such reduction takes at least reduction_bound().
  std::pair<double, double> bounds(const Layout& lay) {
    const auto stages = stage_instances(lay.pp);
    Plan plan = new_plan(lay, stages);
    plan.pipeline.clear();
    double reductions = 0;
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      const std::vector<Choice> cs = choices(l, lay);
      const bool fc = cs.back().strategy == Strategy::fc_split;
      const Choice& c = fc ? cs[cs.size() - 2] : cs.back();
      Candidate cand{c, 0, {}, compute_of(i, lay, c)};
      set_choice(plan, i, cand);
      if (lay.pp == 1 && lay.dp > 1 && !opts_.step.overlap_grad_reduce && !fc && l.params > 0) {
        const std::int64_t t = c.strategy == Strategy::tensor_parallel ? lay.tp : 1;
        reductions += cost_.reduction_bound(l.params * elem_ / t * l.repeat, lay.tp, lay.dp);
      }
    }
    evaluate(plan, stages);
    return {plan.step_time() + reductions, plan.memory.total()};
  }

  // Whether every plan without pipelining that fits shards some layer's
  // weights with ZeRO-3: at each tensor-parallel degree, the 16-bit weights
  // that no other choice shards (those of every layer without fc_split,
  // split over the tp ranks where tensor parallelism splits them) are alone
  // more than the usable memory.
  bool weights_need_zero3(const std::vector<int>& tps) const {
    for (int tp : tps) {
      double bytes = 0;
      for (const Layer& l : model_.layers) {
        if (l.kind == LayerKind::linear && !is_head(l)) continue;  // fc_split shards it
        const double t = tp > 1 && splits_over_tp(l) ? tp : 1;
        bytes += static_cast<double>(l.params) * static_cast<double>(l.repeat) * elem_ / t;
      }
      if (bytes <= usable_) return false;
    }
    return true;
  }

  std::vector<std::int64_t> micro_batch_options(std::int64_t per_rank) const {
    if (opts_.micro_batch > 0) {
      if (per_rank % opts_.micro_batch != 0) return {};
      return {opts_.micro_batch};
    }
    // The whole per-rank batch, and smaller powers-of-two micro-batches
    // that trade activation memory for more micro-batches.
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
      if (opts_.batch % (static_cast<std::int64_t>(d) * b) != 0) continue;
      if (pp > 1 && (dpn <= 0 || (tp * d) % dpn != 0)) continue;
      return d;
    }
    return 0;
  }

  // Virtual stages for `pp` stages and m micro-batches: 1, and every v > 1
  // that divides each stage's blocks, when m is a multiple of pp (Megatron's
  // interleaved schedule needs both).
  std::vector<int> virtual_options(int pp, std::int64_t m) const {
    std::vector<int> out{1};
    if (pp <= 1 || main_ < 0 || m % pp != 0) return out;
    const std::int64_t r = model_.layers[static_cast<std::size_t>(main_)].repeat;
    if (r % pp != 0) return out;
    const std::int64_t per = r / pp;
    for (std::int64_t v = 2; v <= per; ++v)
      if (per % v == 0) out.push_back(static_cast<int>(v));
    return out;
  }

  bool has_blocks() const {
    for (const Layer& l : model_.layers)
      if (supports_tensor_parallel(l.kind)) return true;
    return false;
  }

  // What a search has found so far (run's consider).
  struct SearchState {
    bool have_best = false, have_cheapest = false, have_any = false, have_simple = false;
    Plan best_fit, least_memory;
    Plan best_simple;  // the fastest fitting plan without tensor or pipeline parallelism
    double least_bound = std::numeric_limits<double>::infinity();
    Layout least_layout;
  };

  // The layouts of these tp and pp degrees, cheapest bound first; a
  // layout whose bound cannot beat the best plan so far is not priced.
  void consider(const std::vector<std::pair<int, int>>& degrees, int dpn,
                const std::vector<Recompute>& rcs, SearchState& st, PlanResult& res) {
    struct Cand {
      double bound;
      Layout lay;
    };
    std::vector<Cand> candidates;
    for (const auto& [tp, pp] : degrees) {
      const int d = data_parallel_degree(tp, pp, dpn);
      if (d == 0) continue;
      const std::int64_t per_rank = opts_.batch / d;
      for (std::int64_t b : micro_batch_options(per_rank))
        for (int v : virtual_options(pp, per_rank / b))
          for (Recompute rc : rcs) {
            Layout lay{tp, pp, d, b, per_rank / b, v, rc, tp > 1};
            const auto [time, memory] = bounds(lay);
            st.have_any = true;
            if (memory < st.least_bound) {
              st.least_bound = memory;
              st.least_layout = lay;
            }
            if (memory > usable_) continue;
            candidates.push_back({time, lay});
          }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Cand& a, const Cand& b) { return a.bound < b.bound; });
    std::size_t done = 0;
    if (opts_.progress) opts_.progress->set_total(candidates.size());
    for (const Cand& c : candidates) {
      ++done;
      const bool simple = c.lay.tp == 1 && c.lay.pp == 1;
      const double bar = st.have_best ? st.best_fit.step_time() / (simple ? 1 - kLayoutMargin : 1)
                                      : std::numeric_limits<double>::infinity();
      if (opts_.prune && c.bound >= bar) continue;
      auto [plan, cheapest] = plan_layout(c.lay);
      ++res.layouts_priced;
      if (!st.have_cheapest || cheapest.step_time() < res.cheapest.step_time())
        res.cheapest = cheapest;
      st.have_cheapest = true;
      if (plan.fits && (!st.have_best || plan.step_time() < st.best_fit.step_time())) {
        st.best_fit = plan;
        st.have_best = true;
      }
      if (plan.fits && simple &&
          (!st.have_simple || plan.step_time() < st.best_simple.step_time())) {
        st.best_simple = plan;
        st.have_simple = true;
      }
      if (st.least_memory.layers.empty() || plan.memory.total() < st.least_memory.memory.total())
        st.least_memory = plan;
      if (opts_.progress)
        opts_.progress->update(done, std::to_string(res.layouts_priced) + " layouts priced, " +
                                         std::to_string(cost_.simulations()) + " simulations");
    }
  }

  PlanResult run(const Topology& topology) {
    PlanResult res;
    res.optimizer_bytes = opt_bytes_;
    res.usable_memory = usable_;
    res.tokens_per_sample = tokens_;
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
    if (!opts_.search) {
      // --no-search: the given layout is the plan.
      if (!opts_.user)
        throw UsageError("--no-search: give the layout to price (--tp --pp --dp ...)");
      res.plan = user_plan();
      res.fits = res.plan.fits;
      res.cheapest = res.plan;
      res.layouts_priced = 1;
      explain(res);
      res.simulations = cost_.simulations();
      return res;
    }
    std::vector<Recompute> rcs;
    if (opts_.recompute)
      rcs = {*opts_.recompute};
    else if (has_blocks())
      rcs = {Recompute::none, Recompute::selective, Recompute::full};
    else
      rcs = {Recompute::none};

    SearchState st;
    const auto consider_all = [&](const std::vector<std::pair<int, int>>& degrees) {
      consider(degrees, dpn, rcs, st, res);
    };
    std::vector<std::pair<int, int>> flat;
    flat.reserve(tps.size());
    for (int tp : tps) flat.emplace_back(tp, 1);
    std::vector<std::pair<int, int>> piped;
    for (int tp : tps)
      for (int pp : pps) piped.emplace_back(tp, pp);
    // Pipelining is for models that do not otherwise fit: when no plan fits
    // without ZeRO-3 sharding the weights themselves (whose gathers every
    // micro-batch cost what pipelining avoids). Pipeline plans then compete
    // on step time. When the weights alone show it, all layouts compete in
    // one pass, cheapest bound first, so that pipelined plans bound out the
    // layouts without pipelining; else those go first, to see.
    if (opts_.prune && weights_need_zero3(tps)) {
      std::vector<std::pair<int, int>> all = flat;
      all.insert(all.end(), piped.begin(), piped.end());
      consider_all(all);
    } else {
      consider_all(flat);
      bool needs_zero3 = !st.have_best;
      if (st.have_best)
        for (const LayerPlan& lp : st.best_fit.layers)
          needs_zero3 = needs_zero3 || lp.choice.zero_stage == 3;
      if (needs_zero3) consider_all(piped);
    }
    if (!st.have_any)
      throw UsageError("--micro-batch " + std::to_string(opts_.micro_batch) +
                       " divides no per-rank batch of --batch " + std::to_string(opts_.batch) +
                       " over up to " + std::to_string(n) + " data-parallel ranks");
    if (!st.have_cheapest) {
      // Nothing fits even at its least memory: price the smallest layout.
      auto [plan, cheapest] = plan_layout(st.least_layout);
      ++res.layouts_priced;
      res.cheapest = cheapest;
      st.least_memory = plan;
    }
    // Tensor and pipeline parallelism only where they are needed to fit or
    // clearly lower the step time: a gain within kLayoutMargin of plain
    // data parallelism is not worth their complexity.
    if (st.have_simple &&
        st.best_fit.step_time() > st.best_simple.step_time() * (1 - kLayoutMargin))
      st.best_fit = st.best_simple;
    if (!st.have_best && dpn == 0)
      throw UsageError("--topology " + opts_.topology_file +
                       ": nothing fits without tensor or pipeline parallelism, which need the "
                       "devices per node, and the topology has no nodes (no devices_per_node, "
                       "no \"host\" on its endpoints); give --devices-per-node N");
    res.fits = st.have_best;
    res.plan = st.have_best ? st.best_fit : st.least_memory;
    res.simple_step_time = st.have_simple ? st.best_simple.step_time() : 0;
    res.simple_ranks = st.have_simple ? st.best_simple.layout.dp : 0;
    uniform(res);
    rows_per_rank(res.plan);
    explain(res);
    if (opts_.user) price_user(res);
    res.simulations = cost_.simulations();
    return res;
  }

  // Every layer with the same strategy, tp = pp = 1, on the data-parallel
  // degree such plans use, with the chosen plan's micro-batch (or the largest
  // divisor of the per-rank batch below it) and recomputation, so rows and
  // plan compare. A row that does not fit is not priced: its memory says
  // why it cannot run, and its collectives over every rank (a ring over
  // 3,072 ranks is a minute of simulation) would time a step that never
  // happens.
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
        const Layout lay{1, 1, d, b, per_rank / b, 1, res.plan.layout.recompute, false};
        const auto stages = stage_instances(1);
        const Choice c{static_cast<Strategy>(z), z};
        const auto build = [&](bool price) {
          Plan plan = new_plan(lay, stages);
          for (std::size_t i = 0; i < model_.layers.size(); ++i)
            for (Candidate& cand : candidates(i, lay, price))
              if (cand.choice == c || d == 1 || model_.layers[i].params == 0) {
                set_choice(plan, i, cand);
                break;
              }
          evaluate(plan, stages);
          return plan;
        };
        Plan plan = build(false);
        alt.valid = true;
        alt.layout = plan.layout;
        alt.memory = plan.memory;
        alt.fits = plan.fits;
        if (plan.fits) {
          plan = build(true);
          alt.priced = true;
          alt.time = plan.comm_time;
          alt.step_time = plan.step_time();
        }
      }
      res.uniform.push_back(alt);
    }
  }

  // Rows of the final plan read per rank: with pipelining a layer's figures
  // are scaled to the instances of its fullest stage (the totals already are).
  void rows_per_rank(Plan& plan) const {
    const Layout& lay = plan.layout;
    const auto stages = stage_instances(lay.pp);
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      LayerPlan& lp = plan.layers[i];
      std::int64_t k = 0;
      int at = 0;
      for (int s = 0; s < lay.pp; ++s)
        if (stages[s][i] > k) {
          k = stages[s][i];
          at = s;
        }
      lp.instances_per_rank = k;
      const double f = static_cast<double>(k) / static_cast<double>(lp.repeat);
      lp.memory.activations = static_cast<double>(k) * lp.compute.act_bytes * in_flight(lay, at);
      if (lay.pp == 1) continue;
      lp.time *= f;
      lp.memory.params *= f;
      lp.memory.grads *= f;
      lp.memory.optimizer *= f;
      for (CollectiveUse& u : lp.collectives) u.count = u.count / lp.repeat * k;
    }
  }

  // --tp --pp --dp --zero --micro-batch --virtual-stages --recompute
  // --sequence-parallel: the user's layout priced as given.
  Plan user_plan() {
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
    const std::int64_t m = per_rank / b;
    if (u.virtual_stages > 1) {
      if (u.pp <= 1)
        throw UsageError("--virtual-stages " + std::to_string(u.virtual_stages) +
                         ": interleaving needs pipeline stages (--pp > 1)");
      const std::int64_t r = main_ >= 0 ? model_.layers[static_cast<std::size_t>(main_)].repeat : 0;
      if (r % (static_cast<std::int64_t>(u.pp) * u.virtual_stages) != 0)
        throw UsageError("--virtual-stages " + std::to_string(u.virtual_stages) + ": the " +
                         std::to_string(r) + " repeated layers do not split into --pp " +
                         std::to_string(u.pp) + " x " + std::to_string(u.virtual_stages) +
                         " equal chunks");
      if (m % u.pp != 0)
        throw UsageError("--virtual-stages " + std::to_string(u.virtual_stages) +
                         ": the interleaved schedule needs the " + std::to_string(m) +
                         " micro-batches per step to be a multiple of --pp " +
                         std::to_string(u.pp));
    }
    const Layout lay{
        u.tp, u.pp, d, b, m, u.virtual_stages, u.recompute, u.sequence_parallel && u.tp > 1};
    const int z = d > 1 ? u.zero : 0;
    const auto stages = stage_instances(lay.pp);
    Plan plan = new_plan(lay, stages);
    for (std::size_t i = 0; i < model_.layers.size(); ++i) {
      const Layer& l = model_.layers[i];
      Choice c{static_cast<Strategy>(z), z};
      if (lay.tp > 1 && splits_over_tp(l)) c = {Strategy::tensor_parallel, z};
      Candidate cand{c, 0, layer_collectives(l, c, lay, elem_, bucket_bytes(lay)),
                     compute_of(i, lay, c)};
      std::vector<CommKey> keys;
      for (const CollectiveUse& x : cand.uses)
        keys.emplace_back(x.collective, x.bytes, 0, x.stride, x.group_size);
      cost_.prefetch(keys);
      for (CollectiveUse& x : cand.uses) {
        const auto [t, algo] = cost_.best(x.collective, x.bytes, 0, x.stride, x.group_size);
        x.time = t;
        x.algorithm = algo;
        cand.time += t * static_cast<double>(x.count);
      }
      set_choice(plan, i, cand);
      plan.layers[i].reason = "as given";
    }
    evaluate(plan, stages);
    rows_per_rank(plan);
    return plan;
  }

  // The user's layout beside the planner's choice, and what separates them.
  void price_user(PlanResult& res) {
    Plan plan = user_plan();
    const Layout& lay = plan.layout;
    const int n = opts_.ranks;
    // The difference, component by component, then per layer.
    const Plan& best = res.plan;
    std::vector<std::string>& out = res.user_diff;
    const double dt = plan.step_time() - best.step_time();
    char buf[512];
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
    part("compute", plan.step.compute, best.step.compute);
    part("communication", plan.comm_time, best.comm_time);
    part("bubble", plan.bubble_time, best.bubble_time);
    part("optimizer", plan.step.optimizer, best.step.optimizer);
    out.push_back(line);
    std::snprintf(buf, sizeof buf, "memory per rank %.2f GB against the choice's %.2f GB (%s)",
                  plan.memory.total() / kGB, best.memory.total() / kGB,
                  plan.fits                                    ? "fits"
                  : plan.memory.total() <= opts_.device_memory ? "does not fit: it leaves less "
                                                                 "than the --memory-reserve free"
                                                               : "does not fit");
    out.emplace_back(buf);
    if (dt < -1e-12 && plan.fits) {
      const bool yours_parallel = lay.tp > 1 || lay.pp > 1;
      const bool choice_plain = best.layout.tp == 1 && best.layout.pp == 1;
      if (yours_parallel && choice_plain && -dt < kLayoutMargin * best.step_time())
        out.emplace_back(
            "not chosen though faster: the planner keeps plain data parallelism unless tensor or "
            "pipeline parallelism shortens the step by more than 5% (docs/PLANNER.md, \"Search\")");
      else if (lay.pp > 1 && best.layout.pp == 1)
        out.emplace_back(
            "not chosen though faster: the planner tries pipelines only when no plan without "
            "them fits unless ZeRO-3 shards the weights (docs/PLANNER.md, \"Search\")");
      else
        out.emplace_back(
            "not chosen though faster: the planner's search does not try this layout (its "
            "choices per layer, micro-batch or virtual stages; docs/PLANNER.md, \"Search\")");
    }
    const Layout& bl = best.layout;
    if (lay.tp != bl.tp || lay.pp != bl.pp || lay.dp != bl.dp ||
        lay.micro_batch != bl.micro_batch || lay.virtual_stages != bl.virtual_stages ||
        lay.recompute != bl.recompute)
      out.push_back(
          "layout: yours tensor_parallel " + std::to_string(lay.tp) + " x pipeline " +
          std::to_string(lay.pp) + " x data_parallel " + std::to_string(lay.dp) + ", micro-batch " +
          std::to_string(lay.micro_batch) + " x " + std::to_string(lay.micro_batches) +
          ", virtual stages " + std::to_string(lay.virtual_stages) + ", recompute " +
          std::string(to_string(lay.recompute)) + "; the choice's " + std::to_string(bl.tp) +
          " x " + std::to_string(bl.pp) + " x " + std::to_string(bl.dp) + ", micro-batch " +
          std::to_string(bl.micro_batch) + " x " + std::to_string(bl.micro_batches) +
          ", virtual stages " + std::to_string(bl.virtual_stages) + ", recompute " +
          std::string(to_string(bl.recompute)));
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
      auto cs = candidates(i, lay);
      // The cheapest alternative of another strategy, for the comparison.
      const Candidate* other = nullptr;
      for (const Candidate& c : cs)
        if (!(c.choice == lp.choice) && (!other || c.time < other->time)) other = &c;
      const Choice cheapest_choice = res.cheapest.layers.size() == plan.layers.size() &&
                                             res.cheapest.layout.tp == lay.tp &&
                                             res.cheapest.layout.pp == lay.pp &&
                                             res.cheapest.layout.micro_batch == lay.micro_batch &&
                                             res.cheapest.layout.recompute == lay.recompute
                                         ? res.cheapest.layers[i].choice
                                         : lp.choice;
      std::string r;
      if (lp.choice.strategy == Strategy::fc_split)
        r = "split: gathering activations (" + ms(lp.time) + ") instead of all_reducing " +
            std::to_string(lp.params) + " weights";
      else if (lp.choice.strategy == Strategy::tensor_parallel)
        r = "Megatron split over " + std::to_string(lay.tp) + " GPUs of a node (" + ms(lp.time) +
            ")";
      else
        r = std::string(to_string(lp.choice.strategy)) + " " + ms(lp.time);
      const double per_rank = static_cast<double>(lp.instances_per_rank) / lp.repeat;
      if (other)
        r += "; " + choice_name(other->choice) + " would take " + ms(other->time * per_rank);
      if (!(cheapest_choice == lp.choice) && !res.cheapest.fits)
        r += "; " + choice_name(cheapest_choice) + " (no slower) was given up to fit the memory";
      lp.reason = r;
    }
    std::string v;
    if (!opts_.search) {
      v = std::string("as given (--no-search): ") + (res.fits ? "fits, " : "DOES NOT FIT, ") +
          gb(plan.memory.total()) + " per rank of " + gb(usable_) + " usable, " +
          ms(plan.step_time()) + " per step";
    } else if (res.fits) {
      v = "fits: " + gb(plan.memory.total()) + " per rank of " + gb(usable_) + " usable, " +
          ms(plan.step_time()) + " per step (" + ms(plan.comm_time) + " of exposed communication" +
          (plan.layout.pp > 1 ? " and " + ms(plan.bubble_time) + " of pipeline bubble)"
                              : std::string(")"));
      // A faster plan that fits was set aside by the kLayoutMargin rule (its
      // tensor or pipeline parallelism gains too little), not by memory.
      if (res.cheapest.step_time() < plan.step_time() - 1e-12 && res.cheapest.fits)
        v += "; the fastest plan (" + ms(res.cheapest.step_time()) + ", tensor_parallel " +
             std::to_string(res.cheapest.layout.tp) + " x pipeline " +
             std::to_string(res.cheapest.layout.pp) + ") fits, but gains less than " +
             std::to_string(static_cast<int>(kLayoutMargin * 100)) +
             "% over plain data parallelism, which the planner then keeps";
      else if (res.cheapest.step_time() < plan.step_time() - 1e-12)
        v += "; the fastest plan (" + ms(res.cheapest.step_time()) + ") needs " +
             gb(res.cheapest.memory.total()) + " per rank and does not fit";
      if (lay.tp > 1 || lay.pp > 1)
        v += res.simple_step_time > 0 ? "; tensor/pipeline parallelism lowers the step from " +
                                            ms(res.simple_step_time) + " (data parallel on " +
                                            std::to_string(res.simple_ranks) + " ranks)"
                                      : "; tensor/pipeline parallelism is needed to fit";
    } else {
      v = "NOTHING FITS: the smallest plan found needs " + gb(plan.memory.total()) +
          " per rank, more than the " + gb(usable_) +
          " usable of the device memory; use more ranks, a smaller --micro-batch, "
          "--recompute full or a larger --device-memory";
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
  ComputeModel cm_;
  double usable_ = 0;
  int main_ = -1;
  int embed_ = -1;
  int tied_head_ = -1;
  std::int64_t tokens_ = 0;
  std::map<std::tuple<std::size_t, int, bool, std::int64_t, int, Recompute>, LayerCompute>
      compute_cache_;
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

// The batch bounded as the model file's sizes are (64-bit integers): a
// collective's bytes are samples x a layer's activation elements per sample
// x bytes per element, and its count per step up to samples x repeat x the
// layer's tensor-parallel all_reduces per micro-batch. A
// batch whose products overflow priced nothing it could say (issue 40: a
// division by a wrapped product died with SIGFPE, 10^12 samples printed steps
// of 10^18 ms that "fit"), so it is refused, naming the layer that bounds it.
void check_batch_fits(const Model& model, const PlanOptions& opts) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t elem = size_of(opts.dtype);
  std::int64_t limit = kMax / 2;  // micro-batch candidates double up to the batch
  std::string why = "micro-batch candidates (powers of two) up to it overflow";
  for (const Layer& l : model.layers) {
    const std::int64_t act = std::max(l.act_in, l.act_out);
    if (act > 0 && kMax / act / elem < limit) {
      limit = kMax / act / elem;
      why = "layer '" + l.name + "' keeps " + std::to_string(act) + " elements of " +
            std::to_string(elem) + " bytes per sample, and a collective's bytes (samples x " +
            std::to_string(act * elem) + ") overflow";
    }
    const std::int64_t per_sample_count =
        std::max<std::int64_t>(1, l.repeat) * std::max(1, l.tp_all_reduces);
    if (kMax / per_sample_count < limit) {
      limit = kMax / per_sample_count;
      why = "layer '" + l.name + "' repeats " + std::to_string(l.repeat) +
            " times, and its collectives per step overflow";
    }
  }
  if (opts.batch > limit)
    throw UsageError("--batch " + std::to_string(opts.batch) + ": at most " +
                     std::to_string(limit) + " samples for " + model.name + " in " +
                     std::string(to_string(opts.dtype)) + ": " + why +
                     " 64-bit integers beyond it");
}

Json step_json(const Plan& p, const PlanResult& res, const PlanOptions& opts) {
  const StepBreakdown& b = p.step;
  const Throughput th = throughput(p, res, opts);
  Json j;
  j["step_time_us"] = p.step_time() * 1e6;
  j["compute_us"] = b.compute * 1e6;
  j["exposed_us"] = {
      {"tensor_parallel", b.tp * 1e6}, {"pipeline", b.pp * 1e6}, {"data_parallel", b.dp * 1e6}};
  j["hidden_us"] = {{"tensor_parallel", b.hidden_tp * 1e6},
                    {"pipeline", b.hidden_pp * 1e6},
                    {"data_parallel", b.hidden_dp * 1e6}};
  j["bubble_us"] = b.bubble * 1e6;
  j["optimizer_us"] = b.optimizer * 1e6;
  j["samples_per_s"] = th.samples_per_s;
  if (res.tokens_per_sample > 0) j["tokens_per_s"] = th.tokens_per_s;
  j["model_flops"] = p.model_flops;
  j["hardware_flops"] = p.hardware_flops;
  j["model_tflops_per_gpu"] = th.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = th.hardware_tflops_per_gpu;
  if (th.mfu > 0)
    j["mfu"] = th.mfu;
  else
    j["mfu"] = nullptr;
  return j;
}

Json layout_json(const Layout& lay, const Plan& p) {
  return {{"tensor_parallel", lay.tp},
          {"pipeline_parallel", lay.pp},
          {"data_parallel", lay.dp},
          {"micro_batch", lay.micro_batch},
          {"micro_batches", lay.micro_batches},
          {"virtual_stages", lay.virtual_stages},
          {"recompute", to_string(lay.recompute)},
          {"sequence_parallel", lay.sequence_parallel},
          {"pipeline_bubble", p.bubble},
          {"ranks_used", p.ranks_used()}};
}

}  // namespace

bool gpu_topology(const Topology& topology, int ranks) {
  if (ranks <= 0) return false;
  for (int r = 0; r < ranks; ++r)
    if (!topology.endpoint(r).pipelined) return false;
  return true;
}

Throughput throughput(const Plan& plan, const PlanResult& res, const PlanOptions& opts) {
  Throughput t;
  const double step = plan.step_time();
  if (!(step > 0)) return t;
  const double gpus = plan.ranks_used();
  t.samples_per_s = static_cast<double>(opts.batch) / step;
  t.tokens_per_s = t.samples_per_s * static_cast<double>(res.tokens_per_sample);
  t.model_tflops_per_gpu = plan.model_flops / step / gpus / 1e12;
  t.hardware_tflops_per_gpu = plan.hardware_flops / step / gpus / 1e12;
  if (res.peak_flops > 0) t.mfu = t.model_tflops_per_gpu * 1e12 / res.peak_flops;
  return t;
}

PlanResult make_plan(const Model& model, const Topology& topology, const PlanOptions& opts) {
  if (opts.ranks < 1 || opts.ranks > topology.num_ranks())
    throw UsageError("--ranks " + std::to_string(opts.ranks) + ": the topology has " +
                     std::to_string(topology.num_ranks()) + " ranks");
  if (opts.batch < 1) throw UsageError("--batch " + std::to_string(opts.batch) + ": must be >= 1");
  if (opts.micro_batch < 0)
    throw UsageError("--micro-batch " + std::to_string(opts.micro_batch) + ": must be >= 1");
  if (!(opts.device_memory > 0)) throw UsageError("--device-memory: must be > 0");
  check_batch_fits(model, opts);
  const double reserve =
      opts.memory_reserve >= 0 ? opts.memory_reserve : default_memory_reserve(opts.device_memory);
  if (!(reserve < opts.device_memory))
    throw UsageError("--memory-reserve: " + gb(reserve) + " leaves nothing of the " +
                     gb(opts.device_memory) + " device memory");
  Planner planner(model, topology, opts);
  PlanResult res = planner.run(topology);
  if (opts.device_tflops > 0)
    res.compute_source = "--device-tflops " + Json(opts.device_tflops).dump();
  else if (opts.device)
    res.compute_source = opts.device->name;
  else
    res.compute_source = "no device: 400 TFLOP/s flat";
  res.peak_flops = opts.device ? opts.device->peak_for(opts.dtype) : 0;
  return res;
}

namespace {

// The plan's inputs: model, cluster, batch, device and step options.
void plan_inputs_json(Json& j, const PlanResult& res, const Model& model, const Topology& topology,
                      const PlanOptions& opts) {
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
  j["memory_reserve_bytes"] = opts.device_memory - res.usable_memory;
  j["usable_memory_bytes"] = res.usable_memory;
  if (opts.device)
    j["device"] = {{"name", opts.device->name},
                   {"file", opts.device->file},
                   {"peak_flops", opts.device->peak_for(opts.dtype)},
                   {"matmul_efficiency", opts.device->matmul_efficiency},
                   {"memory_bandwidth", opts.device->memory_bandwidth},
                   {"memory_efficiency", opts.device->memory_efficiency}};
  else
    j["device"] = nullptr;
  if (opts.device_tflops > 0)
    j["device_tflops"] = opts.device_tflops;
  else
    j["device_tflops"] = nullptr;
  j["step_options"] = {{"attention", to_string(opts.step.attention)},
                       {"overlap_grad_reduce", opts.step.overlap_grad_reduce},
                       {"overlap_param_gather", opts.step.overlap_param_gather},
                       {"overlap_p2p", opts.step.overlap_p2p},
                       {"overlap_tp", opts.step.overlap_tp},
                       {"fused_grad_accumulation", opts.step.fused_grad_accumulation}};
}

// A collective of the plan, with NCCL's choice explained (--explain).
Json explained_use_json(const CollectiveUse& u, const Topology& topology, const PlanOptions& opts) {
  Json cj = use_json(u);
  if (opts.explain && opts.nccl) {
    Json x = nccl_explain_json(u, topology, opts);
    if (!x.is_null()) cj["nccl_explain"] = std::move(x);
  }
  return cj;
}

// Each layer of the plan: its strategy, collectives, times and memory.
Json layers_json(const Plan& plan, const Topology& topology, const PlanOptions& opts) {
  const Layout& lay = plan.layout;
  Json layers = Json::array();
  for (const LayerPlan& lp : plan.layers) {
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
    for (const CollectiveUse& u : lp.collectives)
      cs.push_back(explained_use_json(u, topology, opts));
    l["collectives"] = cs;
    l["time_us"] = lp.time * 1e6;
    l["compute_us"] = {{"forward", lp.compute.fwd * 1e6},
                       {"backward", lp.compute.bwd * 1e6},
                       {"recompute", lp.compute.recompute * 1e6},
                       {"matrix_products", lp.compute.gemm * 1e6},
                       {"memory_bound", lp.compute.elementwise * 1e6},
                       {"per", "instance and micro-batch"}};
    l["memory"] = memory_json(lp.memory);
    l["reason"] = lp.reason;
    layers.push_back(l);
  }
  return layers;
}

// The uniform strategies the plan was compared with.
Json uniform_json(const PlanResult& res) {
  Json uni = Json::array();
  for (const Alternative& a : res.uniform) {
    Json u;
    u["strategy"] = a.name;
    u["valid"] = a.valid;
    if (a.valid) {
      u["data_parallel"] = a.layout.dp;
      u["micro_batch"] = a.layout.micro_batch;
      u["micro_batches"] = a.layout.micro_batches;
      if (a.priced) {
        u["step_time_us"] = a.step_time * 1e6;
        u["time_us"] = a.time * 1e6;
      }
      u["memory"] = memory_json(a.memory);
      u["fits"] = a.fits;
    }
    uni.push_back(u);
  }
  return uni;
}

// The layout the user gave (--tp, --pp, ...), priced as given.
Json user_layout_json(const PlanResult& res, const PlanOptions& opts) {
  const Plan& p = *res.user;
  Json layers_u = Json::array();
  for (const LayerPlan& lp : p.layers)
    layers_u.push_back({{"name", lp.name},
                        {"strategy", to_string(lp.choice.strategy)},
                        {"zero_stage", lp.choice.zero_stage},
                        {"time_us", lp.time * 1e6},
                        {"memory", memory_json(lp.memory)}});
  Json ul = layout_json(p.layout, p);
  ul["zero_stage"] = opts.user->zero;
  return {{"layout", ul},
          {"layers", layers_u},
          {"step", step_json(p, res, opts)},
          {"totals",
           {{"step_time_us", p.step_time() * 1e6},
            {"comm_time_us", p.comm_time * 1e6},
            {"bubble_time_us", p.bubble_time * 1e6},
            {"compute_time_us", p.compute_time * 1e6},
            {"memory", memory_json(p.memory)},
            {"fits", p.fits}}},
          {"difference", res.user_diff}};
}

}  // namespace

Json plan_json(const PlanResult& res, const Model& model, const Topology& topology,
               const PlanOptions& opts) {
  Json j;
  plan_inputs_json(j, res, model, topology, opts);
  j["layout"] = layout_json(res.plan.layout, res.plan);
  j["layers"] = layers_json(res.plan, topology, opts);
  Json pipe = Json::array();
  for (const CollectiveUse& u : res.plan.pipeline)
    pipe.push_back(explained_use_json(u, topology, opts));
  j["pipeline"] = pipe;
  j["step"] = step_json(res.plan, res, opts);
  j["totals"] = {{"step_time_us", res.plan.step_time() * 1e6},
                 {"time_us", res.plan.time * 1e6},
                 {"comm_time_us", res.plan.comm_time * 1e6},
                 {"bubble_time_us", res.plan.bubble_time * 1e6},
                 {"compute_time_us", res.plan.compute_time * 1e6},
                 {"memory", memory_json(res.plan.memory)},
                 {"fits", res.fits}};
  if (opts.measured_step > 0) {
    const double pred = res.user ? res.user->step_time() : res.plan.step_time();
    j["measured"] = {{"step_time_us", opts.measured_step * 1e6},
                     {"of", res.user ? "user_layout" : "plan"},
                     {"predicted_step_time_us", pred * 1e6},
                     {"error", (pred - opts.measured_step) / opts.measured_step}};
  }
  j["cheapest"] = {{"step_time_us", res.cheapest.step_time() * 1e6},
                   {"time_us", res.cheapest.time * 1e6},
                   {"memory_total_bytes", res.cheapest.memory.total()},
                   {"fits", res.cheapest.fits}};
  j["uniform"] = uniform_json(res);
  if (res.user) j["user_layout"] = user_layout_json(res, opts);
  j["verdict"] = res.verdict;
  j["simulations"] = res.simulations;
  j["layouts_priced"] = res.layouts_priced;
  return j;
}

namespace {

std::string total_lines(const char* lead, const Plan& plan, const PlanResult& res,
                        const PlanOptions& opts) {
  char buf[768];
  const Memory& m = plan.memory;
  const StepBreakdown& b = plan.step;
  std::string out;
  std::snprintf(buf, sizeof buf,
                "%sstep %.3f ms = compute %.3f + exposed TP %.3f + PP %.3f + DP %.3f + bubble %.3f "
                "+ optimizer %.3f (hidden: TP %.3f, PP %.3f, DP %.3f)\n",
                lead, plan.step_time() * 1e3, b.compute * 1e3, b.tp * 1e3, b.pp * 1e3, b.dp * 1e3,
                b.bubble * 1e3, b.optimizer * 1e3, b.hidden_tp * 1e3, b.hidden_pp * 1e3,
                b.hidden_dp * 1e3);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "%smemory per rank %.2f GB (params %.2f, grads %.2f, optimizer %.2f, activations "
                "%.2f) of %.2f GB usable (%.2f GB less a reserve of %.2f)\n",
                std::string(lead).find("total") != std::string::npos ? "# " : lead, m.total() / kGB,
                m.params / kGB, m.grads / kGB, m.optimizer / kGB, m.activations / kGB,
                res.usable_memory / kGB, opts.device_memory / kGB,
                (opts.device_memory - res.usable_memory) / kGB);
  out += buf;
  const Throughput th = throughput(plan, res, opts);
  std::string tp;
  if (res.tokens_per_sample > 0) {
    std::snprintf(buf, sizeof buf, "%.0f tokens/s", th.tokens_per_s);
    tp = buf;
  } else {
    std::snprintf(buf, sizeof buf, "%.1f samples/s", th.samples_per_s);
    tp = buf;
  }
  std::string mfu;
  if (th.mfu > 0) {
    std::snprintf(buf, sizeof buf, ", MFU %.1f%% of %.0f TFLOP/s", th.mfu * 100,
                  res.peak_flops / 1e12);
    mfu = buf;
  }
  std::snprintf(buf, sizeof buf,
                "%sthroughput: %s; %.1f TFLOP/s per GPU (model FLOPs, Megatron-LM's count), %.1f "
                "with recomputation (SC21's count)%s\n",
                std::string(lead).find("total") != std::string::npos ? "# " : lead, tp.c_str(),
                th.model_tflops_per_gpu, th.hardware_tflops_per_gpu, mfu.c_str());
  out += buf;
  return out;
}

std::string layout_text(const Layout& lay) {
  std::string s = "micro-batch " + std::to_string(lay.micro_batch) + " x " +
                  std::to_string(lay.micro_batches) + " per step";
  if (lay.virtual_stages > 1) s += ", " + std::to_string(lay.virtual_stages) + " virtual stages";
  s += ", recompute " + std::string(to_string(lay.recompute));
  if (lay.sequence_parallel) s += ", sequence parallel";
  return s;
}

}  // namespace

std::string format_plan(const PlanResult& res, const Model& model, const PlanOptions& opts) {
  std::string out;
  char buf[1024];
  const Layout& lay = res.plan.layout;
  std::snprintf(buf, sizeof buf, "# plan: %s (%.3f B params) on %d ranks (%s), batch %lld, %s\n",
                model.name.c_str(), model.total_params() / 1e9, opts.ranks,
                res.devices_per_node > 0
                    ? (std::to_string(res.devices_per_node) + " per node").c_str()
                    : "no nodes",
                static_cast<long long>(opts.batch), std::string(to_string(opts.dtype)).c_str());
  out += buf;
  if (opts.device) {
    const Device& d = *opts.device;
    std::snprintf(
        buf, sizeof buf,
        "# compute: %s (%s): %.0f TFLOP/s peak, matmul %.1f%% of it%s, HBM %.0f GB/s x "
        "%.3f; %s attention\n",
        d.name.c_str(), d.file.c_str(), d.peak_for(opts.dtype) / 1e12, d.matmul_efficiency * 100,
        opts.device_tflops > 0
            ? (" (replaced by --device-tflops " + Json(opts.device_tflops).dump() + ")").c_str()
            : "",
        d.memory_bandwidth / 1e9, d.memory_efficiency,
        std::string(to_string(opts.step.attention)).c_str());
  } else {
    std::snprintf(buf, sizeof buf,
                  "# compute: no device (--device FILE, or a \"device\" in the topology): matrix "
                  "products at %.0f TFLOP/s, memory-bound work not priced\n",
                  opts.device_tflops > 0 ? opts.device_tflops : 400.0);
  }
  out += buf;
  std::snprintf(buf, sizeof buf,
                "# layout: tensor_parallel %d x pipeline %d x data_parallel %d%s, %s%s\n", lay.tp,
                lay.pp, lay.dp,
                res.plan.ranks_used() < opts.ranks
                    ? (" (" + std::to_string(res.plan.ranks_used()) + " ranks used)").c_str()
                    : "",
                layout_text(lay).c_str(),
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
    std::snprintf(buf, sizeof buf, "pipeline       %s %s %s x%lld: %.3f ms\n", u.phase.c_str(),
                  u.collective == Collective::broadcast ? "send" : "all_gather",
                  format_bytes_for_plan(u.bytes).c_str(), static_cast<long long>(u.count),
                  u.time * u.count * 1e3);
    out += buf;
  }
  out += total_lines("# total: ", res.plan, res, opts);
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
    if (a.priced)
      std::snprintf(buf, sizeof buf,
                    "#   %-6s memory %10.2f GB  comm %12.3f ms  step %12.3f ms  fits\n",
                    a.name.c_str(), a.memory.total() / kGB, a.time * 1e3, a.step_time * 1e3);
    else
      std::snprintf(buf, sizeof buf, "#   %-6s memory %10.2f GB  does not fit (not priced)\n",
                    a.name.c_str(), a.memory.total() / kGB);
    out += buf;
  }
  if (res.user) {
    const Plan& p = *res.user;
    const UserLayout& u = *opts.user;
    std::snprintf(buf, sizeof buf,
                  "# your layout (--tp %d --pp %d --dp %d --zero %d --micro-batch %lld): %s%s\n",
                  p.layout.tp, p.layout.pp, p.layout.dp, u.zero,
                  static_cast<long long>(p.layout.micro_batch), layout_text(p.layout).c_str(),
                  p.layout.pp > 1
                      ? (", bubble " + std::to_string(p.bubble * 100).substr(0, 5) + "%").c_str()
                      : "");
    out += buf;
    out += total_lines("#   ", p, res, opts);
    for (const std::string& l : res.user_diff) out += "#   " + l + "\n";
  }
  if (opts.measured_step > 0) {
    const Plan& p = res.user ? *res.user : res.plan;
    const double pred = p.step_time();
    const double err = (pred - opts.measured_step) / opts.measured_step;
    const Throughput th = throughput(p, res, opts);
    std::snprintf(buf, sizeof buf,
                  "# measured step %.3f ms against %s %.3f ms predicted: %+.1f%% (%s); measured "
                  "%.1f TFLOP/s per GPU with recomputation, %.1f predicted\n",
                  opts.measured_step * 1e3, res.user ? "your layout's" : "the plan's", pred * 1e3,
                  err * 100, err < 0 ? "predicted faster" : "predicted slower",
                  p.hardware_flops / opts.measured_step / p.ranks_used() / 1e12,
                  th.hardware_tflops_per_gpu);
    out += buf;
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
