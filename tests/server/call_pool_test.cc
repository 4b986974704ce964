#include "server/call_pool.h"

#include <pthread.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/thread_priority.h"
#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

TEST(CallPoolTest, RunsEveryQueuedCallBeforeItGoes) {
  absl::Mutex mu;
  std::vector<int> ran;
  {
    CallPool pool({.threads = 1, .nice = 0, .name = "test-pool"});
    absl::Notification release;
    pool.Run([&] { release.WaitForNotification(); });  // holds the one thread
    for (int i = 0; i < 100; ++i) {
      pool.Run([&, i] {
        absl::MutexLock lock(&mu);
        ran.push_back(i);
      });
    }
    release.Notify();
  }
  ASSERT_EQ(ran.size(), 100u);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end())) << "one thread runs them as they came";
}

TEST(CallPoolTest, ItsThreadsRunBelowTheCallersPriorityAndCarryItsName) {
  const int caller_nice = ThisThreadNice();
  int pool_nice = -100;
  std::string name;
  {
    CallPool pool({.threads = 2, .nice = 4, .name = "a-long-pool-name-cut"});
    absl::Notification done;
    pool.Run([&] {
      pool_nice = ThisThreadNice();
      char buffer[16] = {};
      pthread_getname_np(pthread_self(), buffer, sizeof(buffer));
      name = buffer;
      done.Notify();
    });
    done.WaitForNotification();
  }
  EXPECT_EQ(pool_nice, std::min(19, caller_nice + 4));
  EXPECT_EQ(name, "a-long-pool-nam") << "15 bytes shown at most";
  EXPECT_EQ(ThisThreadNice(), caller_nice) << "only the pool's own threads are lowered";
}

TEST(ThreadPriorityTest, LowersOnlyTheCallingThreadAndStopsAtNineteen) {
  const int before = ThisThreadNice();
  int lowered = -100;
  int capped = -100;
  std::thread([&] {
    ASSERT_TRUE(LowerThisThreadPriority(0).ok());
    ASSERT_EQ(ThisThreadNice(), before) << "0 changes nothing";
    ASSERT_TRUE(LowerThisThreadPriority(2).ok());
    lowered = ThisThreadNice();
    ASSERT_TRUE(LowerThisThreadPriority(50).ok());
    capped = ThisThreadNice();
  }).join();
  EXPECT_EQ(lowered, std::min(19, before + 2));
  EXPECT_EQ(capped, 19);
  EXPECT_EQ(ThisThreadNice(), before);
}

}  // namespace
}  // namespace tunefleet::server
