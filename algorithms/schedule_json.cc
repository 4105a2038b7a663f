#include "algorithms/schedule_json.h"

#include <string>

namespace collkit {
namespace {

nlohmann::json region_json(const Region& r) {
  return {{"buf", std::string(to_string(r.buf))}, {"offset", r.offset}, {"count", r.count}};
}

}  // namespace

nlohmann::json to_json(const Op& op) {
  nlohmann::json j;
  j["op"] = std::string(to_string(op.kind));
  switch (op.kind) {
    case OpKind::send:
      j["peer"] = op.peer;
      j["src"] = region_json(op.src);
      break;
    case OpKind::recv:
      j["peer"] = op.peer;
      j["dst"] = region_json(op.dst);
      j["combine"] = op.combine == Combine::reduce ? "reduce" : "copy";
      break;
    case OpKind::copy:
    case OpKind::reduce:
      j["src"] = region_json(op.src);
      j["dst"] = region_json(op.dst);
      break;
  }
  if (op.lanes != 1) j["lanes"] = op.lanes;
  if (op.fan_out != 0) j["fan_out"] = op.fan_out;
  if (op.fan_in != 0) j["fan_in"] = op.fan_in;
  return j;
}

nlohmann::json to_json(const Step& step) {
  nlohmann::json ops = nlohmann::json::array();
  for (const Op& op : step.ops) ops.push_back(to_json(op));
  return ops;
}

nlohmann::json schedule_to_json(const Schedule& s, int first, int last) {
  const ScheduleSpec& spec = s.spec();
  if (last < 0 || last >= spec.ranks) last = spec.ranks - 1;
  nlohmann::json j;
  j["format"] = "collkit-schedule/1";
  j["collective"] = std::string(to_string(spec.collective));
  j["algorithm"] = spec.algorithm;
  j["variant"] = spec.variant;
  j["ranks"] = spec.ranks;
  j["root"] = spec.root;
  j["count"] = spec.count;
  j["elem_size"] = spec.elem_size;
  if (spec.protocol != Protocol::none) j["protocol"] = std::string(to_string(spec.protocol));
  // The channels (nccl family): each graph channel's ring order or tree
  // parents, with the run-time channels (lanes) that share it.
  if (spec.plan) {
    j["channels"] = spec.plan->channels();
    nlohmann::json rings = nlohmann::json::array();
    for (const ChannelPlan::Ring& r : spec.plan->rings)
      rings.push_back({{"order", r.order}, {"lanes", r.lanes}});
    nlohmann::json trees = nlohmann::json::array();
    for (const ChannelPlan::Tree& t : spec.plan->trees)
      trees.push_back({{"parent", t.parent}, {"lanes", t.lanes}});
    j["plan"] = {{"rings", std::move(rings)}, {"trees", std::move(trees)}};
  }
  nlohmann::json programs = nlohmann::json::array();
  for (int r = first; r <= last; ++r) {
    const BufferSizes b = s.buffer_sizes(r);
    nlohmann::json steps = nlohmann::json::array();
    for (Step& st : s.program(r)) steps.push_back(to_json(st));
    programs.push_back(
        {{"rank", r},
         {"buffers", {{"input", b.input}, {"output", b.output}, {"scratch", b.scratch}}},
         {"steps", std::move(steps)}});
  }
  j["programs"] = std::move(programs);
  return j;
}

}  // namespace collkit
