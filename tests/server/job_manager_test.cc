#include "server/job_manager.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/synchronization/notification.h"
#include "common/config_text.h"
#include "common/sha256.h"
#include "common/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/best_config_index.h"
#include "server/long_polls.h"
#include "tests/server/faulty_store.h"
#include "tunefleet/v1/worker_service.pb.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

using ::tunefleet::server::testing::FaultyStore;

// Every fake result's calibration: one device of constant speed.
constexpr double kCalibration = 1e-4;

LeaseQuery QueryFor(const std::string& worker) {
  LeaseQuery query;
  query.worker_id = worker;
  return query;
}

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store = FaultyStore::OpenInMemory(&faulty_);
    ASSERT_OK(store);
    store_ = *std::move(store);
    options_.lease_ttl = absl::Seconds(10);
    options_.batch_size = 3;
    options_.max_lease_attempts = 2;
    options_.finalists = 0;  // the finalists tests turn it on
    options_.audit_build_rate = 0;  // drawn at random: one test turns it on
    options_.write_backoff = absl::Milliseconds(1);
    Restart();
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    bundle_ = *std::move(bundle);
  }

  // Lets `elapsed` pass while `alive` heartbeat, then runs the manager's tick.
  void Elapse(absl::Duration elapsed, const std::vector<std::string>& alive) {
    now_ += elapsed;
    for (const std::string& worker : alive) workers_->Touch(worker);
    jobs_->Tick();
  }

  // A fresh registry and manager over the same store: a coordinator restart.
  void Restart() {
    auto clock = [this] { return now_; };
    jobs_.reset();
    workers_ = std::make_unique<WorkerRegistry>(absl::Seconds(30), clock);
    blobs_ = std::make_unique<SourceBlobs>(faulty_.get());
    index_ = std::make_unique<BestConfigIndex>();
    jobs_ = std::make_unique<JobManager>(options_, faulty_.get(), workers_.get(), blobs_.get(),
                                         clock, /*metrics=*/nullptr, index_.get());
  }

  v1::JobSpec Spec(const std::string& shape = "M=256,N=256,K=256") {
    v1::JobSpec spec;
    *spec.mutable_kernel() = bundle_.spec;
    for (const auto& file : bundle_.sources) *spec.add_sources() = file;
    *spec.mutable_shape() = *ParseShape(shape);
    spec.set_config_set("quick");
    return spec;
  }

  std::string AddWorker(const std::string& model = "test-cpu", double l2_bytes = 0,
                        const std::string& principal = "localhost") {
    WorkerRegistration request{"localhost", {v1::Device()}, "g++ test", principal, ""};
    v1::Device* device = &request.devices[0];
    device->set_id("cpu0");
    device->set_model(model);
    device->set_backend(v1::BACKEND_CPU);
    for (const auto& [name, value] : PlaceholderLimits(v1::BACKEND_CPU)) {
      v1::DeviceLimit* limit = device->add_limits();
      limit->set_name(name);
      limit->set_value(name == "l2_bytes" && l2_bytes > 0 ? l2_bytes : value);
    }
    absl::StatusOr<std::string> id = workers_->Register(request);
    EXPECT_TRUE(id.ok()) << id.status();
    jobs_->OnWorkerRegistered();
    return *id;
  }

  std::optional<v1::Lease> Lease(const std::string& worker) {
    absl::StatusOr<std::optional<LeaseGrant>> lease = jobs_->TryLease(QueryFor(worker));
    EXPECT_TRUE(lease.ok()) << lease.status();
    if (!lease.ok() || !lease->has_value()) return std::nullopt;
    return LeaseToProto(**lease);
  }

  // The report of every trial of `lease`, OK, with a time that depends on
  // the config (or on `seconds`, when given).
  ResultReport ReportOf(const std::string& worker, const v1::Lease& lease, bool release,
                        std::function<double(int64_t)> seconds) {
    ResultReport report{worker, lease.lease_id(), lease.epoch(), {}, release, ""};
    for (const v1::Trial& trial : lease.trials()) {
      v1::TrialResult result;
      *result.mutable_config() = trial.config();
      result.set_status(v1::TRIAL_STATUS_OK);
      result.mutable_measurement()->set_median_seconds(
          seconds ? seconds(trial.index()) : 1e-3 * (1 + trial.index() % 7));
      result.mutable_measurement()->set_samples(5);
      result.mutable_measurement()->set_calibration_seconds(kCalibration);
      report.trials.emplace_back(static_cast<uint64_t>(trial.index()), result);
    }
    return report;
  }

  // Reports every trial of `lease` with the time `seconds` gives its config
  // (short form), WRONG_RESULT where it gives nullopt.
  // After `elapsed` of heartbeats and upkeep, the report of trial `i` of
  // `lease` alone.
  absl::StatusOr<ReportAck> ReportOneAfter(absl::Duration elapsed, const std::string& worker,
                                           const v1::Lease& lease, int i) {
    now_ += elapsed;
    workers_->Touch(worker);
    jobs_->RenewLeases(worker);
    jobs_->Tick();
    ResultReport one = ReportOf(worker, lease, false, nullptr);
    one.trials = {one.trials[i]};
    return jobs_->Report(one);
  }

  void ReportByConfig(const std::string& worker, const v1::Lease& lease,
                      const std::function<std::optional<double>(const std::string&)>& seconds) {
    ResultReport report = ReportOf(worker, lease, /*release=*/false, nullptr);
    for (auto& [ordinal, result] : report.trials) {
      std::optional<double> time = seconds(ConfigToString(result.config()));
      if (time.has_value()) {
        result.mutable_measurement()->set_median_seconds(*time);
      } else {
        result.set_status(v1::TRIAL_STATUS_WRONG_RESULT);
        result.clear_measurement();
      }
    }
    ASSERT_OK(jobs_->Report(report).status());
  }

  // Spec() tuned on `worker`, then a force_retune of it whose trials take
  // what `seconds` gives (WRONG_RESULT for nullopt), told the config the
  // first job served and the config of the trial.
  struct Retuned {
    v1::Job first;
    BestRecord before;  // served after the first job
    v1::Job retune;
  };
  Retuned TuneThenRetune(
      const std::string& worker,
      const std::function<std::optional<double>(const std::string& served,
                                                const std::string& config)>& seconds) {
    Retuned out;
    out.first = *jobs_->Submit(Spec());
    RunToCompletion(worker);
    out.before = *store_->GetBest(out.first.targets(0).tuning_key());
    now_ += absl::Seconds(10);
    v1::JobSpec forced = Spec();
    forced.set_force_retune(true);
    const v1::Job submitted = *jobs_->Submit(forced);
    while (std::optional<v1::Lease> lease = Lease(worker)) {
      ReportByConfig(worker, *lease,
                     [&](const std::string& config) { return seconds(out.before.config, config); });
    }
    out.retune = *jobs_->Get(submitted.id());
    return out;
  }

  // Reports every trial of `lease` OK (see ReportOf); returns whether the
  // lease was gone.
  ReportAck ReportAll(const std::string& worker, const v1::Lease& lease,
                      bool release = false,
                      std::function<double(int64_t)> seconds = nullptr) {
    absl::StatusOr<ReportAck> ack = jobs_->Report(ReportOf(worker, lease, release, seconds));
    EXPECT_TRUE(ack.ok()) << ack.status();
    return ack.ok() ? *ack : ReportAck();
  }

  // Leases and reports until nothing is left; returns the number of trials.
  int RunToCompletion(const std::string& worker) {
    int trials = 0;
    while (std::optional<v1::Lease> lease = Lease(worker)) {
      trials += lease->trials_size();
      ReportAll(worker, *lease);
    }
    return trials;
  }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  JobManagerOptions options_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<FaultyStore> faulty_;
  std::unique_ptr<WorkerRegistry> workers_;
  std::unique_ptr<SourceBlobs> blobs_;
  std::unique_ptr<BestConfigIndex> index_;
  std::unique_ptr<JobManager> jobs_;
  KernelBundle bundle_;
};

TEST_F(JobManagerTest, JobWithoutMatchingWorkerWaitsQueuedAndSaysWhy) {
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  EXPECT_EQ(job->state(), v1::JOB_STATE_QUEUED);
  EXPECT_THAT(job->reason(), ::testing::HasSubstr("waiting for a worker with a BACKEND_CPU"));
  AddWorker();
  EXPECT_EQ(jobs_->Get(job->id())->targets_size(), 1);
  EXPECT_EQ(jobs_->Get(job->id())->reason(), "");
}

TEST_F(JobManagerTest, RunningJobWhoseWorkerDiedSaysSoUntilAnotherComes) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  ASSERT_TRUE(Lease(worker).has_value());
  jobs_->Tick();
  EXPECT_EQ(jobs_->Get(job->id())->reason(), "");
  now_ += absl::Seconds(31);  // the worker is silent past its timeout
  jobs_->Tick();
  v1::Job stalled = *jobs_->Get(job->id());
  EXPECT_EQ(stalled.state(), v1::JOB_STATE_RUNNING);
  EXPECT_THAT(stalled.reason(), ::testing::HasSubstr("no live worker can take its work"));
  EXPECT_THAT(stalled.reason(), ::testing::HasSubstr("test-cpu (g++ test)"));
  std::string replacement = AddWorker();
  jobs_->Tick();
  EXPECT_EQ(jobs_->Get(job->id())->reason(), "");
  RunToCompletion(replacement);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, RunsJobToSuccessAndStoresTheFastestAsBest) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  EXPECT_EQ(RunToCompletion(worker), 3);
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.trials_done(), 3);
  std::vector<TrialRecord> trials = *store_->ListTrials(job->id());
  ASSERT_EQ(trials.size(), 3u);
  // Configs of one time are tied: the fastest is served, of equal times the
  // first by name.
  TrialRecord fastest = trials.front();
  for (const TrialRecord& trial : trials) {
    if (std::tie(trial.median_seconds, trial.config) <
        std::tie(fastest.median_seconds, fastest.config)) {
      fastest = trial;
    }
  }
  absl::StatusOr<BestRecord> best = store_->GetBest(done.targets(0).tuning_key());
  ASSERT_OK(best);
  EXPECT_EQ(best->config, fastest.config);
  EXPECT_EQ(best->median_seconds, fastest.median_seconds);
  EXPECT_EQ(done.targets(0).best().config_text(), fastest.config);
  EXPECT_GT(done.targets(0).default_seconds(), 0);  // the default is in the quick set
  ASSERT_EQ(done.top_trials_size(), 3);
  EXPECT_LE(done.top_trials(0).median_seconds(), done.top_trials(1).median_seconds());
}

TEST_F(JobManagerTest, AnOkResultWithoutAValidMeasurementIsRecordedCrashedAndNeverServed) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  ASSERT_EQ(lease->trials_size(), 3);
  // What an insider might send to win: no calibration (raw seconds would
  // rank against calibrated ones), a zero time, a NaN (which the store,
  // unchecked, refuses, and the whole batch with it).
  ResultReport report = ReportOf(worker, *lease, /*release=*/false, nullptr);
  report.trials[0].second.mutable_measurement()->clear_calibration_seconds();
  report.trials[0].second.mutable_measurement()->set_median_seconds(1e-9);
  report.trials[1].second.mutable_measurement()->set_median_seconds(0);
  report.trials[1].second.mutable_measurement()->set_rounds_cv(std::nan(""));
  report.trials[2].second.mutable_measurement()->set_median_seconds(std::nan(""));
  report.trials[2].second.mutable_measurement()->set_p80_seconds(INFINITY);
  ASSERT_OK(jobs_->Report(report));
  std::vector<TrialRecord> rows = *store_->ListTrials(job->id());
  ASSERT_EQ(rows.size(), 3u);
  for (const TrialRecord& row : rows) {
    EXPECT_EQ(row.status, v1::TRIAL_STATUS_CRASHED) << row.config;
    EXPECT_THAT(row.error, ::testing::HasSubstr("without a valid measurement")) << row.config;
  }
  v1::Job failed = *jobs_->Get(job->id());
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);  // nothing measured: no best
  EXPECT_FALSE(store_->GetBest(failed.targets(0).tuning_key()).ok());
}

TEST_F(JobManagerTest, LeasesAndReportAnswersCarryTheBestUncutMedian) {
  options_.finalists = 2;
  Restart();
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  LeaseQuery one = QueryFor(worker);
  one.max_trials = 1;
  auto take = [&] { return LeaseToProto(**jobs_->TryLease(one)); };
  v1::Lease first = take();
  EXPECT_EQ(first.best_seconds(), 0);  // nothing measured yet
  EXPECT_EQ(ReportAll(worker, first, false, [](int64_t) { return 4e-3; }).best_seconds, 0);
  v1::Lease second = take();
  EXPECT_EQ(second.best_seconds(), 4e-3);
  // A cut trial's partial median never becomes the best.
  ResultReport cut = ReportOf(worker, second, false, [](int64_t) { return 1e-3; });
  cut.trials[0].second.set_cut_early(true);
  ASSERT_OK(jobs_->Report(cut));
  v1::Lease third = take();
  EXPECT_EQ(third.best_seconds(), 4e-3);
  ResultReport renewal = ReportOf(worker, third, false, nullptr);
  renewal.trials.clear();
  absl::StatusOr<ReportAck> ack = jobs_->Report(renewal);
  ASSERT_OK(ack);
  EXPECT_EQ(ack->best_seconds, 4e-3);
  ReportAll(worker, third, false, [](int64_t) { return 2e-3; });
  // The finalists round is never cut: its lease carries no best.
  v1::Lease finals = take();
  ASSERT_TRUE(finals.finalists());
  EXPECT_EQ(finals.trials_size(), 2);
  EXPECT_EQ(finals.best_seconds(), 0);
  for (const v1::Trial& trial : finals.trials()) {
    EXPECT_NE(trial.index(), second.trials(0).index()) << "a cut trial became a finalist";
  }
  ReportAll(worker, finals);
  ASSERT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
  std::vector<TrialRecord> rows = *store_->ListTrials(job->id());
  int cut_rows = 0;
  for (const TrialRecord& row : rows) cut_rows += row.cut_early ? 1 : 0;
  EXPECT_EQ(cut_rows, 1);
}

TEST_F(JobManagerTest, DuplicateReportChangesNothing) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  v1::Lease partial = *lease;
  partial.mutable_trials()->DeleteSubrange(1, partial.trials_size() - 1);
  ReportAll(worker, partial);
  ReportAll(worker, partial);  // delivered twice
  EXPECT_EQ(store_->ListTrials(job->id())->size(), 1u);
  EXPECT_EQ(jobs_->Get(job->id())->trials_done(), 1);
}

TEST_F(JobManagerTest, ExpiredLeaseIsRequeuedWithNewEpochAndLateReportIsIgnored) {
  options_.verify.mode = VerifyMode::kOff;  // about epochs, not about verification
  Restart();
  std::string slow = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> first = Lease(slow);
  ASSERT_TRUE(first.has_value());
  now_ += absl::Seconds(11);
  jobs_->Tick();
  std::string fast = AddWorker();
  std::optional<v1::Lease> second = Lease(fast);
  ASSERT_TRUE(second.has_value());
  EXPECT_GT(second->epoch(), first->epoch());
  ASSERT_EQ(second->trials_size(), first->trials_size());
  EXPECT_EQ(second->trials(0).index(), first->trials(0).index());
  EXPECT_TRUE(ReportAll(slow, *first).cancelled);  // late: changes nothing
  EXPECT_EQ(store_->ListTrials(job->id())->size(), 0u);
  EXPECT_FALSE(ReportAll(fast, *second).cancelled);
  EXPECT_EQ(store_->ListTrials(job->id())->size(), 3u);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, HeartbeatRenewalKeepsLeaseAlive) {
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec()));
  std::optional<v1::Lease> lease = Lease(worker);
  for (int i = 0; i < 5; ++i) {
    now_ += absl::Seconds(6);
    workers_->Touch(worker);
    jobs_->RenewLeases(worker);
    jobs_->Tick();
  }
  EXPECT_FALSE(ReportAll(worker, *lease).cancelled);
}

TEST_F(JobManagerTest, ALeaseThatReportsNothingIsTakenBackWhileItsWorkerHeartbeats) {
  options_.lease_idle_limit = absl::Seconds(30);
  options_.verify.mode = VerifyMode::kOff;
  Restart();
  std::string hoarder = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> held = Lease(hoarder);
  ASSERT_TRUE(held.has_value());
  // Heartbeats and empty reports carry the lease to its idle limit, no
  // further.
  const ResultReport empty{hoarder, held->lease_id(), held->epoch(), {}, false, ""};
  for (int i = 0; i < 4; ++i) {
    now_ += absl::Seconds(6);
    workers_->Touch(hoarder);
    jobs_->RenewLeases(hoarder);
    ASSERT_OK(jobs_->Report(empty).status());
    jobs_->Tick();
  }
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  EXPECT_FALSE(Lease(honest).has_value());  // still held at 24 s
  for (int i = 0; i < 2; ++i) {
    now_ += absl::Seconds(6);
    workers_->Touch(hoarder);
    workers_->Touch(honest);
    jobs_->RenewLeases(hoarder);
    jobs_->Report(empty).IgnoreError();
    jobs_->Tick();
  }
  EXPECT_TRUE(ReportAll(hoarder, *held).cancelled);  // taken back after 30 s
  EXPECT_GE(RunToCompletion(honest), held->trials_size());
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

// One principal with many leases (or devices) holds at most half of a
// target's open configs while another principal asks for that target's
// work; alone, or beside one that asked only while the job did not exist
// (busy elsewhere, say), it takes what it asks.
TEST_F(JobManagerTest, APrincipalHoldsAtMostItsShareOfATargetsOpenConfigsWhileAnotherAsks) {
  options_.max_leases_per_device = 64;
  options_.verify.mode = VerifyMode::kOff;
  Restart();
  std::string hoarder = AddWorker("test-cpu", 0, "host:hoarder");
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  EXPECT_FALSE(Lease(honest).has_value());  // it asks, before there is a job
  v1::JobSpec spec = Spec();
  spec.clear_config_set();  // the whole space
  absl::StatusOr<v1::Job> job = jobs_->Submit(spec);
  ASSERT_OK(job);
  const int64_t total = jobs_->Get(job->id())->trials_total();
  ASSERT_GE(total, 40);
  LeaseQuery big = QueryFor(hoarder);
  big.max_trials = 8;
  int64_t held = 0;
  for (int i = 0; i < 4; ++i) {
    std::optional<LeaseGrant> alone = *jobs_->TryLease(big);
    ASSERT_TRUE(alone.has_value());
    EXPECT_EQ(alone->trials.size(), 8u);  // nobody else asked for this job's work
    held += static_cast<int64_t>(alone->trials.size());
  }
  std::optional<v1::Lease> honest_lease = Lease(honest);  // now it does
  ASSERT_TRUE(honest_lease.has_value());
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::optional<LeaseGrant>> more = jobs_->TryLease(big);
    ASSERT_OK(more);
    if (!more->has_value()) break;
    held += static_cast<int64_t>((*more)->trials.size());
  }
  const int64_t share = (total + 1) / 2;
  EXPECT_EQ(held, std::max<int64_t>(share, 32)) << "of " << total << " open configs";
  // The rest stays for the honest principal.
  std::optional<v1::Lease> next = Lease(honest);
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(next->trials_size(), 0);
}

TEST_F(JobManagerTest, AReportMovesTheIdleLimitOn) {
  options_.lease_idle_limit = absl::Seconds(10);
  options_.batch_size = 3;
  Restart();
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec()));
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  ASSERT_GE(lease->trials_size(), 2);
  for (int i = 0; i < lease->trials_size(); ++i) {
    // Under the limit since the last report.
    absl::StatusOr<ReportAck> ack = ReportOneAfter(absl::Seconds(8), worker, *lease, i);
    ASSERT_OK(ack);
    EXPECT_FALSE(ack->cancelled) << "trial " << i;
  }
}

TEST_F(JobManagerTest, ALeaseIsTakenBackAtItsMaxAgeHoweverItReports) {
  options_.lease_idle_limit = absl::Seconds(10);
  options_.lease_max_age = absl::Seconds(20);
  options_.batch_size = 3;
  Restart();
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec()));
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  ASSERT_EQ(lease->trials_size(), 3);
  // One result every 8 s keeps it under the idle limit, not past its age.
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<ReportAck> ack = ReportOneAfter(absl::Seconds(8), worker, *lease, i);
    ASSERT_OK(ack);
    EXPECT_FALSE(ack->cancelled) << "trial " << i;
  }
  absl::StatusOr<ReportAck> late =
      ReportOneAfter(absl::Seconds(8), worker, *lease, 2);  // 24 s after the grant
  ASSERT_OK(late);
  EXPECT_TRUE(late->cancelled) << "the lease outlived its max age";
  // Its last config went back to the queue.
  std::optional<v1::Lease> again = Lease(worker);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->trials(0).index(), lease->trials(2).index());
}

TEST_F(JobManagerTest, ConfigThatLosesEveryLeaseIsRecordedWorkerLost) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  for (int attempt = 0; attempt < options_.max_lease_attempts; ++attempt) {
    ASSERT_TRUE(Lease(worker).has_value());
    now_ += absl::Seconds(11);
    jobs_->Tick();
    workers_->Touch(worker);
  }
  v1::Job failed = *jobs_->Get(job->id());
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(failed.reason(), ::testing::HasSubstr("WORKER_LOST"));
  std::vector<TrialRecord> trials = *store_->ListTrials(job->id());
  ASSERT_EQ(trials.size(), 3u);
  for (const TrialRecord& trial : trials) EXPECT_EQ(trial.status, v1::TRIAL_STATUS_WORKER_LOST);
}

TEST_F(JobManagerTest, AWorkerThatLeasesAndVanishesCannotEmptyAJob) {
  // One certificate leases configs and lets every lease expire, again and
  // again: its losses alone never record WORKER_LOST while another live
  // principal has not tried them, and it is not handed them back first.
  options_.verify.mode = VerifyMode::kOff;
  Restart();
  std::string vanishing = AddWorker("test-cpu", 0, "host:vanishing");
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  EXPECT_FALSE(Lease(honest).has_value());  // it polls for work: it takes part
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  int leased = 0;
  for (int round = 0; round < 2 * options_.max_lease_attempts; ++round) {
    if (std::optional<v1::Lease> lease = Lease(vanishing)) leased += lease->trials_size();
    Elapse(absl::Seconds(11), {vanishing, honest});
  }
  EXPECT_GT(leased, 0);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_RUNNING);
  RunToCompletion(honest);
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  const std::vector<TrialRecord> trials = *store_->ListTrials(job->id());
  EXPECT_FALSE(trials.empty());
  for (const TrialRecord& trial : trials) {
    EXPECT_EQ(trial.status, v1::TRIAL_STATUS_OK) << trial.config;
    EXPECT_EQ(trial.principal, "host:honest");
  }
}

TEST_F(JobManagerTest, AConfigEveryLivePrincipalLostIsRecordedWorkerLost) {
  options_.verify.mode = VerifyMode::kOff;
  Restart();
  std::string first = AddWorker("test-cpu", 0, "host:a");
  std::string second = AddWorker("test-cpu", 0, "host:b");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  // Both principals lose every lease (a config that kills workers).
  for (int round = 0; round < 2 * options_.max_lease_attempts; ++round) {
    Lease(round % 2 == 0 ? first : second);
    Elapse(absl::Seconds(11), {first, second});
  }
  v1::Job failed = *jobs_->Get(job->id());
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  const std::vector<TrialRecord> trials = *store_->ListTrials(job->id());
  EXPECT_EQ(trials.size(), 3u);
  for (const TrialRecord& trial : trials) EXPECT_EQ(trial.status, v1::TRIAL_STATUS_WORKER_LOST);
}

TEST_F(JobManagerTest, ATargetWhoseWorkersLeftIsGivenUpAfterTheOrphanTimeout) {
  options_.orphan_timeout = absl::Minutes(1);
  options_.verify.mode = VerifyMode::kOff;
  Restart();
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  AddWorker("invented-model", 0, "host:gone");  // registers, then never speaks again
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  ASSERT_EQ(job->targets_size(), 2);
  RunToCompletion(honest);
  Elapse(absl::Seconds(30), {honest});
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_RUNNING);  // it waits a while
  for (int i = 0; i < 8; ++i) Elapse(absl::Seconds(10), {honest});
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_THAT(done.reason(), ::testing::HasSubstr("no live worker of invented-model"));
  for (const v1::Target& target : done.targets()) {
    EXPECT_EQ(target.stop_reason(), target.device_model() == "invented-model"
                                        ? v1::STOP_REASON_NO_WORKERS
                                        : v1::STOP_REASON_SPACE_EXHAUSTED);
  }
}

TEST_F(JobManagerTest, ReleasedTrialsGoBackToTheQueue) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> lease = Lease(worker);
  v1::Lease none = *lease;
  none.clear_trials();
  ReportAll(worker, none, /*release=*/true);
  EXPECT_EQ(RunToCompletion(worker), 3);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, TunedKeyIsAnsweredFromStoreUnlessForced) {
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec()));
  RunToCompletion(worker);
  absl::StatusOr<v1::Job> cached = jobs_->Submit(Spec());
  ASSERT_OK(cached);
  EXPECT_EQ(cached->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(cached->targets(0).cached());
  EXPECT_FALSE(Lease(worker).has_value());
  v1::JobSpec forced = Spec();
  forced.set_force_retune(true);
  absl::StatusOr<v1::Job> again = jobs_->Submit(forced);
  ASSERT_OK(again);
  EXPECT_FALSE(again->targets(0).cached());
  EXPECT_EQ(RunToCompletion(worker), 3);
}

// The retune could not measure the served config (it failed there), so its
// own best is compared across runs, and it is slower.
TEST_F(JobManagerTest, ASlowerRetuneIsKeptAsARecordAndSaysRegressed) {
  std::string worker = AddWorker();
  const Retuned run = TuneThenRetune(
      worker, [](const std::string& served, const std::string& config) -> std::optional<double> {
        if (config == served) return std::nullopt;
        return 1.0;
      });
  const v1::Job& first = run.first;
  const v1::Job& slower = run.retune;
  const std::string key = first.targets(0).tuning_key();
  EXPECT_EQ(jobs_->Get(first.id())->targets(0).retune().outcome(), v1::RETUNE_OUTCOME_FIRST);
  const double served = run.before.median_seconds;

  v1::Job done = *jobs_->Get(slower.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  const v1::Retune& retune = done.targets(0).retune();
  EXPECT_EQ(retune.outcome(), v1::RETUNE_OUTCOME_REGRESSED);
  EXPECT_EQ(retune.job_seconds(), 1.0);
  EXPECT_EQ(retune.served_job_id(), first.id());
  EXPECT_EQ(retune.served_seconds(), served);
  EXPECT_EQ(store_->GetBest(key)->job_id, first.id());
  EXPECT_EQ(index_->Get(key)->job_id, first.id());
  EXPECT_EQ(store_->ListTrials(slower.id())->size(), 3u);  // every trial stays
}

// A retune that measures the served config tied with its fastest keeps it
// served, with the new measurement, however every time moved (here a slower
// machine: all three configs take 1 s).
TEST_F(JobManagerTest, ARetuneThatFindsTheServedConfigTiedConfirmsIt) {
  const Retuned run =
      TuneThenRetune(AddWorker(), [](const std::string&, const std::string&) { return 1.0; });
  const v1::Job& first = run.first;
  const v1::Job& again = run.retune;
  const BestRecord& before = run.before;
  const std::string key = first.targets(0).tuning_key();

  const v1::Retune retune = jobs_->Get(again.id())->targets(0).retune();
  EXPECT_EQ(retune.outcome(), v1::RETUNE_OUTCOME_CONFIRMED);
  EXPECT_EQ(retune.served_config_text(), before.config);
  EXPECT_EQ(retune.served_job_id(), again.id());
  EXPECT_EQ(retune.previous_job_id(), first.id());
  EXPECT_EQ(jobs_->Get(again.id())->targets(0).best().config_text(), before.config);
  EXPECT_EQ(store_->GetBest(key)->config, before.config);
  EXPECT_EQ(store_->GetBest(key)->median_seconds, 1.0);
}

// Side by side in one round, another config beat the served one: served now,
// though slower than the served config's old time.
TEST_F(JobManagerTest, ARetuneWhereAnotherConfigBeatsTheServedOneReplacesIt) {
  std::string winner;
  const Retuned run = TuneThenRetune(
      AddWorker(), [&](const std::string& served, const std::string& config) {
        if (config == served) return 1.0;
        if (winner.empty()) winner = config;
        return config == winner ? 0.5 : 2.0;
      });
  const v1::Job& again = run.retune;
  const BestRecord& before = run.before;
  const std::string key = run.first.targets(0).tuning_key();

  const v1::Retune retune = jobs_->Get(again.id())->targets(0).retune();
  EXPECT_EQ(retune.outcome(), v1::RETUNE_OUTCOME_REPLACED);
  EXPECT_EQ(store_->GetBest(key)->config, winner);
  EXPECT_EQ(store_->GetBest(key)->median_seconds, 0.5);
  EXPECT_GT(0.5, before.median_seconds);
}

TEST_F(JobManagerTest, AReplacingRetuneIsServedThoughSlowerAndSaysWhy) {
  std::string worker = AddWorker();
  v1::Job first = *jobs_->Submit(Spec());
  RunToCompletion(worker);
  const std::string key = first.targets(0).tuning_key();
  now_ += absl::Seconds(10);
  v1::JobSpec replace = Spec();  // no force_retune: replace_best implies it
  replace.set_replace_best(true);
  replace.set_replace_reason("new compiler");
  v1::Job replacing = *jobs_->Submit(replace);
  EXPECT_FALSE(replacing.targets(0).cached());
  while (std::optional<v1::Lease> lease = Lease(worker)) {
    ReportAll(worker, *lease, /*release=*/false, [](int64_t) { return 1.0; });
  }

  const v1::Retune retune = jobs_->Get(replacing.id())->targets(0).retune();
  EXPECT_EQ(retune.outcome(), v1::RETUNE_OUTCOME_FORCED);
  EXPECT_EQ(retune.replace_reason(), "new compiler");
  EXPECT_EQ(retune.previous_job_id(), first.id());
  EXPECT_EQ(retune.served_job_id(), replacing.id());
  EXPECT_EQ(store_->GetBest(key)->job_id, replacing.id());
  EXPECT_EQ(store_->GetBest(key)->median_seconds, 1.0);
  EXPECT_TRUE(store_->GetJob(replacing.id())->replace_best);

  now_ += absl::Seconds(10);  // a faster retune after the replacing one replaces it
  v1::JobSpec forced = Spec();
  forced.set_force_retune(true);
  v1::Job faster = *jobs_->Submit(forced);
  const std::string replaced_config = store_->GetBest(key)->config;
  while (std::optional<v1::Lease> lease = Lease(worker)) {
    ReportByConfig(worker, *lease, [&](const std::string& config) {
      return config == replaced_config ? 1.0 : 0.5;
    });
  }
  EXPECT_EQ(jobs_->Get(faster.id())->targets(0).retune().outcome(),
            v1::RETUNE_OUTCOME_REPLACED);
  EXPECT_EQ(store_->GetBest(key)->job_id, faster.id());
}

TEST_F(JobManagerTest, CancelledJobLeasesNothingAndCancelsReports) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> lease = Lease(worker);
  EXPECT_EQ(jobs_->Cancel(job->id())->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(ReportAll(worker, *lease).cancelled);
  EXPECT_FALSE(Lease(worker).has_value());
  EXPECT_EQ(store_->GetJob(job->id())->state, v1::JOB_STATE_CANCELLED);
}

TEST_F(JobManagerTest, RestartResumesAnUnfinishedJobWithoutRemeasuring) {
  std::string worker = AddWorker();
  v1::JobSpec spec = Spec();
  spec.clear_config_set();
  spec.set_strategy("random");
  spec.set_budget(9);
  absl::StatusOr<v1::Job> job = jobs_->Submit(spec);
  ReportAll(worker, *Lease(worker));  // 3 of 9
  Restart();
  ASSERT_OK(jobs_->Recover());
  v1::Job resumed = *jobs_->Get(job->id());
  EXPECT_EQ(resumed.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(resumed.trials_done(), 3);
  worker = AddWorker();
  EXPECT_EQ(RunToCompletion(worker), 6);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(store_->ListTrials(job->id())->size(), 9u);
}

// Lease receipts (server/lease_receipts.h): a search lease granted by a
// process with receipts, then a restart: another incarnation with the same
// key, and the worker registered again (`again`). `before` runs between the
// grant and the restart.
class ReceiptTest : public JobManagerTest {
 protected:
  void GrantThenRestart(int budget,
                        const std::function<void(const std::string&)>& before = nullptr) {
    const std::string key = LeaseReceipts::NewKey();
    options_.receipts = std::make_shared<LeaseReceipts>(key, /*incarnation=*/1);
    Restart();
    const std::string worker = AddWorker();
    v1::JobSpec spec = Spec();
    spec.clear_config_set();
    spec.set_strategy("random");
    spec.set_budget(budget);
    absl::StatusOr<v1::Job> job = jobs_->Submit(spec);
    ASSERT_OK(job);
    job_id_ = job->id();
    std::optional<v1::Lease> lease = Lease(worker);
    ASSERT_TRUE(lease.has_value());
    ASSERT_FALSE(lease->receipt().empty());
    lease_ = *lease;
    if (before) before(worker);
    now_ += absl::Seconds(5);
    options_.receipts = std::make_shared<LeaseReceipts>(key, /*incarnation=*/2);
    Restart();
    ASSERT_OK(jobs_->Recover());
    again_ = AddWorker();
  }

  // The report of the lease by the worker under its new id, with the receipt.
  ResultReport ReportAgain(bool release = false) {
    ResultReport report = ReportOf(again_, lease_, release, nullptr);
    report.receipt = lease_.receipt();
    return report;
  }

  int64_t Done() { return jobs_->Get(job_id_)->trials_done(); }

  std::string job_id_;
  v1::Lease lease_;
  std::string again_;
};

TEST_F(ReceiptTest, ALeaseGrantedBeforeARestartIsAdoptedFromItsReceipt) {
  ASSERT_NO_FATAL_FAILURE(GrantThenRestart(9, [this](const std::string& worker) {
    ASSERT_EQ(lease_.trials_size(), 3);
    ResultReport first = ReportOf(worker, lease_, false, nullptr);
    first.trials.resize(1);
    ASSERT_OK(jobs_->Report(first));
  }));
  // The worker measured the other two while the coordinator was away.
  ResultReport rest = ReportAgain(/*release=*/true);
  rest.trials.erase(rest.trials.begin());
  absl::StatusOr<ReportAck> ack = jobs_->Report(rest);
  ASSERT_OK(ack);
  EXPECT_FALSE(ack->cancelled);
  EXPECT_FALSE(ack->adopted_lease_id.empty());
  EXPECT_NE(ack->adopted_epoch, lease_.epoch());
  EXPECT_EQ(Done(), 3);
  // Retried (its answer lost): nothing is recorded twice.
  EXPECT_TRUE(jobs_->Report(rest)->cancelled);
  EXPECT_EQ(RunToCompletion(again_), 6);
  EXPECT_EQ(jobs_->Get(job_id_)->state(), v1::JOB_STATE_SUCCEEDED);
  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials(job_id_);
  ASSERT_OK(trials);
  std::set<std::string> configs;
  for (const TrialRecord& trial : *trials) configs.insert(trial.config);
  EXPECT_EQ(trials->size(), 9u);
  EXPECT_EQ(configs.size(), 9u);
}

TEST_F(ReceiptTest, AnAdoptedLeaseCountsAgainstTheDevicesLeases) {
  options_.max_leases_per_device = 2;
  ASSERT_NO_FATAL_FAILURE(GrantThenRestart(12));
  ASSERT_TRUE(Lease(again_).has_value());
  ASSERT_TRUE(Lease(again_).has_value());  // the device holds two now
  absl::StatusOr<ReportAck> ack = jobs_->Report(ReportAgain());
  ASSERT_OK(ack);
  EXPECT_TRUE(ack->cancelled);
  EXPECT_EQ(Done(), 0);
}

TEST_F(ReceiptTest, AReceiptForgedAlteredOrAnotherPrincipalsIsRefused) {
  ASSERT_NO_FATAL_FAILURE(GrantThenRestart(9));
  ResultReport altered = ReportAgain();
  altered.receipt.back() ^= 1;  // the MAC's last byte
  EXPECT_THAT(jobs_->Report(altered), StatusIs(absl::StatusCode::kPermissionDenied));
  // Sealed under another database's key: its configs chosen at will.
  LeaseReceipts forger(LeaseReceipts::NewKey(), 1);
  v1::LeaseReceiptBody body;
  body.set_lease_id(lease_.lease_id());
  body.set_epoch(lease_.epoch());
  body.set_incarnation(1);
  body.set_principal("localhost");
  body.set_device_id("cpu0");
  body.set_job_id(job_id_);
  body.set_tuning_key(lease_.tuning_key());
  body.add_ordinals(lease_.trials(0).index());
  body.set_issued_unix_ms(absl::ToUnixMillis(now_));
  ResultReport forged = ReportAgain();
  forged.receipt = forger.Seal(body);
  EXPECT_THAT(jobs_->Report(forged), StatusIs(absl::StatusCode::kPermissionDenied));
  // Bytes that are no receipt.
  ResultReport garbage = ReportAgain();
  garbage.receipt = "\xff\xff not a receipt";
  EXPECT_THAT(jobs_->Report(garbage), StatusIs(absl::StatusCode::kInvalidArgument));
  // A true receipt, reported by a worker of another principal.
  ResultReport stolen = ReportOf(AddWorker("test-cpu", 0, "rogue"), lease_, false, nullptr);
  stolen.receipt = lease_.receipt();
  EXPECT_THAT(jobs_->Report(stolen), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(Done(), 0);

  // Too old to hold now: nothing is adopted.
  now_ += options_.lease_max_age + absl::Seconds(1);
  workers_->Touch(again_);
  absl::StatusOr<ReportAck> ack = jobs_->Report(ReportAgain());
  ASSERT_OK(ack);
  EXPECT_TRUE(ack->cancelled);
  EXPECT_EQ(Done(), 0);
}

TEST_F(JobManagerTest, AReceiptOfThisProcessAdoptsNothing) {
  options_.receipts = std::make_shared<LeaseReceipts>(LeaseReceipts::NewKey(), 1);
  Restart();
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  // The lease expires here: its receipt does not bring it back.
  Elapse(options_.lease_ttl + absl::Seconds(1), {});
  workers_->Touch(worker);
  ResultReport report = ReportOf(worker, *lease, false, nullptr);
  report.receipt = lease->receipt();
  absl::StatusOr<ReportAck> ack = jobs_->Report(report);
  ASSERT_OK(ack);
  EXPECT_TRUE(ack->cancelled);
  EXPECT_EQ(jobs_->Get(job->id())->trials_done(), 0);
}

TEST_F(JobManagerTest, TheStatusSaysWhyTheSearchStopped) {
  std::string worker = AddWorker();
  v1::Job set = *jobs_->Submit(Spec());  // the "quick" config set: every config of it
  EXPECT_EQ(set.stop_reason(), v1::STOP_REASON_UNSPECIFIED);
  RunToCompletion(worker);
  set = *jobs_->Get(set.id());
  EXPECT_EQ(set.stop_reason(), v1::STOP_REASON_SPACE_EXHAUSTED);
  EXPECT_EQ(set.targets(0).stop_reason(), v1::STOP_REASON_SPACE_EXHAUSTED);
  EXPECT_EQ(set.trials_budget(), 0);

  v1::JobSpec spec = Spec("M=512,N=256,K=256");
  spec.clear_config_set();
  spec.set_strategy("random");
  spec.set_budget(4);
  v1::Job sampled = *jobs_->Submit(spec);
  EXPECT_EQ(sampled.strategy(), "random");
  EXPECT_EQ(sampled.trials_budget(), 4);
  RunToCompletion(worker);
  sampled = *jobs_->Get(sampled.id());
  EXPECT_EQ(sampled.trials_done(), 4);
  EXPECT_EQ(sampled.stop_reason(), v1::STOP_REASON_TRIAL_BUDGET);

  *spec.mutable_shape() = *ParseShape("M=256,N=512,K=256");
  v1::Job cancelled = *jobs_->Submit(spec);
  ASSERT_TRUE(Lease(worker).has_value());
  EXPECT_EQ(jobs_->Cancel(cancelled.id())->stop_reason(), v1::STOP_REASON_CANCELLED);
  EXPECT_EQ(jobs_->Get(cancelled.id())->stop_reason(), v1::STOP_REASON_CANCELLED);
}

TEST_F(JobManagerTest, TheTimeBudgetCountsFromTheStartAcrossARestart) {
  std::string worker = AddWorker();
  v1::JobSpec spec = Spec();
  spec.clear_config_set();
  spec.set_strategy("random");
  spec.set_budget(9);
  spec.set_time_budget_seconds(20);
  v1::Job job = *jobs_->Submit(spec);
  EXPECT_EQ(job.time_budget_seconds(), 20);
  ReportAll(worker, *Lease(worker));  // 3 of 9
  EXPECT_EQ(jobs_->Get(job.id())->started_unix_ms(), absl::ToUnixMillis(now_));
  now_ += absl::Seconds(15);
  Restart();
  ASSERT_OK(jobs_->Recover());
  worker = AddWorker();
  std::optional<v1::Lease> leased = Lease(worker);  // 15 s in: still proposing
  ASSERT_TRUE(leased.has_value());
  now_ += absl::Seconds(6);  // the downtime and this count: 21 s since the start
  jobs_->Tick();
  EXPECT_FALSE(Lease(worker).has_value());  // no new proposals ...
  v1::Job stopping = *jobs_->Get(job.id());
  EXPECT_EQ(stopping.state(), v1::JOB_STATE_RUNNING);  // ... the leased trials finish
  EXPECT_EQ(stopping.stop_reason(), v1::STOP_REASON_TIME_BUDGET);
  EXPECT_FALSE(ReportAll(worker, *leased).cancelled);
  now_ += options_.verify.wait + absl::Seconds(1);  // a new best waits for a verifier
  jobs_->Tick();
  v1::Job done = *jobs_->Get(job.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.stop_reason(), v1::STOP_REASON_TIME_BUDGET);
  EXPECT_EQ(done.trials_done(), 6);
  EXPECT_EQ(done.trials_total(), 6);
  EXPECT_EQ(store_->ListTrials(job.id())->size(), 6u);
}

TEST_F(JobManagerTest, ThePlateauRuleEndsAJobWhoseBatchesStopImproving) {
  std::string worker = AddWorker();
  v1::JobSpec spec = Spec();
  spec.clear_config_set();  // exhaustive: many more configs than the rule lets run
  spec.set_plateau_batches(2);
  v1::Job job = *jobs_->Submit(spec);
  int leases = 0;
  while (std::optional<v1::Lease> lease = Lease(worker)) {
    ++leases;
    ReportAll(worker, *lease, /*release=*/false, [&](int64_t) { return 1e-3 * leases; });
  }
  v1::Job done = *jobs_->Get(job.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.stop_reason(), v1::STOP_REASON_PLATEAU);
  EXPECT_EQ(leases, 3);  // the first improves, two more do not
  EXPECT_EQ(done.trials_done(), 9);
  EXPECT_EQ(done.targets(0).batches_without_improvement(), 2);
}

// The plateau is reached while another worker still holds a lease: no new
// lease is handed out, the job waits for the open one, and its late results
// (here the fastest of all) are recorded and become the best; the search
// stays stopped by the plateau. (Verification is off: with two workers the
// new best would wait for one to measure it again.)
TEST_F(JobManagerTest, APlateauReachedWithALeaseOpenWaitsForItsResults) {
  options_.verify.mode = VerifyMode::kOff;
  Restart();
  std::string first = AddWorker();
  std::string second = AddWorker("test-cpu", 0, "localhost");
  ASSERT_NE(first, second);
  v1::JobSpec spec = Spec();
  spec.clear_config_set();  // exhaustive: many more configs than the rule lets run
  spec.set_plateau_batches(2);
  v1::Job job = *jobs_->Submit(spec);
  std::optional<v1::Lease> improving = Lease(first);
  ASSERT_TRUE(improving.has_value());
  ReportAll(first, *improving, false, [](int64_t) { return 1e-3; });
  std::optional<v1::Lease> open = Lease(second);
  ASSERT_TRUE(open.has_value());
  for (int batch = 0; batch < 2; ++batch) {  // two closed batches without improvement
    std::optional<v1::Lease> slower = Lease(first);
    ASSERT_TRUE(slower.has_value());
    ReportAll(first, *slower, false, [](int64_t) { return 2e-3; });
  }
  v1::Job waiting = *jobs_->Get(job.id());
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(waiting.targets(0).batches_without_improvement(), 2);
  EXPECT_FALSE(Lease(first).has_value());  // the search stopped
  ReportAll(second, *open, false, [](int64_t) { return 5e-4; });
  v1::Job done = *jobs_->Get(job.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.stop_reason(), v1::STOP_REASON_PLATEAU);
  EXPECT_EQ(done.trials_done(), 4 * 3);
  EXPECT_EQ(done.targets(0).best().median_seconds(), 5e-4);
}

TEST_F(JobManagerTest, FinishedJobsSurviveRestart) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  RunToCompletion(worker);
  Restart();
  ASSERT_OK(jobs_->Recover());
  v1::Job reloaded = *jobs_->Get(job->id());
  EXPECT_EQ(reloaded.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(reloaded.trials_done(), 3);
  EXPECT_EQ(reloaded.top_trials_size(), 3);
}

TEST_F(JobManagerTest, AnAuditBuildRateOfOneBuildsEverySearchLeaseFromTheSources) {
  options_.audit_build_rate = 1;
  Restart();
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec()));
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->kind(), v1::LEASE_KIND_SEARCH);
  EXPECT_TRUE(lease->own_build());
}

TEST_F(JobManagerTest, FinalistsRoundPicksTheWinnerByItsFinalMeasurement) {
  options_.finalists = 2;
  Restart();
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> first = Lease(worker);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->finalists());
  EXPECT_FALSE(first->own_build());  // the search may fetch shared artifacts
  ASSERT_EQ(first->trials_size(), 3);
  // First round: trial k takes (k + 1) ms, so trials 0 and 1 are finalists.
  std::map<int64_t, int> rank;
  for (int k = 0; k < 3; ++k) rank[first->trials(k).index()] = k;
  ReportAll(worker, *first, false, [&](int64_t index) { return 1e-3 * (rank[index] + 1); });
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_RUNNING);
  std::optional<v1::Lease> finals = Lease(worker);
  ASSERT_TRUE(finals.has_value());
  EXPECT_TRUE(finals->finalists());
  EXPECT_TRUE(finals->own_build());  // the round that decides builds from the sources
  ASSERT_EQ(finals->trials_size(), 2);
  // Final round: the first round's runner-up is faster.
  ReportAll(worker, *finals, false, [&](int64_t index) { return rank[index] == 1 ? 5e-4 : 2e-3; });
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).best().median_seconds(), 5e-4);
  EXPECT_EQ(store_->GetBest(done.targets(0).tuning_key())->median_seconds, 5e-4);
  EXPECT_EQ(store_->GetBest(done.targets(0).tuning_key())->config,
            ConfigToString(first->trials(1).config()));
  std::vector<TrialRecord> rows = *store_->ListTrials(job->id());
  ASSERT_EQ(rows.size(), 5u);  // 3 search rows, then the 2 finalists' own rows
  EXPECT_EQ(rows[3].round, TrialRound::kFinalists);
  EXPECT_EQ(rows[4].round, TrialRound::kFinalists);
  EXPECT_EQ(rows[4].principal, "localhost");
  EXPECT_FALSE(Lease(worker).has_value());
}

TEST_F(JobManagerTest, LostFinalistsLeaseIsOfferedAgain) {
  options_.finalists = 3;
  Restart();
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ReportAll(worker, *Lease(worker));
  std::optional<v1::Lease> finals = Lease(worker);
  ASSERT_TRUE(finals.has_value() && finals->finalists());
  now_ += absl::Seconds(11);
  jobs_->Tick();
  workers_->Touch(worker);
  std::optional<v1::Lease> again = Lease(worker);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->finalists());
  EXPECT_GT(again->epoch(), finals->epoch());
  EXPECT_TRUE(ReportAll(worker, *finals).cancelled);
  ReportAll(worker, *again);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, AModelWithoutValidConfigsDoesNotFailARunningJob) {
  std::string good = AddWorker("big-cache");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> lease = Lease(good);
  AddWorker("tiny-cache", /*l2_bytes=*/1024);  // no matmul block fits its L2
  v1::Job running = *jobs_->Get(job->id());
  EXPECT_EQ(running.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(running.targets_size(), 1);
  ReportAll(good, *lease);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, JobThatNoLiveModelCanRunIsRefused) {
  AddWorker("tiny-cache", /*l2_bytes=*/1024);
  EXPECT_THAT(jobs_->Submit(Spec()), StatusIsWith(absl::StatusCode::kInvalidArgument, "tiny-cache"));
}

TEST_F(JobManagerTest, ConfigListedTwiceIsMeasuredOnceAndTheJobEnds) {
  std::string worker = AddWorker();
  v1::JobSpec spec = Spec();
  v1::ConfigSet* set = spec.mutable_kernel()->add_config_sets();
  set->set_name("twice");
  set->add_configs(bundle_.spec.default_config());
  set->add_configs(bundle_.spec.default_config());
  spec.set_config_set("twice");
  absl::StatusOr<v1::Job> job = jobs_->Submit(spec);
  ASSERT_OK(job);
  EXPECT_EQ(RunToCompletion(worker), 1);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, FinalistsThatAllFailAgainLeaveTheFirstRoundStanding) {
  options_.finalists = 3;
  Restart();
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> first = Lease(worker);
  ASSERT_TRUE(first.has_value());
  ReportAll(worker, *first);
  std::optional<v1::Lease> finals = Lease(worker);
  ASSERT_TRUE(finals.has_value() && finals->finalists());
  ResultReport crashed = ReportOf(worker, *finals, /*release=*/false, nullptr);
  for (auto& [ordinal, result] : crashed.trials) result.set_status(v1::TRIAL_STATUS_CRASHED);
  ASSERT_OK(jobs_->Report(crashed));
  // The first round's fastest (ReportAll's times) is the best, in the job
  // and in the store.
  double fastest = 1;
  for (const v1::Trial& trial : first->trials()) {
    fastest = std::min(fastest, 1e-3 * (1 + trial.index() % 7));
  }
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).best().median_seconds(), fastest);
  EXPECT_EQ(store_->GetBest(done.targets(0).tuning_key())->median_seconds, fastest);
}

TEST_F(JobManagerTest, BestConfigTheStoreRefusedIsStoredByALaterTick) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  faulty_->refuse_best = true;
  RunToCompletion(worker);
  v1::Job open = *jobs_->Get(job->id());
  EXPECT_EQ(open.state(), v1::JOB_STATE_RUNNING);  // done, but the best is not stored
  EXPECT_THAT(store_->GetBest(open.targets(0).tuning_key()),
              StatusIs(absl::StatusCode::kNotFound));
  jobs_->Tick();  // still refused: still open
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_RUNNING);
  faulty_->refuse_best = false;
  jobs_->Tick();
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_OK(store_->GetBest(open.targets(0).tuning_key()));
}

TEST_F(JobManagerTest, RandomBudgetOverTheCapIsResourceExhausted) {
  options_.max_trials = 10;
  Restart();
  v1::JobSpec spec = Spec();
  spec.clear_config_set();
  spec.set_strategy("random");
  spec.set_budget(11);
  EXPECT_THAT(jobs_->Submit(spec), StatusIsWith(absl::StatusCode::kResourceExhausted, "budget"));
}

TEST_F(JobManagerTest, LongPollEndsWithALeaseWhenWorkArrives) {
  LongPolls polls([this](const LeaseQuery& query) { return jobs_->TryLease(query); },
                  /*max_wait=*/absl::Seconds(30));
  jobs_->SetWorkListener([&polls] { polls.Notify(); });
  std::string worker = AddWorker();
  absl::Notification leased;
  bool got_lease = false;
  polls.Wait(QueryFor(worker), absl::Seconds(30), [&](LongPolls::Result result) {
    got_lease = result.ok() && result->has_value();
    leased.Notify();
  });
  EXPECT_EQ(polls.waiting(), 1u);
  ASSERT_OK(jobs_->Submit(Spec()));
  EXPECT_TRUE(leased.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(got_lease);
  EXPECT_EQ(polls.waiting(), 0u);
}

TEST_F(JobManagerTest, ShutdownEndsLongPolls) {
  LongPolls polls([this](const LeaseQuery& query) { return jobs_->TryLease(query); },
                  /*max_wait=*/absl::Seconds(30));
  std::string worker = AddWorker();
  absl::Notification ended;
  absl::Status status;
  polls.Wait(QueryFor(worker), absl::Seconds(30), [&](LongPolls::Result result) {
    status = result.status();
    ended.Notify();
  });
  const absl::Time start = absl::Now();
  polls.Shutdown();
  ASSERT_TRUE(ended.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(polls.WaitBlocking(QueryFor(worker), absl::Seconds(30)),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(JobManagerTest, LongPollWithoutWorkEndsEmptyAtItsDeadline) {
  LongPolls polls([this](const LeaseQuery& query) { return jobs_->TryLease(query); },
                  /*max_wait=*/absl::Milliseconds(200));
  std::string worker = AddWorker();
  LongPolls::Result result = polls.WaitBlocking(QueryFor(worker), absl::Seconds(30));
  ASSERT_OK(result);
  EXPECT_FALSE(result->has_value());
}

TEST_F(JobManagerTest, ReportTheStoreRefusesIsUnavailableAndItsTrialsAreLeasedAgain) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  faulty_->refuse_trials = true;
  EXPECT_THAT(jobs_->Report(ReportOf(worker, *lease, false, nullptr)),
              StatusIsWith(absl::StatusCode::kUnavailable, "measured again"));
  EXPECT_EQ(faulty_->trial_writes, options_.write_attempts);  // retried, then refused
  EXPECT_EQ(jobs_->Get(job->id())->trials_done(), 0);
  // The lease was returned: its heartbeats renew nothing, a retry is too late.
  jobs_->RenewLeases(worker);
  jobs_->Tick();
  EXPECT_TRUE(ReportAll(worker, *lease).cancelled);
  faulty_->refuse_trials = false;
  std::optional<v1::Lease> again = Lease(worker);
  ASSERT_TRUE(again.has_value());
  EXPECT_GT(again->epoch(), lease->epoch());
  EXPECT_EQ(again->trials_size(), lease->trials_size());
  ReportAll(worker, *again);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(store_->ListTrials(job->id())->size(), 3u);
}

TEST_F(JobManagerTest, AJobThatCannotBeStoredIsNotAccepted) {
  AddWorker();
  faulty_->refuse_jobs = true;
  EXPECT_THAT(jobs_->Submit(Spec()), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(jobs_->live_jobs(), 0u);
  faulty_->refuse_jobs = false;
  EXPECT_TRUE(jobs_->List(JobQuery{})->empty());
}

TEST_F(JobManagerTest, FinishedJobsLeaveMemoryAndAreAnsweredFromTheStore) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  EXPECT_EQ(jobs_->live_jobs(), 1u);
  RunToCompletion(worker);
  EXPECT_EQ(jobs_->live_jobs(), 0u);
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.trials_done(), 3);
  EXPECT_EQ(done.top_trials_size(), 3);
  EXPECT_GT(done.targets(0).best().median_seconds(), 0);
  std::vector<v1::Job> listed = *jobs_->List(JobQuery{});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].state(), v1::JOB_STATE_SUCCEEDED);
  // A finished job is no longer live: watchers read its stored view.
  EXPECT_TRUE(absl::IsNotFound(jobs_->LiveVersion(job->id()).status()));
  // A cached answer never enters memory.
  ASSERT_OK(jobs_->Submit(Spec()));
  EXPECT_EQ(jobs_->live_jobs(), 0u);
}

TEST_F(JobManagerTest, RestartLoadsOnlyUnfinishedJobs) {
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec("M=512,N=512,K=512")));
  RunToCompletion(worker);
  absl::StatusOr<v1::Job> open = jobs_->Submit(Spec());
  ASSERT_OK(open);
  Restart();
  ASSERT_OK(jobs_->Recover());
  EXPECT_EQ(jobs_->live_jobs(), 1u);
  EXPECT_EQ(jobs_->List(JobQuery{})->size(), 2u);
  worker = AddWorker();
  EXPECT_EQ(RunToCompletion(worker), 3);
  EXPECT_EQ(jobs_->Get(open->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, SourcesAreServedWhileTheJobLivesAndFromTheStoreAfter) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  const v1::SourceFile& file = bundle_.sources[0];
  EXPECT_GT(blobs_->held(), 0u);
  EXPECT_EQ(*blobs_->Get(Sha256Hex(file.content())), file.content());
  RunToCompletion(worker);
  EXPECT_EQ(blobs_->held(), 0u);
  EXPECT_EQ(*blobs_->Get(Sha256Hex(file.content())), file.content());
  EXPECT_THAT(blobs_->Get("no-such-digest"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(JobManagerTest, BadJobsAreRefusedWithTheFieldNamed) {
  v1::JobSpec no_dim = Spec("M=256,N=256");
  EXPECT_THAT(jobs_->Submit(no_dim), StatusIsWith(absl::StatusCode::kInvalidArgument, "K"));
  v1::JobSpec unknown_strategy = Spec();
  unknown_strategy.clear_config_set();
  unknown_strategy.set_strategy("annealing");
  EXPECT_THAT(jobs_->Submit(unknown_strategy),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "annealing"));
  v1::JobSpec empty = Spec();
  empty.clear_config_set();
  empty.mutable_kernel()->add_constraints()->set_expr("BLOCK_M > 100000");
  EXPECT_THAT(jobs_->Submit(empty), StatusIsWith(absl::StatusCode::kInvalidArgument, "empty"));
  v1::JobSpec bad_expr = Spec();
  bad_expr.mutable_kernel()->add_constraints()->set_expr("BLOCK_M < NO_SUCH_NAME");
  EXPECT_THAT(jobs_->Submit(bad_expr),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "NO_SUCH_NAME"));
  v1::JobSpec no_source = Spec();
  no_source.mutable_sources()->RemoveLast();
  EXPECT_THAT(jobs_->Submit(no_source),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "reference.cc"));
  v1::JobSpec bad_set = Spec();
  bad_set.set_config_set("nope");
  EXPECT_THAT(jobs_->Submit(bad_set), StatusIsWith(absl::StatusCode::kInvalidArgument, "nope"));
  EXPECT_THAT(jobs_->Get("j-unknown"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(jobs_->Cancel("j-unknown"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(jobs_->List(JobQuery{})->empty());
}

TEST_F(JobManagerTest, SpaceOverTheCapIsResourceExhausted) {
  options_.max_space_points = 100;
  Restart();
  v1::JobSpec spec = Spec();
  EXPECT_THAT(jobs_->Submit(spec),
              StatusIsWith(absl::StatusCode::kResourceExhausted, "256 points, over the cap of 100"));
}

TEST_F(JobManagerTest, BestConfigIsExactThenNearestThenDefault) {
  std::string worker = AddWorker();
  ASSERT_OK(jobs_->Submit(Spec("M=256,N=256,K=256")));
  RunToCompletion(worker);
  absl::StatusOr<BestConfigAnswer> exact =
      index_->Resolve("matmul", *ParseShape("K=256,N=256,M=256"), "", "");
  ASSERT_OK(exact);
  EXPECT_EQ(exact->source, BestConfigAnswer::Source::kExact);
  EXPECT_EQ(exact->device_model, "test-cpu");
  absl::StatusOr<BestConfigAnswer> nearest =
      index_->Resolve("matmul", *ParseShape("M=512,N=256,K=256"), "", "");
  ASSERT_OK(nearest);
  EXPECT_EQ(nearest->source, BestConfigAnswer::Source::kNearestShape);
  EXPECT_EQ(nearest->config_text, exact->config_text);
  EXPECT_EQ(ShapeToString(nearest->tuned_shape), "M=256,N=256,K=256");
  absl::StatusOr<BestConfigAnswer> fallback =
      index_->Resolve("matmul", *ParseShape("M=512,N=256,K=256"), "another-cpu", "");
  ASSERT_OK(fallback);
  EXPECT_EQ(fallback->source, BestConfigAnswer::Source::kDefault);
  EXPECT_EQ(fallback->config_text, bundle_.spec.default_config());
  EXPECT_THAT(index_->Resolve("nope", v1::Shape(), "", ""),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(JobManagerTest, ANewShapeMeasuresTheNearestShapesBestRightAfterTheDefault) {
  std::string worker = AddWorker();
  const std::string default_text =
      ConfigToString(*NormalizeConfig(bundle_.spec, *ParseConfig(bundle_.spec.default_config())));
  ASSERT_OK(jobs_->Submit(Spec("M=256,N=256,K=256")));
  // The default is the slowest, so the best is another config.
  while (std::optional<v1::Lease> lease = Lease(worker)) {
    ReportAll(worker, *lease, false, [&](int64_t index) {
      for (const v1::Trial& trial : lease->trials()) {
        if (trial.index() == index && ConfigToString(trial.config()) == default_text) return 1.0;
      }
      return 1e-3 * (1 + index % 7);
    });
  }
  absl::StatusOr<BestConfigAnswer> tuned =
      index_->Resolve("matmul", *ParseShape("M=256,N=256,K=256"), "", "");
  ASSERT_OK(tuned);
  ASSERT_NE(tuned->config_text, default_text);

  v1::JobSpec next = Spec("M=512,N=256,K=256");
  next.clear_config_set();
  next.set_strategy("model");
  next.set_budget(6);
  absl::StatusOr<v1::Job> job = jobs_->Submit(next);
  ASSERT_OK(job);
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  ASSERT_GE(lease->trials_size(), 2);
  EXPECT_EQ(ConfigToString(lease->trials(0).config()), default_text);
  EXPECT_EQ(ConfigToString(lease->trials(1).config()), tuned->config_text);

  // A restarted coordinator resumes the target with the same warm start.
  Restart();
  ASSERT_OK(jobs_->Recover());
  worker = AddWorker();
  std::optional<v1::Lease> again = Lease(worker);
  ASSERT_TRUE(again.has_value());
  ASSERT_GE(again->trials_size(), 2);
  EXPECT_EQ(ConfigToString(again->trials(0).config()), default_text);
  EXPECT_EQ(ConfigToString(again->trials(1).config()), tuned->config_text);
}

// A model job for a new shape trains on the trials the fleet measured for a
// near shape of the same kernel and device model (fleet_history.h): its first
// picks after the default and the warm start are in the region those trials
// found fast, which uniform draws (the model without results of its own)
// would hit with a chance of (1/16)^4.
TEST_F(JobManagerTest, AModelJobTrainsOnTheTrialsOfANearTunedShape) {
  std::string worker = AddWorker();
  auto values = [](const v1::Config& config) {
    std::vector<int64_t> out;
    for (const v1::ParamValue& value : config.values()) out.push_back(value.value());
    return out;
  };
  // BLOCK_M, BLOCK_N, BLOCK_K, UNROLL, LOOP_ORDER: fast at BLOCK_M=16, BLOCK_N=64.
  auto seconds_of = [&](const v1::Config& config) {
    const std::vector<int64_t> v = values(config);
    return 1e-3 * static_cast<double>(v[0] / 16) * static_cast<double>(v[1] / 64) +
           1e-6 * static_cast<double>(v[2]);
  };
  v1::JobSpec tuned = Spec("M=256,N=256,K=256");
  tuned.clear_config_set();  // exhaustive
  ASSERT_OK(jobs_->Submit(tuned));
  while (std::optional<v1::Lease> lease = Lease(worker)) {
    ReportAll(worker, *lease, false, [&](int64_t index) {
      for (const v1::Trial& trial : lease->trials()) {
        if (trial.index() == index) return seconds_of(trial.config());
      }
      return 1.0;
    });
  }
  absl::StatusOr<BestConfigAnswer> indexed =
      index_->Resolve("matmul", *ParseShape("M=256,N=256,K=256"), "", "");
  ASSERT_OK(indexed);
  ASSERT_EQ(indexed->source, BestConfigAnswer::Source::kExact);  // the history's shape is indexed

  v1::JobSpec next = Spec("M=512,N=256,K=256");
  next.clear_config_set();
  next.set_strategy("model");
  next.set_budget(40);
  next.set_seed(5);
  ASSERT_OK(jobs_->Submit(next));
  std::vector<v1::Config> proposed;  // in the order proposed
  while (proposed.size() < 6) {
    std::optional<v1::Lease> lease = Lease(worker);
    ASSERT_TRUE(lease.has_value());
    for (const v1::Trial& trial : lease->trials()) proposed.push_back(trial.config());
    ReportAll(worker, *lease, false, [&](int64_t index) {
      for (const v1::Trial& trial : lease->trials()) {
        if (trial.index() == index) return seconds_of(trial.config());
      }
      return 1.0;
    });
  }
  for (size_t i = 2; i < 6; ++i) {  // after the default and the warm start
    const std::vector<int64_t> v = values(proposed[i]);
    EXPECT_EQ(v[0], 16) << ConfigToString(proposed[i]);
    EXPECT_EQ(v[1], 64) << ConfigToString(proposed[i]);
  }
}

}  // namespace
}  // namespace tunefleet::server

namespace tunefleet::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Verification through the JobManager directly, on a fake clock.
// Spot checks (server/spot_checks.h): only the checks every fleet runs (each
// principal's first result and each claimed new best), so that the flows
// are deterministic.
class SpotCheckFlowTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    options_.spot.rate = 1e-12;
    Restart();
  }

  // Leases and reports with the config's own time until none of `workers`
  // gets anything.
  void RunAll(const std::vector<std::string>& workers) {
    for (int round = 0; round < 200; ++round) {
      bool leased = false;
      for (const std::string& worker : workers) {
        if (std::optional<v1::Lease> lease = Lease(worker)) {
          ReportAll(worker, *lease);
          leased = true;
        }
      }
      if (!leased) return;
    }
    ADD_FAILURE() << "the job never ran out of work";
  }

  // The configs of `job_id`'s rows of `round`, measured by `principal` (or,
  // with `other`, by anyone else).
  std::set<std::string> ConfigsOf(const std::string& job_id, TrialRound round,
                                  const std::string& principal, bool other = false) {
    std::set<std::string> configs;
    const absl::StatusOr<std::vector<TrialRecord>> rows = store_->ListTrials(job_id);
    EXPECT_TRUE(rows.ok()) << rows.status();
    for (const TrialRecord& row : rows.value_or(std::vector<TrialRecord>())) {
      if (row.round == round && (row.principal == principal) != other) {
        configs.insert(row.config);
      }
    }
    return configs;
  }
};

TEST_F(SpotCheckFlowTest, ASearchLiarIsOverruledByARefereeQuarantinedAndItsConfigsMeasuredAgain) {
  std::string liar = AddWorker("test-cpu", 0, "host:liar");
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  std::string referee = AddWorker("test-cpu", 0, "host:referee");
  EXPECT_FALSE(Lease(honest).has_value());  // they take part: they ask for work
  EXPECT_FALSE(Lease(referee).has_value());
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  // 1 s for every config, whose true times are 1-7 ms: none would be a finalist.
  std::optional<v1::Lease> lied = Lease(liar);
  ASSERT_TRUE(lied.has_value());
  ASSERT_EQ(lied->trials_size(), 3);  // the others asked before the job: no share yet
  ReportAll(liar, *lied, false, [](int64_t) { return 1.0; });

  // Its first result goes to another principal before any search work,
  // measured in full (no early cut).
  std::optional<v1::Lease> check = Lease(honest);
  ASSERT_TRUE(check.has_value());
  ASSERT_EQ(check->trials_size(), 1);
  EXPECT_EQ(check->trials(0).index(), lied->trials(0).index());
  EXPECT_EQ(check->best_seconds(), 0);
  EXPECT_FALSE(check->own_build());  // no more a tell than best_seconds is
  ReportAll(honest, *check);
  // One principal's word against another's: a referee decides, neither side.
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  std::optional<v1::Lease> refereed = Lease(referee);
  ASSERT_TRUE(refereed.has_value());
  ASSERT_EQ(refereed->trials_size(), 1);
  EXPECT_EQ(refereed->trials(0).index(), lied->trials(0).index());
  ReportAll(referee, *refereed);

  absl::StatusOr<std::vector<QuarantineRecord>> stored = store_->ListQuarantine();
  ASSERT_OK(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].principal, "host:liar");
  EXPECT_THAT((*stored)[0].reason, HasSubstr("spot check"));
  EXPECT_THAT(jobs_->TryLease(QueryFor(liar)), StatusIs(absl::StatusCode::kPermissionDenied));

  RunAll({honest, referee});
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.reason();
  const std::set<std::string> claimed = ConfigsOf(job->id(), TrialRound::kSearch, "host:liar");
  EXPECT_EQ(claimed.size(), 3u);
  EXPECT_EQ(ConfigsOf(job->id(), TrialRound::kSpotCheck, "host:liar", /*other=*/true), claimed);
  EXPECT_EQ(ConfigsOf(job->id(), TrialRound::kSpotReferee, "host:referee").size(), 1u);
  absl::StatusOr<BestRecord> best = store_->GetBest(done.targets(0).tuning_key());
  ASSERT_OK(best);
  EXPECT_LT(best->median_seconds, 0.1);  // an honest time, never the liar's 1 s
}

TEST_F(SpotCheckFlowTest, WithoutARefereeRepeatedDisputesMakeSuspectsAndQuarantineNobody) {
  options_.spot.rate = 1;  // every result checked
  Restart();
  std::string liar = AddWorker("test-cpu", 0, "host:liar");
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  EXPECT_FALSE(Lease(honest).has_value());
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> lied = Lease(liar);
  ASSERT_TRUE(lied.has_value());
  ReportAll(liar, *lied, false, [](int64_t) { return 1.0; });
  std::optional<v1::Lease> check = Lease(honest);
  ASSERT_TRUE(check.has_value());
  EXPECT_EQ(check->trials_size(), lied->trials_size());
  EXPECT_EQ(check->best_seconds(), 0);  // measured in full
  ReportAll(honest, *check);
  // No third principal: disputes, suspects, and nobody is quarantined.
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  RunAll({liar, honest});
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.reason();
  EXPECT_EQ(ConfigsOf(job->id(), TrialRound::kSpotCheck, "host:honest"),
            ConfigsOf(job->id(), TrialRound::kSearch, "host:liar"));
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  absl::StatusOr<BestRecord> best = store_->GetBest(done.targets(0).tuning_key());
  ASSERT_OK(best);
  EXPECT_LT(best->median_seconds, 0.1);  // the slower rows never won: the honest ones did
}

TEST_F(SpotCheckFlowTest, ACheckNoOtherPrincipalTakesIsDroppedAndTheJobEnds) {
  std::string claimant = AddWorker("test-cpu", 0, "host:claimant");
  std::string other = AddWorker("test-cpu", 0, "host:other");
  EXPECT_FALSE(Lease(other).has_value());  // it takes part, then stops asking
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  int64_t leases = 0;
  while (std::optional<v1::Lease> lease = Lease(claimant)) {
    ReportAll(claimant, *lease);
    ++leases;
  }
  ASSERT_GT(leases, 0);
  // The search is over, but its first result waits for a check.
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_RUNNING);
  Elapse(options_.spot.wait + absl::Seconds(1), {claimant, other});
  RunAll({claimant, other});  // the other verifies the best
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(ConfigsOf(job->id(), TrialRound::kSpotCheck, "").empty());
}

TEST_F(SpotCheckFlowTest, OnePrincipalsFleetHasNoSpotChecks) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  RunToCompletion(worker);
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_SUCCEEDED);
  const absl::StatusOr<std::vector<TrialRecord>> rows = store_->ListTrials(job->id());
  ASSERT_OK(rows);
  for (const TrialRecord& row : *rows) EXPECT_EQ(row.round, TrialRound::kSearch);
}

TEST_F(SpotCheckFlowTest, AnOverruledPrincipalsOpenLeaseIsTakenBackAndItsConfigsGoToOthers) {
  std::string liar = AddWorker("test-cpu", 0, "host:liar");
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  std::string referee = AddWorker("test-cpu", 0, "host:referee");
  EXPECT_FALSE(Lease(honest).has_value());
  EXPECT_FALSE(Lease(referee).has_value());
  v1::JobSpec spec = Spec();
  spec.clear_config_set();
  spec.set_strategy("random");
  spec.set_budget(9);
  absl::StatusOr<v1::Job> job = jobs_->Submit(spec);
  ASSERT_OK(job);
  std::optional<v1::Lease> lied = Lease(liar);
  std::optional<v1::Lease> held = Lease(liar);  // it holds a second batch
  ASSERT_TRUE(lied.has_value());
  ASSERT_TRUE(held.has_value());
  ReportAll(liar, *lied, false, [](int64_t) { return 1.0; });
  std::optional<v1::Lease> check = Lease(honest);
  ASSERT_TRUE(check.has_value());
  ReportAll(honest, *check);
  std::optional<v1::Lease> refereed = Lease(referee);
  ASSERT_TRUE(refereed.has_value());
  ReportAll(referee, *refereed);
  ASSERT_EQ(store_->ListQuarantine()->size(), 1u);

  // The batch it held went back with the verdict; its report is refused.
  EXPECT_THAT(jobs_->Report(ReportOf(liar, *held, false, nullptr)),
              StatusIs(absl::StatusCode::kPermissionDenied));
  RunAll({honest, referee});
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.reason();
  std::set<std::string> others;
  for (const char* principal : {"host:honest", "host:referee"}) {
    for (const std::string& config : ConfigsOf(job->id(), TrialRound::kSearch, principal)) {
      others.insert(config);
    }
  }
  for (const v1::Trial& trial : held->trials()) {
    EXPECT_TRUE(others.contains(ConfigToString(trial.config()))) << trial.ShortDebugString();
  }
}

TEST_F(SpotCheckFlowTest, ACrashClaimedForAConfigThatRunsIsMeasuredAgainAndBlamesNobody) {
  std::string claimant = AddWorker("test-cpu", 0, "host:claimant");
  std::string other = AddWorker("test-cpu", 0, "host:other");
  EXPECT_FALSE(Lease(other).has_value());
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> crashed = Lease(claimant);
  ASSERT_TRUE(crashed.has_value());
  ResultReport report = ReportOf(claimant, *crashed, false, nullptr);
  report.trials[0].second.set_status(v1::TRIAL_STATUS_CRASHED);
  report.trials[0].second.clear_measurement();
  ASSERT_OK(jobs_->Report(report).status());
  // Its first result is checked (and its first run, a new best).
  std::optional<v1::Lease> check = Lease(other);
  ASSERT_TRUE(check.has_value());
  ASSERT_GE(check->trials_size(), 1);
  EXPECT_EQ(check->trials(0).index(), crashed->trials(0).index());
  ReportAll(other, *check);
  RunAll({claimant, other});
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.reason();
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  EXPECT_TRUE(ConfigsOf(job->id(), TrialRound::kSpotCheck, "host:other")
                  .contains(ConfigToString(crashed->trials(0).config())));
}

TEST_F(SpotCheckFlowTest, AWorkerCannotReportItselfLost) {
  std::string worker = AddWorker();
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::optional<v1::Lease> lease = Lease(worker);
  ASSERT_TRUE(lease.has_value());
  ResultReport report = ReportOf(worker, *lease, false, nullptr);
  report.trials[0].second.set_status(v1::TRIAL_STATUS_WORKER_LOST);
  report.trials[1].second.set_status(static_cast<v1::TrialStatus>(77));
  ASSERT_OK(jobs_->Report(report).status());
  const absl::StatusOr<std::vector<TrialRecord>> rows = store_->ListTrials(job->id());
  ASSERT_OK(rows);
  int crashed = 0;
  for (const TrialRecord& row : *rows) {
    if (row.status == v1::TRIAL_STATUS_CRASHED) {
      ++crashed;
      EXPECT_THAT(row.error, HasSubstr("which workers do not report"));
    }
  }
  EXPECT_EQ(crashed, 2);
}

class VerificationFlowTest : public JobManagerTest {
 protected:
  // An honest claimant's job whose candidate a rogue verifier measured at
  // 0.5 s (a dispute), and the referee's lease of it.
  struct Disputed {
    std::string honest;
    std::string rogue;
    std::string referee;
    std::string job_id;
    std::string key;
    v1::Lease refereed;
  };
  Disputed DisputeByARogueVerifier() {
    Disputed out;
    out.honest = AddWorker("test-cpu", 0, "host:honest");
    out.rogue = AddWorker("test-cpu", 0, "host:rogue");
    out.referee = AddWorker("test-cpu", 0, "host:referee");
    absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return out;
    out.job_id = job->id();
    while (std::optional<v1::Lease> lease = Lease(out.honest)) ReportAll(out.honest, *lease);
    out.key = jobs_->Get(out.job_id)->targets(0).tuning_key();
    std::optional<v1::Lease> verify = Lease(out.rogue);
    EXPECT_TRUE(verify.has_value());
    if (!verify.has_value()) return out;
    ReportAll(out.rogue, *verify, false, [](int64_t) { return 0.5; });
    std::optional<v1::Lease> refereed = Lease(out.referee);
    EXPECT_TRUE(refereed.has_value());
    if (refereed.has_value()) out.refereed = *refereed;
    return out;
  }
};

TEST_F(VerificationFlowTest, AClaimTheVerifierAndARefereeContradictIsQuarantined) {
  std::string rogue = AddWorker("test-cpu", 0, "host:rogue");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  std::string referee = AddWorker("test-cpu", 0, "host:referee");
  std::optional<v1::Lease> lease = Lease(rogue);
  ASSERT_TRUE(lease.has_value());
  const int64_t poisoned = lease->trials(0).index();
  ReportAll(rogue, *lease, false, [&](int64_t index) { return index == poisoned ? 1e-9 : 1.0; });

  // The rogue cannot verify itself; the honest worker gets the candidate.
  EXPECT_FALSE(Lease(rogue).has_value());
  v1::Job pending = *jobs_->Get(job->id());
  EXPECT_EQ(pending.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(pending.targets(0).verification().state(), v1::VERIFICATION_STATE_PENDING);
  std::optional<v1::Lease> verify = Lease(honest);
  ASSERT_TRUE(verify.has_value());
  EXPECT_TRUE(verify->finalists());
  EXPECT_TRUE(verify->own_build());
  ASSERT_EQ(verify->trials_size(), 1);  // nothing served yet: the candidate alone
  EXPECT_EQ(verify->trials(0).index(), poisoned);
  ReportAll(honest, *verify, false, [](int64_t) { return 2e-3; });

  // One principal's word against another's is a dispute: nobody is
  // quarantined yet, and neither side may referee it.
  v1::Job disputed = *jobs_->Get(job->id());
  EXPECT_EQ(disputed.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(disputed.targets(0).verification().state(), v1::VERIFICATION_STATE_PENDING);
  EXPECT_THAT(disputed.targets(0).verification().verifiers(), ElementsAre("host:honest"));
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  EXPECT_FALSE(Lease(rogue).has_value());
  EXPECT_FALSE(Lease(honest).has_value());
  std::optional<v1::Lease> refereed = Lease(referee);
  ASSERT_TRUE(refereed.has_value());
  ASSERT_EQ(refereed->trials_size(), 1);
  EXPECT_EQ(refereed->trials(0).index(), poisoned);
  ReportAll(referee, *refereed, false, [](int64_t) { return 3e-3; });

  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).verification().state(), v1::VERIFICATION_STATE_DISAGREED);
  EXPECT_THAT(done.targets(0).verification().verifiers(),
              ElementsAre("host:honest", "host:referee"));
  absl::StatusOr<BestRecord> best = store_->GetBest(done.targets(0).tuning_key());
  ASSERT_OK(best);
  EXPECT_EQ(best->median_seconds, 3e-3);  // the slower of the two verifiers
  EXPECT_THAT(jobs_->TryLease(QueryFor(rogue)),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(jobs_->Report(ReportOf(rogue, *lease, false, nullptr)),
              StatusIs(absl::StatusCode::kPermissionDenied));
  // The quarantine is stored: a coordinator started on this store has it.
  absl::StatusOr<std::vector<QuarantineRecord>> stored = store_->ListQuarantine();
  ASSERT_OK(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].principal, "host:rogue");
}

TEST_F(VerificationFlowTest, ARogueVerifierIsOverruledByTheRefereeAndQuarantined) {
  const Disputed disputed = DisputeByARogueVerifier();
  ASSERT_FALSE(disputed.refereed.lease_id().empty());
  EXPECT_TRUE(store_->ListQuarantine()->empty());  // its word alone decides nothing
  EXPECT_THAT(store_->GetBest(disputed.key), StatusIs(absl::StatusCode::kNotFound));
  ReportAll(disputed.referee, disputed.refereed);  // the claim's own times: it agrees
  v1::Job done = *jobs_->Get(disputed.job_id);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).verification().state(), v1::VERIFICATION_STATE_AGREED);
  absl::StatusOr<std::vector<QuarantineRecord>> stored = store_->ListQuarantine();
  ASSERT_OK(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].principal, "host:rogue");
  EXPECT_THAT((*stored)[0].reason, HasSubstr("overruled by a referee"));
  absl::StatusOr<BestRecord> best = store_->GetBest(disputed.key);
  ASSERT_OK(best);
  EXPECT_LT(best->median_seconds, 0.5);  // never the rogue's number
  EXPECT_OK(jobs_->TryLease(QueryFor(disputed.honest)));
}

TEST_F(VerificationFlowTest, ARefereeFarFromBothSidesQuarantinesNobody) {
  // An honest claim measured on a noisy host, a rogue verifier's 0.5 s, and
  // an honest referee twice the claim: past the square of the band (1.25^2)
  // from both, so it settles nothing, and the middle of three is served.
  const Disputed disputed = DisputeByARogueVerifier();
  ASSERT_FALSE(disputed.refereed.lease_id().empty());
  ReportAll(disputed.referee, disputed.refereed, false,
            [](int64_t index) { return 2e-3 * (1 + index % 7); });  // twice the claim's
  v1::Job done = *jobs_->Get(disputed.job_id);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).verification().state(), v1::VERIFICATION_STATE_DISPUTED);
  EXPECT_THAT(done.targets(0).verification().verifiers(),
              ElementsAre("host:rogue", "host:referee"));
  EXPECT_THAT(done.reason(), HasSubstr("the referee settled nothing"));
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  absl::StatusOr<BestRecord> best = store_->GetBest(disputed.key);
  ASSERT_OK(best);
  EXPECT_EQ(best->median_seconds, 2e-3 * (1 + disputed.refereed.trials(0).index() % 7));
  EXPECT_OK(jobs_->TryLease(QueryFor(disputed.rogue)));
  EXPECT_OK(jobs_->TryLease(QueryFor(disputed.honest)));
}

TEST_F(VerificationFlowTest, ADisputeNoRefereeSettlesQuarantinesNobodyAndServesTheSlowerSide) {
  std::string claimant = AddWorker("test-cpu", 0, "host:claimant");
  std::string other = AddWorker("test-cpu", 0, "host:other");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  while (std::optional<v1::Lease> lease = Lease(claimant)) {
    ReportAll(claimant, *lease, false, [](int64_t) { return 1e-3; });
  }
  std::optional<v1::Lease> verify = Lease(other);
  ASSERT_TRUE(verify.has_value());
  ASSERT_EQ(verify->trials_size(), 1);
  const std::string candidate = ConfigToString(verify->trials(0).config());
  ReportAll(other, *verify, false, [](int64_t) { return 3e-3; });  // no third principal

  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).verification().state(), v1::VERIFICATION_STATE_DISPUTED);
  EXPECT_THAT(done.reason(), HasSubstr("disputed"));
  EXPECT_TRUE(store_->ListQuarantine()->empty());
  absl::StatusOr<BestRecord> served = store_->GetBest(done.targets(0).tuning_key());
  ASSERT_OK(served);
  EXPECT_EQ(served->config, candidate);
  EXPECT_EQ(served->median_seconds, 3e-3);  // neither side's number alone: the slower
  EXPECT_OK(jobs_->TryLease(QueryFor(claimant)));
  EXPECT_OK(jobs_->TryLease(QueryFor(other)));
}

TEST_F(VerificationFlowTest, AVerificationLeaseThatLapsesLeavesNoRowsAndCannotBeTakenAgain) {
  options_.verify.mode = VerifyMode::kRequired;
  Restart();
  std::string claimant = AddWorker("test-cpu", 0, "host:claimant");
  std::string lapsing = AddWorker("test-cpu", 0, "host:lapsing");
  std::string other = AddWorker("test-cpu", 0, "host:other");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  while (std::optional<v1::Lease> lease = Lease(claimant)) ReportAll(claimant, *lease);
  std::optional<v1::Lease> held = Lease(lapsing);
  ASSERT_TRUE(held.has_value());
  Elapse(absl::Seconds(11), {claimant, lapsing, other});  // past the lease TTL: it lapses
  EXPECT_FALSE(Lease(lapsing).has_value());  // it cannot hold the round again
  auto verify_rows = [&] {
    const std::vector<TrialRecord> all = *store_->ListTrials(job->id());
    std::vector<TrialRecord> rows;
    for (const TrialRecord& row : all) {
      if (row.round == TrialRound::kVerify) rows.push_back(row);
    }
    return rows;
  };
  EXPECT_TRUE(verify_rows().empty());
  std::optional<v1::Lease> verify = Lease(other);
  ASSERT_TRUE(verify.has_value());
  ReportAll(other, *verify);
  EXPECT_EQ(jobs_->Get(job->id())->targets(0).verification().state(),
            v1::VERIFICATION_STATE_AGREED);
  const std::vector<TrialRecord> rows = verify_rows();
  ASSERT_EQ(rows.size(), 1u);  // stored once judged
  EXPECT_EQ(rows[0].principal, "host:other");
}

TEST_F(VerificationFlowTest, AQuarantineTheStoreRefusedIsStoredByALaterTick) {
  std::string rogue = AddWorker("test-cpu", 0, "host:rogue");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  std::string honest = AddWorker("test-cpu", 0, "host:honest");
  std::string referee = AddWorker("test-cpu", 0, "host:referee");
  while (std::optional<v1::Lease> lease = Lease(rogue)) {
    ReportAll(rogue, *lease, false, [](int64_t) { return 1e-9; });
  }
  faulty_->refuse_quarantine = true;
  for (const std::string& verifier : {honest, referee}) {
    std::optional<v1::Lease> verify = Lease(verifier);
    ASSERT_TRUE(verify.has_value());
    ReportAll(verifier, *verify, false, [](int64_t) { return 2e-3; });
  }
  EXPECT_TRUE(store_->ListQuarantine()->empty());

  faulty_->refuse_quarantine = false;
  jobs_->Tick();
  ASSERT_EQ(store_->ListQuarantine()->size(), 1u);
  EXPECT_THAT(jobs_->TryLease(QueryFor(rogue)), StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST_F(VerificationFlowTest, AutoServesUnverifiedWhenNoVerifierComesInTime) {
  options_.verify.wait = absl::Seconds(5);
  Restart();
  std::string first = AddWorker("test-cpu", 0, "host:a");
  std::string second = AddWorker("test-cpu", 0, "host:b");  // alive, but never asks
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  while (std::optional<v1::Lease> lease = Lease(first)) ReportAll(first, *lease);
  EXPECT_EQ(jobs_->Get(job->id())->targets(0).verification().state(),
            v1::VERIFICATION_STATE_PENDING);
  EXPECT_THAT(store_->GetBest(jobs_->Get(job->id())->targets(0).tuning_key()),
              StatusIs(absl::StatusCode::kNotFound));  // not served yet

  now_ += absl::Seconds(6);
  workers_->Touch(first);
  workers_->Touch(second);
  jobs_->Tick();
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).verification().state(), v1::VERIFICATION_STATE_UNVERIFIED);
  EXPECT_OK(store_->GetBest(done.targets(0).tuning_key()));
}

TEST_F(VerificationFlowTest, AVerifierIsGivenAVerificationBeforeAnOlderJobsSearch) {
  options_.verify.mode = VerifyMode::kRequired;  // no deadline while the clock moves
  Restart();
  std::string claimant = AddWorker("test-cpu", 0, "host:claimant");
  absl::StatusOr<v1::Job> older = jobs_->Submit(Spec());
  ASSERT_OK(older);
  std::optional<v1::Lease> held = Lease(claimant);  // all of the older job, then lapsed
  ASSERT_TRUE(held.has_value());
  absl::StatusOr<v1::Job> newer = jobs_->Submit(Spec("M=128,N=128,K=128"));
  ASSERT_OK(newer);
  std::optional<v1::Lease> measured = Lease(claimant);
  ASSERT_TRUE(measured.has_value());
  EXPECT_EQ(measured->job_id(), newer->id());
  ReportAll(claimant, *measured);  // one principal measured the newer job's best
  now_ += options_.lease_ttl + absl::Seconds(1);
  jobs_->Tick();  // the older job's configs are queued again
  std::string verifier = AddWorker("test-cpu", 0, "host:verifier");
  std::optional<v1::Lease> first = Lease(verifier);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->job_id(), newer->id());
  EXPECT_TRUE(first->finalists());  // the verification, not the older job's search
  std::optional<v1::Lease> second = Lease(verifier);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job_id(), older->id());
}

TEST_F(VerificationFlowTest, RequiredWaitsForAVerifierWithoutADeadline) {
  options_.verify.mode = VerifyMode::kRequired;
  Restart();
  std::string only = AddWorker("test-cpu", 0, "host:a");
  absl::StatusOr<v1::Job> job = jobs_->Submit(Spec());
  ASSERT_OK(job);
  while (std::optional<v1::Lease> lease = Lease(only)) ReportAll(only, *lease);
  now_ += absl::Minutes(10);
  workers_->Touch(only);
  jobs_->Tick();
  EXPECT_EQ(jobs_->Get(job->id())->state(), v1::JOB_STATE_RUNNING);
  std::string verifier = AddWorker("test-cpu", 0, "host:b");
  std::optional<v1::Lease> verify = Lease(verifier);
  ASSERT_TRUE(verify.has_value());
  ReportAll(verifier, *verify);  // the same times as the claim: it agrees
  v1::Job done = *jobs_->Get(job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.targets(0).verification().state(), v1::VERIFICATION_STATE_AGREED);
}

}  // namespace
}  // namespace tunefleet::server
