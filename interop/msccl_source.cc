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

std::string describe_import(const Schedule& s) {
  const auto* m = dynamic_cast<const MscclSchedule*>(&s);
  if (m == nullptr) return {};
  const ImportStats& st = m->stats();
  return std::to_string(st.chunk) + " elem/chunk, " + std::to_string(st.buffered) + " of " +
         std::to_string(st.messages) + " transfers buffered, " + std::to_string(st.stashes) +
         " stash copies";
}

}  // namespace collkit::msccl
