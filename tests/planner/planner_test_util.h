// Helpers shared by the planner tests: shipped files by path, and a layer of
// a plan by name.
#pragma once

#include <stdexcept>
#include <string>

#include "planner/planner.h"
#include "planner/planner_model.h"

namespace collkit::testing_planner {

inline std::string source(const std::string& rel) {
  return std::string(COLLKIT_SOURCE_DIR) + "/" + rel;
}

inline Model model(const std::string& name) {
  return load_model(source("models/" + name + ".json"));
}

inline const LayerPlan& layer(const PlanResult& r, const std::string& name) {
  for (const LayerPlan& l : r.plan.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

}  // namespace collkit::testing_planner
