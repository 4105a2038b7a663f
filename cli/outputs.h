// The checks every command makes on its output paths before any work
// (core/atomic_file.h): writable, distinct from each other and from every
// input; an output "-" is standard output, and the command's printed table
// then goes to standard error.
#pragma once

#include <string>
#include <vector>

#include "core/atomic_file.h"

namespace collkit::cli {

inline void prepare_outputs(const std::vector<PathArg>& outputs,
                            const std::vector<PathArg>& inputs) {
  check_outputs(outputs, inputs);
  for (const PathArg& out : outputs)
    if (out.path == kStdoutPath) reserve_standard_output();
}

// A topology argument as a file: "astra:FILE.yml" names FILE.yml.
inline std::string topology_file(const std::string& arg) {
  const std::string astra = "astra:";
  return arg.rfind(astra, 0) == 0 ? arg.substr(astra.size()) : arg;
}

}  // namespace collkit::cli
