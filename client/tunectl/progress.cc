#include "client/tunectl/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/tunectl/format.h"

namespace tunefleet::tunectl {
namespace {

constexpr char kGreen[] = "\x1b[32m";
constexpr char kReset[] = "\x1b[0m";

std::string Bar(double fraction, const ProgressStyle& style) {
  int filled = static_cast<int>(fraction * style.bar_width);
  filled = std::clamp(filled, 0, style.bar_width);
  std::string done(filled, '=');
  if (filled > 0 && filled < style.bar_width) done.back() = '>';
  std::string rest(style.bar_width - filled, ' ');
  if (style.color) done = absl::StrCat(kGreen, done, kReset);
  return absl::StrCat("[", done, rest, "] ");
}

// Escape sequences take no room on the screen.
size_t VisibleLength(const std::string& text) {
  size_t length = 0;
  bool escape = false;
  for (char c : text) {
    if (c == '\x1b') escape = true;
    if (!escape) ++length;
    if (escape && c == 'm') escape = false;
  }
  return length;
}

}  // namespace

std::string ProgressLine(const Job& job, std::optional<double> rate,
                         const ProgressStyle& style) {
  double fraction =
      job.trials_total > 0
          ? static_cast<double>(job.trials_done) / job.trials_total
          : 0;
  std::string line =
      style.terminal ? Bar(fraction, style) : absl::StrCat("job ", Printable(job.id), " ");
  absl::StrAppend(&line, JobStateName(job.state), " ", job.trials_done, "/",
                  job.trials_total,
                  absl::StrFormat(" %d%%", static_cast<int>(fraction * 100)));
  if (rate.has_value())
    absl::StrAppend(&line, absl::StrFormat("  %.1f/s", *rate));
  if (const JobTarget* fastest = FastestTarget(job)) {
    absl::StrAppend(&line, "  best ", FormatSeconds(fastest->best_seconds));
  }
  int64_t left = job.trials_total - job.trials_done;
  if (rate.has_value() && *rate > 0 && left > 0 && !IsFinal(job.state)) {
    absl::StrAppend(&line, "  ETA ",
                    HumanDuration(absl::Seconds(left / *rate)));
  }
  return line;
}

std::optional<double> ProgressReporter::Rate(const Job& job,
                                             absl::Time now) const {
  if (!start_time_.has_value()) return std::nullopt;
  double elapsed = absl::ToDoubleSeconds(now - *start_time_);
  int64_t done = job.trials_done - start_done_;
  if (elapsed < 1 || done <= 0) return std::nullopt;
  return done / elapsed;
}

bool ProgressReporter::Due(const Job& job, absl::Time now) const {
  if (last_state_ != job.state || IsFinal(job.state)) return true;
  if (job.trials_done == last_done_) return false;
  absl::Duration interval =
      style_.terminal ? style_.redraw_interval : style_.line_interval;
  return now - last_draw_ >= interval;
}

void ProgressReporter::Update(const Job& job, absl::Time now) {
  if (!start_time_.has_value()) {
    start_time_ = now;
    start_done_ = job.trials_done;
  }
  if (!Due(job, now)) return;
  Draw(ProgressLine(job, Rate(job, now), style_));
  last_draw_ = now;
  last_state_ = job.state;
  last_done_ = job.trials_done;
}

void ProgressReporter::Draw(const std::string& line) {
  if (!style_.terminal) {
    *out_ << line << "\n" << std::flush;
    return;
  }
  size_t length = VisibleLength(line);
  // Blank what is left of a longer previous line.
  std::string pad(bar_length_ > length ? bar_length_ - length : 0, ' ');
  *out_ << "\r" << line << pad << std::flush;
  bar_length_ = length;
}

void ProgressReporter::Finish() {
  if (style_.terminal && bar_length_ > 0) *out_ << "\n" << std::flush;
  bar_length_ = 0;
}

}  // namespace tunefleet::tunectl
