#include "server/best_keeper.h"

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::StatusIs;

class BestKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore("sqlite://" + dir_.path() + "/s.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    quarantine_ = std::make_unique<QuarantineList>(store_.get());
    keeper_ = std::make_unique<BestKeeper>(store_.get(), &index_, quarantine_.get(),
                                           [this] { return ++now_; });
  }

  TrialRecord Row(const std::string& key, const std::string& job, const std::string& config,
                  double seconds, const std::string& principal) {
    TrialRecord row;
    row.job_id = job;
    row.tuning_key = key;
    row.config = config;
    row.status = 1;
    row.median_seconds = seconds;
    row.worker_id = principal + "-w";
    row.principal = principal;
    row.finished_unix_ms = ++now_;
    return row;
  }

  BestRecord Meta(const std::string& key, const std::string& job = "") {
    BestRecord meta;
    meta.tuning_key = key;
    meta.job_id = job;
    meta.kernel_name = "matmul";
    meta.shape = "M=8";
    meta.device_model = "cpu";
    meta.toolkit = "g++";
    return meta;
  }

  tunefleet::testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  BestConfigIndex index_;
  std::unique_ptr<QuarantineList> quarantine_;
  std::unique_ptr<BestKeeper> keeper_;
  int64_t now_ = 1000;
};

TEST_F(BestKeeperTest, ASlowerRetuneKeepsTheStoredBest) {
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j1", "A", 5e-3, "host:a")}).ok());
  ASSERT_TRUE(*keeper_->Rederive(Meta("k1")));
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j2", "B", 8.4e-3, "host:a")}).ok());

  absl::StatusOr<RetuneVerdict> verdict = keeper_->RederiveFinished(Meta("k1", "j2"));
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->outcome, RetuneOutcome::kRegressed);
  EXPECT_EQ(store_->GetBest("k1")->config, "A");
  EXPECT_EQ(store_->GetBest("k1")->job_id, "j1");
  EXPECT_EQ(index_.Get("k1")->config, "A");
  EXPECT_FALSE(*keeper_->Rederive(Meta("k1")));  // nothing changed
}

TEST_F(BestKeeperTest, AJobStoredWithReplaceBestReplacesAFasterBest) {
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j1", "A", 5e-3, "host:a")}).ok());
  ASSERT_TRUE(*keeper_->Rederive(Meta("k1")));
  JobRecord job;
  job.id = "j2";
  job.kernel_name = "matmul";
  job.replace_best = true;
  ASSERT_TRUE(store_->PutJob(job).ok());
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j2", "B", 8.4e-3, "host:a")}).ok());

  absl::StatusOr<RetuneVerdict> verdict = keeper_->RederiveFinished(Meta("k1", "j2"));
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->outcome, RetuneOutcome::kForced);
  EXPECT_EQ(store_->GetBest("k1")->config, "B");
  EXPECT_EQ(index_.Get("k1")->job_id, "j2");
}

TEST_F(BestKeeperTest, InvalidatingTheFasterOldJobServesTheRetune) {
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j1", "A", 5e-3, "host:a")}).ok());
  ASSERT_TRUE(keeper_->Rederive(Meta("k1")).ok());
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j2", "B", 8.4e-3, "host:a")}).ok());
  ASSERT_TRUE(keeper_->Rederive(Meta("k1")).ok());
  ASSERT_EQ(store_->GetBest("k1")->job_id, "j1");

  absl::StatusOr<InvalidationResult> result = keeper_->Invalidate(TrialFilter{"", "", "j1"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->keys, 1);
  EXPECT_EQ(store_->GetBest("k1")->job_id, "j2");
  EXPECT_EQ(index_.Get("k1")->config, "B");
}

TEST_F(BestKeeperTest, InvalidatingAWorkerRestoresTheBestOfWhatRemains) {
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j1", "A", 3e-3, "host:honest"),
                                    Row("k2", "j1", "A", 3e-3, "host:honest"),
                                    Row("k1", "j2", "B", 1e-9, "host:rogue"),
                                    Row("k2", "j2", "C", 1e-9, "host:rogue")})
                  .ok());
  ASSERT_TRUE(keeper_->Rederive(Meta("k1")).ok());
  ASSERT_TRUE(keeper_->Rederive(Meta("k2")).ok());
  ASSERT_EQ(store_->GetBest("k1")->config, "B");

  absl::StatusOr<InvalidationResult> result = keeper_->Invalidate(TrialFilter{"host:rogue", "", ""});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->trials, 2);
  EXPECT_EQ(result->keys, 2);
  EXPECT_EQ(store_->GetBest("k1")->config, "A");
  EXPECT_EQ(store_->GetBest("k1")->job_id, "j1");
  EXPECT_EQ(index_.Get("k2")->config, "A");
}

TEST_F(BestKeeperTest, InvalidatingEveryTrialOfAKeyRemovesItsBest) {
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j1", "A", 1e-3, "host:a")}).ok());
  ASSERT_TRUE(keeper_->Rederive(Meta("k1")).ok());

  absl::StatusOr<InvalidationResult> result = keeper_->Invalidate(TrialFilter{"", "k1", ""});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->keys, 1);
  EXPECT_THAT(store_->GetBest("k1"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_FALSE(index_.Get("k1").has_value());
  EXPECT_THAT(keeper_->Invalidate({}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(BestKeeperTest, QuarantinedPrincipalsDoNotCountAndSurviveReloading) {
  ASSERT_TRUE(store_->InsertTrials({Row("k1", "j1", "A", 3e-3, "host:honest"),
                                    Row("k1", "j2", "B", 1e-9, "host:rogue")})
                  .ok());
  ASSERT_TRUE(quarantine_->Add("host:rogue", "disagreed", 1).ok());
  ASSERT_TRUE(keeper_->Rederive(Meta("k1")).ok());
  EXPECT_EQ(store_->GetBest("k1")->config, "A");

  QuarantineList reloaded(store_.get());
  ASSERT_TRUE(reloaded.Load().ok());
  EXPECT_TRUE(reloaded.Contains("host:rogue"));
  ASSERT_TRUE(*reloaded.Release("host:rogue"));
  EXPECT_FALSE(reloaded.Contains("host:rogue"));
}

}  // namespace
}  // namespace tunefleet::server
