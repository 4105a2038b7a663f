#include "algorithms/registry.h"

namespace collkit {

void add_barrier(std::vector<AlgorithmDef>& defs) { (void)defs; }

}  // namespace collkit
