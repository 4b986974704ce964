// The bookkeeping of a job's final version (MarkFinal, StopReasonOfState).
#include "server/job_repository.h"

#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

JobSnapshot Running(v1::StopReason targets_stop) {
  JobSnapshot snapshot;
  snapshot.stored.mutable_last_view()->set_id("job-1");
  snapshot.stored.mutable_last_view()->set_state(v1::JOB_STATE_RUNNING);
  snapshot.stored.mutable_last_view()->set_stop_reason(targets_stop);
  snapshot.version = 3;
  return snapshot;
}

TEST(MarkFinalTest, AFailedOrCancelledJobsStopReasonSaysSo) {
  for (v1::JobState state : {v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    JobSnapshot snapshot = Running(v1::STOP_REASON_PLATEAU);
    MarkFinal(&snapshot, state, "why", absl::FromUnixMillis(1234));
    const v1::Job& view = snapshot.stored.last_view();
    EXPECT_EQ(view.state(), state);
    EXPECT_EQ(view.stop_reason(), StopReasonOfState(state));
    EXPECT_NE(view.stop_reason(), v1::STOP_REASON_UNSPECIFIED);
    EXPECT_EQ(view.reason(), "why");
    EXPECT_EQ(view.updated_unix_ms(), 1234);
    EXPECT_EQ(snapshot.version, 4);
    EXPECT_TRUE(IsFinal(snapshot.state()));
  }
}

TEST(MarkFinalTest, ASucceededJobKeepsItsTargetsStopReason) {
  JobSnapshot snapshot = Running(v1::STOP_REASON_TRIAL_BUDGET);
  MarkFinal(&snapshot, v1::JOB_STATE_SUCCEEDED, "", absl::FromUnixMillis(5));
  EXPECT_EQ(snapshot.stored.last_view().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(snapshot.stored.last_view().stop_reason(), v1::STOP_REASON_TRIAL_BUDGET);
  EXPECT_EQ(snapshot.version, 4);
}

}  // namespace
}  // namespace tunefleet::server
