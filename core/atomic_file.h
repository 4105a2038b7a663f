// Output files that never destroy anything. What happens depends on what is
// at the path (symbolic links followed to their final target):
//   - a regular file, or nothing: replaced atomically. The text goes to a
//     temporary file in the target's directory, which is then renamed over
//     the target, so readers and interrupted runs see either the old file or
//     the whole new one; an existing file keeps its permission bits.
//   - a symbolic link: followed; its final target is replaced as above (the
//     link stays a link).
//   - a character device (/dev/null, a terminal), FIFO or socket: opened and
//     written in place, no temporary and no rename.
//   - "-": standard output.
//   - /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N (bash's >(...)):
//     the open descriptor itself, written as it is (a pipe behind it has no
//     path to follow; a file behind it keeps its offset and append mode).
//   - a directory, a block device, or an existing file no one may write
//     (no write permission bit, or not writable by this user): refused.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace collkit {

// The output path that means standard output.
inline constexpr char kStdoutPath[] = "-";

// Writes `text` to `path` as described above. On failure removes its
// temporary file, leaves `path` untouched and throws FileError naming `path`
// and the reason.
void write_file_atomic(const std::string& path, const std::string& text);

// Several files that belong together (a report's JSON and CSV): every
// temporary is written and flushed before the first rename, so a failure to
// write any of them leaves none of the targets created or changed.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

// Fails early (FileError) when `path` could not be written later: its
// directory does not exist or is not writable, `path` is a directory or block
// device, or an existing file that is read-only. Lets a command reject a bad
// output path before a long run rather than after.
void check_writable(const std::string& path);

// A path as the command line gave it, with the flag that gave it ("--json",
// "-o", "--topology", "input" for a positional argument).
struct PathArg {
  std::string flag;
  std::string path;
};

// Every check a command makes on its outputs before any work: each output is
// writable (check_writable, the error prefixed with the flag), no two outputs
// are the same file, and no output is the same file as an input (device and
// inode after following links, or the same resolved path for files that do
// not exist yet). Throws UsageError naming both flags and paths, e.g.
// "--json T.json is the same file as --topology T.json: refusing to overwrite
// an input". Empty paths are skipped.
void check_outputs(const std::vector<PathArg>& outputs, const std::vector<PathArg>& inputs);

// For a command that prints a table and has an output "-": from now on
// standard output (fd 1, and stdio's stdout) goes where standard error goes,
// and "-" outputs are written to the original standard output, so that it
// carries the file alone. Call before printing anything; once per process.
void reserve_standard_output();

}  // namespace collkit
