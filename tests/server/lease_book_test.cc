#include "server/lease_book.h"

#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

Lease LeaseOf(const std::string& worker, const std::string& job, absl::Duration ttl) {
  Lease lease;
  lease.worker_id = worker;
  lease.job_id = job;
  lease.expires = kStart + ttl;
  lease.ordinals = {1, 2};
  return lease;
}

TEST(LeaseBookTest, GrantsFreshIdsAndEpochsFromTheFirstEpoch) {
  LeaseBook book(/*first_epoch=*/1000);
  const Lease& first = book.Grant(LeaseOf("w1", "j1", absl::Seconds(10)));
  EXPECT_EQ(first.epoch, 1000);
  const std::string first_id = first.id;
  const Lease& second = book.Grant(LeaseOf("w1", "j1", absl::Seconds(10)));
  EXPECT_EQ(second.epoch, 1001);
  EXPECT_NE(second.id, first_id);
  EXPECT_EQ(book.size(), 2u);
  // Its ids, and only they, have its form (the worker service sends each
  // report to the lease source whose id it is).
  EXPECT_TRUE(LeaseBook::IsLeaseId(first_id));
  EXPECT_TRUE(LeaseBook::IsLeaseId(second.id));
  for (const char* other : {"", "l", "profile-1", "l1x", "L1", "1"}) {
    EXPECT_FALSE(LeaseBook::IsLeaseId(other)) << other;
  }
}

TEST(LeaseBookTest, CountsTheLeasesOfEachDeviceOfAWorker) {
  LeaseBook book(/*first_epoch=*/1);
  Lease on_gpu0 = LeaseOf("w1", "j1", absl::Seconds(10));
  on_gpu0.device_id = "gpu0";
  Lease on_gpu1 = on_gpu0;
  on_gpu1.device_id = "gpu1";
  const std::string first = book.Grant(on_gpu0).id;
  book.Grant(on_gpu0);
  book.Grant(on_gpu1);
  Lease other_worker = on_gpu0;
  other_worker.worker_id = "w2";
  book.Grant(other_worker);

  EXPECT_EQ(book.CountOnDevice("w1", "gpu0"), 2);
  EXPECT_EQ(book.CountOnDevice("w1", "gpu1"), 1);
  EXPECT_EQ(book.OfWorker("w1").size(), 3u);
  book.Remove(first);
  EXPECT_EQ(book.CountOnDevice("w1", "gpu0"), 1);
  EXPECT_TRUE(book.OfWorker("w3").empty());
}

TEST(LeaseBookTest, FindsALeaseOnlyUnderItsEpochAndWorker) {
  LeaseBook book(1);
  const Lease& lease = book.Grant(LeaseOf("w1", "j1", absl::Seconds(10)));
  const std::string id = lease.id;
  EXPECT_NE(book.Find(id, 1, "w1"), nullptr);
  EXPECT_EQ(book.Find(id, 2, "w1"), nullptr);
  EXPECT_EQ(book.Find(id, 1, "w2"), nullptr);
  EXPECT_EQ(book.Find("nope", 1, "w1"), nullptr);
}

TEST(LeaseBookTest, RenewingAWorkerMovesOnlyItsLeases) {
  LeaseBook book(1);
  const std::string mine = book.Grant(LeaseOf("w1", "j1", absl::Seconds(10))).id;
  const std::string other = book.Grant(LeaseOf("w2", "j1", absl::Seconds(10))).id;
  book.RenewWorker("w1", kStart + absl::Seconds(30));
  std::vector<Lease> expired = book.TakeExpired(kStart + absl::Seconds(20));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, other);
  EXPECT_NE(book.Find(mine, 1, "w1"), nullptr);
  EXPECT_TRUE(book.TakeExpired(kStart + absl::Seconds(20)).empty());
  EXPECT_EQ(book.TakeExpired(kStart + absl::Seconds(31)).size(), 1u);
  EXPECT_EQ(book.size(), 0u);
}

TEST(LeaseBookTest, RenewingAWorkerStopsAtEachLeasesIdleLimit) {
  LeaseBook book(1);
  Lease idle = LeaseOf("w1", "j1", absl::Seconds(10));
  idle.idle_until = kStart + absl::Seconds(15);
  const std::string id = book.Grant(idle).id;
  book.RenewWorker("w1", kStart + absl::Seconds(30));
  EXPECT_TRUE(book.TakeExpired(kStart + absl::Seconds(14)).empty());
  std::vector<Lease> expired = book.TakeExpired(kStart + absl::Seconds(16));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, id);
}

TEST(LeaseBookTest, NoRenewalMovesALeasePastItsDeadline) {
  LeaseBook book(1);
  Lease old = LeaseOf("w1", "j1", absl::Seconds(10));
  old.deadline = kStart + absl::Seconds(12);
  const std::string id = book.Grant(old).id;
  book.Renew(id, kStart + absl::Seconds(30));  // a report
  book.RenewWorker("w1", kStart + absl::Seconds(40));  // a heartbeat
  EXPECT_TRUE(book.TakeExpired(kStart + absl::Seconds(11)).empty());
  std::vector<Lease> expired = book.TakeExpired(kStart + absl::Seconds(13));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, id);
}

TEST(LeaseBookTest, ExpiresInExpiryOrder) {
  LeaseBook book(1);
  const std::string renewed = book.Grant(LeaseOf("w1", "j1", absl::Seconds(3))).id;
  const std::string plain = book.Grant(LeaseOf("w2", "j1", absl::Seconds(5))).id;
  book.Renew(renewed, kStart + absl::Seconds(8));
  EXPECT_TRUE(book.TakeExpired(kStart + absl::Seconds(4)).empty());
  std::vector<Lease> expired = book.TakeExpired(kStart + absl::Seconds(10));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].id, plain);
  EXPECT_EQ(expired[1].id, renewed);
}

TEST(LeaseBookTest, ARenewalNeverShortensALease) {
  LeaseBook book(1);
  const std::string id = book.Grant(LeaseOf("w1", "j1", absl::Seconds(10))).id;
  // A heartbeat's renewal applied late, after a report renewed further.
  book.Renew(id, kStart + absl::Seconds(20));
  book.RenewWorker("w1", kStart + absl::Seconds(12));
  EXPECT_TRUE(book.TakeExpired(kStart + absl::Seconds(15)).empty());
  EXPECT_EQ(book.TakeExpired(kStart + absl::Seconds(21)).size(), 1u);
}

TEST(LeaseBookTest, AnIdleLimitBelowTheExpiryPullsItBackAtTheNextRenewal) {
  LeaseBook book(1);
  Lease held = LeaseOf("w1", "j1", absl::Seconds(10));
  held.idle_until = kStart + absl::Seconds(4);  // a spot check's shorter limit
  const std::string id = book.Grant(held).id;
  book.RenewWorker("w1", kStart + absl::Seconds(11));
  EXPECT_TRUE(book.TakeExpired(kStart + absl::Seconds(3)).empty());
  EXPECT_EQ(book.TakeExpired(kStart + absl::Seconds(5)).size(), 1u);
}

TEST(LeaseBookTest, TakesEveryLeaseOfAJob) {
  LeaseBook book(1);
  book.Grant(LeaseOf("w1", "j1", absl::Seconds(10)));
  book.Grant(LeaseOf("w2", "j1", absl::Seconds(10)));
  const std::string kept = book.Grant(LeaseOf("w1", "j2", absl::Seconds(10))).id;
  EXPECT_TRUE(book.HasJob("j1"));
  EXPECT_EQ(book.TakeJob("j1").size(), 2u);
  EXPECT_FALSE(book.HasJob("j1"));
  EXPECT_TRUE(book.HasJob("j2"));
  EXPECT_EQ(book.Remove(kept).id, kept);
  EXPECT_TRUE(book.Remove(kept).id.empty());
  EXPECT_EQ(book.size(), 0u);
  book.RenewWorker("w1", kStart);  // no leases: nothing to do
}

}  // namespace
}  // namespace tunefleet::server
