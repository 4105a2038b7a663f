// `collkit bench --backend cuda` as a user runs it (one process, no
// mpirun). Without a device (or without CUDA in the build): exit code 2 and
// one clear message. With a device: a small run over virtual ranks with
// every all_reduce algorithm and a JSON report that records the devices and
// versions, every check passing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "realrun/device_program.h"
#include "reports/report.h"
#include "tests/cli/cli_runner.h"
#ifdef COLLKIT_HAVE_CUDA
#include "realrun/device/cuda_util.h"
#endif

namespace collkit {
namespace {

using testing_cli::run_collkit;

std::filesystem::path scratch_dir() {
  const auto d = std::filesystem::temp_directory_path() / "collkit_cuda_bench_cli_test";
  std::filesystem::create_directories(d);
  return d;
}

bool have_device() {
#ifdef COLLKIT_HAVE_CUDA
  return realrun::cuda_device_problem().empty();
#else
  return false;
#endif
}

TEST(CudaBenchCliTest, WithoutADeviceExitsTwo) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present";
  const auto dir = scratch_dir();
  const auto json = dir / "none.json";
  std::filesystem::remove(json);
  const auto r = run_collkit(
      "bench --backend cuda --collective all_reduce -g 4 --json '" + json.string() + "'", dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
#ifdef COLLKIT_HAVE_CUDA
  EXPECT_NE(r.err.find("collkit: error: no CUDA device: cudaGetDeviceCount"), std::string::npos)
      << r.err;
#else
  EXPECT_NE(r.err.find("built without CUDA"), std::string::npos) << r.err;
#endif
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::filesystem::exists(json));
}

// --engine: an unknown engine, or an engine for another backend, is one
// line naming the flag and its value, exit code 2, nothing on stdout and no
// report file, whether or not there is a device (it is checked first).
TEST(CudaBenchCliTest, BadEngineIsOneLineAndExitTwo) {
  const auto dir = scratch_dir();
  const auto json = dir / "engine.json";
  struct Bad {
    std::string flags, message;
  };
  for (const Bad& b :
       {Bad{"--backend cuda --engine kernels",
            "collkit: error: --engine 'kernels' is not an engine (valid: interpreter, streams)\n"},
        Bad{"--backend mpi --engine streams",
            "collkit: error: --engine streams: only --backend cuda has engines (interpreter, "
            "streams); --backend mpi runs its schedules one way\n"}}) {
    std::filesystem::remove(json);
    const auto r =
        run_collkit("bench " + b.flags + " --collective all_reduce -g 2 -b 1K -e 1K --json '" +
                        json.string() + "'",
                    dir);
    EXPECT_EQ(r.exit_code, 2) << b.flags << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, b.message) << b.flags;
    EXPECT_EQ(r.out, "") << b.flags;
    EXPECT_FALSE(std::filesystem::exists(json)) << b.flags;
  }
}

TEST(CudaBenchCliTest, HelpNamesTheBackends) {
  const auto r = run_collkit("bench --help", scratch_dir());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"--backend", "cuda", "nccl", "-T,--timeout", "-g,--ranks", "--engine",
                        "interpreter", "streams"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(CudaBenchCliTest, VirtualRanksRunEveryAlgorithm) {
  if (!have_device()) GTEST_SKIP() << "GPU test skipped: no CUDA device";
  const auto dir = scratch_dir();
  const auto json = dir / "cuda.json";
  std::filesystem::remove(json);
  const auto r = run_collkit(
      "bench --backend cuda -g 3 --collective all_reduce --algorithm all -b 1K -e 64K -f 8 -n 3 "
      "-w 1 -c 2 -d float -o sum --json '" +
          json.string() + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  const Report rep = read_report(json.string());
  EXPECT_EQ(rep.backend, Backend::cuda);
  EXPECT_EQ(rep.ranks, 3);
  EXPECT_EQ(rep.extra["devices"].size(), 3u);
  EXPECT_TRUE(rep.extra.contains("cuda_driver_version"));
  EXPECT_TRUE(rep.extra.contains("cuda_runtime_version"));
  EXPECT_TRUE(rep.extra.contains("nccl_version"));
  ASSERT_FALSE(rep.results.empty());
  for (const ResultRow& row : rep.results) {
    EXPECT_EQ(row.wrong, 0) << row.algorithm << " " << row.bytes;
    EXPECT_GT(row.time_us, 0);
  }
}

// -G: the timed runs go through a CUDA graph. Every check still passes (the
// checks run outside the graph, after it), the report records the launches,
// and the graph really runs the collective: at 64 MiB, where the kernels and
// copies take milliseconds, a graph launch cannot be much faster than the
// same runs enqueued one by one (an empty or partial graph would be).
TEST(CudaBenchCliTest, GraphLaunchesRunTheCollective) {
  if (!have_device()) GTEST_SKIP() << "GPU test skipped: no CUDA device";
  const auto dir = scratch_dir();
  const auto run = [&](const std::string& extra, const std::string& name) {
    const auto json = dir / name;
    std::filesystem::remove(json);
    const auto r = run_collkit(
        "bench --backend cuda -g 4 --collective all_reduce --algorithm ring,recursive_doubling "
        "-b 64K -e 64M -f 32 -n 5 -w 1 -c 1 " +
            extra + " --json '" + json.string() + "'",
        dir);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("graph: " + std::string(extra.empty() ? "0" : "3")), std::string::npos)
        << r.out;
    return read_report(json.string());
  };
  const Report plain = run("", "plain.json");
  const Report graph = run("-G 3", "graph.json");
  EXPECT_EQ(graph.extra.at("graph_launches").get<int>(), 3);
  EXPECT_EQ(plain.extra.at("graph_launches").get<int>(), 0);
  ASSERT_EQ(graph.results.size(), plain.results.size());
  for (std::size_t i = 0; i < graph.results.size(); ++i) {
    const ResultRow& g = graph.results[i];
    EXPECT_EQ(g.wrong, 0) << g.algorithm << " " << g.bytes;
    EXPECT_GT(g.time_us, 0);
    if (g.bytes == 64 << 20) {
      EXPECT_GT(g.time_us, 0.5 * plain.results[i].time_us)
          << g.algorithm << " in place " << g.in_place << ": graph " << g.time_us << " us, streams "
          << plain.results[i].time_us << " us";
    }
  }
}

// The interpreter is the default engine and says so (title and report);
// --engine streams and --engine interpreter pick one; -G captures the
// interpreter's launches. Every check passes on each, and with -G the graph
// really runs the collective (at 16 MiB not much faster than direct launches).
// Sizes stay at 16 MiB and below: the check's expected values are computed on
// the host (P^2 x count values for all_reduce), which at 64 MiB took most of
// a minute per run on the H100 machine.
TEST(CudaBenchCliTest, EnginesRunEveryAlgorithmAndSaySo) {
  if (!have_device()) GTEST_SKIP() << "GPU test skipped: no CUDA device";
  const auto dir = scratch_dir();
  const auto run = [&](const std::string& extra, const std::string& name) {
    const auto json = dir / name;
    std::filesystem::remove(json);
    const auto r = run_collkit(
        "bench --backend cuda -g 4 --collective all_reduce --algorithm all -b 1K -e 16M -f 128 "
        "-n 3 -w 1 -c 1 " +
            extra + " --json '" + json.string() + "'",
        dir);
    EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.out << r.err;
    EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
    return std::pair{r.out, read_report(json.string())};
  };
  const auto [default_out, by_default] = run("", "engine_default.json");
  EXPECT_NE(default_out.find(", engine interpreter ("), std::string::npos) << default_out;
  EXPECT_EQ(by_default.extra.at("engine").get<std::string>(), "interpreter");
  // LL where every rank is on one GPU, up to the default message size.
  const std::int64_t ll =
      by_default.extra.at("gpus").get<int>() == 1 ? realrun::kInterpreterLlBytes : 0;
  EXPECT_EQ(by_default.extra.at("interpreter_ll_max_bytes").get<std::int64_t>(), ll);
  EXPECT_EQ(by_default.extra.at("interpreter_ll_max_size").get<std::int64_t>(),
            ll > 0 ? realrun::kInterpreterLlSize : 0);
  EXPECT_EQ(by_default.extra.at("interpreter_ll128_above").get<std::int64_t>(),
            ll > 0 ? realrun::kInterpreterLl128Above : 0);
  EXPECT_NE(
      default_out.find(ll > 0 ? "(LL messages up to " + std::to_string(ll) + " B at sizes up to " +
                                    std::to_string(realrun::kInterpreterLlSize) +
                                    " B, as LL128 lines above " +
                                    std::to_string(realrun::kInterpreterLl128Above) + " B)\n"
                              : std::string("(no LL messages)\n")),
      std::string::npos)
      << default_out;
  EXPECT_EQ(by_default.extra.at("engine_requested").get<std::string>(), "automatic");
  const auto [streams_out, streams] = run("--engine streams", "engine_streams.json");
  EXPECT_NE(streams_out.find(", engine streams\n"), std::string::npos) << streams_out;
  EXPECT_EQ(streams.extra.at("engine").get<std::string>(), "streams");
  const auto [direct_out, direct] = run("--engine interpreter", "engine_interpreter.json");
  const auto [graph_out, graph] = run("--engine interpreter -G 2", "engine_graph.json");
  EXPECT_EQ(graph.extra.at("engine").get<std::string>(), "interpreter");
  for (const Report* rep : {&by_default, &streams, &direct, &graph}) {
    ASSERT_FALSE(rep->results.empty());
    for (const ResultRow& row : rep->results) {
      EXPECT_EQ(row.wrong, 0) << row.algorithm << " " << row.bytes;
      EXPECT_GT(row.time_us, 0);
    }
  }
  ASSERT_EQ(graph.results.size(), direct.results.size());
  for (std::size_t i = 0; i < graph.results.size(); ++i) {
    if (graph.results[i].bytes != 16 << 20) continue;
    EXPECT_GT(graph.results[i].time_us, 0.5 * direct.results[i].time_us)
        << graph.results[i].algorithm << ": graph " << graph.results[i].time_us << " us, direct "
        << direct.results[i].time_us << " us";
  }
}

}  // namespace
}  // namespace collkit
