// Output files are replaced atomically: the text goes to a temporary file in
// the target's directory, which is then renamed over the target, so readers
// and interrupted runs see either the old file or the whole new one.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace collkit {

// Writes `text` to `path` atomically. On failure removes its temporary file,
// leaves `path` untouched and throws FileError naming `path` and the reason.
void write_file_atomic(const std::string& path, const std::string& text);

// Several files that belong together (a report's JSON and CSV): every
// temporary is written and flushed before the first rename, so a failure to
// write any of them leaves none of the targets created or changed.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

// Fails early (FileError) when `path` could not be written later: its
// directory does not exist or is not writable, or `path` is a directory. Lets
// a command reject a bad output path before a long run rather than after.
void check_writable(const std::string& path);

}  // namespace collkit
