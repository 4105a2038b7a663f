#include "algorithms/registry.h"

namespace collkit {

void add_broadcast(std::vector<AlgorithmDef>& defs) { (void)defs; }

}  // namespace collkit
