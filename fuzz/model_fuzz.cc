// Fuzzes the planner's model loader (reports/planner_model.cc): any text
// either loads or throws FileError; a loaded model has non-negative figures
// and a total parameter count that does not overflow.
#include "fuzz/fuzz_support.h"
#include "planner/planner_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  Model m;
  try {
    m = parse_model(fuzz::text(data, size), "fuzz.json");
  } catch (const FileError& e) {
    fuzz::check_message(e);
    return 0;
  }
  if (m.layers.empty()) fuzz::property_failed("model without layers accepted");
  for (const Layer& l : m.layers) {
    if (l.params < 0 || l.act_in < 0 || l.act_out < 0 || l.flops < 0 || l.repeat < 1)
      fuzz::property_failed("negative figure in layer " + l.name);
  }
  if (m.total_params() < 0) fuzz::property_failed("total_params overflowed");
  return 0;
}
