// One public nccl-tests table against the simulator: its run read as
// nccl-tests printed it, simulated on a topology at the table's sizes with
// the run's NCCL version (its log's, else collkit's default), type and
// launch mode, and compared row by row per size band (< 1 MiB, 1-64 MiB,
// >= 64 MiB), as `collkit compare --match` does. Shared by the accuracy
// tests.
#pragma once

#include <optional>
#include <string>

#include "core/collective.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/nccl_sizes.h"
#include "core/nccl_version.h"
#include "reports/compare.h"
#include "reports/inputs.h"
#include "reports/report_extra.h"
#include "reports/sweep_report.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/nccl_explain.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit::testing {

inline const std::string kNcclTestsData =
    std::string(COLLKIT_SOURCE_DIR) + "/tests/data/nccl-tests/";

struct TableRun {
  std::string file;  // in tests/data/nccl-tests/
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  std::string algorithm = "nccl";
  DataType dtype = DataType::float32;
  int launch_devices = 1;  // 8 for nccl-tests -g 8
};

struct TableBands {
  CompareResult compare;
  // NCCL's own cost model against the same rows: its estimate of what it
  // chose at each size (sim/nccl_explain.h), for the run's version. None
  // for RCCL logs and where NCCL's model has no estimate (p2p collectives,
  // forced variants it gives none for).
  std::optional<CompareResult> nccl_model;
  // "NCCL 2.29.2", "NCCL 2.26.2 (default)", or "(RCCL 2.22.3)" for an
  // rccl-tests log (RCCL's own model chooses, whatever NCCL version).
  std::string version;
};

// The simulated report with every row's time replaced by NCCL's own
// estimate of its choice at that size (the same call bytes NCCL's model
// sees: explain_sweep's), compared with the measured rows; none where NCCL's
// model gives no estimate at some size (p2p collectives).
inline std::optional<CompareResult> nccl_model_compare(const SweepSpec& sweep,
                                                       const Topology& topology,
                                                       const Report& predicted,
                                                       const Report& measured,
                                                       const CompareOptions& options) {
  const std::string& algorithm = sweep.algorithms.front();
  if (!is_nccl_algorithm(algorithm)) return std::nullopt;
  const NcclContext ctx = nccl_context(topology, sweep.ranks, sweep.nccl_version);
  Report model = predicted;
  for (ResultRow& row : model.results) {
    if (row.time_us <= 0) continue;  // no elements: NCCL discards the call
    const SizeMapping size =
        map_size(sweep.collective, row.bytes, size_of(sweep.dtype), sweep.ranks);
    const ScheduleSpec spec = schedule_spec(sweep, algorithm, size);
    if (spec.count == 0) continue;
    double us = 0;
    try {
      const NcclExplanation e =
          explain_nccl_choice(ctx, sweep.collective, spec.count * spec.elem_size, sweep.dtype,
                              sweep.op, nccl_variant(algorithm));
      us = e.candidates.at(e.chosen).choice.model_us;
    } catch (const UsageError&) {
      return std::nullopt;
    }
    if (!(us > 0)) return std::nullopt;
    const double scale = row.time_us / us;
    row.time_us = us;
    row.algbw_gbps *= scale;
    row.busbw_gbps *= scale;
  }
  model.best = compute_best(model.results);
  return compare_reports(model, measured, options, "NCCL's model", "nccl-tests");
}

inline TableBands table_bands(const TableRun& t, const Topology& topology) {
  ReadOptions read;
  read.collective = t.collective;
  read.ranks = t.ranks;
  const Report measured = combine_runs(read_runs(kNcclTestsData + t.file, read));
  SweepSpec sweep;
  sweep.collective = t.collective;
  sweep.algorithms = {t.algorithm};
  sweep.dtype = t.dtype;
  const bool rccl = measured.extra.value("library", "") == "RCCL";
  const std::optional<NcclVersion> logged = extra_nccl_version(measured);
  if (!rccl && logged && nccl_version_supported(*logged)) sweep.nccl_version = logged;
  TableBands out;
  out.version = rccl ? "(RCCL " + measured.extra.value("rccl_version", std::string("?")) + ")"
                     : "NCCL " + to_string(sweep.nccl_version.value_or(kDefaultNcclVersion)) +
                           (sweep.nccl_version ? "" : " (default)");
  for (const ResultRow& row : measured.results)
    if (row.bytes > 0 && (sweep.sizes.empty() || sweep.sizes.back() != row.bytes))
      sweep.sizes.push_back(row.bytes);
  sweep.ranks = topology.num_ranks();
  sweep.model = cost_params_of(topology, sweep.ranks);
  SimOptions sim;
  sim.launch_devices = t.launch_devices;
  const Report predicted = simulate_report(sweep, topology, sim);
  CompareOptions options;
  options.match = t.algorithm;
  options.bands = true;
  out.compare = compare_reports(predicted, measured, options, "sim", "nccl-tests");
  if (!rccl) out.nccl_model = nccl_model_compare(sweep, topology, predicted, measured, options);
  return out;
}

}  // namespace collkit::testing
