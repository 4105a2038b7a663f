// The schedule interpreter on the host: the device programs of
// realrun/device_program.h run by the per-operation logic of
// realrun/interpreter.h, the same code the GPU kernel runs, with one
// std::thread per rank and lane, real atomics for the flags, and random
// delays between operations drawn from a seed. It is how the programs'
// synchronisation is tested on machines without a GPU: a missing wait shows
// up as a wrong result, a missing signal as a bounded-spin error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "realrun/device_program.h"
#include "realrun/interpreter.h"

namespace collkit::realrun {

struct HostInterpreterOptions {
  std::uint64_t seed = 1;
  // Before every operation each thread, at random: nothing, a yield, or a
  // sleep of a few microseconds.
  bool random_delays = true;
  // This rank (all its lanes, or only `slow_lane`) sleeps `slow_us` before
  // every operation: makes a missing wait for it show.
  int slow_rank = -1;
  int slow_lane = -1;
  int slow_us = 0;
  double spin_limit_ms = 10000;  // a wait longer than this is an error
};

class HostInterpreter {
 public:
  // bases[r]: rank r's areas in host memory. `program` must outlive this.
  HostInterpreter(const DeviceProgram& program, std::span<const AreaBases> bases);
  // One iteration of the program (iterations count from 0 on the flags).
  // Throws RuntimeFailure (describe_interpreter_error) when a wait exceeded
  // the spin limit; the flags start over afterwards.
  void run(const HostInterpreterOptions& options);
  std::uint64_t iterations() const { return epoch_; }

 private:
  const DeviceProgram& program_;
  std::unique_ptr<interp::Flag[]> flags_;
  // per rank, program.ll_bytes[r] in 128-byte lines (aligned for LL and LL128)
  std::vector<std::vector<interp::Ll128Line>> ll_areas_;
  std::vector<interp::ExecOp> ops_;
  interp::Flag error_ = 0;
  std::uint64_t epoch_ = 0;
};

}  // namespace collkit::realrun
