// IdleMeter's arithmetic on a fake clock, and the stats file it feeds.
#include "worker/idle_meter.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::worker {
namespace {

class IdleMeterTest : public ::testing::Test {
 protected:
  void Wait(double seconds) { now_ += absl::Seconds(seconds); }
  absl::Time now_ = absl::FromUnixSeconds(1000);
  IdleMeter meter_{/*units=*/2, [this] { return now_; }};
};

TEST_F(IdleMeterTest, CountsNothingWhileNoWorkIsHeld) {
  Wait(5);
  EXPECT_EQ(meter_.idle_seconds(), 0);
  EXPECT_EQ(meter_.held_seconds(), 0);
}

TEST_F(IdleMeterTest, CountsIdleUnitsWhileWorkIsHeld) {
  meter_.Hold(+1);
  Wait(1);  // 2 idle units
  meter_.Busy(+1);
  Wait(2);  // 1 idle unit
  meter_.Busy(+1);
  Wait(3);  // none idle
  meter_.Busy(-1);
  meter_.Busy(-1);
  meter_.Hold(-1);
  Wait(10);  // nothing held: not counted
  EXPECT_DOUBLE_EQ(meter_.idle_seconds(), 2 * 1 + 1 * 2);
  EXPECT_DOUBLE_EQ(meter_.held_seconds(), 6);
  EXPECT_DOUBLE_EQ(meter_.busy_seconds(), 2 + 2 * 3);
}

TEST_F(IdleMeterTest, TwoLeasesHeldCountTheTimeOnce) {
  meter_.Hold(+1);
  meter_.Hold(+1);
  Wait(1);
  meter_.Hold(-1);
  Wait(1);
  meter_.Hold(-1);
  EXPECT_DOUBLE_EQ(meter_.held_seconds(), 2);
  EXPECT_DOUBLE_EQ(meter_.idle_seconds(), 4);
}

TEST_F(IdleMeterTest, BusyScopeMarksAUnitForItsLifetime) {
  meter_.Hold(+1);
  {
    BusyScope busy(&meter_);
    Wait(1);
  }
  Wait(1);
  EXPECT_DOUBLE_EQ(meter_.busy_seconds(), 1);
  EXPECT_DOUBLE_EQ(meter_.idle_seconds(), 1 + 2);
  BusyScope none(nullptr);  // a null meter is allowed
}

TEST_F(IdleMeterTest, TheStatsWriterLeavesTheMetersInItsFileOnStop) {
  ::tunefleet::testing::TempDir dir;
  IdleMeter device(/*units=*/1, [this] { return now_; });
  meter_.Hold(+1);
  Wait(2);  // 2 idle units
  IdleStatsWriter writer(dir.path(), &meter_, {&device});
  writer.Stop();
  writer.Stop();  // idempotent
  absl::StatusOr<std::string> text =
      ReadFile(absl::StrCat(dir.path(), "/worker-", getpid(), ".stats"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, ::testing::HasSubstr("compile_pool_threads 2\n"));
  EXPECT_THAT(*text, ::testing::HasSubstr("compile_pool_idle_seconds 4"));
  EXPECT_THAT(*text, ::testing::HasSubstr("devices 1\n"));
}

TEST_F(IdleMeterTest, TheStatsFileSaysWhereTheTrialsTimeWent) {
  ::tunefleet::testing::TempDir dir;
  TrialPhaseTotals totals;
  v1::TrialPhases phases;
  phases.set_load_seconds(0.5);
  phases.set_check_seconds(1);
  phases.set_warmup_seconds(0.25);
  phases.set_sampling_seconds(2);
  totals.Add(phases, absl::Seconds(4));
  totals.Add(phases, absl::Seconds(3));     // the child counted more than the wait: 0 outside
  totals.Add({}, absl::Seconds(9));         // no phases (a crash): not counted
  IdleStatsWriter writer(dir.path(), &meter_, {}, &totals);
  writer.Stop();
  absl::StatusOr<std::string> text =
      ReadFile(absl::StrCat(dir.path(), "/worker-", getpid(), ".stats"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, ::testing::HasSubstr("trials_phased 2\n"));
  EXPECT_THAT(*text, ::testing::HasSubstr("trial_load_seconds 1\n"));
  EXPECT_THAT(*text, ::testing::HasSubstr("trial_check_seconds 2\n"));
  EXPECT_THAT(*text, ::testing::HasSubstr("trial_warmup_seconds 0.5\n"));
  EXPECT_THAT(*text, ::testing::HasSubstr("trial_sampling_seconds 4\n"));
  EXPECT_THAT(*text, ::testing::HasSubstr("trial_outside_seconds 0.25\n"));
}

// No --stats-dir: no file at all, not one at "/worker-<pid>.stats" nor in
// the working directory.
TEST_F(IdleMeterTest, TheStatsWriterWithoutADirectoryWritesNothing) {
  const std::string name = absl::StrCat("worker-", getpid(), ".stats");
  IdleStatsWriter writer("", &meter_, {});
  writer.Stop();
  EXPECT_FALSE(std::filesystem::exists("/" + name));
  EXPECT_FALSE(std::filesystem::exists(name));
}

}  // namespace
}  // namespace tunefleet::worker
