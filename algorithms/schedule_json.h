// JSON form of a schedule (docs/SCHEDULE.md), for `collkit schedule` and other tools.
#pragma once

#include <nlohmann/json.hpp>

#include "algorithms/schedule.h"

namespace collkit {

nlohmann::json to_json(const Op& op);
nlohmann::json to_json(const Step& step);
// The whole schedule: spec and, for each rank in [first, last], its buffer
// sizes and steps. last = -1 means the last rank.
nlohmann::json schedule_to_json(const Schedule& s, int first = 0, int last = -1);

}  // namespace collkit
