#include "server/lock_combiner.h"

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

TEST(LockCombinerTest, AnUncontendedSectionRunsAloneOnItsCallersThread) {
  absl::Mutex mu;
  LockCombiner combiner(&mu);
  std::thread::id ran_on;
  combiner.Run([&] {
    mu.AssertHeld();
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(combiner.batches(), 1);
  EXPECT_EQ(combiner.sections(), 1);
}

TEST(LockCombinerTest, EverySectionRunsOnceUnderTheMutexAndItsEffectIsSeenOnReturn) {
  absl::Mutex mu;
  LockCombiner combiner(&mu);
  int64_t total = 0;  // guarded by mu, deliberately not atomic
  constexpr int kThreads = 8;
  constexpr int kSections = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSections; ++i) {
        int64_t seen = -1;
        combiner.Run([&] {
          mu.AssertHeld();
          seen = ++total;
        });
        ASSERT_GT(seen, 0) << "Run returned before its section ran";
      }
    });
  }
  // Code that takes the mutex directly is excluded from the batches too.
  for (int i = 0; i < 100; ++i) {
    absl::MutexLock lock(&mu);
    total += 1000000;
    total -= 1000000;
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(total, int64_t{kThreads} * kSections);
  EXPECT_EQ(combiner.sections(), int64_t{kThreads} * kSections);
}

TEST(LockCombinerTest, SectionsQueuedWhileABatchRunsRunAsTheNextBatchInArrivalOrder) {
  absl::Mutex mu;
  LockCombiner combiner(&mu);
  std::vector<int> order;
  absl::Notification started;
  absl::Notification release;
  std::thread first([&] {
    combiner.Run([&] {
      mu.AssertHeld();
      order.push_back(0);
      started.Notify();
      release.WaitForNotification();  // a long section: the others queue meanwhile
    });
  });
  started.WaitForNotification();
  constexpr int kWaiting = 6;
  std::vector<std::thread> waiting;
  for (int i = 1; i <= kWaiting; ++i) {
    waiting.emplace_back([&, i] {
      combiner.Run([&, i] {
        mu.AssertHeld();
        order.push_back(i);
      });
    });
    // One at a time, so that the arrival order is known.
    while (combiner.queued() != static_cast<size_t>(i)) absl::SleepFor(absl::Milliseconds(1));
  }
  release.Notify();
  first.join();
  for (std::thread& thread : waiting) thread.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(combiner.sections(), kWaiting + 1);
  EXPECT_EQ(combiner.batches(), 2) << "the six queued behind the first batch ran as one";
}

}  // namespace
}  // namespace tunefleet::server
