// Live progress of a job while tunectl watches it: one bar redrawn in place
// on a terminal, occasional plain lines anywhere else.
#ifndef TUNEFLEET_CLIENT_TUNECTL_PROGRESS_H_
#define TUNEFLEET_CLIENT_TUNECTL_PROGRESS_H_

#include <optional>
#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

struct ProgressStyle {
  // Redraw one line with '\r'; else print plain lines. Default: false.
  bool terminal = false;
  // ANSI colors, on a terminal only. Default: false.
  bool color = false;
  // Characters inside the bar's brackets. Default: 24.
  int bar_width = 24;
  // Least time between two redraws of the bar. Default: 100 ms.
  absl::Duration redraw_interval = absl::Milliseconds(100);
  // Least time between two plain lines while the state stays the same.
  // Default: 5 s.
  absl::Duration line_interval = absl::Seconds(5);
};

// One progress line: "[=====>    ] 12/48 25%  3.1/s  best 1.23 ms  ETA 12s".
// The bar only when `style.terminal`; rate and ETA only when `rate` is known
// (trials per second).
std::string ProgressLine(const Job& job, std::optional<double> rate,
                         const ProgressStyle& style);

// Turns the job states a watch receives into progress output on `out`.
// Thread-safety: not thread-safe; call from the watching thread.
class ProgressReporter {
 public:
  ProgressReporter(std::ostream* out, ProgressStyle style)
      : out_(out), style_(style) {}

  void Update(const Job& job, absl::Time now);
  // Ends a bar's line so later output starts on a fresh one.
  void Finish();

  // Trials per second since the first update, once a second has passed and
  // a trial finished.
  std::optional<double> Rate(const Job& job, absl::Time now) const;

 private:
  bool Due(const Job& job, absl::Time now) const;
  void Draw(const std::string& line);

  std::ostream* out_;
  const ProgressStyle style_;
  std::optional<absl::Time> start_time_;
  int64_t start_done_ = 0;
  absl::Time last_draw_ = absl::InfinitePast();
  std::optional<JobState> last_state_;
  int64_t last_done_ = -1;
  size_t bar_length_ = 0;  // visible length of the bar drawn last
};

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_PROGRESS_H_
