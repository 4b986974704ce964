#include "client/convert.h"

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::client_internal {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;

v1::Job SampleJob() {
  v1::Job job;
  job.set_id("j-7");
  job.set_kernel_name("matmul");
  v1::DimValue* dim = job.mutable_shape()->add_dims();
  dim->set_name("M");
  dim->set_value(64);
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_trials_total(10);
  job.set_trials_done(4);
  v1::StatusCount* ok = job.add_outcomes();
  ok->set_status(v1::TRIAL_STATUS_OK);
  ok->set_count(3);
  v1::StatusCount* timeout = job.add_outcomes();
  timeout->set_status(v1::TRIAL_STATUS_TIMEOUT);
  timeout->set_count(1);
  v1::Target* target = job.add_targets();
  target->set_device_model("cpu");
  v1::ParamValue* value =
      target->mutable_best()->mutable_config()->add_values();
  value->set_name("BLOCK_M");
  value->set_value(32);
  target->mutable_best()->set_median_seconds(0.002);
  target->set_default_seconds(0.004);
  v1::TrialSummary* top = job.add_top_trials();
  top->set_config_text("BLOCK_M=32");
  top->set_status(v1::TRIAL_STATUS_OK);
  return job;
}

TEST(ClientConvertTest, JobCarriesEveryField) {
  Job job = JobFromProto(SampleJob());
  EXPECT_EQ(job.id, "j-7");
  EXPECT_EQ(job.shape, "M=64");
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.trials_done, 4);
  EXPECT_EQ(job.outcomes.at("OK"), 3);
  EXPECT_EQ(job.outcomes.at("TIMEOUT"), 1);
  ASSERT_EQ(job.targets.size(), 1u);
  EXPECT_EQ(job.targets[0].best_config, "BLOCK_M=32");  // from the Config
  EXPECT_DOUBLE_EQ(job.targets[0].default_seconds, 0.004);
  ASSERT_EQ(job.top_trials.size(), 1u);
  EXPECT_EQ(job.top_trials[0].status, "OK");
}

TEST(ClientConvertTest, TrialStatusNamesDropThePrefix) {
  EXPECT_EQ(TrialStatusName(v1::TRIAL_STATUS_WRONG_RESULT), "WRONG_RESULT");
  EXPECT_EQ(TrialStatusName(static_cast<v1::TrialStatus>(99)), "STATUS_99");
}

TEST(ClientConvertTest, BestConfigHasAValueMapAndSource) {
  v1::GetBestConfigResponse response;
  response.set_source(v1::GetBestConfigResponse::SOURCE_DEFAULT);
  v1::ParamValue* value = response.mutable_config()->add_values();
  value->set_name("UNROLL");
  value->set_value(4);
  BestConfig best = BestConfigFromProto(response);
  EXPECT_EQ(best.source, BestConfig::Source::kDefault);
  EXPECT_EQ(best.config, "UNROLL=4");
  EXPECT_EQ(best.values.at("UNROLL"), 4);
  EXPECT_STREQ(BestConfigSourceName(best.source), "DEFAULT");
}

TEST(ClientConvertTest, ShapeComesFromTheMapWhenNoTextIsGiven) {
  SubmitRequest request;
  request.shape_dims = {{"M", 8}, {"N", 16}};
  absl::StatusOr<v1::Shape> shape = ShapeFromRequest(request);
  ASSERT_OK(shape.status());
  EXPECT_EQ(shape->dims_size(), 2);
  EXPECT_THAT(ShapeFromRequest(SubmitRequest{}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ClientConvertTest, JobSpecChecksShapeAndConfigSetAgainstTheKernel) {
  absl::StatusOr<KernelBundle> bundle =
      LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  ASSERT_OK(bundle.status());
  SubmitRequest request;
  request.shape = "N=2,M=1,K=3";
  request.force_retune = true;
  request.replace_best = true;
  request.replace_reason = "new toolkit";
  absl::StatusOr<v1::JobSpec> spec = JobSpecFromRequest(request, *bundle);
  ASSERT_OK(spec.status());
  EXPECT_EQ(spec->shape().dims(0).name(), "M");
  EXPECT_TRUE(spec->force_retune());
  EXPECT_TRUE(spec->replace_best());
  EXPECT_EQ(spec->replace_reason(), "new toolkit");
  EXPECT_EQ(spec->sources_size(), 2);

  request.config_set = "no-such-set";
  EXPECT_THAT(JobSpecFromRequest(request, *bundle),
              StatusIs(absl::StatusCode::kInvalidArgument));
  request.config_set = "";
  request.shape = "M=1,N=2,Q=3";
  EXPECT_THAT(JobSpecFromRequest(request, *bundle),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ClientConvertTest, FinalStatesAreFinal) {
  EXPECT_FALSE(IsFinal(JobState::kRunning));
  EXPECT_TRUE(IsFinal(JobState::kCancelled));
  EXPECT_STREQ(JobStateName(JobState::kQueued), "QUEUED");
}

}  // namespace
}  // namespace tunefleet::client_internal
