// The checks every command makes on its output paths before any work
// (core/atomic_file.h): writable, distinct from each other and from every
// input; an output "-" is standard output, and the command's printed table
// then goes to standard error.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/machine.h"

namespace collkit::cli {

inline void prepare_outputs(const std::vector<PathArg>& outputs,
                            const std::vector<PathArg>& inputs) {
  check_outputs(outputs, inputs);
  for (const PathArg& out : outputs)
    if (out.path == kStdoutPath) reserve_standard_output();
}

// No option is given an empty value: --json "" (an unset shell variable)
// would otherwise write nothing where the user asked for a file, and an
// empty name or number means nothing anywhere else either. Called on every
// subcommand once its options are parsed, before its callback.
inline void refuse_empty_values(const CLI::App& cmd) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0) continue;
    for (const std::string& value : opt->results())
      if (value.empty()) {
        throw UsageError(opt->get_name(false, true) +
                         " '': empty (an unset shell variable?); nothing would be written or "
                         "read in its place");
      }
  }
}

// A topology argument as a file: "astra:FILE.yml" names FILE.yml.
inline std::string topology_file(const std::string& arg) {
  const std::string astra = "astra:";
  return arg.rfind(astra, 0) == 0 ? arg.substr(astra.size()) : arg;
}

// The least memory the simulator holds per rank (its frames, queues and
// links): 1.8 KiB measured for recursive doubling at 2^18 ranks, the
// leanest schedule; ring holds about four times as much.
inline constexpr std::uint64_t kSimBytesPerRank = 2048;

// Refuses, before any work, a rank count whose simulation cannot fit in this
// machine's memory: one line naming where the count came from, instead of an
// out-of-memory kill after minutes. `source` is e.g. "--topology big.json".
inline void check_ranks_fit(std::int64_t ranks, const std::string& source) {
  const std::uint64_t memory = machine_memory_bytes();
  const auto need = static_cast<std::uint64_t>(ranks) * kSimBytesPerRank;
  if (ranks <= 0 || need <= memory) return;
  auto gib = [](std::uint64_t b) { return std::to_string((b + (1u << 29)) >> 30) + " GiB"; };
  throw UsageError(source + ": " + std::to_string(ranks) + " ranks: simulating them needs " +
                   gib(need) + " or more (" + std::to_string(kSimBytesPerRank) +
                   " bytes a rank at least), more than this machine's " + gib(memory) +
                   "; simulate fewer (--ranks)");
}

}  // namespace collkit::cli
