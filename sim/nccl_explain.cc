#include "sim/nccl_explain.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/nccl_sizes.h"

namespace collkit {
namespace {

std::string us(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", t);
  return buf;
}

// What NCCL runs under a changed context, as "ring/LL/24ch (NCCL 12.3 us)",
// or why it runs nothing.
std::string outcome(const NcclContext& ctx, Collective c, std::int64_t bytes, DataType type,
                    RedOp op, std::optional<NcclVariant> variant) {
  try {
    const NcclChoice ch = nccl_choose(ctx, c, bytes, type, op, variant);
    return describe(ch) + " (NCCL " + us(ch.model_us) + " us)";
  } catch (const UsageError&) {
    return "nothing: no algorithm left";
  }
}

// The fastest of `all` that `keep` accepts (the first of equal ones).
const NcclChoice* fastest(const std::vector<NcclCandidate>& all,
                          const std::function<bool(const NcclChoice&)>& keep) {
  const NcclChoice* best = nullptr;
  for (const NcclCandidate& c : all)
    if (keep(c.choice) && (!best || c.choice.model_us < best->model_us)) best = &c.choice;
  return best;
}

std::string version_label(const NcclVersion& first, const NcclVersion& last, bool to_newest) {
  if (to_newest) return "NCCL " + to_string(first) + "+";
  if (first == last) return "NCCL " + to_string(first);
  return "NCCL " + to_string(first) + "-" + to_string(last);
}

Json candidate_json(const NcclCandidate& c) {
  Json j;
  j["algorithm"] = std::string(to_string(c.choice.variant));
  const std::string_view nccl_name = nccl_algorithm_name(c.choice.variant);
  j["nccl_algorithm"] = nccl_name.empty() ? Json(nullptr) : Json(std::string(nccl_name));
  j["protocol"] = std::string(to_string(c.choice.protocol));
  j["channels"] = c.choice.channels;
  j["nccl_us"] = c.choice.model_us;
  j["simulated_us"] = c.simulated_us ? Json(*c.simulated_us) : Json(nullptr);
  if (!c.note.empty()) j["note"] = c.note;
  return j;
}

}  // namespace

NcclExplanation explain_nccl_choice(const NcclContext& ctx, Collective c, std::int64_t bytes,
                                    DataType type, RedOp op, std::optional<NcclVariant> variant) {
  NcclExplanation e;
  e.collective = c;
  e.bytes = bytes;
  e.version = ctx.version;
  e.release = ctx.tuning->release;
  const NcclChoice chosen = nccl_choose(ctx, c, bytes, type, op, variant);
  for (const NcclChoice& x : nccl_candidates(ctx, c, bytes, type, op, variant)) {
    if (x.variant == chosen.variant && x.protocol == chosen.protocol)
      e.chosen = e.candidates.size();
    e.candidates.push_back({x, std::nullopt, {}});
  }
  std::optional<NcclChoice> instead;
  const NcclChoice ran = nccl_runnable_choice(ctx, c, bytes, type, op, variant, &instead);
  if (instead) e.simulated_as = ran;
  const auto said = [](const NcclChoice* ch) {
    return ch ? describe(*ch) + " (NCCL " + us(ch->model_us) + " us)"
              : std::string("nothing: no algorithm left");
  };
  // NCCL_ALGO / NCCL_PROTO without the chosen one (a named variant is
  // NCCL_ALGO already).
  if (!variant) {
    const NcclChoice* other =
        fastest(e.candidates, [&](const NcclChoice& x) { return x.variant != chosen.variant; });
    if (chosen.variant != NcclVariant::p2p)
      e.changes.push_back(
          {"NCCL_ALGO=^" + std::string(nccl_algorithm_name(chosen.variant)), said(other)});
  }
  if (chosen.variant != NcclVariant::p2p) {
    const NcclChoice* other =
        fastest(e.candidates, [&](const NcclChoice& x) { return x.protocol != chosen.protocol; });
    e.changes.push_back({"NCCL_PROTO=^" + std::string(to_string(chosen.protocol)), said(other)});
  }
  // Channels: NVLS has its own count; the others start from the run-time
  // channels, which NCCL_MAX_NCHANNELS caps and NCCL_MIN_NCHANNELS raises.
  const bool nvls = chosen.variant == NcclVariant::nvls || chosen.variant == NcclVariant::nvls_tree;
  if (nvls && chosen.channels > 1) {
    NcclContext less = ctx;
    less.nvls_channels = chosen.channels / 2;
    e.changes.push_back({"NCCL_NVLS_NCHANNELS=" + std::to_string(less.nvls_channels),
                         outcome(less, c, bytes, type, op, variant)});
  } else if (!nvls && chosen.variant != NcclVariant::p2p) {
    if (chosen.channels > 1) {
      NcclContext less = ctx;
      less.runtime_channels = std::min(ctx.runtime_channels, chosen.channels / 2);
      e.changes.push_back({"NCCL_MAX_NCHANNELS=" + std::to_string(chosen.channels / 2),
                           outcome(less, c, bytes, type, op, variant)});
    }
    if (chosen.channels == ctx.runtime_channels && ctx.runtime_channels < 64) {
      NcclContext more = ctx;
      more.runtime_channels = std::min(64, 2 * ctx.runtime_channels);
      e.changes.push_back({"NCCL_MIN_NCHANNELS=" + std::to_string(more.runtime_channels),
                           outcome(more, c, bytes, type, op, variant)});
    }
  }
  // Other releases: the runs of consecutive releases that choose alike,
  // where they choose otherwise.
  const std::vector<NcclTuning>& releases = nccl_releases();
  const std::string mine = describe(chosen);
  std::size_t i = 0;
  while (i < releases.size()) {
    NcclContext other = ctx;
    other.version = releases[i].release;
    other.tuning = &releases[i];
    std::string theirs;
    try {
      theirs = describe(nccl_choose(other, c, bytes, type, op, variant));
    } catch (const UsageError&) {
      theirs = "nothing: no algorithm";
    }
    std::size_t j = i + 1;
    for (; j < releases.size(); ++j) {
      NcclContext next = ctx;
      next.version = releases[j].release;
      next.tuning = &releases[j];
      std::string t;
      try {
        t = describe(nccl_choose(next, c, bytes, type, op, variant));
      } catch (const UsageError&) {
        t = "nothing: no algorithm";
      }
      if (t != theirs) break;
    }
    if (theirs != mine)
      e.changes.push_back(
          {version_label(releases[i].release, releases[j - 1].release, j == releases.size()),
           theirs});
    i = j;
  }
  return e;
}

void simulate_candidates(NcclExplanation& e, const ScheduleSpec& base, const NcclContext& ctx,
                         const Topology& topology, const SimOptions& options) {
  for (NcclCandidate& c : e.candidates) {
    try {
      const ScheduleSpec spec = nccl_schedule_spec(base, ctx, c.choice, topology);
      c.simulated_us = simulate(*make_schedule(spec), topology, options).time * 1e6;
    } catch (const UsageError& err) {
      c.note = std::string("collkit has no schedule for it (") + err.what() + ")";
    }
  }
}

std::vector<NcclExplanation> explain_sweep(const SweepSpec& sweep, const Topology& topology,
                                           const SimOptions& options) {
  std::vector<NcclExplanation> out;
  if (sweep.collective == Collective::barrier) return out;
  std::optional<NcclContext> ctx;
  for (const std::string& algorithm : sweep.algorithms) {
    if (!is_nccl_algorithm(algorithm) || (sweep.nccl_as_bench && nccl_variant(algorithm))) continue;
    if (!ctx) ctx = nccl_context(topology, sweep.ranks, sweep.nccl_version);
    for (std::int64_t bytes : sweep.sizes) {
      const SizeMapping size = map_size(sweep.collective, bytes, size_of(sweep.dtype), sweep.ranks);
      const ScheduleSpec spec = schedule_spec(sweep, algorithm, size);
      if (spec.count == 0) continue;  // NCCL discards the call
      NcclExplanation e = explain_nccl_choice(*ctx, sweep.collective, spec.count * spec.elem_size,
                                              sweep.dtype, sweep.op, nccl_variant(algorithm));
      e.algorithm = algorithm;
      e.bytes = size.bytes;
      simulate_candidates(e, spec, *ctx, topology, options);
      out.push_back(std::move(e));
    }
  }
  return out;
}

Json nccl_explanation_json(const NcclExplanation& e) {
  Json j;
  j["algorithm"] = e.algorithm;
  j["collective"] = std::string(to_string(e.collective));
  j["bytes"] = e.bytes;
  j["nccl_version"] = to_string(e.version);
  j["cost_model_release"] = to_string(e.release);
  j["chosen"] = candidate_json(e.candidates.at(e.chosen));
  if (e.simulated_as) {
    Json ran;
    ran["algorithm"] = std::string(to_string(e.simulated_as->variant));
    ran["protocol"] = std::string(to_string(e.simulated_as->protocol));
    ran["channels"] = e.simulated_as->channels;
    ran["note"] = "collkit has no schedule for NCCL's choice; the table's row is this";
    j["simulated_as"] = ran;
  }
  Json cands = Json::array();
  for (const NcclCandidate& c : e.candidates) cands.push_back(candidate_json(c));
  j["candidates"] = cands;
  Json changes = Json::array();
  for (const NcclSettingEffect& s : e.changes)
    changes.push_back({{"setting", s.setting}, {"result", s.result}});
  j["changes"] = changes;
  return j;
}

std::string format_nccl_explanations(const std::vector<NcclExplanation>& all) {
  if (all.empty()) return "";
  std::string out = "#\n# NCCL's choice per size (--explain): NCCL " + to_string(all[0].version) +
                    ", the cost model of release " + to_string(all[0].release) +
                    "; every (algorithm, protocol, channels) it weighs, its estimate and the "
                    "simulated time, us\n";
  char line[160];
  for (const NcclExplanation& e : all) {
    const NcclChoice& ch = e.candidates.at(e.chosen).choice;
    out += "#  " + e.algorithm + ", " + std::to_string(e.bytes) + " B: " + describe(ch) + "\n";
    std::snprintf(line, sizeof line, "#    %-26s %12s %12s\n", "candidate", "NCCL", "collkit");
    out += line;
    for (std::size_t i = 0; i < e.candidates.size(); ++i) {
      const NcclCandidate& c = e.candidates[i];
      std::snprintf(line, sizeof line, "#  %s %-26s %12.1f %12s\n", i == e.chosen ? "*" : " ",
                    describe(c.choice).c_str(), c.choice.model_us,
                    c.simulated_us ? us(*c.simulated_us).c_str() : "-");
      out += line;
    }
    if (e.simulated_as)
      out += "#    collkit has no schedule for NCCL's choice: the table's row ran " +
             describe(*e.simulated_as) + "\n";
    for (const NcclSettingEffect& s : e.changes)
      out += "#    " + s.setting + ": " + s.result + "\n";
  }
  return out;
}

}  // namespace collkit
