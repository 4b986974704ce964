// The whole tuning loop over loopback with real processes: coordinator,
// workers with the real CPU backend and compiler, the SQLite store, the
// client library and tunectl.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "bench/local_fleet.h"
#include "tests/support/fleet_client.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;

std::string BinPath(const std::string& name) { return BuildDir() + "/bin/" + name; }

constexpr char kShape[] = "M=96,N=96,K=96";

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_ = std::make_unique<Fleet>(SecureFleetOptions(dir_.path()));
    ASSERT_OK(fleet_->StartCoordinator());
    Connect();
  }

  void Connect() {
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  // tunectl with `args`, as the fleet's admin.
  std::vector<std::string> Tunectl(std::vector<std::string> args) {
    std::vector<std::string> argv = {BinPath("tunectl")};
    for (const std::string& flag : fleet_->TunectlFlags()) argv.push_back(flag);
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  SubmitRequest Matmul() {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = kShape;
    return request;
  }

  Job SubmitAndWait(const SubmitRequest& request,
                    std::function<void(const Job&)> on_update = [](const Job&) {}) {
    absl::StatusOr<Job> job = client_->Submit(request);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return Job();
    absl::StatusOr<Job> done = client_->Watch(job->id, on_update);
    EXPECT_TRUE(done.ok()) << done.status();
    return done.ok() ? *done : Job();
  }

  // The search rows of a job (not the finalists' or verifiers' own rows).
  std::vector<server::TrialRecord> Trials(const std::string& job_id) {
    auto store = server::OpenStore(fleet_->database_url());
    EXPECT_TRUE(store.ok()) << store.status();
    auto trials = (*store)->ListTrials(job_id);
    EXPECT_TRUE(trials.ok()) << trials.status();
    std::vector<server::TrialRecord> search;
    for (const server::TrialRecord& trial : trials.ok() ? *trials : search) {
      if (trial.round == server::TrialRound::kSearch) search.push_back(trial);
    }
    return search;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(FleetTest, TwoWorkersSplitAJobAndTheStoredBestIsTheFastestTrial) {
  ASSERT_OK(fleet_->StartWorker());
  ASSERT_OK(fleet_->StartWorker());
  Job job = SubmitAndWait(Matmul());
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  ASSERT_EQ(job.targets.size(), 1u);
  std::vector<server::TrialRecord> trials = Trials(job.id);
  EXPECT_EQ(static_cast<int64_t>(trials.size()), job.trials_total);
  std::set<std::string> configs, workers;
  for (const server::TrialRecord& trial : trials) {
    configs.insert(trial.config);
    workers.insert(trial.worker_id);
    EXPECT_EQ(trial.status, 1) << trial.config << ": " << trial.error;  // OK
    EXPECT_GT(trial.samples, 0);
  }
  EXPECT_EQ(configs.size(), trials.size());  // every config exactly once
  EXPECT_EQ(workers.size(), 2u);             // both workers took part
  // The winner is a member of the finalists round's tie set, whose
  // candidates are the five fastest trials of the first round that were
  // measured in full (a trial cut early is never a finalist), ranked by
  // calibrated time as the coordinator ranks them.
  std::sort(trials.begin(), trials.end(), [](const auto& a, const auto& b) {
    return CalibratedTime(a.median_seconds, a.calibration_seconds) <
           CalibratedTime(b.median_seconds, b.calibration_seconds);
  });
  std::set<std::string> finalists;
  for (const server::TrialRecord& trial : trials) {
    if (!trial.cut_early && finalists.size() < 5) finalists.insert(trial.config);
  }
  absl::StatusOr<BestConfig> best = client_->GetBestConfig("matmul", kShape, "", "");
  ASSERT_OK(best);
  EXPECT_EQ(best->source, BestConfig::Source::kExact);
  EXPECT_TRUE(finalists.contains(best->config)) << best->config;
  EXPECT_EQ(best->config, job.targets[0].best_config);
  EXPECT_EQ(best->median_seconds, job.targets[0].best_seconds);
  EXPECT_EQ(best->job_id, job.id);
  EXPECT_GT(job.targets[0].default_seconds, 0);
  // The finalists' own rows say how many rounds measured them (at least the
  // three interleaved ones) and how much their round medians varied.
  absl::StatusOr<std::vector<Trial>> all = client_->ListAllTrials(job.id);
  ASSERT_OK(all);
  int finalist_rows = 0;
  for (const Trial& trial : *all) {
    if (trial.round != "finalists") continue;
    ++finalist_rows;
    EXPECT_EQ(trial.status, "OK") << trial.config << ": " << trial.error;
    EXPECT_GE(trial.rounds, 3) << trial.config;
    EXPECT_LE(trial.rounds, 9) << trial.config;
    EXPECT_GE(trial.rounds_cv, 0) << trial.config;
  }
  EXPECT_EQ(finalist_rows, static_cast<int>(finalists.size()));  // uncut trials only
}

TEST_F(FleetTest, KilledWorkerMidJobStillCompletesWithEveryConfigOnce) {
  ASSERT_OK(fleet_->StartWorker());
  ASSERT_OK(fleet_->StartWorker());
  bool killed = false;
  Job job = SubmitAndWait(Matmul(), [&](const Job& update) {
    if (!killed && update.trials_done >= 2) {
      fleet_->worker(0)->Kill(SIGKILL);
      killed = true;
    }
  });
  EXPECT_TRUE(killed);
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  std::vector<server::TrialRecord> trials = Trials(job.id);
  std::set<std::string> configs;
  for (const auto& trial : trials) configs.insert(trial.config);
  EXPECT_EQ(static_cast<int64_t>(trials.size()), job.trials_total);
  EXPECT_EQ(configs.size(), trials.size());
  EXPECT_EQ(job.trials_done, job.trials_total);
}

TEST_F(FleetTest, RestartedCoordinatorServesTheBestAndAnswersResubmitsFromTheStore) {
  ASSERT_OK(fleet_->StartWorker());
  SubmitRequest request = Matmul();
  request.strategy = "random";
  request.budget = 6;
  Job first = SubmitAndWait(request);
  ASSERT_EQ(first.state, JobState::kSucceeded) << first.reason;
  absl::StatusOr<BestConfig> before = client_->GetBestConfig("matmul", kShape, "", "");
  ASSERT_OK(before);

  absl::StatusOr<ExitInfo> stopped = fleet_->StopCoordinator();
  ASSERT_OK(stopped);
  EXPECT_TRUE(stopped->success()) << stopped->ToString();
  ASSERT_OK(fleet_->StartCoordinator());  // same data dir, new port
  Connect();

  absl::StatusOr<BestConfig> after = client_->GetBestConfig("matmul", kShape, "", "");
  ASSERT_OK(after);
  EXPECT_EQ(after->source, BestConfig::Source::kExact);
  EXPECT_EQ(after->config, before->config);
  EXPECT_EQ(after->median_seconds, before->median_seconds);
  absl::StatusOr<Job> reloaded = client_->GetJob(first.id);
  ASSERT_OK(reloaded);
  EXPECT_EQ(reloaded->state, JobState::kSucceeded);

  // The old worker knows the old address only; a new one joins the new coordinator.
  ASSERT_OK(fleet_->StartWorker());
  Job cached = SubmitAndWait(request);
  ASSERT_EQ(cached.state, JobState::kSucceeded) << cached.reason;
  ASSERT_EQ(cached.targets.size(), 1u);
  EXPECT_TRUE(cached.targets[0].cached);
  EXPECT_EQ(cached.trials_done, 0);
  EXPECT_TRUE(Trials(cached.id).empty());

  request.force_retune = true;
  Job forced = SubmitAndWait(request);
  ASSERT_EQ(forced.state, JobState::kSucceeded) << forced.reason;
  EXPECT_FALSE(forced.targets[0].cached);
  EXPECT_EQ(Trials(forced.id).size(), 6u);
}

// A coordinator that crashes mid-job and comes back on its address: the
// worker keeps what it measured meanwhile, registers again and reports its
// lease with the receipt, which the new process adopts; every config is
// stored once.
TEST_F(FleetTest, ACrashedCoordinatorBackOnItsAddressKeepsWhatTheWorkerMeasuredMeanwhile) {
  ASSERT_OK(fleet_->StartWorker());
  SubmitRequest request = Matmul();
  request.strategy = "random";
  request.budget = 24;
  request.seed = 5;
  absl::StatusOr<Job> job = client_->Submit(request);
  ASSERT_OK(job);
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  Job midway;
  while (absl::Now() < deadline) {
    absl::StatusOr<Job> current = client_->GetJob(job->id);
    if (current.ok() && current->trials_done >= 2) {
      midway = *current;
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_GE(midway.trials_done, 2);
  ASSERT_LT(midway.trials_done, midway.trials_total) << "the job ended too soon";
  ASSERT_OK(fleet_->RestartCoordinator(SIGKILL, /*down=*/absl::Seconds(1)));
  Connect();

  absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
  ASSERT_OK(done);
  ASSERT_EQ(done->state, JobState::kSucceeded) << done->reason;
  EXPECT_EQ(done->trials_done, done->trials_total);
  const std::vector<server::TrialRecord> trials = Trials(job->id);
  std::set<std::string> configs;
  for (const auto& trial : trials) configs.insert(trial.config);
  EXPECT_EQ(static_cast<int64_t>(trials.size()), done->trials_total);
  EXPECT_EQ(configs.size(), trials.size()) << "a config stored twice";
  absl::StatusOr<std::string> metrics = HttpGet(fleet_->metrics_address(), "/metrics");
  ASSERT_OK(metrics);
  std::map<std::string, double> samples = ParseSamples(*metrics);
  EXPECT_GE(samples["tunefleet_coordinator_leases_adopted_total"], 1);
  EXPECT_EQ(samples["tunefleet_coordinator_lease_receipts_refused_total"], 0);
}

TEST_F(FleetTest, KernelThatNeverCompilesFailsTheJobAndTheServerKeepsServing) {
  ASSERT_OK(fleet_->StartWorker());
  const std::string kernel_dir = dir_.path() + "/broken";
  std::filesystem::copy(SourceDir() + "/kernels/cpu/matmul", kernel_dir);
  std::ofstream(kernel_dir + "/matmul.cc", std::ios::app) << "\nthis is not C++;\n";
  SubmitRequest request = Matmul();
  request.kernel_dir = kernel_dir;
  request.config_set = "quick";
  request.shape = "M=256,N=256,K=256";
  Job job = SubmitAndWait(request);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_THAT(job.reason, ::testing::HasSubstr("COMPILE_ERROR"));
  EXPECT_EQ(job.outcomes["COMPILE_ERROR"], job.trials_total);
  for (const auto& trial : Trials(job.id)) {
    EXPECT_THAT(trial.error, ::testing::HasSubstr("error"));
  }
  EXPECT_OK(client_->ListJobs(10));
}

TEST_F(FleetTest, TunectlSubmitWaitsAndPrintsTheBestAsJson) {
  ASSERT_OK(fleet_->StartWorker());
  absl::StatusOr<RunResult> run = RunProgram(
      Tunectl({"--server", fleet_->address(), "-o", "json", "submit",
       SourceDir() + "/kernels/cpu/matmul", "--shape", kShape, "--config-set", "quick",
       "--wait"}),
      absl::Minutes(3));
  ASSERT_OK(run);
  EXPECT_TRUE(run->exit.success()) << run->exit.ToString() << "\n" << run->out;
  EXPECT_THAT(run->out, ::testing::HasSubstr("\"SUCCEEDED\""));
  absl::StatusOr<RunResult> best = RunProgram(
      Tunectl({"--server", fleet_->address(), "best", "matmul", "--shape", kShape}),
      absl::Seconds(30));
  ASSERT_OK(best);
  EXPECT_TRUE(best->exit.success()) << best->out;
  EXPECT_THAT(best->out, ::testing::HasSubstr("EXACT"));
  absl::StatusOr<RunResult> missing = RunProgram(
      Tunectl({"--server", fleet_->address(), "status", "j-nope"}), absl::Seconds(30));
  ASSERT_OK(missing);
  EXPECT_EQ(missing->exit.code, 5);
}

}  // namespace
}  // namespace tunefleet::testing
