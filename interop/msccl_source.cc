#include "interop/msccl_source.h"

#include "algorithms/registry.h"
#include "core/error.h"
#include "interop/msccl_import.h"

namespace collkit {
namespace msccl {

std::string file_of(const std::string& algorithm) {
  const std::string prefix = kPrefix;
  if (algorithm.compare(0, prefix.size(), prefix) != 0) return {};
  return algorithm.substr(prefix.size());
}

std::shared_ptr<const Algo> load(const std::string& algorithm) {
  const std::string file = file_of(algorithm);
  if (file.empty())
    throw UsageError("--algorithm '" + algorithm +
                     "': expected msccl:FILE.xml (a path after the colon)");
  return std::make_shared<const Algo>(read_algo(file));
}

namespace {

// "Simple, connection buffer 4194304 bytes (NCCL_BUFFSIZE's default) in 8
// steps, all ranks in one node"
std::string buffering_words(const Algo& a, const Buffering& b) {
  std::string out = a.proto + ", connection buffer " + std::to_string(b.buffer) + " bytes (";
  if (a.proto == "Simple")
    out += b.buffer == kDefaultBuffsize ? "NCCL_BUFFSIZE's default" : "NCCL_BUFFSIZE";
  else
    out += std::string(a.proto == "LL" ? "NCCL_LL_BUFFSIZE" : "NCCL_LL128_BUFFSIZE") + "'s default";
  out += ") in " + std::to_string(b.steps) + " steps";
  if (b.node_size > 0 && b.node_size < a.ngpus)
    out += ", " + std::to_string(b.net_steps) + " between nodes of " + std::to_string(b.node_size) +
           " ranks";
  else
    out += ", all ranks in one node";
  return out;
}

std::string hang_words(const Algo& a, const Hang& h, const ScheduleSpec& spec) {
  const std::string elem = std::to_string(spec.elem_size) + "-byte elements";
  if (h.every)
    return "hangs at every size, from the smallest count " + std::to_string(h.count) + " (" +
           std::to_string(h.at.bytes) + " bytes of " + elem + "; " + buffering_words(a, h.at) + ")";
  return "hangs from count " + std::to_string(h.count) + " (" + std::to_string(h.at.bytes) +
         " bytes of " + elem + "; " + buffering_words(a, h.at) +
         "), where a call carries at most " + std::to_string(h.at.max_allowed_count) +
         " chunk(s); the largest count that runs is " + std::to_string(h.last_ok);
}

}  // namespace

// The bytes of one call as the runtime counts them for minBytes/maxBytes:
// the API count (per rank for allgather, reducescatter and alltoall; the
// per-call count n / p for gather and scatter) times the element size.
std::int64_t call_bytes(const Algo& a, const ScheduleSpec& spec) {
  std::int64_t count = spec.count;
  if (spec.collective == Collective::gather || spec.collective == Collective::scatter)
    count /= a.ngpus;
  if (a.multiplied) count /= a.ngpus;
  return count * spec.elem_size;
}

std::string outside(const Algo& a, const ScheduleSpec& spec, bool in_place) {
  std::string why;
  const auto add = [&why](const std::string& s) { why += (why.empty() ? "" : "; ") + s; };
  if (in_place && !a.inplace) add("in place, which the file does not serve (inplace=\"0\")");
  if (!in_place && !a.outofplace)
    add(std::string("out of place, which the file does not serve (") +
        (a.inplace ? "outofplace=\"0\"" : "no outofplace attribute") +
        "; its schedule runs in place)");
  const std::int64_t bytes = call_bytes(a, spec);
  if (bytes < a.min_bytes || (a.max_bytes > 0 && bytes > a.max_bytes))
    add("outside the file's sizes " + std::to_string(a.min_bytes) + ".." +
        (a.max_bytes > 0 ? std::to_string(a.max_bytes) : std::string("unlimited")) +
        " bytes per call (minBytes, maxBytes)");
  return why.empty() ? why : "outside the MSCCL file's declaration: " + why;
}

}  // namespace msccl

void register_interop_sources() {
  ScheduleSource src;
  src.prefix = "msccl";
  src.description = "msccl:FILE.xml  an MSCCL XML algorithm (docs/MSCCL.md)";
  src.make = [](const ScheduleSpec& spec) -> std::unique_ptr<Schedule> {
    return msccl::import_schedule(msccl::load(spec.algorithm), spec);
  };
  src.fixed_ranks = [](const std::string& name) { return msccl::load(name)->ngpus; };
  src.count_unit = [](const ScheduleSpec& spec) {
    const auto algo = msccl::load(spec.algorithm);
    return msccl::count_unit(*algo, algo->ngpus);
  };
  src.runtime_hang = [](const ScheduleSpec& spec) -> std::string {
    const auto algo = msccl::load(spec.algorithm);
    try {
      msccl::import_schedule(algo, spec);
      return {};
    } catch (const msccl::RuntimeDeadlock&) {
      // below: from which size on, and why
    } catch (const Error&) {
      return {};  // not a hang: building the schedule says what is wrong
    }
    const msccl::Hang h = msccl::first_hang(algo, spec);
    return spec.algorithm + " at count " + std::to_string(spec.count) + " (" +
           std::to_string(msccl::buffering(*algo, spec).bytes) + " bytes): the runtime " +
           msccl::hang_words(*algo, h, spec) + ": " + h.reason;
  };
  src.outside = [](const ScheduleSpec& spec, bool in_place) {
    return msccl::outside(*msccl::load(spec.algorithm), spec, in_place);
  };
  register_schedule_source(std::move(src));
}

}  // namespace collkit

namespace collkit::msccl {

std::string describe_file(const Schedule& s) {
  const auto* m = dynamic_cast<const MscclSchedule*>(&s);
  if (m == nullptr) return {};
  const Algo& a = m->algo();
  std::string out =
      "msccl: \"" + a.name + "\", coll " + a.coll + ", protocol " + a.proto +
      " (kept; the simulated time does not depend on it yet), " + std::to_string(a.nchunksperloop) +
      " chunks per buffer, " +
      (m->stats().in_place ? "run in place (inplace=\"1\" outofplace=\"0\")" : "run out of place") +
      ", sizes " + std::to_string(a.min_bytes) + ".." +
      (a.max_bytes == 0 ? std::string("unlimited") : std::to_string(a.max_bytes)) + " bytes";
  if (!a.missing_attributes.empty()) {
    out += "; note: no ";
    for (std::size_t i = 0; i < a.missing_attributes.size(); ++i)
      out += (i ? "/" : "") + a.missing_attributes[i];
    out +=
        " attribute: current runtimes (msccl-executor-nccl, RCCL) reject the file, the legacy "
        "microsoft/msccl parser accepts it";
  }
  return out;
}

HangReport describe_hang(const ScheduleSpec& spec) {
  HangReport out;
  if (file_of(spec.algorithm).empty()) return out;
  const auto algo = load(spec.algorithm);
  const Hang h = first_hang(algo, spec);
  if (!h.any) {
    ScheduleSpec smallest = spec;
    smallest.count = count_unit(*algo, algo->ngpus);
    out.lines.push_back("runtime: no size hangs (" +
                        buffering_words(*algo, buffering(*algo, smallest)) +
                        "): every message fits its connection or meets its receiver, even at "
                        "the sizes where a call carries one chunk");
    return out;
  }
  out.from_count = h.count;
  out.every = h.every;
  out.lines.push_back("runtime: " + hang_words(*algo, h, spec) +
                      (h.every ? "" : "; larger counts are not verified"));
  // Where every size hangs, verify fails at the first count with the reason.
  if (!h.every)
    out.lines.push_back("runtime: at count " + std::to_string(h.count) + ": " + h.reason);
  return out;
}

std::string describe_import(const Schedule& s) {
  const auto* m = dynamic_cast<const MscclSchedule*>(&s);
  if (m == nullptr) return {};
  const ImportStats& st = m->stats();
  return std::to_string(st.chunk) + " elem/chunk, " + std::to_string(st.buffered) + " of " +
         std::to_string(st.messages) + " transfers buffered, " + std::to_string(st.stashes) +
         " stash copies";
}

}  // namespace collkit::msccl
