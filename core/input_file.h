// Input files, read whole, the one way every loader reads them: what is at
// the path decides how, and a read never grows without bound.
//   - a regular file: read when it holds at most kMaxInputBytes, else refused
//     before anything is allocated (a 20 GB sparse file fails at once);
//   - a FIFO, socket or character device (a pipe, <(...), /dev/stdin, a
//     terminal): read to its end, refused once it passes kMaxInputBytes
//     (/dev/zero and /dev/urandom never end);
//   - "-": standard input, read the same way, once per process;
//   - a directory or a block device: refused, naming what it is.
// Every error is a FileError, one line: "PATH: cannot open the WHAT: REASON"
// with the operating system's reason, "PATH: is a directory, not a WHAT",
// "PATH: ... more than 256 MiB ...". WHAT names the file's role ("topology
// file", "report", "model file", "MSCCL XML file").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collkit {

// The input path that means standard input.
inline constexpr char kStdinPath[] = "-";

// The most bytes collkit reads of one input: ten times the largest file a
// generator of the largest allowed topology would need, and far beyond any
// report or model file.
inline constexpr std::uint64_t kMaxInputBytes = std::uint64_t{256} << 20;

// The file's bytes, as above. `limit` is for tests; commands use the default.
std::string read_input_file(const std::string& path, std::string_view what,
                            std::uint64_t limit = kMaxInputBytes);

// "PATH" for messages: "-" is "- (standard input)".
std::string input_name(const std::string& path);

}  // namespace collkit
