// TuningJob on its own, synchronously, without a store or a lock: how a job
// is submitted and resumed, the view clients see, the time budget, upkeep,
// and the rows a job is written as.
#include "server/tuning_job.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "server/search_strategy.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;

constexpr int64_t kStartedMs = 1'700'000'000'000;

v1::TrialResult Ok(const v1::Config& config, double seconds) {
  v1::TrialResult result;
  *result.mutable_config() = config;
  result.set_status(v1::TRIAL_STATUS_OK);
  result.mutable_measurement()->set_median_seconds(seconds);
  result.mutable_measurement()->set_samples(30);
  return result;
}

// kernels/cpu/matmul at 512^3: one target searching 4 random configs on
// "cpu-a", one cached on "cpu-b".
class TuningJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    auto spec = std::make_shared<v1::JobSpec>();
    *spec->mutable_kernel() = bundle->spec;
    *spec->mutable_shape() = *NormalizeShape(bundle->spec, *ParseShape("M=512,N=512,K=512"));
    spec->set_strategy("random");
    spec->set_budget(4);
    spec->set_time_budget_seconds(60);
    job_.spec = spec;
    job_.view.set_id("j1");
    job_.view.set_state(v1::JOB_STATE_RUNNING);
    job_.view.set_started_unix_ms(kStartedMs);

    auto space = *ConfigSpace::Create(spec->kernel(), spec->shape(),
                                      PlaceholderLimits(v1::BACKEND_CPU));
    StrategyOptions options;
    options.name = "random";
    options.budget = 4;
    options.seed = 7;
    auto strategy = MakeStrategy(space.get(), options);
    ASSERT_OK(strategy);
    JobTarget& searching = job_.targets.emplace_back();
    searching.info.set_device_model("cpu-a");
    searching.info.set_toolkit("g++");
    searching.info.set_tuning_key("key-a");
    searching.trials = std::make_unique<TargetTrials>(std::move(space), *std::move(strategy),
                                                      /*max_attempts=*/2, std::nullopt,
                                                      /*finalists=*/0);
    JobTarget& cached = job_.targets.emplace_back();
    cached.info.set_device_model("cpu-b");
    cached.info.set_toolkit("g++");
    cached.info.set_tuning_key("key-b");
    cached.info.set_cached(true);
    cached.info.mutable_cached_best()->set_config_text("BLOCK=64");
  }

  // Measures every config the search proposes, the i-th at (i + 1) ms.
  void MeasureAll() {
    TargetTrials& trials = *job_.targets[0].trials;
    bool finalists = false;
    std::vector<uint64_t> taken = trials.Take(10, "l1", 1, &finalists);
    for (size_t i = 0; i < taken.size(); ++i) {
      ASSERT_TRUE(trials.Complete(taken[i], "l1", 1,
                                  Ok(trials.space()->ConfigAt(taken[i]), 1e-3 * (i + 1))));
    }
  }

  TuningJob job_;
};

TEST_F(TuningJobTest, TheViewCarriesTheSpecsSettingsAndEachTargetsProgress) {
  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  const v1::Job view = job_.View();
  EXPECT_EQ(view.id(), "j1");
  EXPECT_EQ(view.kernel_name(), job_.spec->kernel().name());
  EXPECT_EQ(view.strategy(), "random");
  EXPECT_EQ(view.trials_budget(), 4);
  EXPECT_EQ(view.time_budget_seconds(), 60);
  ASSERT_EQ(view.targets_size(), 2);
  EXPECT_EQ(view.targets(0).trials_done(), 4);
  EXPECT_EQ(view.targets(0).best().median_seconds(), 1e-3);
  EXPECT_EQ(view.targets(1).stop_reason(), v1::STOP_REASON_CACHED);
  EXPECT_EQ(view.targets(1).best().config_text(), "BLOCK=64");
  ASSERT_EQ(view.outcomes_size(), 1);
  EXPECT_EQ(view.outcomes(0).count(), 4);
  ASSERT_GE(view.top_trials_size(), 1);
  EXPECT_EQ(view.top_trials(0).median_seconds(), 1e-3);
  EXPECT_EQ(view.top_trials(0).device_model(), "cpu-a");
}

TEST_F(TuningJobTest, TheSnapshotHoldsTheSpecTargetsAndView) {
  job_.version = 5;
  const JobSnapshot snapshot = job_.Snapshot();
  EXPECT_EQ(snapshot.id(), "j1");
  EXPECT_EQ(snapshot.version, 5);
  ASSERT_EQ(snapshot.stored.targets_size(), 2);
  EXPECT_EQ(snapshot.stored.targets(1).tuning_key(), "key-b");
  EXPECT_EQ(snapshot.spec.budget(), 4);
}

TEST_F(TuningJobTest, TheTimeBudgetStopsTheSearchOnceItHasPassed) {
  const absl::Time started = absl::FromUnixMillis(kStartedMs);
  EXPECT_FALSE(job_.ApplyTimeBudget(started + absl::Seconds(59)));
  EXPECT_EQ(job_.targets[0].trials->stop_reason(), v1::STOP_REASON_UNSPECIFIED);
  EXPECT_TRUE(job_.ApplyTimeBudget(started + absl::Seconds(60)));
  EXPECT_EQ(job_.targets[0].trials->stop_reason(), v1::STOP_REASON_TIME_BUDGET);
  EXPECT_FALSE(job_.ApplyTimeBudget(started + absl::Seconds(61)));  // stopped once
}

TEST_F(TuningJobTest, AJobWithoutATimeBudgetOrNotStartedIsNeverStopped) {
  TuningJob unstarted;
  unstarted.spec = job_.spec;
  EXPECT_FALSE(unstarted.ApplyTimeBudget(absl::InfiniteFuture()));
  auto spec = std::make_shared<v1::JobSpec>(*job_.spec);
  spec->set_time_budget_seconds(0);
  job_.spec = spec;
  EXPECT_FALSE(job_.ApplyTimeBudget(absl::InfiniteFuture()));
}

TEST_F(TuningJobTest, RowsNameTheLeasedDeviceAndTheRound) {
  Lease lease;
  lease.worker_id = "w1";
  lease.device_id = "cpu0";
  lease.principal = "host-a";
  lease.finalists = true;
  const v1::Config config = job_.targets[0].trials->space()->ConfigAt(0);
  v1::TrialResult result = Ok(config, 2e-3);
  result.set_device_id("claimed-elsewhere");
  const absl::Time now = absl::FromUnixMillis(kStartedMs + 5);
  const TrialRecord row = job_.TrialRow(job_.targets[0], lease, result, now);
  EXPECT_EQ(row.job_id, "j1");
  EXPECT_EQ(row.tuning_key, "key-a");
  EXPECT_EQ(row.config, ConfigToString(config));
  EXPECT_EQ(row.device_id, "cpu0");
  EXPECT_EQ(row.principal, "host-a");
  EXPECT_EQ(row.round, TrialRound::kFinalists);
  EXPECT_EQ(row.finished_unix_ms, kStartedMs + 5);
  EXPECT_EQ(row.median_seconds, 2e-3);

  TrialOutcome best;
  best.result = result;
  const BestRecord best_row = job_.BestRow(job_.targets[0], best, now);
  EXPECT_EQ(best_row.tuning_key, "key-a");
  EXPECT_EQ(best_row.device_model, "cpu-a");
  EXPECT_EQ(best_row.config, ConfigToString(config));
  EXPECT_EQ(best_row.updated_unix_ms, kStartedMs + 5);
}

TEST_F(TuningJobTest, ALeaseIsToldItsTargetsBestOnlyInTheSearch) {
  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  Lease search;
  EXPECT_EQ(job_.targets[0].BestFor(search), 1e-3);
  Lease finalists;
  finalists.finalists = true;
  EXPECT_EQ(job_.targets[0].BestFor(finalists), 0);
  EXPECT_EQ(job_.targets[1].BestFor(search), 0);  // cached
  EXPECT_TRUE(job_.HasTarget("cpu-b", "g++"));
  EXPECT_FALSE(job_.HasTarget("cpu-b", "clang"));
}

TEST_F(TuningJobTest, ARestartRestoresTheSearchRowsOfItsTargetOnly) {
  JobTarget& target = job_.targets[0];
  TargetTrials& trials = *target.trials;
  std::vector<TrialRecord> rows;
  auto row = [&](uint64_t ordinal, const std::string& key, TrialRound round, int status) {
    TrialRecord record;
    record.tuning_key = key;
    record.config = ConfigToString(trials.space()->ConfigAt(ordinal));
    record.status = status;
    record.median_seconds = 1e-3 * (ordinal + 1);
    record.samples = 30;
    record.principal = "host-a";
    record.worker_id = "w1";
    record.device_id = "cpu0";
    record.round = round;
    rows.push_back(record);
  };
  row(0, "key-a", TrialRound::kSearch, v1::TRIAL_STATUS_OK);
  row(1, "key-a", TrialRound::kSearch, v1::TRIAL_STATUS_WRONG_RESULT);
  row(2, "key-a", TrialRound::kFinalists, v1::TRIAL_STATUS_OK);  // runs again
  row(3, "key-b", TrialRound::kSearch, v1::TRIAL_STATUS_OK);     // another target's
  ASSERT_OK(target.RestoreSearch(rows));
  EXPECT_EQ(trials.done(), 2);
  ASSERT_EQ(target.measured_by.size(), 1u);
  EXPECT_EQ(target.measured_by.begin()->second.front().principal, "host-a");

  TrialRecord foreign = rows[0];
  foreign.config = "NOT_A_PARAM=1";
  EXPECT_FALSE(target.RestoreSearch({foreign}).ok());
}

TEST_F(TuningJobTest, AResumedViewDropsTheCountsItsTargetsGiveAgain) {
  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  JobSnapshot snapshot = job_.Snapshot();
  snapshot.version = 9;
  snapshot.stored.mutable_last_view()->set_started_unix_ms(0);  // an older coordinator's
  snapshot.spec.add_sources()->set_content("kept by an older coordinator");
  std::unique_ptr<TuningJob> resumed =
      TuningJob::Resumed(snapshot, absl::FromUnixMillis(kStartedMs + 7));
  EXPECT_EQ(resumed->version, 9);
  EXPECT_EQ(resumed->view.id(), "j1");
  EXPECT_EQ(resumed->view.targets_size(), 0);
  EXPECT_EQ(resumed->view.trials_done(), 0);
  EXPECT_EQ(resumed->view.top_trials_size(), 0);
  EXPECT_EQ(resumed->view.started_unix_ms(), kStartedMs + 7);
  EXPECT_TRUE(resumed->targets.empty());  // planned again by the caller
  ASSERT_GT(resumed->spec->sources_size(), 0);
  EXPECT_EQ(resumed->spec->sources(resumed->spec->sources_size() - 1).content(), "");
}

TEST_F(TuningJobTest, ASubmittedJobQueuesWaitsOrIsAnsweredFromTheStore) {
  const absl::Time now = absl::FromUnixMillis(kStartedMs);
  v1::JobSpec spec = *job_.spec;
  spec.add_sources()->set_content("int main() {}");
  std::unique_ptr<TuningJob> queued =
      TuningJob::Submitted(spec, "j2", "alice", std::move(job_.targets), now);
  EXPECT_EQ(queued->view.id(), "j2");
  EXPECT_EQ(queued->view.owner(), "alice");
  EXPECT_EQ(queued->view.state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(queued->view.created_unix_ms(), kStartedMs);
  EXPECT_EQ(queued->view.reason(), "");
  EXPECT_EQ(queued->targets.size(), 2u);
  EXPECT_EQ(queued->spec->sources(queued->spec->sources_size() - 1).content(), "");
  EXPECT_TRUE(queued->Live());

  std::unique_ptr<TuningJob> waiting = TuningJob::Submitted(spec, "j3", "", {}, now);
  EXPECT_EQ(waiting->view.state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(waiting->view.reason(), "waiting for a worker with a BACKEND_CPU device");

  std::vector<JobTarget> cached;
  cached.push_back(std::move(queued->targets[1]));
  std::unique_ptr<TuningJob> answered = TuningJob::Submitted(spec, "j4", "", std::move(cached), now);
  EXPECT_EQ(answered->view.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_FALSE(answered->Live());
}

TEST_F(TuningJobTest, UpkeepCountsQueuedTrialsAndNamesTheModelsNoWorkerServes) {
  std::map<std::string, int64_t> queued;
  job_.AddQueued(&queued);
  EXPECT_EQ(queued, (std::map<std::string, int64_t>{{"cpu-a", 4}}));  // the cached one has none

  const std::string missing =
      job_.MissingWorkers([](const v1::StoredTarget& t) { return t.device_model() != "cpu-a"; });
  EXPECT_EQ(missing, "cpu-a (g++)");
  EXPECT_EQ(job_.MissingWorkers([](const v1::StoredTarget&) { return true; }), "");

  EXPECT_TRUE(job_.ExplainStall(missing));
  EXPECT_EQ(job_.view.reason(),
            "no live worker can take its work: none with cpu-a (g++); it waits for one");
  EXPECT_FALSE(job_.ExplainStall(missing));  // unchanged
  EXPECT_TRUE(job_.ExplainStall(""));        // a worker came
  EXPECT_EQ(job_.view.reason(), "");
  job_.view.set_reason("cancelled by a client");
  EXPECT_FALSE(job_.ExplainStall(missing));  // another reason is left alone
  EXPECT_EQ(job_.view.reason(), "cancelled by a client");
}

TEST_F(TuningJobTest, StrandedConfigsGoBackToTheQueueOnlyWhenNothingIsLeft) {
  EXPECT_EQ(job_.RepairStranded(), std::nullopt);  // work to hand out: nothing to repair
  TargetTrials& trials = *job_.targets[0].trials;
  bool finalists = false;
  ASSERT_EQ(trials.Take(10, "lost", 1, &finalists).size(), 4u);  // its lease is gone
  EXPECT_FALSE(trials.HasWork());
  EXPECT_EQ(job_.RepairStranded(), 4);
  EXPECT_TRUE(trials.HasWork());

  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  EXPECT_EQ(job_.RepairStranded(), 0);  // finished: nothing held
}

TEST_F(TuningJobTest, AbandoningOrphansSaysWhyForEachSearchingTargetGivenUpNow) {
  const absl::Time start = absl::FromUnixMillis(kStartedMs);
  auto nobody = [](const JobTarget&) { return false; };  // the cached target is never asked
  EXPECT_TRUE(job_.AbandonOrphans(nobody, start, absl::Minutes(10)).empty());
  const std::vector<std::string> abandoned =
      job_.AbandonOrphans(nobody, start + absl::Minutes(10), absl::Minutes(10));
  EXPECT_EQ(abandoned, std::vector<std::string>{job_.targets[0].abandoned});
  EXPECT_TRUE(job_.SearchesFinished());
  EXPECT_TRUE(job_.AbandonOrphans(nobody, start + absl::Minutes(30), absl::Minutes(10)).empty());
}

TEST_F(TuningJobTest, AFinishedJobEndsWithEachTargetsBestAndSucceeds) {
  EXPECT_FALSE(job_.SearchesFinished());
  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  ASSERT_TRUE(job_.SearchesFinished());
  const TuningJob::Ending ending = job_.End(absl::FromUnixMillis(kStartedMs + 9));
  ASSERT_EQ(ending.best.size(), 1u);  // the cached target has its best already
  EXPECT_EQ(ending.best[0].tuning_key, "key-a");
  EXPECT_EQ(ending.best[0].median_seconds, 1e-3);
  EXPECT_EQ(ending.snapshot.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(ending.snapshot.stored.last_view().reason(), "");
}

TEST_F(TuningJobTest, AJobWhoseOnlySearchFoundNothingFailsSayingWhy) {
  job_.targets.pop_back();  // no cached target
  TargetTrials& trials = *job_.targets[0].trials;
  bool finalists = false;
  for (uint64_t ordinal : trials.Take(10, "l1", 1, &finalists)) {
    v1::TrialResult wrong;
    *wrong.mutable_config() = trials.space()->ConfigAt(ordinal);
    wrong.set_status(v1::TRIAL_STATUS_WRONG_RESULT);
    wrong.set_error("first at [0]: got 1, expected 2");
    ASSERT_TRUE(trials.Complete(ordinal, "l1", 1, wrong));
  }
  ASSERT_TRUE(job_.SearchesFinished());
  const TuningJob::Ending ending = job_.End(absl::FromUnixMillis(kStartedMs + 9));
  EXPECT_TRUE(ending.best.empty());
  EXPECT_EQ(ending.snapshot.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(ending.snapshot.stored.last_view().reason().find("no config passed on cpu-a"),
            std::string::npos)
      << ending.snapshot.stored.last_view().reason();
}

TEST_F(TuningJobTest, AReportRecordsOnlyTheConfigsItsLeaseStillHolds) {
  JobTarget& target = job_.targets[0];
  TargetTrials& trials = *target.trials;
  bool finalists = false;
  Lease lease;
  lease.id = "l1";
  lease.epoch = 1;
  lease.principal = "host-a";
  lease.worker_id = "w1";
  lease.device_id = "cpu0";
  lease.ordinals = trials.Take(2, lease.id, lease.epoch, &finalists);
  ASSERT_EQ(lease.ordinals.size(), 2u);
  const uint64_t first = lease.ordinals[0];
  const uint64_t second = lease.ordinals[1];
  v1::TrialResult failed;
  *failed.mutable_config() = trials.space()->ConfigAt(second);
  failed.set_status(v1::TRIAL_STATUS_COMPILE_ERROR);

  const std::vector<v1::TrialStatus> measured = target.Record(
      {{first, Ok(trials.space()->ConfigAt(first), 1e-3)}, {second, failed},
       {first, Ok(trials.space()->ConfigAt(first), 9e-3)}},  // the second report of `first`
      &lease);
  EXPECT_EQ(measured, (std::vector<v1::TrialStatus>{v1::TRIAL_STATUS_OK,
                                                    v1::TRIAL_STATUS_COMPILE_ERROR}));
  EXPECT_TRUE(lease.ordinals.empty());
  EXPECT_EQ(trials.done(), 2);
  EXPECT_EQ(trials.best_seconds().value_or(0), 1e-3);
  ASSERT_EQ(target.measured_by.count(first), 1u);
  EXPECT_EQ(target.measured_by[first].front().device_id, "cpu0");
  EXPECT_EQ(target.measured_by.count(second), 0u);  // no OK result, no measurer
}

TEST_F(TuningJobTest, ABestOnePrincipalMeasuredWaitsForAnotherToVerifyIt) {
  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  JobTarget& target = job_.targets[0];
  const uint64_t best = target.trials->Fastest(1)[0].ordinal;
  target.measured_by[best] = {Measurer{"host-a", "w1", "cpu0"}};
  const absl::Time now = absl::FromUnixMillis(kStartedMs);
  VerifyOptions options;  // kAuto, 5 s

  EXPECT_EQ(target.StartVerification(options, std::nullopt, {}, now),
            JobTarget::VerifyStart::kNoVerifier);  // nobody else is alive
  EXPECT_TRUE(target.served_unverified);
  EXPECT_EQ(target.verification, nullptr);

  const std::vector<LiveDevice> live = {{"w2", "cpu0", "host-b", "b"}};
  EXPECT_EQ(target.StartVerification(options, std::nullopt, live, now),
            JobTarget::VerifyStart::kStarted);
  ASSERT_NE(target.verification, nullptr);
  EXPECT_EQ(target.verification->candidate(), best);
  EXPECT_EQ(target.verification->deadline(), now + options.wait);
}

TEST_F(TuningJobTest, ABestTwoPrincipalsMeasuredNearTheServedOneIsNotVerified) {
  ASSERT_NO_FATAL_FAILURE(MeasureAll());
  JobTarget& target = job_.targets[0];
  const uint64_t best = target.trials->Fastest(1)[0].ordinal;
  target.measured_by[best] = {Measurer{"host-a", "w1", "cpu0"}, Measurer{"host-b", "w2", "cpu0"}};
  BestRecord served;
  served.median_seconds = 1.05e-3;  // within the 10% margin of the candidate's 1 ms
  served.config = ConfigToString(target.trials->space()->ConfigAt(best));
  EXPECT_EQ(target.StartVerification(VerifyOptions(), served, {}, absl::Now()),
            JobTarget::VerifyStart::kNotNeeded);
  EXPECT_FALSE(target.served_unverified);
  EXPECT_EQ(target.verification, nullptr);
}

TEST_F(TuningJobTest, ATargetNobodyTakesPartInIsGivenUpAfterTheTimeout) {
  JobTarget& target = job_.targets[0];
  const absl::Time start = absl::FromUnixMillis(kStartedMs);
  const absl::Duration timeout = absl::Minutes(10);
  EXPECT_FALSE(target.Orphaned(false, start, timeout));
  EXPECT_FALSE(target.Orphaned(false, start + absl::Minutes(9), timeout));
  EXPECT_FALSE(target.Orphaned(true, start + absl::Minutes(9), timeout));  // one came back
  EXPECT_FALSE(target.orphaned_since.has_value());
  EXPECT_FALSE(target.Orphaned(false, start + absl::Minutes(12), timeout));  // counts again
  EXPECT_TRUE(target.abandoned.empty());
  EXPECT_TRUE(target.Orphaned(false, start + absl::Minutes(22), timeout));
  EXPECT_EQ(target.trials->stop_reason(), v1::STOP_REASON_NO_WORKERS);
  EXPECT_EQ(target.abandoned,
            "no live worker of cpu-a (g++) asked for work for 10m: the target was given up");
}

}  // namespace
}  // namespace tunefleet::server
