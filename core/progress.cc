#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace collkit {
namespace {

std::string clock_text(std::chrono::steady_clock::duration d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  return text;
}

}  // namespace

Progress::Progress(std::string what, std::size_t total, ProgressOptions options)
    : what_(std::move(what)),
      total_(total),
      active_(options.enabled && !options.quiet),
      terminal_(::isatty(STDERR_FILENO) == 1),
      after_(terminal_ ? std::chrono::seconds(2) : std::chrono::seconds(10)),
      every_(terminal_ ? std::chrono::milliseconds(100) : std::chrono::seconds(10)),
      start_(Clock::now()) {
  if (const char* v = std::getenv("COLLKIT_PROGRESS_INTERVAL_MS")) {
    const long ms = std::strtol(v, nullptr, 10);
    if (ms >= 0) after_ = every_ = std::chrono::milliseconds(ms);
  }
}

Progress::~Progress() { finish(); }

void Progress::set_total(std::size_t total) {
  const std::lock_guard<std::mutex> lock(mutex_);
  total_ = total;
}

void Progress::update(std::size_t done, std::string_view detail) {
  if (!active_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
  detail_.assign(detail);
  draw_locked(Clock::now(), false);
}

void Progress::start_ticker() {
  if (!active_ || ticker_.joinable()) return;
  ticker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!finished_) {
      wake_.wait_for(lock, std::clamp<Clock::duration>(every_, std::chrono::milliseconds(50),
                                                       std::chrono::milliseconds(500)));
      if (!finished_) draw_locked(Clock::now(), false);
    }
  });
}

void Progress::print(const std::string& line) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (drawn_) {
    std::fprintf(stderr, "\r%*s\r", 100, "");
    drawn_ = false;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (drawn_) {
      std::fprintf(stderr, "\r%*s\r", 100, "");
      std::fflush(stderr);
      drawn_ = false;
    }
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::draw_locked(Clock::time_point now, bool forced) {
  if (finished_) return;
  const Clock::duration elapsed = now - start_;
  if (!forced && elapsed < after_) return;
  if (!forced && last_ != Clock::time_point{} && now - last_ < every_) return;
  last_ = now;
  std::string left;
  if (total_ > 0 && done_ > 0 && done_ < total_) {
    const auto rest = elapsed * static_cast<long>(total_ - done_) / static_cast<long>(done_);
    left = clock_text(rest);
  }
  const std::size_t percent = total_ > 0 ? 100 * std::min(done_, total_) / total_ : 0;
  if (terminal_) {
    std::string line;
    if (total_ > 0) {
      constexpr std::size_t kWidth = 40;
      std::string bar(kWidth * std::min(done_, total_) / total_, '#');
      bar.resize(kWidth, '.');
      char head[96];
      std::snprintf(head, sizeof head, "[%s] %3zu%%  %zu/%zu  ", bar.c_str(), percent, done_,
                    total_);
      line = head;
    }
    line += clock_text(elapsed);
    if (!left.empty()) line += "  ~" + left + " left";
    if (!detail_.empty()) line += "  " + detail_;
    if (line.size() > 99) line.resize(99);
    std::fprintf(stderr, "\r%-99s", line.c_str());
    drawn_ = true;
  } else {
    std::string line = "collkit: " + what_ + ": ";
    if (total_ > 0) {
      char head[96];
      std::snprintf(head, sizeof head, "%zu%% (%zu of %zu), ", percent, done_, total_);
      line += head;
    }
    line += clock_text(elapsed) + " elapsed";
    if (!left.empty()) line += ", about " + left + " left";
    if (total_ == 0) line += " (still running)";
    if (!detail_.empty()) line += ": " + detail_;
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace collkit
