// One rank's buffers in host memory, laid out by its CompiledPlan as the
// device's would be: the single-process engines' tests (streams on the host,
// the host interpreter) run on these. Header-only: every test file is its
// own executable.
#pragma once

#include <cstring>

#include "realrun/executor.h"
#include "realrun/plan.h"

namespace collkit::realrun::testing_oracle {

struct HostRank {
  explicit HostRank(const CompiledPlan& plan)
      : storage_in(static_cast<std::size_t>(plan.storage_in_bytes)),
        storage_out(static_cast<std::size_t>(plan.storage_out_bytes)),
        scratch(static_cast<std::size_t>(plan.scratch_bytes)),
        temp(static_cast<std::size_t>(plan.temp_bytes)) {
    bases.base[static_cast<int>(Area::input)] =
        storage_in.data() + (plan.in_place ? plan.input_offset : 0);
    bases.base[static_cast<int>(Area::output)] =
        plan.in_place ? storage_in.data() + plan.output_offset : storage_out.data();
    bases.base[static_cast<int>(Area::scratch)] = scratch.data();
    bases.base[static_cast<int>(Area::temp)] = temp.data();
    // Scratch and temp start as garbage, as device memory would.
    // (Empty buffers have a null pointer, which memset must not get.)
    if (scratch.size() > 0) std::memset(scratch.data(), 0x33, scratch.size());
    if (temp.size() > 0) std::memset(temp.data(), 0x44, temp.size());
  }
  std::byte* input() const { return bases.base[static_cast<int>(Area::input)]; }
  std::byte* output() const { return bases.base[static_cast<int>(Area::output)]; }
  AlignedBuffer storage_in, storage_out, scratch, temp;
  AreaBases bases;
};

}  // namespace collkit::realrun::testing_oracle
