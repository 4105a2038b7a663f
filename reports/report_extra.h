// Report::extra, typed: the keys of a report's backend-specific top level
// that collkit's code reads, who writes them, and the accessors to read
// them with, so that the schema lives here and not in every reader.
// docs/REPORTS.md ("Report JSON") documents the file form; the keys not
// listed here (hosts, mpi_library, engine, average, timeout_s, ...) are
// written for people and read by no code.
//
// realrun/ may not include reports/ (cmake/layers.cmake), so its writers
// fill the JSON by key; keep them in step with this list.
//
//   key                   type                   written by
//   devices               array, one object      realrun/bench.cc (mpi, nccl: rank, host, pid,
//                         per rank               kind, host_cpus, device_text),
//                                                realrun/device/cuda_bench.cc (cuda: rank, host,
//                                                pid, kind, device, name, pci_bus_id),
//                                                reports/nccl_tests.cc (nccl-tests' rank lines)
//   devices[].host_cpus   integer >= 1           realrun/bench.cc: the rank's host's online CPUs;
//                                                calibrate bounds host_cores by the fewest
//   segment_bytes         integer                cli/simulate_cmd.cc (--segment), when given
//   group_size            integer                cli/simulate_cmd.cc (--group), when given
//   segment_model         {alpha, beta, gamma}   reports/bench_report.cc, cli/simulate_cmd.cc;
//                                                read by segment_model_of (reports/report.h)
//   min_bytes, max_bytes, integers               cli/simulate_cmd.cc (the sweep as parsed)
//   step_factor,
//   step_bytes
//   iters, warmup,        integers               reports/bench_report.cc (the bench's flags)
//   check_iters,
//   graph_launches
//   launch                string                 cli/simulate_cmd.cc (--launch: proc, group:G),
//                                                reports/nccl_tests.cc (collkit.launch of a -J)
//   ngpus                 integer                reports/nccl_tests.cc (nGpus, config.ngpus:
//                                                devices one thread launches on, nccl-tests -g)
//   nccl_version          string (or null)       realrun/bench.cc (nccl), cuda_bench.cc,
//                                                reports/nccl_tests.cc: the NCCL that ran;
//                                                read by extra_nccl_version
//   nccl_model_version    string                 cli/simulate_cmd.cc: the NCCL version whose
//                                                cost model made NCCL's choice (sim/nccl.h);
//                                                read by extra_nccl_model_version
//   nccl_explain          array of objects       cli/simulate_cmd.cc --explain
//                                                (sim/nccl_explain.h, docs/REPORTS.md)
//   source_format,        strings                reports/nccl_tests.cc (another tool's file)
//   nccl_tests_version
//
// Every accessor is total: a key that is absent or of another type, and an
// `extra` that is not an object, read as absent (nullopt, null, empty).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/nccl_version.h"
#include "reports/report.h"

namespace collkit {

// extra[key] when it is an integer (JSON integer, signed or unsigned).
std::optional<std::int64_t> extra_integer(const Report& r, const std::string& key);

// extra[key] when it is a string.
std::optional<std::string> extra_string(const Report& r, const std::string& key);

// segment_bytes: the segment size in bytes the run's pipelined schedules
// were cut with (simulate --segment), when an integer.
std::optional<std::int64_t> extra_segment_bytes(const Report& r);

// group_size: the run's --group, when an integer that fits an int.
std::optional<int> extra_group_size(const Report& r);

// How the run's calls were launched (SimOptions::launch_devices): devices
// per launching thread, and where that was read, for messages.
struct LaunchOf {
  int devices = 1;   // 1: one process per device (--launch proc)
  std::string from;  // "--launch group:8", "nGpus 8", "config.ngpus 8"
  // The --launch spelling of it: "proc" or "group:G".
  std::string flag() const;
  // "--launch group:8 (nGpus 8)", or "--launch proc" where it was read so.
  std::string described() const;
};
// `launch` when a valid --launch value (collkit simulate); else, for a
// measured report, `ngpus` (nccl-tests -g G: one thread launches on G
// devices); nullopt when the report does not say (a simulated report
// without `launch`: simulate's -J writes ngpus as its rank count).
std::optional<LaunchOf> extra_launch(const Report& r);

// devices: the array of per-rank objects, or null when absent or not an
// array. Its entries are kept as written (objects of the fields above).
const Json* extra_devices(const Report& r);

// devices[].host_cpus, in device order, of every device that gives a
// positive integer (that fits an int); devices without one are skipped.
std::vector<int> extra_host_cpus(const Report& r);

// nccl_version: the version of the NCCL a measured run used ("2.26.2",
// "2.26.2+cuda12.8"), when it parses; "unknown" and absent read as nullopt.
std::optional<NcclVersion> extra_nccl_version(const Report& r);

// nccl_model_version: the NCCL version a simulated report's NCCL choice
// followed, when it parses.
std::optional<NcclVersion> extra_nccl_model_version(const Report& r);

// The fewest of extra_host_cpus: the CPUs of the smallest measured host;
// nullopt when no device gives one.
std::optional<int> extra_fewest_host_cpus(const Report& r);

}  // namespace collkit
