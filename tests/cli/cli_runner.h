// Runs the built collkit binary as a user would, for the CLI tests: exit code,
// stdout and stderr (through files in a scratch directory, so nothing is
// lost to pipe buffering).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace collkit::testing_cli {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `binary` with `args` (shell words appended to its path); `dir` must
// exist and is left as it was.
inline RunResult run_program(const std::string& binary, const std::string& args,
                             const std::filesystem::path& dir) {
  // Named per process and call: tests of several executables share a
  // scratch directory (::testing::TempDir()) and ctest runs them at once.
  static int calls = 0;
  const std::string tag = std::to_string(::getpid()) + "." + std::to_string(++calls);
  const auto out = dir / (".stdout." + tag);
  const auto err = dir / (".stderr." + tag);
  const std::string cmd =
      "'" + binary + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// The built collkit binary.
inline RunResult run_collkit(const std::string& args, const std::filesystem::path& dir) {
  return run_program(COLLKIT_BINARY, args, dir);
}

}  // namespace collkit::testing_cli
