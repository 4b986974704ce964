// The daemon against an in-process fake coordinator, with the real compiler
// and benchmark children.
#include "worker/worker_daemon.h"

#include <deque>
#include <map>
#include <set>
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/cpu/cpu_device.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::worker::testing::CpuChild;
using ::tunefleet::worker::testing::CpuCompileStack;
using ::tunefleet::worker::testing::MakeCpuCompileStack;
using ::tunefleet::worker::testing::FastOptions;
using ::tunefleet::worker::testing::LoadJob;
using ::tunefleet::worker::testing::MakeTrial;

// Serves queued leases and records every call. Thread-safe.
class FakeCoordinator : public Coordinator {
 public:
  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (register_failures_ > 0) {
      --register_failures_;
      return absl::UnavailableError("coordinator down");
    }
    registered_ = request;
    v1::RegisterWorkerResponse response;
    response.set_worker_id(absl::StrCat("w", ++registrations_));
    response.set_heartbeat_interval_ms(50);
    response.set_lease_ttl_ms(lease_ttl_ms_);
    return response;
  }

  absl::StatusOr<v1::LeaseWorkResponse> LeaseWork(const v1::LeaseWorkRequest& request) override {
    absl::MutexLock lock(&mu_);
    v1::LeaseWorkResponse response;
    if (!leases_.empty()) {
      *response.mutable_lease() = TakeFront(request.max_trials());
      return response;
    }
    auto has_lease = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !leases_.empty() || interrupted_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&has_lease), absl::Milliseconds(request.wait_ms()));
    if (interrupted_) return absl::CancelledError("interrupted");
    if (!leases_.empty()) *response.mutable_lease() = TakeFront(request.max_trials());
    return response;
  }

  // The first queued lease, cut to `max_trials` (the rest stays queued as a
  // lease of its own), counted as held until reported in full or released.
  v1::Lease TakeFront(int max_trials) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::Lease lease = leases_.front();
    leases_.pop_front();
    if (max_trials > 0 && lease.trials_size() > max_trials) {
      v1::Lease rest = lease;
      rest.set_lease_id(absl::StrCat(lease.lease_id(), "-rest"));
      rest.mutable_trials()->DeleteSubrange(0, max_trials);
      lease.mutable_trials()->DeleteSubrange(max_trials, lease.trials_size() - max_trials);
      leases_.push_front(rest);
    }
    asked_.push_back(max_trials);
    for (const v1::Trial& trial : lease.trials()) unreported_[lease.lease_id()].insert(trial.index());
    max_held_ = std::max(max_held_, static_cast<int>(unreported_.size()));
    return lease;
  }

  absl::StatusOr<v1::ReportResultsResponse> ReportResults(
      const v1::ReportResultsRequest& request) override {
    absl::MutexLock lock(&mu_);
    reports_.push_back(request);
    v1::ReportResultsResponse response;
    if (cancelled_leases_.contains(request.lease_id())) {
      unreported_.erase(request.lease_id());
      response.set_cancelled(true);  // results of a cancelled lease are dropped
      return response;
    }
    for (const v1::ReportedTrial& trial : request.trials()) {
      results_[trial.index()] = trial.result();
      ++times_reported_[trial.index()];
      unreported_[request.lease_id()].erase(trial.index());
    }
    if (request.release() || unreported_[request.lease_id()].empty()) {
      unreported_.erase(request.lease_id());
    }
    response.set_cancelled(request.lease_id() == cancel_lease_ && cancel_after_ > 0 &&
                           static_cast<int>(results_.size()) >= cancel_after_);
    return response;
  }

  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request) override {
    absl::MutexLock lock(&mu_);
    ++heartbeats_;
    v1::HeartbeatResponse response;
    if (forget_worker_once_ && request.worker_id() == "w1") {
      forget_worker_once_ = false;
      response.set_reregister(true);
    }
    return response;
  }

  absl::StatusOr<std::string> GetBlob(const std::string& digest) override {
    absl::MutexLock lock(&mu_);
    ++blob_fetches_;
    auto it = blobs_.find(digest);
    if (it == blobs_.end()) return absl::NotFoundError(digest);
    return it->second;
  }

  // This fake shares no artifacts (the integration tests share them through
  // a real coordinator).
  absl::StatusOr<v1::Artifact> GetArtifact(const std::string& key) override {
    return absl::NotFoundError(key);
  }
  absl::Status PutArtifact(const v1::PutArtifactRequest&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<v1::GetCompileWorkResponse> GetCompileWork(
      const v1::GetCompileWorkRequest&) override {
    return absl::UnimplementedError("no compile-only workers here");
  }

  void InterruptLeaseWaits() override {
    absl::MutexLock lock(&mu_);
    interrupted_ = true;
  }

  // Queues a lease of `job`'s trials, of `kind`, with sources by digest
  // only; `legacy` (a lease as a coordinator that predates `kind` sends it)
  // sets the bools `finalists` and `profile` instead of `kind`.
  void AddLease(const JobContext& job, const std::vector<v1::Trial>& trials,
                v1::LeaseKind kind = v1::LEASE_KIND_SEARCH, bool legacy = false) {
    absl::MutexLock lock(&mu_);
    v1::Lease& lease = leases_.emplace_back();
    if (legacy) {
      lease.set_finalists(kind == v1::LEASE_KIND_FINALISTS);
      lease.set_profile(kind == v1::LEASE_KIND_PROFILE);
    } else {
      lease.set_kind(kind);
    }
    lease.set_lease_id(absl::StrCat("lease-", leases_.size()));
    lease.set_epoch(1);
    lease.set_job_id(job.job_id);
    *lease.mutable_kernel() = job.spec;
    *lease.mutable_shape() = job.shape;
    lease.set_seed(job.seed);
    for (const v1::SourceFile& file : job.sources) {
      blobs_[file.digest()] = file.content();
      v1::SourceFile* ref = lease.add_sources();
      ref->set_path(file.path());
      ref->set_digest(file.digest());
    }
    for (const v1::Trial& trial : trials) *lease.add_trials() = trial;
  }

  // Waits until `n` distinct trials were reported (or 60 s).
  bool AwaitResults(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return static_cast<int>(results_.size()) >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(60));
  }

  mutable absl::Mutex mu_;
  std::deque<v1::Lease> leases_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> blobs_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ReportResultsRequest> reports_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, v1::TrialResult> results_ ABSL_GUARDED_BY(mu_);
  v1::RegisterWorkerRequest registered_ ABSL_GUARDED_BY(mu_);
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  int register_failures_ ABSL_GUARDED_BY(mu_) = 0;
  int heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  int blob_fetches_ ABSL_GUARDED_BY(mu_) = 0;
  // Reports for `cancel_lease_` are answered `cancelled` once this many
  // results arrived; other leases are never cancelled this way.
  std::string cancel_lease_ ABSL_GUARDED_BY(mu_);
  int cancel_after_ ABSL_GUARDED_BY(mu_) = 0;
  bool forget_worker_once_ ABSL_GUARDED_BY(mu_) = false;
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  int64_t lease_ttl_ms_ ABSL_GUARDED_BY(mu_) = 3000;
  // Look-ahead bookkeeping: max_trials of each lease handed out, the trials
  // of each held lease not yet reported, the most leases held at once, how
  // often each trial was reported, and leases answered `cancelled`.
  std::vector<int> asked_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::set<int64_t>> unreported_ ABSL_GUARDED_BY(mu_);
  int max_held_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, int> times_reported_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelled_leases_ ABSL_GUARDED_BY(mu_);
};

class WorkerDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    compile_ = MakeCpuCompileStack(cache_.path());
    ASSERT_NE(compile_.pool, nullptr);
    sources_ = std::make_unique<SourceCache>(
        cache_.path() + "/blobs",
        [this](const std::string& digest) { return coordinator_.GetBlob(digest); });
  }

  void StartDaemon(ExecutorOptions executor_options = FastOptions(), int lookahead_trials = 4,
                   int max_trials = 0) {
    std::vector<std::unique_ptr<TrialExecutor>> executors;
    executors.push_back(std::make_unique<TrialExecutor>(compile_.pool.get(), DiscoverCpuDevice(),
                                                        CpuChild(cache_.path()),
                                                        std::move(executor_options)));
    WorkerOptions options;
    options.host = "test-host";
    options.toolkit = compile_.compiler->toolkit();
    options.lease_wait = absl::Milliseconds(100);
    options.min_backoff = absl::Milliseconds(10);
    options.max_backoff = absl::Milliseconds(50);
    options.report_interval = absl::Milliseconds(50);
    options.lookahead_trials = lookahead_trials;
    options.max_trials = max_trials;
    options.pool_meter = &pool_meter_;
    daemon_ = std::make_unique<WorkerDaemon>(options, &coordinator_, sources_.get(),
                                             std::move(executors));
    thread_ = std::thread([this] { daemon_->Run(); });
  }

  void StopDaemon() {
    if (daemon_ == nullptr) return;
    daemon_->Stop();
    thread_.join();
    daemon_.reset();
  }

  void TearDown() override { StopDaemon(); }

  ::tunefleet::testing::TempDir cache_;
  IdleMeter pool_meter_{/*units=*/2};
  FakeCoordinator coordinator_;
  CpuCompileStack compile_;
  std::unique_ptr<SourceCache> sources_;
  std::unique_ptr<WorkerDaemon> daemon_;
  std::thread thread_;
};

TEST_F(WorkerDaemonTest, ServesALeaseAndReportsEveryTrial) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  coordinator_.AddLease(job, {MakeTrial(0, "FAULT=0,UNROLL=1"), MakeTrial(1, "FAULT=1,UNROLL=1"),
                              MakeTrial(2, "FAULT=3,UNROLL=1"), MakeTrial(3, "FAULT=0,UNROLL=4")});
  StartDaemon();
  ASSERT_TRUE(coordinator_.AwaitResults(4));
  StopDaemon();
  absl::MutexLock lock(&coordinator_.mu_);
  EXPECT_EQ(coordinator_.results_[0].status(), v1::TRIAL_STATUS_OK);
  EXPECT_EQ(coordinator_.results_[1].status(), v1::TRIAL_STATUS_CRASHED);
  EXPECT_EQ(coordinator_.results_[2].status(), v1::TRIAL_STATUS_WRONG_RESULT);
  EXPECT_EQ(coordinator_.results_[3].status(), v1::TRIAL_STATUS_OK);
  EXPECT_EQ(coordinator_.registered_.host(), "test-host");
  ASSERT_EQ(coordinator_.registered_.devices_size(), 1);
  EXPECT_EQ(coordinator_.registered_.devices(0).backend(), v1::BACKEND_CPU);
  EXPECT_THAT(coordinator_.registered_.toolkit(), ::testing::StartsWith("g++ "));
  EXPECT_EQ(coordinator_.blob_fetches_, 2);  // faulty.cc and reference.cc, once each
  for (const v1::ReportResultsRequest& report : coordinator_.reports_) {
    EXPECT_EQ(report.worker_id(), "w1");
    EXPECT_EQ(report.lease_id(), "lease-1");
    EXPECT_FALSE(report.release());  // everything was reported
  }
}

// A coordinator that predates Lease.kind says "profile" with a bool: the
// worker profiles (here: says it cannot) and measures nothing.
TEST_F(WorkerDaemonTest, ServesALeaseOfAnOlderCoordinatorAsItsBoolsSay) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  coordinator_.AddLease(job, {MakeTrial(7, "FAULT=0,UNROLL=1")}, v1::LEASE_KIND_PROFILE,
                        /*legacy=*/true);
  StartDaemon(FastOptions());
  ASSERT_TRUE(coordinator_.AwaitResults(1));
  StopDaemon();
  absl::MutexLock lock(&coordinator_.mu_);
  const v1::TrialResult& result = coordinator_.results_[7];
  EXPECT_TRUE(result.has_profile());
  EXPECT_FALSE(result.profile().unavailable().empty());
  EXPECT_EQ(result.measurement().samples(), 0);
}

TEST_F(WorkerDaemonTest, ServesAFinalistsLeaseInInterleavedRoundsAndReportsAfterTheLast) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  coordinator_.AddLease(job, {MakeTrial(7, "FAULT=0,UNROLL=1"), MakeTrial(9, "FAULT=0,UNROLL=4")},
                        v1::LEASE_KIND_FINALISTS);
  ExecutorOptions options = FastOptions();
  options.finalist_rounds = 2;
  options.finalist_max_rounds = 2;  // no separation rounds (finalists_test.cc has those)
  std::vector<std::pair<int, int64_t>> steps;  // only the executor thread writes
  std::map<int64_t, int64_t> step_samples;
  std::vector<size_t> reported_at_step;
  options.on_finalist_step = [&](int round, int64_t index, const v1::TrialResult& result) {
    steps.emplace_back(round, index);
    step_samples[index] += result.measurement().samples();
    absl::MutexLock lock(&coordinator_.mu_);
    reported_at_step.push_back(coordinator_.results_.size());
  };
  StartDaemon(std::move(options));
  ASSERT_TRUE(coordinator_.AwaitResults(2));
  StopDaemon();
  using ::testing::Pair;
  EXPECT_THAT(steps, ::testing::ElementsAre(Pair(0, 7), Pair(0, 9), Pair(1, 7), Pair(1, 9)));
  EXPECT_THAT(reported_at_step, ::testing::Each(0u));  // nothing before the last round
  absl::MutexLock lock(&coordinator_.mu_);
  ASSERT_EQ(coordinator_.results_.size(), 2u);
  for (int64_t index : {7, 9}) {
    const v1::TrialResult& result = coordinator_.results_[index];
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << result.error();
    EXPECT_EQ(result.measurement().samples(), step_samples[index]);
  }
  int reported = 0;
  for (const v1::ReportResultsRequest& report : coordinator_.reports_) {
    EXPECT_EQ(report.lease_id(), "lease-1");
    EXPECT_FALSE(report.release());
    reported += report.trials_size();
  }
  EXPECT_EQ(reported, 2);  // once per finalist
}

TEST_F(WorkerDaemonTest, HandsBackTheRestOfTheLeaseOnStop) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 12; ++i) trials.push_back(MakeTrial(i, i % 2 ? "FAULT=0,UNROLL=1" : "FAULT=0,UNROLL=4"));
  coordinator_.AddLease(job, trials);
  StartDaemon();
  ASSERT_TRUE(coordinator_.AwaitResults(1));
  StopDaemon();
  absl::MutexLock lock(&coordinator_.mu_);
  ASSERT_FALSE(coordinator_.reports_.empty());
  EXPECT_TRUE(coordinator_.reports_.back().release());
  EXPECT_LT(coordinator_.results_.size(), 12u);
}

TEST_F(WorkerDaemonTest, DropsALeaseTheCoordinatorCancelled) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  std::vector<v1::Trial> trials;
  // Many trials: a steady CPU kernel stops sampling at min_samples (the
  // precision rule), so a short lease could end before the cancel arrives.
  for (int i = 0; i < 300; ++i) trials.push_back(MakeTrial(i, "FAULT=0,UNROLL=4"));
  {
    absl::MutexLock lock(&coordinator_.mu_);
    coordinator_.cancel_lease_ = "lease-1";  // a renewal of the second must not cancel it
    coordinator_.cancel_after_ = 1;
  }
  coordinator_.AddLease(job, trials);
  job.job_id = "second-job";
  coordinator_.AddLease(job, {MakeTrial(100, "FAULT=0,UNROLL=1")});
  StartDaemon();
  ASSERT_TRUE(coordinator_.AwaitResults(1));
  // The worker moves on to the next lease instead of finishing the first.
  absl::MutexLock lock(&coordinator_.mu_);
  auto served_second = [&]() ABSL_SHARED_LOCKS_REQUIRED(coordinator_.mu_) {
    return coordinator_.results_.count(100) > 0;
  };
  ASSERT_TRUE(coordinator_.mu_.AwaitWithTimeout(absl::Condition(&served_second), absl::Seconds(60)));
  EXPECT_LT(coordinator_.results_.size(), 150u);
}

TEST_F(WorkerDaemonTest, HoldsOneLeaseAheadOfAtMostNTrialsAndMeasuresEachTrialOnce) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 11; ++i) {
    trials.push_back(MakeTrial(i, i % 2 ? "FAULT=0,UNROLL=1" : "FAULT=0,UNROLL=4"));
  }
  coordinator_.AddLease(job, trials);  // handed out in pieces of what is asked
  ExecutorOptions executor_options = FastOptions();
  auto device_meter = std::make_shared<IdleMeter>(/*units=*/1);
  executor_options.device_meter = device_meter;
  StartDaemon(std::move(executor_options), /*lookahead_trials=*/2, /*max_trials=*/3);
  ASSERT_TRUE(coordinator_.AwaitResults(11));
  StopDaemon();
  // Work was held, and the device measured (its busy time is the child's
  // runs); idle time never exceeds what was held.
  EXPECT_GT(pool_meter_.held_seconds(), 0);
  EXPECT_GT(device_meter->busy_seconds(), 0);
  EXPECT_LE(device_meter->idle_seconds(), device_meter->held_seconds());
  EXPECT_LE(pool_meter_.idle_seconds(), 2 * pool_meter_.held_seconds());
  absl::MutexLock lock(&coordinator_.mu_);
  // Leases of three trials as the worker asks when it has none, and leases
  // ahead of at most two.
  ASSERT_GE(coordinator_.asked_.size(), 2u);
  EXPECT_EQ(coordinator_.asked_[0], 3);
  EXPECT_EQ(coordinator_.asked_[1], 2);  // asked while the first one ran
  for (int asked : coordinator_.asked_) EXPECT_TRUE(asked == 3 || asked == 2) << asked;
  EXPECT_LE(coordinator_.max_held_, 2);  // the running lease and one ahead
  for (int i = 0; i < 11; ++i) {
    EXPECT_EQ(coordinator_.times_reported_[i], 1) << i;
    EXPECT_EQ(coordinator_.results_[i].status(), v1::TRIAL_STATUS_OK) << i;
  }
  EXPECT_TRUE(coordinator_.unreported_.empty());  // nothing left held
}

TEST_F(WorkerDaemonTest, ALeaseCancelledWhileHeldAheadIsNeverMeasured) {
  JobContext job = LoadJob("tests/worker/faulty_cpu", "N=1024");
  std::vector<v1::Trial> first;
  for (int i = 0; i < 16; ++i) first.push_back(MakeTrial(i, "FAULT=0,UNROLL=4"));
  coordinator_.AddLease(job, first);
  coordinator_.AddLease(job, {MakeTrial(100, "FAULT=0,UNROLL=1")});  // lease-2: cancelled
  coordinator_.AddLease(job, {MakeTrial(200, "FAULT=0,UNROLL=1")});
  {
    absl::MutexLock lock(&coordinator_.mu_);
    coordinator_.cancelled_leases_.insert("lease-2");
    coordinator_.lease_ttl_ms_ = 300;
  }
  // Renewals every 100 ms: the held lease learns it was cancelled while the
  // first one still runs.
  StartDaemon(FastOptions(), /*lookahead_trials=*/1);
  absl::MutexLock lock(&coordinator_.mu_);
  auto served_third = [&]() ABSL_SHARED_LOCKS_REQUIRED(coordinator_.mu_) {
    return coordinator_.results_.count(200) > 0;
  };
  ASSERT_TRUE(coordinator_.mu_.AwaitWithTimeout(absl::Condition(&served_third),
                                                absl::Seconds(60)));
  EXPECT_EQ(coordinator_.results_.count(100), 0u);
  for (const v1::ReportResultsRequest& report : coordinator_.reports_) {
    if (report.lease_id() == "lease-2") {
      EXPECT_EQ(report.trials_size(), 0);
    }
  }
  for (int i = 0; i < 16; ++i) EXPECT_EQ(coordinator_.times_reported_[i], 1) << i;
}

TEST_F(WorkerDaemonTest, RetriesRegistrationAndRegistersAgainWhenForgotten) {
  {
    absl::MutexLock lock(&coordinator_.mu_);
    coordinator_.register_failures_ = 3;
    coordinator_.forget_worker_once_ = true;
  }
  StartDaemon();
  absl::MutexLock lock(&coordinator_.mu_);
  auto reregistered = [&]() ABSL_SHARED_LOCKS_REQUIRED(coordinator_.mu_) {
    return coordinator_.registrations_ >= 2;
  };
  ASSERT_TRUE(coordinator_.mu_.AwaitWithTimeout(absl::Condition(&reregistered), absl::Seconds(10)));
  EXPECT_EQ(coordinator_.register_failures_, 0);
}

}  // namespace
}  // namespace tunefleet::worker
