#include "server/trial_writer.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/server/faulty_store.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::server::testing::FaultyStore;
using ::tunefleet::testing::StatusIs;

TrialRecord Row(const std::string& job, int config) {
  TrialRecord row;
  row.job_id = job;
  row.tuning_key = "key";
  row.config = absl::StrCat("X=", config);
  row.status = 1;
  row.median_seconds = 1e-3;
  return row;
}

class TrialWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store = FaultyStore::OpenInMemory(&faulty_);
    ASSERT_OK(store);
    store_ = *std::move(store);
  }
  std::unique_ptr<Store> store_;
  std::unique_ptr<FaultyStore> faulty_;
};

TEST_F(TrialWriterTest, ConcurrentWritersStoreEveryRowOnce) {
  TrialWriter writer(faulty_.get(), TrialWriterOptions());
  constexpr int kThreads = 16;
  constexpr int kReports = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kReports; ++r) {
        // Each report twice: delivery is at least once.
        std::vector<TrialRecord> rows = {Row(absl::StrCat("j", t), r)};
        EXPECT_OK(writer.Write(rows));
        EXPECT_OK(writer.Write(rows));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(store_->ListTrials(absl::StrCat("j", t))->size(), size_t{kReports});
  }
}

TEST_F(TrialWriterTest, RowsThatArriveDuringAWriteShareTheNextTransaction) {
  TrialWriter writer(faulty_.get(), TrialWriterOptions());
  absl::Notification release;
  std::atomic<bool> first{true};
  faulty_->before_trial_write = [&] {
    if (first.exchange(false)) release.WaitForNotification();  // hold the first write
  };
  std::thread leader([&] { EXPECT_OK(writer.Write({Row("j", 0)})); });
  while (faulty_->trial_writes.load() < 1) absl::SleepFor(absl::Milliseconds(1));
  constexpr int kFollowers = 8;
  std::vector<std::thread> followers;
  for (int i = 1; i <= kFollowers; ++i) {
    followers.emplace_back([&, i] { EXPECT_OK(writer.Write({Row("j", i)})); });
  }
  while (writer.waiting_rows() < kFollowers) absl::SleepFor(absl::Milliseconds(1));
  release.Notify();
  leader.join();
  for (std::thread& follower : followers) follower.join();
  EXPECT_EQ(faulty_->trial_writes, 2);  // the held write, then one for all eight
  EXPECT_EQ(store_->ListTrials("j")->size(), size_t{kFollowers + 1});
}

TEST_F(TrialWriterTest, ARefusedBatchFailsAfterItsRetriesAndStoresNothing) {
  TrialWriterOptions options;
  options.attempts = 3;
  options.backoff = absl::Milliseconds(1);
  TrialWriter writer(faulty_.get(), options);
  faulty_->refuse_trials = true;
  EXPECT_THAT(writer.Write({Row("j", 1), Row("j", 2)}),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(faulty_->trial_writes, 3);
  EXPECT_TRUE(store_->ListTrials("j")->empty());
  faulty_->refuse_trials = false;
  EXPECT_OK(writer.Write({Row("j", 1), Row("j", 2)}));
  EXPECT_EQ(store_->ListTrials("j")->size(), 2u);
  EXPECT_OK(writer.Write({}));
}

}  // namespace
}  // namespace tunefleet::server
