// Names a user types (collectives, algorithms, subcommands): how near a
// mistyped one is to the valid ones, for "did you mean".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace collkit {

// Levenshtein distance.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidates `given` is near, nearest first: those that contain it or
// that it contains ("tree" in "double_binary_tree"), then those within a few
// edits (at most max(2, length / 3)). Case is ignored.
std::vector<std::string> near_names(const std::string& given,
                                    const std::vector<std::string>& candidates);

// "; did you mean 'a', 'b' or 'c'?" for near_names, "" when there are none.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& candidates);

}  // namespace collkit
