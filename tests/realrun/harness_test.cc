// The backend-independent parts of `collkit bench` (realrun/harness.h): the
// new flags' validation (-T, -g, -G, --engine), the fault-injection variable's grammar, and the -T
// watchdog (fires with the collective's description, never when disarmed,
// and prints its own copy of it).
#include "realrun/harness.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace collkit::realrun {
namespace {

BenchArgs args(const std::string& backend) {
  BenchArgs a;
  a.backend = backend;
  a.collective = "all_reduce";
  a.algorithms = "ring";
  a.min_bytes = "1K";
  a.max_bytes = "1K";
  return a;
}

TEST(HarnessTest, TimeoutAndRanksFlags) {
  BenchArgs a = args("mpi");
  EXPECT_EQ(parse_config(a, 2).timeout_s, 0);
  a.timeout = "7";
  EXPECT_EQ(parse_config(a, 2).timeout_s, 7);
  a.timeout = "-1";
  EXPECT_THROW(parse_config(a, 2), UsageError);
  a.timeout = "0";
  a.ranks = "4";
  EXPECT_THROW(parse_config(a, 2), UsageError);  // -g is for the cuda backend only
  BenchArgs c = args("cuda");
  c.ranks = "4";
  EXPECT_EQ(parse_config(c, 4).backend, Backend::cuda);
  EXPECT_EQ(parse_config(args("nccl"), 2).backend, Backend::nccl);
  try {
    parse_config(args("gloo"), 2);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("valid: mpi, nccl, cuda"), std::string::npos);
  }
}

TEST(HarnessTest, GraphFlagIsForTheCudaBackendOnly) {
  BenchArgs c = args("cuda");
  EXPECT_EQ(parse_config(c, 2).graph_launches, 0);
  c.graph = "3";
  EXPECT_EQ(parse_config(c, 2).graph_launches, 3);
  for (const char* bad : {"-1", "x", "2.5", ""}) {
    c.graph = bad;
    EXPECT_THROW(parse_config(c, 2), UsageError) << bad;
  }
  for (const char* backend : {"mpi", "nccl"}) {
    BenchArgs a = args(backend);
    a.graph = "0";
    EXPECT_EQ(parse_config(a, 2).graph_launches, 0);
    a.graph = "2";
    try {
      parse_config(a, 2);
      FAIL() << backend << ": no error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("-G 2: CUDA graphs are implemented for --backend cuda"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(HarnessTest, EngineFlagIsForTheCudaBackendOnly) {
  BenchArgs c = args("cuda");
  EXPECT_EQ(parse_config(c, 2).engine, CudaEngine::automatic);
  c.engine = "interpreter";
  EXPECT_EQ(parse_config(c, 2).engine, CudaEngine::interpreter);
  c.engine = "streams";
  EXPECT_EQ(parse_config(c, 2).engine, CudaEngine::streams);
  for (const char* bad : {"Interpreter", "graph", "streams,interpreter", " streams"}) {
    c.engine = bad;
    try {
      parse_config(c, 2);
      FAIL() << bad << ": no error";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--engine '" + std::string(bad) +
                                           "' is not an engine (valid: interpreter, streams)");
    }
  }
  for (const char* backend : {"mpi", "nccl"}) {
    BenchArgs a = args(backend);
    EXPECT_EQ(parse_config(a, 2).engine, CudaEngine::automatic);
    a.engine = "streams";
    try {
      parse_config(a, 2);
      FAIL() << backend << ": no error";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--engine streams: only --backend cuda has engines (interpreter, streams); "
                "--backend " +
                    std::string(backend) + " runs its schedules one way");
    }
  }
  // Different engines are different flags for the MPI agreement check.
  BenchArgs x = args("cuda"), y = args("cuda");
  y.engine = "streams";
  EXPECT_NE(args_hash(x), args_hash(y));
}

TEST(HarnessTest, FaultInjectionGrammar) {
  EXPECT_EQ(FaultInjector::parse("").action(), FaultInjector::Action::none);
  const FaultInjector f = FaultInjector::parse("rank=1,iter=3,action=kill");
  EXPECT_EQ(f.action(), FaultInjector::Action::kill);
  EXPECT_EQ(f.rank(), 1);
  EXPECT_EQ(f.iter(), 3);
  EXPECT_EQ(FaultInjector::parse("action=hang,iter=1,rank=0").action(),
            FaultInjector::Action::hang);
  for (const char* bad : {"rank=1", "rank=1,iter=0,action=exit", "rank=x,iter=1,action=exit",
                          "rank=1,iter=1,action=boom", "rank=1,iter=1,action=exit,extra=2",
                          "rank=1;iter=1;action=exit"})
    EXPECT_THROW(FaultInjector::parse(bad), UsageError) << bad;
}

TEST(HarnessTest, FaultFiresOnlyAtItsRunAndRank) {
  FaultInjector f = FaultInjector::parse("rank=2,iter=3,action=exit");
  f.tick(0);  // run 1 of rank 0's process: nothing
  f.tick(0);
  EXPECT_EXIT(
      {
        FaultInjector g = FaultInjector::parse("rank=2,iter=3,action=exit");
        g.tick(0, 4);  // a single process driving ranks 0..3
        g.tick(0, 4);
        g.tick(0, 4);
      },
      ::testing::ExitedWithCode(17), "rank 2: fault injection .*: exiting with code 17 at run 3");
  f.tick(0);  // run 3, but rank 0 is not rank 2: still nothing
  SUCCEED();
}

TEST(HarnessTest, WatchdogAbortsAStuckCollective) {
  EXPECT_EXIT(
      {
        Watchdog w(1, [](const std::string& what) {
          std::fprintf(stderr, "collkit bench: error: %s\n", what.c_str());
          std::_Exit(1);
        });
        const std::string what = "all_reduce algorithm ring, 1024 bytes (float sum) on rank 3";
        Armed armed(w, what);
        std::this_thread::sleep_for(std::chrono::seconds(10));
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1),
      "timeout: all_reduce algorithm ring, 1024 bytes \\(float sum\\) on rank 3 did not complete "
      "within 1 s \\(-T 1\\)");
}

TEST(HarnessTest, WatchdogStaysQuietWhenDisarmed) {
  int fired = 0;
  {
    Watchdog w(1, [&](const std::string&) { ++fired; });
    const std::string what = "x";
    for (int i = 0; i < 3; ++i) {
      Armed armed(w, what);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // disarmed past the timeout
  }
  EXPECT_EQ(fired, 0);
}

// The watchdog prints its own copy of what was armed: the caller's string
// may be gone long before the timeout (under AddressSanitizer, a watchdog
// that kept a pointer to it would read freed memory here).
TEST(HarnessTest, WatchdogPrintsItsOwnCopyOfWhatWasArmed) {
  EXPECT_EXIT(
      {
        Watchdog w(0.2, [](const std::string& what) {
          std::fprintf(stderr, "collkit bench: error: %s\n", what.c_str());
          std::_Exit(1);
        });
        // A temporary longer than the small-string buffer (on the heap),
        // destroyed at the end of the statement.
        w.arm("broadcast algorithm binomial_tree, " + std::string(64, 'x') + " on rank 5");
        // The freed storage reused by other text.
        std::vector<std::string> junk;
        for (int i = 0; i < 64; ++i) junk.emplace_back(100, '#');
        std::this_thread::sleep_for(std::chrono::seconds(10));
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1),
      "error: timeout: broadcast algorithm binomial_tree, x{64} on rank 5 did not complete within "
      "0.2 s \\(-T 0.2\\)");
}

// Another thread arms (with strings it overwrites and frees at once) and
// disarms many times under a 10 ms timeout, holding some regions ever
// longer until one outlives the timeout: what the watchdog prints is always
// one whole armed text, never freed or half-written memory.
TEST(HarnessTest, WatchdogRacingArmAndDisarmPrintsWholeTexts) {
  EXPECT_EXIT(
      {
        Watchdog w(0.01, [](const std::string& what) {
          static const std::regex whole(
              "timeout: run [0-9]+ y{80} did not complete within 0\\.01 s \\(-T 0\\.01\\)");
          if (!std::regex_match(what, whole)) {
            std::fprintf(stderr, "garbage: %s\n", what.c_str());
            std::_Exit(2);
          }
          std::fprintf(stderr, "%s\n", what.c_str());
          std::_Exit(1);
        });
        std::thread racer([&w] {
          for (int i = 0;; ++i) {
            {
              std::string what = "run " + std::to_string(i) + " " + std::string(80, 'y');
              w.arm(what);
              what.assign(what.size(), '#');
            }
            // Every 1000th region is held 0.5 ms longer than the one before.
            if (i % 1000 == 999) std::this_thread::sleep_for(std::chrono::microseconds(i / 2));
            w.disarm();
          }
        });
        racer.join();  // never returns: the watchdog ends the process
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1), "timeout: run [0-9]+ y{80} did not complete within 0.01 s");
}

}  // namespace
}  // namespace collkit::realrun
