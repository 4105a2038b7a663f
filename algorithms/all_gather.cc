#include "algorithms/registry.h"

namespace collkit {

void add_all_gather(std::vector<AlgorithmDef>& defs) { (void)defs; }

}  // namespace collkit
