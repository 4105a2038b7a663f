#include "algorithms/registry.h"

namespace collkit {

void add_reduce(std::vector<AlgorithmDef>& defs) { (void)defs; }

}  // namespace collkit
