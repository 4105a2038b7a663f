// NCCL's tuner plugin interface, version 5 (ncclTunerPlugin_v5), written for
// collkit from NCCL's documentation of it; no NCCL header is needed to build.
// Sources, named per field below:
//   [tuner_v5.h]  NCCL 2.28, src/include/plugin/tuner/tuner_v5.h: the
//                 function table, the NVLink domain info, the constants
//   [nccl_tuner]  NCCL 2.28, src/include/plugin/nccl_tuner.h: algorithm and
//                 protocol ids, NCCL_ALGO_PROTO_IGNORE
//   [ex-tuner]    NCCL 2.28, plugins/tuner/example/nccl/tuner.h: ncclFunc_t
//   [ex-common]   NCCL 2.28, plugins/tuner/example/nccl/common.h: the logger,
//                 its levels and subsystems
//   [nccl.h]      NCCL 2.28.9's installed nccl.h (CUDA 13.0): ncclResult_t
//   [enqueue]     NCCL 2.28, src/enqueue.cc ncclGetAlgoInfo: how the table and
//                 nChannels are used (documented in docs/TUNER.md)
// Only the layout matters to NCCL: the names are collkit's own, in a
// namespace-free C header so that the plugin exports a C symbol.
#pragma once

#include <stddef.h>  // NOLINT(modernize-deprecated-headers): a C header
#include <stdint.h>  // NOLINT(modernize-deprecated-headers)

#ifdef __cplusplus
extern "C" {
#endif
// A C header (the layout NCCL, a C++ program built as C ABI, reads): typedefs.
// NOLINTBEGIN(modernize-use-using)

// [nccl.h] ncclResult_t: the values a plugin may return (0 success; NCCL
// falls back to its own tuning for anything else [tuner_v5.h]).
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

// [ex-tuner] The collective a getCollInfo call is for. NCCL tunes the first
// five only (NCCL_NUM_FUNCTIONS 5: "Send/Recv not included for now").
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclNumFuncs = 8
} ncclFunc_t;

// [ex-common] Log levels and subsystem flags of NCCL's logger.
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
enum { NCCL_INIT = 1, NCCL_TUNING = 64, NCCL_ENV = 128 };  // [ex-common] ncclDebugLogSubSys

// [ex-common] NCCL's logger: printf-style, shown with NCCL_DEBUG=WARN/INFO/TRACE.
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);

// [nccl_tuner] Algorithm ids: the first index of the cost table.
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
// [nccl_tuner] Protocol ids: the second index of the cost table.
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
// [nccl_tuner] A table entry NCCL will not run (set by NCCL for pairs it does
// not support or that NCCL_ALGO/NCCL_PROTO exclude; a plugin may set it too).
#define NCCL_ALGO_PROTO_IGNORE (-1.0)

// [tuner_v5.h] Array sizes of version 5.
#define NCCL_NUM_ALGORITHMS_V5 7     // tree, ring, collnet direct/chain, nvls, nvls tree, pat
#define NCCL_NUM_PROTOCOLS_V5 3      // LL, LL128, Simple
#define NCCL_NUM_HW_LINKS_V5 3       // NVLink, PCI, network
#define NCCL_NUM_COMPCAPS_V5 4       // Volta, Ampere, Hopper, Blackwell
#define NCCL_NUM_TUNING_SCALES_V5 3  // 1 node, 2 nodes, 4 nodes

// [tuner_v5.h] ncclNvlDomainInfo_v5_t: NVLink domains of the communicator.
typedef struct {
  int nNvlDomains;           // number of NVLink domains
  int minRanksPerNvlDomain;  // fewest ranks in one domain
  int maxRanksPerNvlDomain;  // most ranks in one domain
} ncclNvlDomainInfo_v5_t;

// [tuner_v5.h] ncclTunerConstants_v5_t: NCCL's own cost model constants,
// which init may change. collkit's plugin leaves them alone: it replaces the
// times NCCL computes from them instead.
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

// [tuner_v5.h] ncclTuner_v5_t, exported by the plugin as the symbol
// "ncclTunerPlugin_v5" (NCCL dlsym's it: src/plugin/tuner/tuner_v5.cc).
typedef struct {
  // [tuner_v5.h] The tuner's name, printed by NCCL when it loads the plugin.
  const char* name;
  // [tuner_v5.h] Once per communicator: its id, rank and node counts, NCCL's
  // logger, its NVLink domains and (in/out) NCCL's model constants; sets
  // *context, handed back to the other two functions.
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  // [tuner_v5.h] Per collective call: collType, nBytes (NCCL's size of the
  // call: the larger of the send and receive buffers [enqueue]), numPipeOps
  // (operations in the group), collCostTable (in/out: really a
  // float[numAlgo][numProto] of times in microseconds, NCCL_ALGO_PROTO_IGNORE
  // for pairs NCCL will not run), numAlgo, numProto, regBuff (buffers can be
  // registered) and *nChannels (out: the channels to use; NCCL passes 0 and
  // keeps its own count when it stays 0 [enqueue]). NCCL then runs the pair
  // with the smallest non-negative time. [tuner_v5.h] says a return other
  // than ncclSuccess makes NCCL fall back to its own tuning; [enqueue] passes
  // it up to the collective call instead (NCCLCHECK), so return ncclSuccess.
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  // [tuner_v5.h] When the communicator is destroyed: frees the context.
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;
// NOLINTEND(modernize-use-using)

#ifdef __cplusplus
}
#endif
