// The device lines of `collkit bench` carry nccl-tests' fields.
#include <gtest/gtest.h>

#include "core/error.h"
#include "realrun/harness.h"

namespace collkit::realrun {
namespace {

TEST(DeviceLines, BusIdAsNcclTestsPrintsIt) {
  // nccl-tests: "[%04x:%02x:%02x]" of prop.pciDomainID, pciBusID, pciDeviceID.
  EXPECT_EQ(nccl_tests_bus_id("0000:1B:00.0"), "0000:1b:00");
  EXPECT_EQ(nccl_tests_bus_id("0001:AF:1F.3"), "0001:af:1f");
  EXPECT_EQ(nccl_tests_bus_id("unknown"), "unknown");
}

// The device memory check (nccl and cuda backends) before any allocation:
// one rank of all_reduce ring on one rank holds input, output and the
// expected values, 3 x 1 GiB.
TEST(DeviceMemory, NamesPerRankInAllAndTheDevice) {
  BenchArgs args;
  args.backend = "mpi";
  args.collective = "all_reduce";
  args.algorithms = "ring";
  args.min_bytes = args.max_bytes = "1G";
  const BenchConfig cfg = parse_config(args, 1);
  const std::int64_t total = std::int64_t{80} << 30;
  EXPECT_NO_THROW(check_device_memory(cfg, 1, 1, std::int64_t{3} << 30, total, "device 0 (GPU)"));
  try {
    // Free memory decides, not the total.
    check_device_memory(cfg, 1, 1, (std::int64_t{3} << 30) - 1, total, "device 0 (GPU)");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-b/-e 1073741824: needs 3.0 GiB of device memory per rank and 3.0 GiB in all (1 "
              "ranks, 1 on device 0 (GPU): 3.0 GiB); device 0 (GPU) has 3.0 GiB free of 80.0 GiB. "
              "Largest: "
              "all_reduce ring at 1073741824 bytes (float, out of place): buffers 2.0 GiB, "
              "scratch 0 B, temp 0 B, expected values 1.0 GiB");
  }
  // Two ranks sharing the device need twice a rank's buffers.
  const MemoryNeed two = memory_needed(cfg, 1);
  EXPECT_EQ(two.per_rank, std::int64_t{3} << 30);
  EXPECT_THROW(check_device_memory(cfg, 1, 2, (std::int64_t{6} << 30) - 1, total, "device 0 (GPU)"),
               UsageError);
}

// nccl-tests' -z and -C: every backend takes them (mpi's runs block and
// its times are host times either way).
TEST(NcclTestsFlags, ZAndCPerBackend) {
  BenchArgs args;
  args.collective = "all_reduce";
  args.algorithms = "ring";
  args.blocking = "1";
  args.cputime = "1";
  args.backend = "nccl";
  const BenchConfig nccl = parse_config(args, 2);
  EXPECT_TRUE(nccl.blocking);
  EXPECT_TRUE(nccl.cputime);
  args.backend = "mpi";
  EXPECT_TRUE(parse_config(args, 2).blocking);
  args.backend = "cuda";
  const BenchConfig cuda = parse_config(args, 2);
  EXPECT_TRUE(cuda.blocking);
  EXPECT_TRUE(cuda.cputime);
  args.backend = "mpi";
  args.cputime = "2";
  EXPECT_THROW(parse_config(args, 2), UsageError);
}

// nccl-tests' -m and -R: the GPU backends take them (NCCL's group launch
// and buffer registration); mpi refuses them, saying why; -R 2 (symmetric
// windows) needs ncclMemAlloc buffers and is refused; -R 1 on the cuda
// backend needs NCCL's own collectives among the algorithms.
TEST(NcclTestsFlags, AggregationAndRegistration) {
  BenchArgs args;
  args.collective = "all_reduce";
  args.algorithms = "ring";
  args.agg_iters = "4";
  for (const char* b : {"nccl", "cuda"}) {
    args.backend = b;
    EXPECT_EQ(parse_config(args, 2).agg_iters, 4) << b;
  }
  args.backend = "mpi";
  EXPECT_THROW(parse_config(args, 2), UsageError);
  args.agg_iters = "0";
  args.backend = "nccl";
  EXPECT_THROW(parse_config(args, 2), UsageError);
  args.agg_iters = "1";
  args.local_register = "1";
  EXPECT_EQ(parse_config(args, 2).local_register, 1);
  args.backend = "cuda";
  try {
    parse_config(args, 2);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-R 1: on --backend cuda only NCCL's own collectives"),
              std::string::npos)
        << e.what();
  }
  args.algorithms = "ring,native";
  EXPECT_EQ(parse_config(args, 2).local_register, 1);
  args.local_register = "2";
  for (const char* b : {"nccl", "cuda"}) {
    args.backend = b;
    try {
      parse_config(args, 2);
      FAIL() << b;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("-R 2: symmetric registration"), std::string::npos)
          << e.what();
    }
  }
}

// nccl-tests' -N: cycles of the whole bench, 0 = until interrupted; not with
// a report file, which holds each row once.
TEST(NcclTestsFlags, RunCycles) {
  BenchArgs args;
  args.backend = "mpi";
  args.collective = "all_reduce";
  args.algorithms = "ring";
  EXPECT_EQ(parse_config(args, 2).cycles, 1);
  args.cycles = "3";
  EXPECT_EQ(parse_config(args, 2).cycles, 3);
  args.cycles = "0";
  EXPECT_EQ(parse_config(args, 2).cycles, 0);
  args.cycles = "-1";
  EXPECT_THROW(parse_config(args, 2), UsageError);
  args.cycles = "2";
  args.json_path = "out.json";
  try {
    parse_config(args, 2);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-N 2 with --json out.json: a report holds one measurement per row; write one "
              "report per run (run the command once per cycle) or drop --json");
  }
  args.json_path.clear();
  args.other_outputs = {{"-J", "nt.json"}};
  EXPECT_THROW(parse_config(args, 2), UsageError);
  args.cycles = "1";
  EXPECT_NO_THROW(parse_config(args, 2));
}

}  // namespace
}  // namespace collkit::realrun
