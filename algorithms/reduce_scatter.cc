#include "algorithms/registry.h"

namespace collkit {

void add_reduce_scatter(std::vector<AlgorithmDef>& defs) { (void)defs; }

}  // namespace collkit
