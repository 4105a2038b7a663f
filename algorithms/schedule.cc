#include "algorithms/schedule.h"

#include <string>

#include "core/error.h"

namespace collkit {

std::string_view to_string(Buf b) {
  switch (b) {
    case Buf::input:
      return "input";
    case Buf::output:
      return "output";
    case Buf::scratch:
      return "scratch";
  }
  return "?";
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::send:
      return "send";
    case OpKind::recv:
      return "recv";
    case OpKind::copy:
      return "copy";
    case OpKind::reduce:
      return "reduce";
  }
  return "?";
}

bool Step::has_communication() const {
  for (const Op& op : ops)
    if (op.kind == OpKind::send || op.kind == OpKind::recv) return true;
  return false;
}

BufferSizes io_sizes(Collective c, int p, int rank, int root, std::int64_t n) {
  const Partition part{n, p};
  const bool at_root = rank == root;
  switch (c) {
    case Collective::broadcast:
      return {at_root ? n : 0, n, 0};
    case Collective::reduce:
      return {n, at_root ? n : 0, 0};
    case Collective::all_gather:
      return {part.size(rank), n, 0};
    case Collective::scatter:
      return {at_root ? n : 0, part.size(rank), 0};
    case Collective::gather:
      return {part.size(rank), at_root ? n : 0, 0};
    case Collective::reduce_scatter:
      return {n, part.size(rank), 0};
    case Collective::all_reduce:
      return {n, n, 0};
    case Collective::all_to_all:
      return {n, p * part.size(rank), 0};
    case Collective::barrier:
      return {0, 0, 0};
  }
  return {};
}

BufferSizes Schedule::buffer_sizes(int rank) const {
  BufferSizes s = io_sizes(spec_.collective, spec_.ranks, rank, spec_.root, spec_.count);
  s.scratch = scratch_size(rank);
  return s;
}

std::int64_t Schedule::working_set(int rank) const {
  if (working_sets_.empty()) working_sets_.assign(static_cast<std::size_t>(spec_.ranks), -1);
  std::int64_t& known = working_sets_.at(static_cast<std::size_t>(rank));
  if (known >= 0) return known;
  const BufferSizes s = buffer_sizes(rank);
  std::int64_t temp = 0;
  for (const Step& step : program(rank)) {
    std::int64_t step_temp = 0;
    for (const Op& op : step.ops)
      if (op.kind == OpKind::recv && op.combine == Combine::reduce) step_temp += op.dst.count;
    temp = std::max(temp, step_temp);
  }
  known = s.input + s.output + s.scratch + temp;
  return known;
}

std::vector<Step> Schedule::steps(int rank) const {
  std::vector<Step> out;
  for (Step& s : program(rank)) out.push_back(std::move(s));
  return out;
}

std::string Schedule::describe_op(int, std::int64_t, int) const { return {}; }

std::string Schedule::describe_element(int, Buf, std::int64_t) const { return {}; }

}  // namespace collkit
