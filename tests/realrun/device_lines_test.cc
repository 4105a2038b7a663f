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
  EXPECT_NO_THROW(check_device_memory(cfg, 1, 1, std::int64_t{3} << 30, "device 0 (GPU)"));
  try {
    check_device_memory(cfg, 1, 1, (std::int64_t{3} << 30) - 1, "device 0 (GPU)");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-b/-e 1073741824: needs 3.0 GiB of device memory per rank and 3.0 GiB in all (1 "
              "ranks, 1 on device 0 (GPU): 3.0 GiB); device 0 (GPU) has 3.0 GiB. Largest: "
              "all_reduce ring at 1073741824 bytes (float, out of place): buffers 2.0 GiB, "
              "scratch 0 B, temp 0 B, expected values 1.0 GiB");
  }
  // Two ranks sharing the device need twice a rank's buffers.
  const MemoryNeed two = memory_needed(cfg, 1);
  EXPECT_EQ(two.per_rank, std::int64_t{3} << 30);
  EXPECT_THROW(check_device_memory(cfg, 1, 2, (std::int64_t{6} << 30) - 1, "device 0 (GPU)"),
               UsageError);
}

// nccl-tests' -z and -C: honoured by the backends that have a meaning for
// them, refused by the one that does not implement them.
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
  try {
    parse_config(args, 2);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-z 1: blocking collectives are not implemented by --backend cuda");
  }
  args.blocking = "0";
  try {
    parse_config(args, 2);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-C 1: CPU timing is not implemented by --backend cuda (its times are GPU event "
              "times)");
  }
  args.backend = "mpi";
  args.cputime = "2";
  EXPECT_THROW(parse_config(args, 2), UsageError);
}

}  // namespace
}  // namespace collkit::realrun
