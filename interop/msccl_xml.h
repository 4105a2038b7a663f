// MSCCL XML algorithm files (docs/MSCCL.md): the document model, a reader
// that applies the rules of the runtimes' parsers (Azure/msccl-executor-nccl
// and ROCm/rccl src/misc/msccl/msccl_parser.cc) and a writer whose output
// those parsers accept. The reader parses with tinyxml2; every problem is one
// FileError line naming the file, the line, the element and the attribute.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective.h"

namespace collkit::msccl {

// The runtime's limits (msccl_struct.h).
inline constexpr int kMaxSteps = 64;          // MSCCL_MAX_NUM_STEPS: steps per thread block
inline constexpr int kMaxCount = 72;          // MSCCL_MAX_COUNT: cnt < 72
inline constexpr int kMaxReduceFusion = 16;   // MSCCL_MAX_REDUCE_FUSION
inline constexpr int kMaxChannels = 32;       // MAXCHANNELS (NCCL)
inline constexpr int kMaxTbsPerChannel = 32;  // MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL
inline constexpr int kMaxThreadBlocks = kMaxTbsPerChannel * kMaxChannels;
inline constexpr int kMaxDependentTb = 127;    // dependentBid is an int8_t
inline constexpr int kMaxChunkOffset = 32767;  // srcOffset/dstOffset are int16_t

enum class StepType : std::uint8_t { s, r, rcs, rrs, rrc, rrcs, cpy, re, nop };
std::string_view to_string(StepType t);
bool has_send(StepType t);  // s rcs rrs rrcs
bool has_recv(StepType t);  // r rcs rrs rrc rrcs

enum class XBuf : std::uint8_t { i, o, s };
char to_char(XBuf b);

struct XmlStep {
  int s = 0;
  StepType type = StepType::nop;
  XBuf srcbuf = XBuf::i;
  int srcoff = -1;
  XBuf dstbuf = XBuf::o;
  int dstoff = -1;
  int cnt = 0;
  int depid = -1;
  int deps = -1;
  bool hasdep = false;
  int line = 0;  // in the file, for messages
};

struct XmlTb {
  int id = 0;
  int send = -1;  // peer this block sends to, -1 = none
  int recv = -1;  // peer it receives from, -1 = none
  int chan = 0;
  std::vector<XmlStep> steps;
  int line = 0;
};

struct XmlGpu {
  int id = 0;
  int i_chunks = 0;
  int o_chunks = 0;
  int s_chunks = 0;
  std::vector<XmlTb> tbs;  // index = tb id
  int line = 0;
};

// The MSCCL collective names and what they are in collkit.
struct CollInfo {
  std::string_view name;  // the coll attribute
  Collective collective;
  bool multiplied;  // sizeMultiplier = ngpus (allgather, reducescatter, alltoall)
};
// nullptr for names collkit does not model (send, recv, alltoallv, custom, ...).
const CollInfo* find_coll(std::string_view coll);
const CollInfo& coll_info(Collective c);  // UsageError for barrier

struct Algo {
  std::string file;  // the path as given, for messages
  std::string name;
  std::string proto;  // Simple, LL or LL128
  std::string coll;   // as written
  Collective collective = Collective::all_reduce;
  bool multiplied = false;
  std::string redop;  // informational (the runtime takes the op from the call)
  int ngpus = 0;
  int nchunksperloop = 0;
  int nchannels = 0;
  bool inplace = false;
  bool outofplace = false;
  std::int64_t min_bytes = 0;  // 0 = no limit
  std::int64_t max_bytes = 0;  // 0 = no limit
  // Attributes that current runtimes require but this file lacks (the
  // legacy microsoft/msccl parser accepted them missing).
  std::vector<std::string> missing_attributes;
  std::vector<XmlGpu> gpus;  // index = gpu id
  int line = 0;
};

// Reads and checks a file; FileError (exit 2) with one line on any problem.
Algo read_algo(const std::string& path);
// The same from text; `file` names it in messages.
Algo parse_algo(std::string_view text, const std::string& file);
// The XML text of an algorithm, in the layout msccl-tools writes.
std::string write_algo(const Algo& algo);

// "FILE:LINE: <element ...>" for messages about one element.
std::string where(const Algo& a, int line, std::string_view element);
std::string where_step(const Algo& a, int gpu, int tb, int step);

}  // namespace collkit::msccl
