// The "msccl" schedule source (algorithms/registry.h): --algorithm
// msccl:FILE.xml wherever collkit takes an algorithm name. The collkit
// command's main and the tests call register_interop_sources() at startup.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interop/msccl_xml.h"

namespace collkit {

// Registers every source of this folder (today: msccl). Idempotent.
void register_interop_sources();

namespace msccl {

inline constexpr const char* kPrefix = "msccl:";
// "msccl:FILE.xml" -> "FILE.xml"; empty if the name has another prefix.
std::string file_of(const std::string& algorithm);
// Reads the file named by "msccl:FILE.xml" (FileError, UsageError for an
// empty path).
std::shared_ptr<const Algo> load(const std::string& algorithm);

}  // namespace msccl
}  // namespace collkit

namespace collkit {
class Schedule;
struct ScheduleSpec;
namespace msccl {

// For `collkit verify`: one line about the file behind an imported schedule
// (protocol, in place or not, chunks, what the runtime would also require),
// and one about what the import did at this count; "" for other schedules.
std::string describe_file(const Schedule& s);
std::string describe_import(const Schedule& s);

// Where the runtime hangs running the file of spec.algorithm (msccl:FILE.xml)
// at spec's element size, buffer (nccl_buffsize) and nodes (node_size): the
// lines `collkit verify` prints, and the count from which it hangs (-1:
// none; the smallest count when every size hangs). Empty lines and -1 for
// other algorithms; what import throws for a file that fails otherwise.
struct HangReport {
  std::int64_t from_count = -1;
  bool every = false;
  std::vector<std::string> lines;
};
HangReport describe_hang(const ScheduleSpec& spec);

}  // namespace msccl
}  // namespace collkit
