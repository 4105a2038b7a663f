// A schedule written out by hand, so the engines' rules (executor, streams,
// interpreter) are tested without depending on any generator. Header-only:
// every test file is its own executable.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/schedule.h"

namespace collkit::realrun::testing_oracle {

class ListSchedule final : public Schedule {
 public:
  ListSchedule(ScheduleSpec spec, std::vector<std::vector<Step>> steps, std::int64_t scratch = 0)
      : Schedule(std::move(spec)), steps_(std::move(steps)), scratch_(scratch) {}
  Generator<Step> program(int rank) const override { return emit(steps_[rank]); }

 protected:
  std::int64_t scratch_size(int) const override { return scratch_; }

 private:
  static Generator<Step> emit(std::vector<Step> steps) {
    for (Step& s : steps) co_yield s;
  }
  std::vector<std::vector<Step>> steps_;
  std::int64_t scratch_;
};

}  // namespace collkit::realrun::testing_oracle
