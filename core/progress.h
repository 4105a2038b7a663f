// Progress of a long run on standard error, the one reporter every command
// uses (issue 40): silent for a run's first seconds (2 on a terminal, 10
// otherwise), so short runs and logs stay as they were; then
//   - on a terminal, one bar redrawn in place and cleared when the run ends:
//       [##########..............................]  25%  3/12  0:12  ~0:36 left  ring
//   - otherwise (a log, a pipe, mpirun's forwarded stderr), a line every
//     10 s:
//       collkit: simulate: 25% (3 of 12), 0:12 elapsed, about 0:36 left: ring
//   - with a total of 0 (work that cannot count itself), elapsed time only.
// `quiet` (--quiet) silences it; `enabled` false is a process that does not
// print (MPI ranks other than 0). Thread-safe. COLLKIT_PROGRESS_INTERVAL_MS
// (tests) replaces both the initial silence and the interval of lines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace collkit {

struct ProgressOptions {
  bool quiet = false;
  bool enabled = true;
};

class Progress {
 public:
  // `what` names the run in lines ("simulate", "bench all_reduce").
  Progress(std::string what, std::size_t total, ProgressOptions options = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of the total; `detail` says what runs now (an algorithm, a size).
  void update(std::size_t done, std::string_view detail = {});
  void set_total(std::size_t total);
  // Redraws on a timer too, for work that reports rarely or never (a plan,
  // a measurement of many iterations): the elapsed time keeps moving.
  void start_ticker();
  // Prints one line of the command's own on standard error, above the bar
  // (cleared first, redrawn at the next update), whether or not progress
  // shows.
  void print(const std::string& line);
  // Clears the bar (a terminal); stops the ticker. Called by the destructor.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void draw_locked(Clock::time_point now, bool forced);

  std::string what_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::string detail_;
  bool active_;    // prints at all
  bool terminal_;  // a bar, else lines
  Clock::duration after_;
  Clock::duration every_;
  Clock::time_point start_;
  Clock::time_point last_{};
  bool drawn_ = false;  // a bar is on the screen
  bool finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace collkit
