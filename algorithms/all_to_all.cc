#include "algorithms/registry.h"

namespace collkit {

void add_all_to_all(std::vector<AlgorithmDef>& defs) { (void)defs; }

}  // namespace collkit
