// step_latency_bench: what one dependent step costs on a GPU (issue 43;
// docs/BENCH.md "Step latency"). Two sides of thread blocks on one GPU,
// standing in for two virtual ranks, play ping-pong (bench/step_latency.h);
// every variant of how a message is published and observed, where its flag
// sits and who polls runs `--launches` launches of `--warmup` + `--round-trips`
// round trips, and the report gives the median round trip (and step, half of
// it) over every recorded round trip. Also the floor of a launch (an empty
// kernel, back to back) for the interpreter's grid.
//
//   step_latency_bench [--quick] [--json FILE] [--bytes LIST] [--lanes LIST]
//                      [--lanes-bytes N] [--round-trips N] [--launches N]
//                      [--warmup N] [--device N] [--filter TEXT]
//
// Without a device: one line on stderr, exit 2, no report. Bad flags: one
// line naming the flag and value, exit 2. A word that arrived wrong or a
// wait that gave up (2 s): the report records it, exit 1.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/step_latency.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "realrun/device/cuda_util.h"

namespace collkit::step_latency {
namespace {

using realrun::CudaEvent;
using realrun::CudaStream;
using realrun::DeviceBuffer;

struct Options {
  bool quick = false;
  std::string json;
  std::vector<std::int64_t> bytes{64, 512, 4096};
  std::vector<int> lanes{1, 2, 4, 8, 16, 32, 64};
  std::int64_t lanes_bytes = 131072;
  int round_trips = 4000;
  int launches = 5;
  int warmup = 100;
  int device = 0;
  std::string filter;
};

const char* const kUsage =
    "usage: step_latency_bench [--quick] [--json FILE] [--bytes LIST] [--lanes LIST]\n"
    "                          [--lanes-bytes N] [--round-trips N] [--launches N] [--warmup N]\n"
    "                          [--device N] [--filter TEXT]\n"
    "  --quick          bytes 512, lanes 1,16,64, 500 round trips, 2 launches, warm-up 20\n"
    "  --json FILE      the report (JSON), written atomically\n"
    "  --bytes LIST     message bytes of the protocol set (multiples of 16, 16..16777216)\n"
    "  --lanes LIST     blocks per side of the lanes set (1..1024)\n"
    "  --lanes-bytes N  message bytes of the lanes set (default 131072: ring all_reduce\n"
    "                   of 1 MiB at P = 8)\n"
    "  --round-trips N  recorded round trips per launch (1..4096)\n"
    "  --launches N     launches per variant (1..1000)\n"
    "  --warmup N       round trips before the recorded ones, per launch (0..100000)\n"
    "  --device N       the CUDA device\n"
    "  --filter TEXT    only the variants whose name contains TEXT\n";

std::int64_t parse_int(const std::string& flag, const std::string& v, std::int64_t lo,
                       std::int64_t hi, const std::string& what) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || x < lo || x > hi)
    throw UsageError(flag + " " + v + ": expected " + what + " in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
  return x;
}

std::vector<std::int64_t> parse_list(const std::string& flag, const std::string& v, std::int64_t lo,
                                     std::int64_t hi, const std::string& what) {
  std::vector<std::int64_t> out;
  std::stringstream in(v);
  for (std::string item; std::getline(in, item, ',');)
    out.push_back(parse_int(flag, item, lo, hi, what));
  if (out.empty() || v.back() == ',')
    throw UsageError(flag + " " + v + ": expected a comma list of " + what);
  return out;
}

std::int64_t message_bytes(const std::string& flag, const std::string& v) {
  const std::int64_t b = parse_int(flag, v, 16, 16777216, "bytes, a multiple of 16,");
  if (b % 16 != 0)
    throw UsageError(flag + " " + v + ": expected bytes, a multiple of 16, in 16..16777216");
  return b;
}

Options parse(int argc, char** argv) {
  Options o;
  bool quick_seen = false, bytes_set = false, lanes_set = false, rt_set = false,
       launches_set = false, warmup_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (a == "--quick") {
      quick_seen = true;
      continue;
    }
    const bool takes = a == "--json" || a == "--bytes" || a == "--lanes" || a == "--lanes-bytes" ||
                       a == "--round-trips" || a == "--launches" || a == "--warmup" ||
                       a == "--device" || a == "--filter";
    if (!takes) throw UsageError("unknown argument '" + a + "' (--help lists the flags)");
    if (i + 1 >= argc) throw UsageError(a + ": expected a value");
    const std::string v = argv[++i];
    if (a == "--json") {
      if (v.empty()) throw UsageError("--json: expected a file name");
      o.json = v;
    } else if (a == "--bytes") {
      o.bytes.clear();
      for (const auto& item : parse_list(a, v, 16, 16777216, "bytes, multiples of 16,"))
        o.bytes.push_back(message_bytes(a, std::to_string(item)));
      bytes_set = true;
    } else if (a == "--lanes") {
      o.lanes.clear();
      for (const auto l : parse_list(a, v, 1, 1024, "blocks per side"))
        o.lanes.push_back(static_cast<int>(l));
      lanes_set = true;
    } else if (a == "--lanes-bytes") {
      o.lanes_bytes = message_bytes(a, v);
    } else if (a == "--round-trips") {
      o.round_trips = static_cast<int>(parse_int(a, v, 1, kMaxRecorded, "a count"));
      rt_set = true;
    } else if (a == "--launches") {
      o.launches = static_cast<int>(parse_int(a, v, 1, 1000, "a count"));
      launches_set = true;
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_int(a, v, 0, 100000, "a count"));
      warmup_set = true;
    } else if (a == "--device") {
      o.device = static_cast<int>(parse_int(a, v, 0, 1023, "a device index"));
    } else {
      o.filter = v;
    }
  }
  if (quick_seen) {
    o.quick = true;
    if (!bytes_set) o.bytes = {512};
    if (!lanes_set) o.lanes = {1, 16, 64};
    if (!rt_set) o.round_trips = 500;
    if (!launches_set) o.launches = 2;
    if (!warmup_set) o.warmup = 20;
  }
  // Every lane must have a share of the lanes set's message in each
  // protocol (its 16-byte vectors, LL lines, LL128 lines).
  const int most = *std::max_element(o.lanes.begin(), o.lanes.end());
  const std::int64_t fewest = (o.lanes_bytes + kLl128DataBytes - 1) / kLl128DataBytes;
  if (fewest < most)
    throw UsageError("--lanes-bytes " + std::to_string(o.lanes_bytes) + ": " +
                     std::to_string(fewest) + " LL128 lines, fewer than --lanes " +
                     std::to_string(most) + " (every lane needs a share)");
  return o;
}

const char* proto_name(Proto p) {
  switch (p) {
    case Proto::fence_gpu:
      return "fence_gpu";
    case Proto::fence_sys:
      return "fence_sys";
    case Proto::store_release_gpu:
      return "store_release_gpu";
    case Proto::store_release_sys:
      return "store_release_sys";
    case Proto::add_release_gpu:
      return "add_release_gpu";
    case Proto::add_release_sys:
      return "add_release_sys";
    case Proto::ll:
      return "ll";
    case Proto::ll128:
      return "ll128";
  }
  return "?";
}
bool in_line(Proto p) { return p == Proto::ll || p == Proto::ll128; }
const char* place_name(const PingPong& p) {
  if (in_line(p.proto)) return "in_line";
  return p.place == FlagPlace::same_line ? "same_line" : "separate_line";
}
std::string name_of(const PingPong& p) {
  return std::string(proto_name(p.proto)) + "/" + place_name(p) + "/" +
         (p.warp ? "warp" : "block") + "/L" + std::to_string(p.lanes) + "/" +
         std::to_string(p.bytes) + "B";
}

// The variants, in the report's order: the protocol set (one lane, every
// protocol x flag place x group, at each --bytes), then the lanes set (a
// block per lane, the interpreter's add_release_gpu and LL and LL128, at
// --lanes-bytes, each --lanes).
std::vector<PingPong> variants(const Options& o) {
  std::vector<PingPong> out;
  for (const std::int64_t bytes : o.bytes) {
    for (int pi = 0; pi < kProtos; ++pi) {
      const auto proto = static_cast<Proto>(pi);
      for (const int place : {0, 1}) {
        if (in_line(proto) && place == 1) continue;
        for (const bool warp : {true, false}) {
          PingPong p;
          p.proto = proto;
          p.place = static_cast<FlagPlace>(place);
          p.warp = warp;
          p.lanes = 1;
          p.bytes = bytes;
          out.push_back(p);
        }
      }
    }
  }
  for (const Proto proto : {Proto::add_release_gpu, Proto::ll, Proto::ll128}) {
    for (const int lanes : o.lanes) {
      PingPong p;
      p.proto = proto;
      p.warp = false;
      p.lanes = lanes;
      p.bytes = o.lanes_bytes;
      // The protocol set already has one lane at these bytes.
      if (lanes == 1 && std::find(o.bytes.begin(), o.bytes.end(), p.bytes) != o.bytes.end())
        continue;
      out.push_back(p);
    }
  }
  std::vector<PingPong> kept;
  for (const auto& p : out)
    if (name_of(p).find(o.filter) != std::string::npos) kept.push_back(p);
  return kept;
}

double quantile(const std::vector<double>& sorted, double q) {
  // Nearest rank; the median of an even count is the mean of the middle two.
  const std::size_t n = sorted.size();
  if (q == 0.5) return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  std::size_t r = static_cast<std::size_t>(q * static_cast<double>(n) + 0.999999);
  r = std::clamp<std::size_t>(r, 1, n);
  return sorted[r - 1];
}

struct Outcome {
  nlohmann::json row;
  bool failed = false;
};

Outcome measure(PingPong p, const Options& o, cudaStream_t stream) {
  p.warmup = o.warmup;
  p.recorded = o.round_trips;
  const Layout layout = layout_of(p.proto, p.place, p.bytes);
  DeviceBuffer area(static_cast<std::size_t>(2 * layout.stride), o.device);
  DeviceBuffer samples(sizeof(std::uint32_t) * static_cast<std::size_t>(p.recorded), o.device);
  DeviceBuffer words(64 + sizeof(int) * 2 * static_cast<std::size_t>(p.lanes), o.device);
  p.area = reinterpret_cast<unsigned char*>(area.data());
  p.samples = reinterpret_cast<std::uint32_t*>(samples.data());
  p.clocks = reinterpret_cast<unsigned long long*>(words.data());
  p.errors = reinterpret_cast<unsigned int*>(words.data() + 32);
  p.timeout = reinterpret_cast<unsigned int*>(words.data() + 36);
  p.smid = reinterpret_cast<int*>(words.data() + 64);

  std::vector<double> ns;
  std::vector<std::uint32_t> host(static_cast<std::size_t>(p.recorded));
  std::vector<int> smid(2 * static_cast<std::size_t>(p.lanes));
  double total_ns = 0, total_cycles = 0;
  unsigned long long errors = 0;
  bool timed_out = false, same_sm = false;
  for (int l = 0; l < o.launches; ++l) {
    CUDA_CHECK(cudaMemsetAsync(area.data(), 0, area.size(), stream));
    CUDA_CHECK(cudaMemsetAsync(words.data(), 0, words.size(), stream));
    CUDA_CHECK(launch_ping_pong(p, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    unsigned long long clocks[4];
    unsigned int flags[2];
    CUDA_CHECK(cudaMemcpy(clocks, p.clocks, sizeof clocks, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(flags, p.errors, sizeof flags, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(host.data(), p.samples, host.size() * sizeof(std::uint32_t),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(smid.data(), p.smid, smid.size() * sizeof(int), cudaMemcpyDeviceToHost));
    errors += flags[0];
    if (flags[1] != 0) {
      timed_out = true;
      break;
    }
    for (int a = 0; a < p.lanes; ++a)
      for (int b = 0; b < p.lanes; ++b) same_sm = same_sm || smid[a] == smid[p.lanes + b];
    const double launch_ns = static_cast<double>(clocks[2] - clocks[0]);
    const double launch_cycles = static_cast<double>(clocks[3] - clocks[1]);
    if (launch_ns <= 0 || launch_cycles <= 0)
      throw RuntimeFailure(name_of(p) + ": the kernel recorded no time (globaltimer " +
                           std::to_string(launch_ns) + " ns, clock64 " +
                           std::to_string(launch_cycles) + " cycles)");
    total_ns += launch_ns;
    total_cycles += launch_cycles;
    // Cycles of the timing block's multiprocessor, in ns at this launch's
    // measured clock.
    for (const auto c : host) ns.push_back(static_cast<double>(c) * launch_ns / launch_cycles);
  }
  nlohmann::json row;
  row["name"] = name_of(p);
  row["protocol"] = proto_name(p.proto);
  row["flag"] = place_name(p);
  row["group"] = p.warp ? "warp" : "block";
  row["threads"] = threads_of(p);
  row["lanes"] = p.lanes;
  row["bytes"] = p.bytes;
  row["errors"] = errors;
  row["timed_out"] = timed_out;
  Outcome out;
  out.failed = timed_out || errors != 0;
  if (!timed_out) {
    std::vector<double> sorted = ns;
    std::sort(sorted.begin(), sorted.end());
    const double median = quantile(sorted, 0.5);
    row["round_trips"] = sorted.size();
    row["launches"] = o.launches;
    row["median_round_trip_ns"] = median;
    row["median_step_ns"] = median / 2;
    row["p10_round_trip_ns"] = quantile(sorted, 0.1);
    row["p90_round_trip_ns"] = quantile(sorted, 0.9);
    row["min_round_trip_ns"] = sorted.front();
    row["mean_round_trip_ns"] = total_ns / static_cast<double>(sorted.size());
    row["sm_clock_mhz"] = total_cycles / total_ns * 1e3;
    // Message bytes per median step: what one side moves per step.
    row["step_gb_per_s"] = static_cast<double>(p.bytes) / (median / 2);
    row["sm_side0"] = smid[0];
    row["sm_side1"] = smid[static_cast<std::size_t>(p.lanes)];
    row["same_sm"] = same_sm;
  }
  out.row = std::move(row);
  return out;
}

nlohmann::json launch_floor(const Options& o, cudaStream_t stream) {
  nlohmann::json rows = nlohmann::json::array();
  const int per_batch = o.quick ? 20 : 100, batches = o.quick ? 3 : 7;
  for (const int blocks : {1, 16, 128}) {
    CudaEvent start(o.device, true), stop(o.device, true);
    for (int i = 0; i < 10; ++i) CUDA_CHECK(launch_empty(blocks, kBlockThreads, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<double> us;
    for (int b = 0; b < batches; ++b) {
      CUDA_CHECK(cudaEventRecord(start.get(), stream));
      for (int i = 0; i < per_batch; ++i) CUDA_CHECK(launch_empty(blocks, kBlockThreads, stream));
      CUDA_CHECK(cudaEventRecord(stop.get(), stream));
      CUDA_CHECK(cudaEventSynchronize(stop.get()));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      us.push_back(static_cast<double>(ms) * 1e3 / per_batch);
    }
    std::sort(us.begin(), us.end());
    rows.push_back({{"blocks", blocks},
                    {"threads", kBlockThreads},
                    {"launches_per_batch", per_batch},
                    {"batches", batches},
                    {"median_us", quantile(us, 0.5)}});
  }
  return rows;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!o.json.empty() && o.json != kStdoutPath) check_writable(o.json);
  const auto chosen = variants(o);
  if (chosen.empty()) throw UsageError("--filter " + o.filter + ": no variant's name contains it");
  const std::string problem = realrun::cuda_device_problem();
  if (!problem.empty()) throw UsageError(problem);
  if (o.device >= realrun::cuda_device_count())
    throw UsageError("--device " + std::to_string(o.device) + ": there are " +
                     std::to_string(realrun::cuda_device_count()) + " CUDA devices");
  CUDA_CHECK(cudaSetDevice(o.device));
  const realrun::DeviceInfo info = realrun::device_info(o.device);
  CudaStream stream(o.device);

  nlohmann::json report;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  report["program"] = "step_latency_bench";
  report["command"] = command;
  report["date_utc"] = utc_now();
  report["device"] = {{"index", info.index},
                      {"name", info.name},
                      {"pci_bus_id", info.pci_bus_id},
                      {"sms", info.sms},
                      {"memory_bytes", info.memory_bytes}};
  report["cuda_driver_version"] = realrun::cuda_version_text(realrun::cuda_driver_version());
  report["cuda_runtime_version"] = realrun::cuda_version_text(realrun::cuda_runtime_version());
  report["quick"] = o.quick;
  report["round_trips_per_launch"] = o.round_trips;
  report["warmup_per_launch"] = o.warmup;
  report["launches"] = o.launches;
  report["results"] = nlohmann::json::array();
  report["unavailable"] = nlohmann::json::array();

  std::printf("# step_latency_bench on %s (%d SMs), %d launches x %d round trips\n",
              info.name.c_str(), info.sms, o.launches, o.round_trips);
  std::printf("# %-52s %12s %10s %10s %10s %7s %s\n", "variant", "round trip", "step", "p10", "p90",
              "errors", "SMs");
  std::printf("# %-52s %12s %10s %10s %10s %7s\n", "", "(ns)", "(ns)", "(ns)", "(ns)", "");
  bool failed = false;
  int index = 0;
  for (const PingPong& p : chosen) {
    ++index;
    std::fprintf(stderr, "step_latency_bench: [%d/%zu] %s\n", index, chosen.size(),
                 name_of(p).c_str());
    int resident = 0;
    CUDA_CHECK(ping_pong_resident_blocks(p, &resident));
    if (resident < 2 * p.lanes) {
      report["unavailable"].push_back(
          {{"name", name_of(p)},
           {"reason", std::to_string(2 * p.lanes) +
                          " blocks must be resident at once; the device "
                          "holds " +
                          std::to_string(resident)}});
      std::printf("  %-52s N/A (not resident)\n", name_of(p).c_str());
      continue;
    }
    const Outcome r = measure(p, o, stream.get());
    failed = failed || r.failed;
    const auto& row = r.row;
    if (row["timed_out"].get<bool>()) {
      std::printf("  %-52s TIMED OUT (a wait gave up after 2 s)\n", name_of(p).c_str());
    } else {
      std::printf("  %-52s %12.1f %10.1f %10.1f %10.1f %7llu %d,%d%s\n", name_of(p).c_str(),
                  row["median_round_trip_ns"].get<double>(), row["median_step_ns"].get<double>(),
                  row["p10_round_trip_ns"].get<double>(), row["p90_round_trip_ns"].get<double>(),
                  row["errors"].get<unsigned long long>(), row["sm_side0"].get<int>(),
                  row["sm_side1"].get<int>(), row["same_sm"].get<bool>() ? " (same SM)" : "");
    }
    report["results"].push_back(row);
  }
  std::fprintf(stderr, "step_latency_bench: launch floor\n");
  report["launch_floor"] = launch_floor(o, stream.get());
  for (const auto& f : report["launch_floor"])
    std::printf("# empty kernel, %d blocks x %d threads, back to back: %.2f us per launch\n",
                f["blocks"].get<int>(), f["threads"].get<int>(), f["median_us"].get<double>());
  if (failed) std::printf("# FAILED: a variant had wrong words or a wait that gave up\n");
  if (!o.json.empty()) write_file_atomic(o.json, report.dump(2) + "\n");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace collkit::step_latency

int main(int argc, char** argv) {
  try {
    return collkit::step_latency::run(argc, argv);
  } catch (const collkit::UsageError& e) {
    std::fprintf(stderr, "step_latency_bench: error: %s\n", e.what());
    return 2;
  } catch (const collkit::FileError& e) {
    std::fprintf(stderr, "step_latency_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "step_latency_bench: error: %s\n", e.what());
    return 1;
  }
}
