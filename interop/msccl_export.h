// A collkit schedule as an MSCCL XML algorithm (docs/MSCCL.md, "Export").
//
// Chunks: the largest element count that divides every region, buffer and
// the runtime's per-call count; nchunksperloop = that call count / chunk.
// Thread blocks (one send peer and one receive peer each): per rank, one
// block per (peer, direction, colour), where colours keep the messages a
// step sends to (or receives from) one peer on different channels, and one
// block for the local copies and reductions. Steps map one to one: send ->
// s, receive -> r, receive-reduce -> rrc (src = dst), copy -> cpy, reduce ->
// re. Order: every instruction of a collkit step depends on every
// instruction of the rank's previous step, the local block's on the step's
// communication; dependencies already implied (through other blocks' waits)
// are left out, the rest become depid/deps, the second and later ones as
// nop steps in front. Importing the result gives back the same steps.
#pragma once

#include <string>

#include "algorithms/schedule.h"
#include "interop/msccl_xml.h"

namespace collkit::msccl {

// Throws UsageError naming why the schedule cannot be expressed (barrier,
// uneven blocks, a message of 72 chunks or more, more than 64 steps in a
// thread block, more channels or thread blocks than the runtime has, ...).
// `protocol` is Simple, LL or LL128.
Algo export_algo(const Schedule& schedule, const std::string& protocol = "Simple");

}  // namespace collkit::msccl
