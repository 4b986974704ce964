// The benchmark child's request loop over pipes, above the KernelRunner seam:
// a Prepare that changes only the measure options keeps the prepared job.
#include "worker/bench_child.h"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "worker/backend.h"
#include "worker/child_protocol.h"

namespace tunefleet::worker {
namespace {

// Counts what the loop asks of it; a Prepare of seed `refused_seed` fails.
class CountingRunner : public KernelRunner {
 public:
  absl::Status Prepare(const v1::PrepareRequest& request) override {
    ++prepares;
    budget = request.measure().budget_seconds();
    if (request.seed() == refused_seed) return absl::InternalError("the reference faulted");
    return absl::OkStatus();
  }
  bool Remeasure(const v1::MeasureOptions& measure) override {
    ++remeasures;
    budget = measure.budget_seconds();
    return true;
  }
  v1::TrialResult Run(const v1::RunRequest&) override {
    v1::TrialResult result;
    result.set_status(next_status);
    return result;
  }

  v1::TrialStatus next_status = v1::TRIAL_STATUS_OK;
  int prepares = 0;
  int remeasures = 0;
  double budget = 0;
  uint64_t refused_seed = 0;
};

v1::ChildRequest Prepare(uint64_t seed, double budget) {
  v1::ChildRequest request;
  request.mutable_prepare()->mutable_kernel()->set_name("k");
  request.mutable_prepare()->mutable_shape()->add_dims()->set_name("N");
  request.mutable_prepare()->set_seed(seed);
  request.mutable_prepare()->mutable_measure()->set_budget_seconds(budget);
  return request;
}

// Serves `requests` to `runner` and returns the responses.
std::vector<v1::ChildResponse> Serve(KernelRunner* runner,
                                     const std::vector<v1::ChildRequest>& requests) {
  int in[2], out[2];
  EXPECT_EQ(pipe2(in, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  for (const v1::ChildRequest& request : requests) EXPECT_TRUE(WriteMessage(in[1], request).ok());
  close(in[1]);
  EXPECT_EQ(ServeBenchChild(runner, in[0], out[1]), kChildExitOk);
  close(in[0]);
  close(out[1]);
  std::vector<v1::ChildResponse> responses;
  MessageReader reader(out[0]);
  for (v1::ChildResponse response; reader.Read(&response).ok(); response.Clear()) {
    responses.push_back(response);
  }
  close(out[0]);
  return responses;
}

TEST(BenchChildTest, OnlyNewMeasureOptionsKeepThePreparedJob) {
  CountingRunner runner;
  runner.refused_seed = 3;
  std::vector<v1::ChildResponse> responses =
      Serve(&runner, {Prepare(1, 0.1), Prepare(1, 0.03),  // a finalists round: kept
                      Prepare(2, 0.03),                    // another job: prepared
                      Prepare(3, 0.1), Prepare(3, 0.03)}); // a failed job: prepared again
  ASSERT_EQ(responses.size(), 5u);
  EXPECT_TRUE(responses[0].error().empty());
  EXPECT_TRUE(responses[1].error().empty());
  EXPECT_TRUE(responses[2].error().empty());
  EXPECT_NE(responses[3].error(), "");
  EXPECT_NE(responses[4].error(), "");
  EXPECT_EQ(runner.prepares, 4);
  EXPECT_EQ(runner.remeasures, 1);
  EXPECT_DOUBLE_EQ(runner.budget, 0.03);
}

v1::ChildRequest RunRequest() {
  v1::ChildRequest request;
  request.mutable_run()->set_index(1);
  return request;
}

// After a failed run (a config that may have written past its outputs) the
// job is prepared again, whatever the next Prepare changes.
TEST(BenchChildTest, AFailedRunEndsThePreparedJob) {
  CountingRunner runner;
  runner.next_status = v1::TRIAL_STATUS_WRONG_RESULT;
  std::vector<v1::ChildResponse> responses =
      Serve(&runner, {Prepare(1, 0.1), RunRequest(), Prepare(1, 0.03), Prepare(1, 0.02)});
  ASSERT_EQ(responses.size(), 4u);
  EXPECT_EQ(runner.prepares, 2);
  EXPECT_EQ(runner.remeasures, 1);  // the last: no run failed since the second Prepare
}

// A runner that cannot take new options alone (the default) is prepared again.
TEST(BenchChildTest, ARunnerWithoutRemeasureIsPreparedAgain) {
  class PlainRunner : public KernelRunner {
   public:
    absl::Status Prepare(const v1::PrepareRequest&) override {
      ++prepares;
      return absl::OkStatus();
    }
    v1::TrialResult Run(const v1::RunRequest&) override { return {}; }
    int prepares = 0;
  } runner;
  EXPECT_EQ(Serve(&runner, {Prepare(1, 0.1), Prepare(1, 0.03)}).size(), 2u);
  EXPECT_EQ(runner.prepares, 2);
}

}  // namespace
}  // namespace tunefleet::worker
