// `collkit calibrate`: fits a topology's link-class latency and bandwidth, the
// endpoint overhead and the reduction and local-copy bandwidths to measured
// reports, by least
// squares on the simulator's own time of each measured schedule (so the fit
// is of the model the simulator runs, not of a separate formula).
// docs/REPORTS.md, section "Calibration".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/nccl_version.h"
#include "reports/report.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit {

// One measured report and where it came from (for errors and the fitted
// file's description).
struct CalibrationInput {
  std::string file;
  std::string sha256;  // of the file's bytes
  Report report;
  // Where each row of report.results came from ("log.txt:57"), named in
  // errors instead of "FILE: results[i]"; empty for collkit reports.
  std::vector<std::string> row_names{};
  // The network the run measured when it is not the base itself: the base
  // at another scale (a cluster file resized, topologies/reshape.h; the CLI's
  // FILE@NODESxGPUS), and its name for messages ("10x2"). Its links are
  // the base's kinds of link, so the fitted figures are the base's; null =
  // the base.
  std::shared_ptr<const Topology> network = nullptr;
  std::string shape = "";
};

struct CalibrateOptions {
  NetModel model = NetModel::flow;
  int max_iterations = 100;
  // Rows smaller than this are left out of the fit (and counted), for a fit
  // of the sizes that matter to the user; 0 = every row.
  std::int64_t min_bytes = 0;
  // 0: least squares of the relative errors. k > 0: Huber's loss with
  // threshold k (a relative error, e.g. 0.1): residuals beyond k weigh
  // linearly, so a few rows the model cannot express (cache effects, noise)
  // do not drag the fit of all the others.
  double huber = 0;
  // --match ALGO: the collkit algorithm whose schedule stands for rows of
  // algorithm "nccl" (NCCL's own choice, e.g. read from nccl-tests) and
  // "native". Empty: "nccl" rows are simulated as the registered algorithm
  // named "nccl" when there is one (else FileError naming --match), and
  // "native" rows are skipped.
  std::string match;
  // How the measured calls were launched (SimOptions::launch_devices):
  // nccl-tests -g G drives G devices from one thread.
  int launch_devices = 1;
  // The upper bound of host_cores (the cores of the measured host); 0 =
  // the fewest `host_cpus` among the measured reports' devices (collkit
  // bench records each rank's host's online CPUs), else this machine's
  // (std::thread::hardware_concurrency), which the output then says.
  int host_cores_limit = 0;
  // Descents of the final fit: from the base and from starts - 1 more points
  // spread over each parameter's plausible range (the same points every
  // run); the lowest loss wins. >= 1; 1 = the base only.
  int starts = 4;
  // A base with cache_mb: try every power-of-two cache size (true) or keep
  // the base's (false: e.g. re-fitting from a fitted file).
  bool search_cache = true;
  // --repeats fastest: of the rows several inputs measured alike (the same
  // collective, algorithm, size, type, op, root and in-place column), only
  // the fastest is fitted: the machine at its best, where what varies
  // between repeats only slows a run down (docs/REPORTS.md, "Repeats").
  // false: every row is a point (--repeats all).
  bool fastest_repeat = false;
  // Threads (--jobs; core/parallel.h): the starts, the Jacobian's columns
  // and the points are simulated in parallel; <= 0 = every core. The fit
  // is the same, bit for bit, whatever the count.
  int jobs = 1;
  // Called as the fit goes (a line for stderr: the pass, the start, the
  // iteration and the current error); none = silent.
  std::function<void(const std::string&)> progress = {};
  // --nccl-version: the NCCL version whose cost model (sim/nccl.h) picks the
  // schedule of rows of NCCL's own choice; none: each report's own (the
  // version its log names), else the base's nccl.version, else collkit's
  // default (calibration_nccl_version).
  std::optional<NcclVersion> nccl_version;
};

// The NCCL version whose choice `in`'s rows of NCCL's own choice are
// simulated with: options.nccl_version, else the version the report names
// (a log's "NCCL version" line) when collkit models it, else the base
// topology's nccl.version, else kDefaultNcclVersion. `from`, when given,
// says which ("--nccl-version", "the log", "the topology", "the default").
NcclVersion calibration_nccl_version(const CalibrationInput& in, const CalibrateOptions& options,
                                     const Topology& base, std::string* from = nullptr);

enum class ParamKind : std::uint8_t {
  latency,
  bandwidth,
  overhead,
  reduce_bw,
  copy_bw,
  dram_factor,
  host_cores,
  dirty_factor,
  // What a GPU network adds: an in-network switch's rate for multicast and
  // reduction (NVLS, SHARP) on the links of one class, and a protocol's
  // base latency, paid once per collective (docs/TOPOLOGY.md).
  in_network,
  base_latency
};

// One fitted quantity, SI units (seconds, bytes per second).
struct FittedParam {
  ParamKind kind = ParamKind::latency;
  int link_class = -1;  // latency, bandwidth, in_network only
  std::string name;     // e.g. "class 0 latency_us (g0->g1, 12 links)"
  double base = 0;
  double fitted = 0;
  // False when no measured point depends on it: it keeps the base value.
  bool constrained = true;
  // Its physical range (param_range): the fit searches inside it only, and
  // one that ends on a bound it was not started on is suspect (at_bound).
  double lower = 0, upper = 0;
  bool at_bound = false;
  int protocol = -1;  // base_latency only: protocol_index (LL, LL128, Simple)
};

// The physical range of each fitted quantity, SI units (docs/REPORTS.md,
// "Calibration"): latency and overhead [0, 0.1 s]; link, reduction and copy
// bandwidth [1 MB/s, 10 TB/s]; dram_factor [1, 1000] (DRAM is never faster
// than the cache); host_cores [1, host_cores_limit]; dirty_factor [1, 100]
// (data another core wrote is never cheaper to read than clean data);
// in_network as a bandwidth; base_latency as a latency.
std::pair<double, double> param_range(ParamKind kind, int host_cores_limit);

// Fits agree when what they determine differs by at most this (relative):
// the measurements' own repeats, each fitted alone, and starts that end as
// low as the best (within kLossTie of its loss). docs/REPORTS.md.
inline constexpr double kStabilityTolerance = 0.10;
inline constexpr double kLossTie = 0.01;

// How far one determined quantity moves between fits: a fitted parameter
// some point depends on, or a group of proportional ones as their
// combination (a sum of latencies and overheads; bandwidths in series).
struct ParamSpread {
  std::string name;
  double scale = 1;                // SI value x scale = the printed unit (us, GB/s, 1)
  double fitted = 0;               // the joint fit's, SI
  std::vector<double> values;      // each other fit's, SI (repeats in order)
  double lowest = 0, highest = 0;  // over the joint fit and the others
  double spread = 0;               // highest / lowest - 1
};

struct PointFit {
  std::string file;
  std::size_t row = 0;  // index in the file's results
  Collective collective = Collective::all_reduce;
  std::string algorithm;
  std::int64_t bytes = 0;
  bool in_place = false;
  double measured_us = 0;
  double fitted_us = 0;
  double rel_error = 0;  // fitted / measured - 1
};

struct CalibrationResult {
  std::vector<FittedParam> params;
  std::vector<LinkProps> classes;  // fitted props of every link class
  EndpointProps endpoint;          // fitted, for every endpoint
  // Fitted in-network rate of every link class (bytes per second; 0 = the
  // class enters or leaves no in-network switch), and the protocols.
  std::vector<double> in_network;
  ProtocolProps protocols[3];
  std::vector<PointFit> points;
  std::size_t distinct_points = 0;  // distinct (collective, algorithm, bytes, dtype, op, root)
  std::size_t skipped_native = 0;   // "native" rows: no schedule to simulate
  std::string match;                // CalibrateOptions::match
  std::size_t skipped_small = 0;    // rows below CalibrateOptions::min_bytes
  std::size_t skipped_slower = 0;   // slower repeats (CalibrateOptions::fastest_repeat)
  std::int64_t min_bytes = 0;       // the option, for the output
  int iterations = 0;
  // Parameter pairs the points cannot tell apart (only a combination fitted).
  std::vector<std::string> warnings;
  double median_abs_error = 0;
  double p90_abs_error = 0;
  double max_abs_error = 0;
  // The same of the base topology's prediction, before the fit.
  double base_median_abs_error = 0;
  double base_p90_abs_error = 0;
  double base_loss = 0;
  // Measured rows left out because their check failed (#wrong > 0), each
  // named ("FILE: results[3] (all_reduce ring 1048576 bytes, 12 wrong)").
  std::vector<std::string> failed_check;
  // Why the fit is not to be trusted: a parameter on a bound of its range,
  // or a fit that predicts worse than the base. Empty when fine; the command
  // then refuses to write the fit unless --accept.
  std::vector<std::string> problems;
  // host_cores' upper bound and where it came from (the option, the
  // measured hosts' report, or this machine); 0 when host_cores is not fitted.
  int host_cores_limit = 0;
  std::string host_cores_source;
  // The loss the fit minimised (sum of squares, or of Huber's loss).
  double loss = 0;
  // The cache model (base with cache_mb): the cache sizes tried, each with
  // its fit's loss, in the order tried; the chosen one is endpoint.cache_bytes.
  std::vector<std::pair<double, double>> cache_candidates;
  // The search (CalibrateOptions::starts): descents run, and how many ended
  // within kLossTie of the lowest loss (the best included); what those
  // others determined, against the best.
  int starts = 1;
  int best_start = 0;  // the descent that gave the fit (0: from the base)
  int starts_at_best = 1;
  std::vector<ParamSpread> start_spread;
  // The repeats (a point measured in several files: the k-th file that
  // measured it is repeat k), each fitted alone from the joint fit: how
  // many (0 = the inputs hold no repeats), what each determined, and each
  // repeat fit's median |relative error| on its own points. With
  // CalibrateOptions::fastest_repeat each fit leaves one repeat out instead
  // (repeats_left_out): the fastest of the others, fitted from the joint fit.
  int repeats = 0;
  bool repeats_left_out = false;
  std::vector<ParamSpread> repeat_spread;
  std::vector<double> repeat_median_abs_error;
};

// Validates every input against `base` (FileError naming the file and field:
// non-measure reports, ranks that differ from the topology's, unknown
// algorithms, non-positive times), checks there are at least parameters + 1
// distinct points (UsageError saying how many more are needed), then fits.
CalibrationResult calibrate(const std::vector<CalibrationInput>& inputs, const Topology& base,
                            const CalibrateOptions& options = {});

// The base topology file's JSON text with the fitted numbers in place of the
// base ones (same form), `description` replaced and the name suffixed with
// "-fitted". Checks by re-parsing that the file gives exactly the fitted
// network; throws FileError naming `base_file` when the base's form cannot
// express the fit (e.g. one key feeding two fitted classes) or is not JSON.
std::string fitted_topology_text(const std::string& base_text, const std::string& base_file,
                                 const Topology& base, const CalibrationResult& result,
                                 const std::string& description);

// The fitted values next to the base ones, the residual summary and one line
// per point.
std::string format_calibration(const CalibrationResult& result);

}  // namespace collkit
