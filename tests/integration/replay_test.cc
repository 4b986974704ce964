// Offline replay against a real run: an exhaustive job of a CPU kernel on a
// loopback fleet (coordinator, worker, real compiler, SQLite), its trials
// exported with `tunectl trials -o csv` as a search dataset, and the
// strategies replayed over it (bench/search_replay.h) as search_bench does.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "bench/local_fleet.h"
#include "bench/search_replay.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;

// 18 valid configs: every tile fits an 8 x 8 problem and any L1, so the
// placeholder limits of the replay give the worker's space.
constexpr char kShape[] = "M=8,N=8";

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    options.finalists = 0;  // the job's best is its fastest search trial
    options.measure_budget = 0.005;
    options.worker_flags = {"--cut-factor", "-1"};  // no partial medians in the export
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    ASSERT_OK(fleet_->StartWorker());
    ClientOptions client;
    client.target = fleet_->address();
    client.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> connected = Client::Connect(client);
    ASSERT_OK(connected);
    client_ = *std::move(connected);
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(ReplayTest, ReplayingAnExhaustiveJobsTrialsFindsItsOptimumExactly) {
  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/cpu/transpose";
  request.shape = kShape;
  absl::StatusOr<Job> submitted = client_->Submit(request);
  ASSERT_OK(submitted);
  absl::StatusOr<Job> job = client_->Watch(submitted->id, [](const Job&) {});
  ASSERT_OK(job);
  ASSERT_EQ(job->state, JobState::kSucceeded) << job->reason;
  EXPECT_EQ(job->strategy, "exhaustive");
  EXPECT_EQ(job->stop_reason, "space_exhausted");
  ASSERT_EQ(job->targets.size(), 1u);
  EXPECT_EQ(job->trials_done, 18);
  const JobTarget& target = job->targets[0];

  absl::StatusOr<RunResult> csv = RunProgram(
      {fleet_->BinPath("tunectl"), "--insecure", "--server", fleet_->address(), "trials",
       job->id, "-o", "csv"},
      absl::Seconds(60));
  ASSERT_OK(csv);
  ASSERT_TRUE(csv->exit.success()) << csv->exit.ToString();
  const std::string path = dir_.path() + "/transpose-M8_N8.csv";
  std::ofstream(path) << "# tunefleet search dataset v1\n"
                      << "# kernel: kernels/cpu/transpose\n"
                      << "# shape: " << kShape << "\n"
                      << "# device: " << target.device_model << "\n"
                      << "# limits: \n"
                      << csv->out;
  absl::StatusOr<bench::Loaded> loaded = bench::LoadDataset(path, SourceDir());
  ASSERT_OK(loaded);
  EXPECT_EQ(loaded->by_ordinal.size(), 18u);
  EXPECT_EQ(loaded->valid, 18);
  // The export carries the exact medians: the served config's row is the
  // job's best time. The served config is the fastest by calibrated time
  // (server/tie_set.h), not always the fastest raw median.
  bool served_row = false;
  for (const auto& [ordinal, row] : loaded->by_ordinal) {
    if (ConfigToString(loaded->space->ConfigAt(ordinal)) != target.best_config) continue;
    served_row = true;
    EXPECT_EQ(row->median_seconds, target.best_seconds);
  }
  EXPECT_TRUE(served_row) << target.best_config << " is not in the export";
  EXPECT_LE(loaded->optimum, target.best_seconds);

  // Replays find the export's optimum exactly.
  absl::StatusOr<bench::ReplayOutcome> exhaustive =
      bench::ReplayToEnd(*loaded, "exhaustive", /*seed=*/1, /*batch=*/4);
  ASSERT_OK(exhaustive);
  EXPECT_EQ(exhaustive->best_config, loaded->optimum_config);
  EXPECT_EQ(exhaustive->best_seconds, loaded->optimum);
  EXPECT_EQ(exhaustive->evaluations, 18);

  // The model strategy replayed to the end proposes each of the 18 configs
  // once, and one seed replays the same search.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    absl::StatusOr<bench::ReplayOutcome> model =
        bench::ReplayToEnd(*loaded, "model", seed, /*batch=*/4);
    ASSERT_OK(model);
    EXPECT_EQ(model->evaluations, 18) << "seed " << seed;
    EXPECT_EQ(model->best_config, loaded->optimum_config) << "seed " << seed;
    EXPECT_GE(model->evaluations_to_optimum, 1) << "seed " << seed;
    absl::StatusOr<bench::ReplayOutcome> again =
        bench::ReplayToEnd(*loaded, "model", seed, /*batch=*/4);
    ASSERT_OK(again);
    EXPECT_EQ(again->evaluations_to_optimum, model->evaluations_to_optimum) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tunefleet::testing
