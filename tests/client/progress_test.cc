#include "client/tunectl/progress.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Job Running(int64_t done, int64_t total) {
  Job job;
  job.id = "j";
  job.state = JobState::kRunning;
  job.trials_done = done;
  job.trials_total = total;
  return job;
}

TEST(TunectlProgressTest, LineShowsRateBestAndEta) {
  Job job = Running(10, 40);
  JobTarget target;
  target.best_config = "A=1";
  target.best_seconds = 0.002;
  job.targets.push_back(target);
  std::string line = ProgressLine(job, /*rate=*/2.0, ProgressStyle{});
  EXPECT_EQ(line, "job j RUNNING 10/40 25%  2.0/s  best 2 ms  ETA 15s");
}

TEST(TunectlProgressTest, TerminalDrawsABarInPlace) {
  std::ostringstream out;
  ProgressStyle style;
  style.terminal = true;
  style.bar_width = 4;
  ProgressReporter progress(&out, style);
  progress.Update(Running(2, 4), absl::FromUnixSeconds(0));
  progress.Finish();
  EXPECT_EQ(out.str(), "\r[=>  ] RUNNING 2/4 50%\n");
}

TEST(TunectlProgressTest, ColorOnlyWhenAsked) {
  ProgressStyle style;
  style.terminal = true;
  EXPECT_THAT(ProgressLine(Running(1, 2), std::nullopt, style),
              Not(HasSubstr("\x1b[")));
  style.color = true;
  EXPECT_THAT(ProgressLine(Running(1, 2), std::nullopt, style),
              HasSubstr("\x1b[32m"));
}

TEST(TunectlProgressTest, PlainLinesAreThrottledButStateChangesShow) {
  std::ostringstream out;
  ProgressReporter progress(&out, ProgressStyle{});
  absl::Time t0 = absl::FromUnixSeconds(100);
  progress.Update(Running(0, 10), t0);
  progress.Update(Running(1, 10), t0 + absl::Seconds(1));   // too soon
  progress.Update(Running(5, 10), t0 + absl::Seconds(10));  // due
  Job done = Running(10, 10);
  done.state = JobState::kSucceeded;
  progress.Update(done, t0 + absl::Seconds(11));  // final: always
  EXPECT_EQ(out.str(),
            "job j RUNNING 0/10 0%\n"
            "job j RUNNING 5/10 50%  0.5/s  ETA 10s\n"
            "job j SUCCEEDED 10/10 100%  0.9/s\n");
}

}  // namespace
}  // namespace tunefleet::tunectl
