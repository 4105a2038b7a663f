// Typed errors shared by every collkit library. The CLI catches collkit::Error,
// prints what() on one line and exits with exit_code().
#pragma once

#include <stdexcept>
#include <string>

namespace collkit {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, int exit_code = 2)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Bad parameters given by the user (unknown names, out-of-range values).
class UsageError : public Error {
 public:
  using Error::Error;
};

// A file (topology, model, report) that cannot be parsed or fails validation.
// The message names the file and the field.
class FileError : public Error {
 public:
  using Error::Error;
};

// A schedule that breaks the contract (unmatched send/recv, deadlock, reads of
// unwritten memory, wrong result). Raised by the reference executor.
class ScheduleError : public Error {
 public:
  explicit ScheduleError(const std::string& what) : Error(what, 3) {}
};

// Failures of a real run (MPI, CUDA, NCCL).
class RuntimeFailure : public Error {
 public:
  explicit RuntimeFailure(const std::string& what) : Error(what, 1) {}
};

}  // namespace collkit
