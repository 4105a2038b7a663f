// Fuzzes the tuner's model-file reader (tuner/tuner_model.cc), the code the
// NCCL plugin runs on a user's file inside NCCL: any text either reads or
// throws FileError; a model that reads writes back to text that reads to the
// same text, and every table interpolates to finite, non-negative times with
// channels in 1..64 at its grid sizes, between them and beyond them, and
// tuner_best picks one of the collective's tables.
#include <cmath>

#include "fuzz/fuzz_support.h"
#include "tuner/tuner_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  TunerModel m;
  try {
    m = parse_tuner_model(fuzz::text(data, size), "fuzz.model");
  } catch (const FileError& e) {
    fuzz::check_message(e);
    return 0;
  }
  if (m.comms.empty()) fuzz::property_failed("model without communicators accepted");
  const std::string text = tuner_model_text(m);
  try {
    if (tuner_model_text(parse_tuner_model(text, "again")) != text)
      fuzz::property_failed("write/read round trip changed the model");
  } catch (const FileError& e) {
    fuzz::property_failed(std::string("written model does not read: ") + e.what());
  }
  for (const TunerComm& c : m.comms) {
    for (const TunerTable& t : c.tables) {
      if (t.points.empty()) fuzz::property_failed("table without points");
      std::vector<std::uint64_t> probes = {0, 1, UINT64_MAX};
      for (const TunerPoint& p : t.points) {
        probes.push_back(p.bytes);
        probes.push_back(p.bytes + 1);
        probes.push_back(p.bytes / 2 + p.bytes / 3);
      }
      for (std::uint64_t b : probes) {
        const double time = t.time_at(b);
        const int ch = t.channels_at(b);
        if (!(time >= 0) || std::isnan(time)) fuzz::property_failed("negative or NaN time");
        if (ch < 1 || ch > kTunerMaxChannels) fuzz::property_failed("channels out of range");
      }
      for (const TunerPoint& p : t.points)
        if (t.time_at(p.bytes) != p.time_us)
          fuzz::property_failed("a grid size does not give its own time");
      for (std::uint64_t b : probes) {
        const TunerChoice best = tuner_best(c, t.collective, b);
        if (best.algorithm < 0 || !c.find(t.collective, best.algorithm, best.protocol))
          fuzz::property_failed("tuner_best picked no table of the collective");
      }
    }
  }
  return 0;
}
