#include "server/profile_manager.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/faulty_store.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::TempDir;

constexpr char kJob[] = "job-1";
constexpr char kKey[] = "key-a";

WorkerRegistration Worker(const std::string& host, const std::string& model) {
  v1::Device device;
  device.set_id("cpu0");
  device.set_model(model);
  device.set_backend(v1::BACKEND_CPU);
  return WorkerRegistration{host, {device}, "g++ 12", "host:" + host, ""};
}

TrialRecord Row(const std::string& config, double seconds, int status = v1::TRIAL_STATUS_OK) {
  TrialRecord row;
  row.job_id = kJob;
  row.tuning_key = kKey;
  row.config = config;
  row.status = status;
  row.median_seconds = seconds;
  return row;
}

v1::KernelProfile ReadProfile(double seconds) {
  v1::KernelProfile profile;
  profile.set_duration_seconds(seconds);
  profile.set_registers_per_thread(40);
  profile.set_device_id("cpu0");
  return profile;
}

// ProfileManager::TryLease, which never fails, as the lease or none.
std::optional<LeaseGrant> TakeLease(ProfileManager* manager, const LeaseQuery& query) {
  absl::StatusOr<std::optional<LeaseGrant>> grant = manager->TryLease(query);
  EXPECT_TRUE(grant.ok()) << grant.status();
  return grant.ok() ? *std::move(grant) : std::nullopt;
}

class ProfileManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store =
        OpenStore("sqlite://" + dir_.path() + "/store.db");
    ASSERT_OK(store);
    store_ = *std::move(store);
    quarantine_ = std::make_unique<QuarantineList>(store_.get());
    v1::JobSpec spec;
    spec.mutable_kernel()->set_name("matmul");
    spec.add_sources()->set_digest("d1");
    ASSERT_OK(store_->PutJob(JobRecord{kJob, "matmul", v1::JOB_STATE_SUCCEEDED, "",
                                       spec.SerializeAsString(), "", 1, 2, "", false, ""}));
    job_.set_id(kJob);
    job_.set_state(v1::JOB_STATE_SUCCEEDED);
    v1::Target* target = job_.add_targets();
    target->set_device_model("model-a");
    target->set_toolkit("g++ 12");
    target->set_tuning_key(kKey);
    TrialRecord finals = Row("B=2", 0.5);
    finals.round = TrialRound::kFinalists;
    TrialRecord cut = Row("B=5", 0.1);
    cut.cut_early = true;
    TrialRecord rogue = Row("B=6", 0.1);
    rogue.worker_id = "rogue";
    ASSERT_OK(store_->InsertTrials({Row("B=1", 2.0), Row("B=2", 3.0), Row("B=3", 1.0),
                                    Row("B=4", 0.2, v1::TRIAL_STATUS_WRONG_RESULT), cut,
                                    finals, rogue})
                  .status());
    ASSERT_OK(store_->ExcludeTrials(TrialFilter{"rogue", "", ""}).status());
    manager_ = NewManager(store_.get());
  }

  // A manager over `store`, as a (re)started coordinator builds it.
  std::unique_ptr<ProfileManager> NewManager(Store* store, CoordinatorMetrics* metrics = nullptr) {
    return std::make_unique<ProfileManager>(
        store,
        [this](const std::string& id) -> absl::StatusOr<v1::Job> {
          if (id != kJob) return absl::NotFoundError("no job " + id);
          return job_;
        },
        &workers_, [this] { return now_; }, absl::Seconds(10), quarantine_.get(), metrics);
  }

  std::string AddWorker(const std::string& host, const std::string& model = "model-a") {
    return *workers_.Register(Worker(host, model));
  }

  std::vector<std::string> Configs(const std::vector<v1::KernelProfile>& profiles) {
    std::vector<std::string> configs;
    for (const v1::KernelProfile& profile : profiles) configs.push_back(profile.config_text());
    return configs;
  }

  ResultReport Report(const LeaseGrant& grant, const std::string& worker, size_t first,
                      size_t count) {
    ResultReport report{worker, grant.lease_id, grant.epoch, {}, false, ""};
    for (size_t i = first; i < first + count; ++i) {
      v1::TrialResult result;
      result.set_status(v1::TRIAL_STATUS_OK);
      *result.mutable_profile() = ReadProfile(1e-3 * (i + 1));
      report.trials.emplace_back(grant.trials[i].first, result);
    }
    return report;
  }

  TempDir dir_;
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<Store> store_;
  std::unique_ptr<QuarantineList> quarantine_;
  WorkerRegistry workers_{absl::Seconds(30), [this] { return now_; }};
  v1::Job job_;
  std::unique_ptr<ProfileManager> manager_;
};

// Failed, cut and excluded rows never rank; a config ranks by its fastest
// row, a finalist by its finalists-round row.
TEST_F(ProfileManagerTest, QueuesTheFastestUncutOkConfigsByTheirFastestRow) {
  absl::StatusOr<std::vector<v1::KernelProfile>> queued = manager_->Request(kJob, 3);
  ASSERT_OK(queued);
  EXPECT_THAT(Configs(*queued), ElementsAre("B=2", "B=3", "B=1"));
  EXPECT_EQ((*queued)[0].rank(), 1);
  EXPECT_EQ((*queued)[0].median_seconds(), 0.5);
  EXPECT_EQ((*queued)[0].device_model(), "model-a");
  EXPECT_TRUE((*queued)[0].pending());
  absl::StatusOr<std::vector<v1::KernelProfile>> listed = manager_->List(kJob);
  ASSERT_OK(listed);
  EXPECT_THAT(Configs(*listed), ElementsAre("B=2", "B=3", "B=1"));
}

// The job's best is the finalists round's fastest, so the finalists rank
// first by that round's rows, even where a search row of another config was
// faster; a finalist whose second run failed is not ranked.
TEST_F(ProfileManagerTest, FinalistsRankByTheirSecondRunAheadOfFasterSearchRows) {
  auto row = [](const std::string& config, double seconds, bool final,
                int status = v1::TRIAL_STATUS_OK) {
    TrialRecord trial = Row(config, seconds, status);
    trial.tuning_key = "key-b";
    if (final) trial.round = TrialRound::kFinalists;
    return trial;
  };
  ASSERT_OK(store_->InsertTrials({row("C=1", 1.0, false), row("C=1", 1.6, true),
                                  row("C=2", 3.0, false), row("C=2", 1.5, true),
                                  row("C=3", 1.4, false), row("C=4", 0.9, false),
                                  row("C=4", 0.1, true, v1::TRIAL_STATUS_WRONG_RESULT)})
                .status());
  job_.mutable_targets(0)->set_tuning_key("key-b");
  absl::StatusOr<std::vector<v1::KernelProfile>> queued = manager_->Request(kJob, 5);
  ASSERT_OK(queued);
  EXPECT_THAT(Configs(*queued), ElementsAre("C=2", "C=1", "C=3"));
  EXPECT_EQ((*queued)[0].median_seconds(), 1.5);
  EXPECT_EQ((*queued)[2].median_seconds(), 1.4);
}

// The job's best (a tie set's served member need not be its fastest) ranks
// first.
TEST_F(ProfileManagerTest, TheJobsBestRanksFirst) {
  job_.mutable_targets(0)->mutable_best()->set_config_text("B=3");
  absl::StatusOr<std::vector<v1::KernelProfile>> queued = manager_->Request(kJob, 3);
  ASSERT_OK(queued);
  EXPECT_THAT(Configs(*queued), ElementsAre("B=3", "B=2", "B=1"));
  EXPECT_EQ((*queued)[0].rank(), 1);
}

TEST_F(ProfileManagerTest, RefusesBadTopUnknownOrUnfinishedJobsAndASecondRequest) {
  EXPECT_THAT(manager_->Request(kJob, 0).status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(manager_->Request(kJob, kMaxProfileTop + 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(manager_->Request("job-9", 1).status(), StatusIs(absl::StatusCode::kNotFound));
  job_.set_state(v1::JOB_STATE_RUNNING);
  EXPECT_THAT(manager_->Request(kJob, 1).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  job_.set_state(v1::JOB_STATE_SUCCEEDED);
  ASSERT_OK(manager_->Request(kJob, 1).status());
  EXPECT_THAT(manager_->Request(kJob, 1).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(ProfileManagerTest, ALeaseGoesOnlyToADeviceOfTheTargetsModelAndOnlyOnce) {
  const std::string other = AddWorker("b", "model-b");
  const std::string worker = AddWorker("a");
  ASSERT_OK(manager_->Request(kJob, 2).status());
  EXPECT_FALSE(TakeLease(manager_.get(), {other, "", 0}).has_value());
  std::optional<LeaseGrant> grant = TakeLease(manager_.get(), {worker, "", 0});
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(grant->kind, v1::LEASE_KIND_PROFILE);
  EXPECT_TRUE(manager_->Grants(grant->lease_id));
  EXPECT_FALSE(manager_->Grants("l1"));  // a JobManager lease's id
  EXPECT_EQ(grant->tuning_key, kKey);
  ASSERT_THAT(grant->trials, SizeIs(2));
  EXPECT_EQ(grant->trials[0].second.values(0).name(), "B");
  EXPECT_EQ(grant->trials[0].second.values(0).value(), 2);
  EXPECT_FALSE(TakeLease(manager_.get(), {worker, "", 0}).has_value());
  EXPECT_OK(manager_->CheckBlobLeased(worker, "d1"));
  EXPECT_THAT(manager_->CheckBlobLeased(other, "d1"),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST_F(ProfileManagerTest, ReportedProfilesAreStoredAndTheRequestEnds) {
  const std::string worker = AddWorker("a");
  ASSERT_OK(manager_->Request(kJob, 2).status());
  std::optional<LeaseGrant> grant = TakeLease(manager_.get(), {worker, "", 0});
  ASSERT_TRUE(grant.has_value());

  absl::StatusOr<ReportAck> first = manager_->Report(Report(*grant, worker, 0, 1));
  ASSERT_OK(first);
  EXPECT_FALSE(first->cancelled);
  absl::StatusOr<std::vector<v1::KernelProfile>> half = manager_->List(kJob);
  ASSERT_OK(half);
  ASSERT_THAT(*half, SizeIs(2));
  EXPECT_FALSE((*half)[0].pending());
  EXPECT_EQ((*half)[0].config_text(), "B=2");
  EXPECT_EQ((*half)[0].worker_id(), worker);
  EXPECT_EQ((*half)[0].rank(), 1);
  EXPECT_EQ((*half)[0].registers_per_thread(), 40);
  EXPECT_TRUE((*half)[1].pending());

  absl::StatusOr<ReportAck> last = manager_->Report(Report(*grant, worker, 1, 1));
  ASSERT_OK(last);
  EXPECT_TRUE(last->cancelled);  // nothing left: the lease ends
  absl::StatusOr<std::vector<v1::KernelProfile>> done = manager_->List(kJob);
  ASSERT_OK(done);
  EXPECT_THAT(Configs(*done), ElementsAre("B=2", "B=3"));
  EXPECT_FALSE((*done)[1].pending());
  ASSERT_OK(manager_->Request(kJob, 1).status());  // may be asked again
}

TEST_F(ProfileManagerTest, AnExpiredLeaseGoesToAnotherWorkerAndItsLateReportChangesNothing) {
  const std::string lost = AddWorker("a");
  const std::string other = AddWorker("c");
  ASSERT_OK(manager_->Request(kJob, 1).status());
  std::optional<LeaseGrant> first = TakeLease(manager_.get(), {lost, "", 0});
  ASSERT_TRUE(first.has_value());
  now_ += absl::Seconds(11);
  manager_->Tick();
  std::optional<LeaseGrant> second = TakeLease(manager_.get(), {other, "", 0});
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->epoch, first->epoch);

  absl::StatusOr<ReportAck> late = manager_->Report(Report(*first, lost, 0, 1));
  ASSERT_OK(late);
  EXPECT_TRUE(late->cancelled);
  absl::StatusOr<std::vector<v1::KernelProfile>> listed = manager_->List(kJob);
  ASSERT_OK(listed);
  ASSERT_THAT(*listed, SizeIs(1));
  EXPECT_TRUE((*listed)[0].pending());
}

TEST_F(ProfileManagerTest, AQuarantinedWorkerGetsNoProfileLease) {
  const std::string rogue = AddWorker("rogue");
  ASSERT_OK(quarantine_->Add("host:rogue", "disagreed", 1));
  ASSERT_OK(manager_->Request(kJob, 1).status());
  EXPECT_FALSE(TakeLease(manager_.get(), {rogue, "", 0}).has_value());
  EXPECT_TRUE(TakeLease(manager_.get(), {AddWorker("a"), "", 0}).has_value());
}

TEST_F(ProfileManagerTest, AJobWithoutMeasuredConfigsHasNothingToProfile) {
  job_.mutable_targets(0)->set_tuning_key("key-never-measured");
  EXPECT_THAT(manager_->Request(kJob, 3).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

// A coordinator restart: a second manager on the same store queues what the
// first was asked for, its open lease included, and a stored profile is no
// longer pending for a third.
TEST_F(ProfileManagerTest, ASecondManagerOnTheSameStoreSeesThePendingRequest) {
  const std::string worker = AddWorker("a");
  ASSERT_OK(manager_->Request(kJob, 2).status());
  ASSERT_TRUE(TakeLease(manager_.get(), {worker, "", 0}).has_value());  // held at the "restart"

  std::unique_ptr<ProfileManager> second = NewManager(store_.get());
  ASSERT_OK(second->Recover());
  absl::StatusOr<std::vector<v1::KernelProfile>> listed = second->List(kJob);
  ASSERT_OK(listed);
  ASSERT_THAT(Configs(*listed), ElementsAre("B=2", "B=3"));
  EXPECT_TRUE((*listed)[1].pending());
  EXPECT_EQ((*listed)[1].rank(), 2);
  EXPECT_EQ((*listed)[1].median_seconds(), 1.0);
  EXPECT_EQ((*listed)[1].device_model(), "model-a");
  EXPECT_THAT(second->Request(kJob, 1).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  std::optional<LeaseGrant> grant = TakeLease(second.get(), {worker, "", 0});
  ASSERT_TRUE(grant.has_value());
  ASSERT_THAT(grant->trials, SizeIs(2));
  EXPECT_EQ(grant->spec->kernel().name(), "matmul");
  EXPECT_OK(second->CheckBlobLeased(worker, "d1"));
  ASSERT_OK(second->Report(Report(*grant, worker, 0, 1)).status());

  std::unique_ptr<ProfileManager> third = NewManager(store_.get());
  ASSERT_OK(third->Recover());
  absl::StatusOr<std::vector<v1::KernelProfile>> after = third->List(kJob);
  ASSERT_OK(after);
  ASSERT_THAT(*after, SizeIs(2));
  EXPECT_FALSE((*after)[0].pending());
  EXPECT_EQ((*after)[0].config_text(), "B=2");
  EXPECT_TRUE((*after)[1].pending());
  EXPECT_EQ((*after)[1].config_text(), "B=3");
  std::optional<LeaseGrant> rest = TakeLease(third.get(), {worker, "", 0});
  ASSERT_TRUE(rest.has_value());
  ASSERT_THAT(rest->trials, SizeIs(1));
  EXPECT_EQ(rest->trials[0].second.values(0).value(), 3);
}

TEST_F(ProfileManagerTest, ARequestTheStoreRefusesIsUnavailableAndQueuesNothing) {
  testing::FaultyStore faulty(store_.get());
  std::unique_ptr<ProfileManager> manager = NewManager(&faulty);
  const std::string worker = AddWorker("a");
  faulty.refuse_profiles = true;
  EXPECT_THAT(manager->Request(kJob, 2).status(), StatusIs(absl::StatusCode::kUnavailable));
  absl::StatusOr<std::vector<v1::KernelProfile>> listed = manager->List(kJob);
  ASSERT_OK(listed);
  EXPECT_THAT(*listed, SizeIs(0));
  EXPECT_FALSE(TakeLease(manager.get(), {worker, "", 0}).has_value());

  faulty.refuse_profiles = false;
  ASSERT_OK(manager->Request(kJob, 2).status());  // not "being profiled already"
  EXPECT_TRUE(TakeLease(manager.get(), {worker, "", 0}).has_value());
}

TEST_F(ProfileManagerTest, RowsOfAJobTheStoreNoLongerHasAreSkippedAtRecovery) {
  ASSERT_OK(store_->PutProfileRequests(
      {ProfileRequestRecord{"job-gone", kKey, "model-a", "g++ 12", "B=1", 1, 0.5, 1}}));
  ASSERT_OK(manager_->Recover());
  EXPECT_FALSE(TakeLease(manager_.get(), {AddWorker("a"), "", 0}).has_value());
}

// Records the profile metrics.
class ProfileMetrics : public NullMetrics {
 public:
  void ProfilesPending(int64_t configs) override { pending.push_back(configs); }
  void ProfileStored(bool read) override { (read ? read_count : unavailable_count)++; }
  std::vector<int64_t> pending;
  int read_count = 0;
  int unavailable_count = 0;
};

TEST_F(ProfileManagerTest, CountsPendingConfigsAndStoredProfilesByOutcome) {
  ProfileMetrics metrics;
  std::unique_ptr<ProfileManager> manager = NewManager(store_.get(), &metrics);
  const std::string worker = AddWorker("a");
  ASSERT_OK(manager->Request(kJob, 2).status());
  std::optional<LeaseGrant> grant = TakeLease(manager.get(), {worker, "", 0});
  ASSERT_TRUE(grant.has_value());
  ASSERT_OK(manager->Report(Report(*grant, worker, 0, 1)).status());
  ResultReport unavailable = Report(*grant, worker, 1, 1);
  unavailable.trials[0].second.mutable_profile()->set_unavailable("no counters");
  ASSERT_OK(manager->Report(unavailable).status());
  EXPECT_THAT(metrics.pending, ElementsAre(2, 1, 0));
  EXPECT_EQ(metrics.read_count, 1);
  EXPECT_EQ(metrics.unavailable_count, 1);

  ASSERT_OK(manager->Request(kJob, 3).status());
  ProfileMetrics restarted;
  std::unique_ptr<ProfileManager> second = NewManager(store_.get(), &restarted);
  ASSERT_OK(second->Recover());
  EXPECT_THAT(restarted.pending, ElementsAre(3));
}

}  // namespace
}  // namespace tunefleet::server
