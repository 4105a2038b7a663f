// The device lines of `collkit bench` carry nccl-tests' fields.
#include <gtest/gtest.h>

#include "realrun/harness.h"

namespace collkit::realrun {
namespace {

TEST(DeviceLines, BusIdAsNcclTestsPrintsIt) {
  // nccl-tests: "[%04x:%02x:%02x]" of prop.pciDomainID, pciBusID, pciDeviceID.
  EXPECT_EQ(nccl_tests_bus_id("0000:1B:00.0"), "0000:1b:00");
  EXPECT_EQ(nccl_tests_bus_id("0001:AF:1F.3"), "0001:af:1f");
  EXPECT_EQ(nccl_tests_bus_id("unknown"), "unknown");
}

}  // namespace
}  // namespace collkit::realrun
