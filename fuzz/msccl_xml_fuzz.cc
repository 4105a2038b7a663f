// Fuzzes the MSCCL XML reader (interop/msccl_xml.h) and the importer
// (interop/msccl_import.h): any text either reads or throws FileError; a file
// that reads writes back (write_algo) to text that reads to the same
// algorithm; a small one imports at its smallest count, or throws one of
// collkit's errors, and an imported schedule passes the reference
// executor's structural checks or throws ScheduleError.
#include <string>

#include "algorithms/reference.h"
#include "fuzz/fuzz_support.h"
#include "interop/msccl_import.h"
#include "interop/msccl_xml.h"

namespace {

bool same(const collkit::msccl::Algo& a, const collkit::msccl::Algo& b) {
  if (a.ngpus != b.ngpus || a.nchunksperloop != b.nchunksperloop || a.nchannels != b.nchannels ||
      a.proto != b.proto || a.coll != b.coll || a.inplace != b.inplace ||
      a.outofplace != b.outofplace || a.gpus.size() != b.gpus.size())
    return false;
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    const auto& x = a.gpus[g];
    const auto& y = b.gpus[g];
    if (x.i_chunks != y.i_chunks || x.o_chunks != y.o_chunks || x.s_chunks != y.s_chunks ||
        x.tbs.size() != y.tbs.size())
      return false;
    for (std::size_t t = 0; t < x.tbs.size(); ++t) {
      const auto& u = x.tbs[t];
      const auto& v = y.tbs[t];
      if (u.send != v.send || u.recv != v.recv || u.chan != v.chan ||
          u.steps.size() != v.steps.size())
        return false;
      for (std::size_t s = 0; s < u.steps.size(); ++s) {
        const auto& m = u.steps[s];
        const auto& n = v.steps[s];
        if (m.type != n.type || m.srcbuf != n.srcbuf || m.srcoff != n.srcoff ||
            m.dstbuf != n.dstbuf || m.dstoff != n.dstoff || m.cnt != n.cnt || m.depid != n.depid ||
            m.deps != n.deps || m.hasdep != n.hasdep)
          return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  msccl::Algo algo;
  try {
    algo = msccl::parse_algo(fuzz::text(data, size), "fuzz.xml");
  } catch (const FileError& e) {
    fuzz::check_message(e);
    return 0;
  }
  // Without missing legacy attributes the writer's text must read back the same.
  if (algo.missing_attributes.empty()) {
    try {
      const msccl::Algo again = msccl::parse_algo(msccl::write_algo(algo), "again.xml");
      if (!same(algo, again)) fuzz::property_failed("write_algo does not read back the same");
    } catch (const FileError& e) {
      fuzz::property_failed(std::string("write_algo output does not read: ") + e.what());
    }
  }
  if (algo.ngpus > 16 || algo.nchunksperloop > 4096) return 0;
  ScheduleSpec spec;
  spec.collective = algo.collective;
  spec.algorithm = "msccl:fuzz.xml";
  spec.ranks = algo.ngpus;
  spec.count = msccl::count_unit(algo, algo.ngpus);
  try {
    const auto s = msccl::import_schedule(std::make_shared<const msccl::Algo>(algo), spec);
    try {
      check_structure(*s);
    } catch (const ScheduleError& e) {
      fuzz::check_message(e);
    }
  } catch (const Error& e) {
    fuzz::check_message(e);
  }
  return 0;
}
