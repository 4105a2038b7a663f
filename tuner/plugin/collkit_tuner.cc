// libnccl-tuner-collkit.so: NCCL's tuner plugin (version 5, tuner/nccl_tuner_v5.h)
// filled from the model file `collkit tuner` writes (docs/TUNER.md). NCCL
// loads it with NCCL_TUNER_PLUGIN=collkit; COLLKIT_TUNER_MODEL names the
// model file.
//
// init reads the file and keeps the tables of the communicator's rank and
// node counts; getCollInfo writes the model's time (interpolated between grid
// sizes, tuner_model.h) into every cost-table entry the model has and NCCL
// has not ruled out, marks every other entry NCCL_ALGO_PROTO_IGNORE, and sets
// the channel count of the fastest. Nothing here may take NCCL down: a
// missing, unreadable or mismatched file logs one warning and leaves every
// table NCCL hands over untouched, and no exception leaves the library.
#include <array>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <string_view>

#include "core/error.h"
#include "tuner/nccl_tuner_v5.h"
#include "tuner/tuner_model.h"

namespace {

using collkit::kTunerAlgorithms;
using collkit::kTunerCollectives;
using collkit::kTunerProtocols;
using collkit::TunerComm;
using collkit::TunerTable;

constexpr const char* kModelEnv = "COLLKIT_TUNER_MODEL";
// The largest model file read: a generous grid for dozens of communicators is
// a few MB; anything far larger is not a model file.
constexpr std::streamoff kMaxFileBytes = 256LL << 20;

struct Context {
  ncclDebugLogger_t log = nullptr;
  std::size_t ranks = 0;
  std::size_t nodes = 0;
  // The communicator's tables; empty when the model did not load (the plugin
  // then leaves NCCL's tables as they are).
  TunerComm comm;
  bool active = false;
  std::array<std::array<std::array<const TunerTable*, kTunerProtocols>, kTunerAlgorithms>,
             kTunerCollectives>
      index{};
  std::array<bool, kTunerCollectives> told_missing{};  // one INFO line per collective
  bool told_untouched = false;
};

// The logger may be absent (a test, an older NCCL); messages then go nowhere.
template <typename... Args>
void log(const Context& ctx, ncclDebugLogLevel level, const char* fmt, Args... args) {
  if (ctx.log) ctx.log(level, NCCL_TUNING, __FILE__, __LINE__, fmt, args...);
}

// The names of tuner_model.h view whole string literals, so their data is
// NUL-terminated: logging them allocates nothing.
const char* cstr(std::string_view name) { return name.empty() ? "?" : name.data(); }

// Entry (a, p) of a [rows][n] table.
std::size_t at(int a, int p, int n) {
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(n) + static_cast<std::size_t>(p);
}

// The model file's text, or an error message.
bool read_file(const char* path, std::string& text, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::string(path) + ": cannot be opened";
    return false;
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > kMaxFileBytes) {
    error = std::string(path) + ": larger than 256 MiB, not a model file";
    return false;
  }
  in.seekg(0, std::ios::beg);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) {
    error = std::string(path) + ": read error";
    return false;
  }
  text = s.str();
  return true;
}

void load(Context& ctx) {
  const char* path = std::getenv(kModelEnv);
  if (path == nullptr || *path == '\0') {
    log(ctx, NCCL_LOG_WARN,
        "TUNER/collkit: %s is not set; NCCL's own tuning is used (docs/TUNER.md)", kModelEnv);
    return;
  }
  std::string text, error;
  if (!read_file(path, text, error)) {
    log(ctx, NCCL_LOG_WARN, "TUNER/collkit: model %s; NCCL's own tuning is used", error.c_str());
    return;
  }
  collkit::TunerModel model;
  try {
    model = collkit::parse_tuner_model(text, path);
  } catch (const collkit::FileError& e) {
    log(ctx, NCCL_LOG_WARN, "TUNER/collkit: bad model file %s; NCCL's own tuning is used",
        e.what());
    return;
  }
  const TunerComm* comm = model.find(static_cast<int>(ctx.ranks), static_cast<int>(ctx.nodes));
  if (comm == nullptr) {
    std::string have;
    for (const TunerComm& c : model.comms)
      have += (have.empty() ? "" : ", ") + std::to_string(c.ranks) + "/" + std::to_string(c.nodes);
    log(ctx, NCCL_LOG_WARN,
        "TUNER/collkit: model %s has no tables for %zu ranks on %zu nodes (it has ranks/nodes "
        "%s); NCCL's own tuning is used",
        path, ctx.ranks, ctx.nodes, have.c_str());
    return;
  }
  ctx.comm = *comm;
  for (const TunerTable& t : ctx.comm.tables) ctx.index[t.collective][t.algorithm][t.protocol] = &t;
  ctx.active = true;
  log(ctx, NCCL_LOG_INFO, "TUNER/collkit: model %s: %zu tables for %zu ranks on %zu nodes", path,
      ctx.comm.tables.size(), ctx.ranks, ctx.nodes);
}

ncclResult_t plugin_init(void** context, uint64_t /*commId*/, size_t nRanks, size_t nNodes,
                         ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* /*nvlDomainInfo*/,
                         ncclTunerConstants_v5_t* /*constants*/) {
  if (context == nullptr) return ncclInvalidArgument;
  *context = nullptr;
  try {
    auto ctx = std::make_unique<Context>();
    ctx->log = logFunction;
    ctx->ranks = nRanks;
    ctx->nodes = nNodes;
    load(*ctx);
    *context = ctx.release();
    return ncclSuccess;
  } catch (const std::exception& e) {
    if (logFunction)
      logFunction(NCCL_LOG_WARN, NCCL_TUNING, __FILE__, __LINE__,
                  "TUNER/collkit: init failed (%s); NCCL's own tuning is used", e.what());
  } catch (...) {
  }
  // No context: getCollInfo then leaves every table alone.
  return ncclSuccess;
}

void fill_table(Context* ctx, ncclFunc_t collType, size_t nBytes, float** collCostTable,
                int numAlgo, int numProto, int* nChannels) {
  if (ctx == nullptr || !ctx->active || collCostTable == nullptr || numAlgo < 1 || numProto < 1)
    return;
  // The table is NCCL's float[numAlgo][numProto], passed as float**.
  float* table = reinterpret_cast<float*>(collCostTable);  // NOLINT: NCCL's own cast
  const int coll = static_cast<int>(collType);
  if (coll < 0 || coll >= kTunerCollectives) {
    // Send/recv and anything newer: not in the model.
    return;
  }
  const int na = numAlgo < kTunerAlgorithms ? numAlgo : kTunerAlgorithms;
  const int np = numProto < kTunerProtocols ? numProto : kTunerProtocols;
  // The pairs NCCL runs (non-negative entries) that the model has.
  std::array<bool, static_cast<std::size_t>(kTunerAlgorithms) * kTunerProtocols> allowed{};
  bool any = false;
  for (int a = 0; a < na; ++a)
    for (int p = 0; p < np; ++p) {
      const bool ok = table[at(a, p, numProto)] >= 0 && ctx->index[coll][a][p] != nullptr;
      allowed[at(a, p, kTunerProtocols)] = ok;
      any = any || ok;
    }
  if (!any) {
    if (!ctx->told_missing[static_cast<std::size_t>(coll)]) {
      ctx->told_missing[static_cast<std::size_t>(coll)] = true;
      log(*ctx, NCCL_LOG_INFO,
          "TUNER/collkit: no model table for %s that NCCL can run here; NCCL's own tuning is "
          "used for it",
          cstr(collkit::tuner_collective_name(coll)));
    }
    return;
  }
  const collkit::TunerChoice best = collkit::tuner_best(ctx->comm, coll, nBytes, allowed.data());
  for (int a = 0; a < numAlgo; ++a)
    for (int p = 0; p < numProto; ++p) {
      float& entry = table[at(a, p, numProto)];
      const bool ok = a < na && p < np && allowed[at(a, p, kTunerProtocols)];
      entry = ok ? static_cast<float>(ctx->index[coll][a][p]->time_at(nBytes))
                 : static_cast<float>(NCCL_ALGO_PROTO_IGNORE);
    }
  if (nChannels != nullptr && best.channels > 0) *nChannels = best.channels;
  log(*ctx, NCCL_LOG_TRACE, "TUNER/collkit: %s %zu bytes: %s/%s %d channels, %.3f us",
      cstr(collkit::tuner_collective_name(coll)), nBytes,
      cstr(collkit::tuner_algorithm_name(best.algorithm)),
      cstr(collkit::tuner_protocol_name(best.protocol)), best.channels, best.time_us);
}

// NCCL 2.28 passes an error from getCollInfo up to the collective call
// (enqueue.cc: NCCLCHECK), so this always returns ncclSuccess; the table is
// written only after every figure is computed.
ncclResult_t plugin_get_coll_info(void* context, ncclFunc_t collType, size_t nBytes,
                                  int /*numPipeOps*/, float** collCostTable, int numAlgo,
                                  int numProto, int /*regBuff*/, int* nChannels) {
  try {
    fill_table(static_cast<Context*>(context), collType, nBytes, collCostTable, numAlgo, numProto,
               nChannels);
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing may reach NCCL
  }
  return ncclSuccess;
}

ncclResult_t plugin_finalize(void* context) {
  delete static_cast<Context*>(context);
  return ncclSuccess;
}

}  // namespace

extern "C" {
// The one exported symbol (the library is built with hidden visibility).
// Not const: NCCL receives a non-const pointer to it.
__attribute__((visibility("default"))) extern ncclTuner_v5_t ncclTunerPlugin_v5;
ncclTuner_v5_t ncclTunerPlugin_v5 = {"collkit", plugin_init, plugin_get_coll_info, plugin_finalize};
}
