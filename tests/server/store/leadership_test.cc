// Leadership of a database: one coordinator process leads at a time; on
// PostgreSQL a standby takes over once the leader's session ends, and a
// fenced store of the old leader writes nothing after that. Real databases:
// a SQLite file and a fresh PostgreSQL database.
#include "server/store/leadership.h"

#include <exception>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/server/store/test_database.h"
#include "tests/support/test_support.h"

namespace tunefleet::server::testing {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

// True when `leadership` took the lead now.
bool Acquired(Leadership& leadership) {
  absl::StatusOr<bool> acquired = leadership.TryAcquire();
  EXPECT_TRUE(acquired.ok()) << acquired.status();
  return acquired.ok() && *acquired;
}

class LeadershipTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) {
      SkipOrFailWithoutPostgres();
      if (IsSkipped() || HasFatalFailure()) return;
    }
    absl::StatusOr<std::unique_ptr<TestDatabase>> database = TestDatabase::Create(GetParam());
    ASSERT_TRUE(database.ok()) << database.status();
    database_ = std::move(database).value();
    // The store migrates the database (coordinator_leader) first, as a
    // coordinator's does.
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(database_->url());
    ASSERT_TRUE(store.ok()) << store.status();
  }

  std::unique_ptr<Leadership> Open(const std::string& holder,
                                   std::shared_ptr<LeaderFence> fence = nullptr) {
    absl::StatusOr<std::unique_ptr<Leadership>> leadership =
        OpenLeadership(database_->url(), holder, std::move(fence));
    EXPECT_TRUE(leadership.ok()) << leadership.status();
    return leadership.ok() ? std::move(leadership).value() : nullptr;
  }

  // TryAcquire until it succeeds or `timeout` passes (a server notices a
  // closed session within moments, not at once).
  static bool AcquireWithin(Leadership& leadership, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      absl::StatusOr<bool> acquired = leadership.TryAcquire();
      if (acquired.ok() && *acquired) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  std::unique_ptr<TestDatabase> database_;
};

TEST_P(LeadershipTest, OneProcessLeadsAtATimeAndTheNextTakesOverWhenItIsGone) {
  auto first_fence = std::make_shared<LeaderFence>();
  std::unique_ptr<Leadership> first = Open("host-a:1", first_fence);
  std::unique_ptr<Leadership> second = Open("host-b:2");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_THAT(first->Check(), StatusIs(absl::StatusCode::kFailedPrecondition));

  ASSERT_TRUE(Acquired(*first));
  EXPECT_EQ(first_fence->epoch(), first->epoch());
  EXPECT_GT(first->epoch(), 0);
  EXPECT_OK(first->Check());
  absl::StatusOr<bool> refused = second->TryAcquire();
  ASSERT_OK(refused);
  EXPECT_FALSE(*refused);
  EXPECT_THAT(second->Leader(), HasSubstr("host-a:1"));
  EXPECT_EQ(second->allows_standby(), GetParam() == Backend::kPostgres);

  const int64_t first_epoch = first->epoch();
  first.reset();  // the process ends
  ASSERT_TRUE(AcquireWithin(*second, absl::Seconds(10)));
  EXPECT_OK(second->Check());
  if (GetParam() == Backend::kPostgres) {
    EXPECT_EQ(second->epoch(), first_epoch + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Databases, LeadershipTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& info) { return BackendName(info.param); });

TEST(SoleLeadershipTest, AnInMemoryDatabaseIsAlwaysLedByItsProcess) {
  auto fence = std::make_shared<LeaderFence>();
  absl::StatusOr<std::unique_ptr<Leadership>> leadership =
      OpenLeadership("sqlite://:memory:", "host:1", fence);
  ASSERT_OK(leadership);
  EXPECT_TRUE(Acquired(**leadership));
  EXPECT_OK((*leadership)->Check());
  EXPECT_FALSE((*leadership)->allows_standby());
  EXPECT_EQ(fence->epoch(), 1);
  EXPECT_THAT(OpenLeadership("mysql://db", "host:1", nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// PostgreSQL only: fencing, and a leader whose session was cut.
class PostgresLeadershipTest : public LeadershipTest {};

JobRecord Job(const std::string& id) {
  JobRecord job;
  job.id = id;
  job.kernel_name = "matmul";
  job.state = 1;
  return job;
}

// Ends the session that holds the leader lock, as a network cut or a
// server-side timeout would.
absl::Status TerminateLeaderSession(const std::string& url) {
  try {
    pqxx::connection connection(url);
    pqxx::nontransaction txn(connection);
    txn.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
        "AND granted AND database = (SELECT oid FROM pg_database "
        "WHERE datname = current_database())");
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
}

TEST_P(PostgresLeadershipTest, AFencedStoreWritesOnlyWhileItsProcessLeads) {
  auto fence = std::make_shared<LeaderFence>();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(database_->url(), fence);
  ASSERT_OK(store);
  EXPECT_THAT((*store)->PutJob(Job("j-before")),
              StatusIsWith(absl::StatusCode::kFailedPrecondition, "leads no epoch"));

  std::unique_ptr<Leadership> leader = Open("host-a:1", fence);
  ASSERT_TRUE(Acquired(*leader));
  ASSERT_OK((*store)->PutJob(Job("j-led")));

  // The leader's lock session is cut; a standby takes over while the old
  // leader's store still has its pooled connections.
  ASSERT_OK(TerminateLeaderSession(database_->url()));
  std::unique_ptr<Leadership> standby = Open("host-b:2");
  ASSERT_TRUE(AcquireWithin(*standby, absl::Seconds(10)));
  EXPECT_THAT(leader->Check(), StatusIsWith(absl::StatusCode::kFailedPrecondition,
                                            "another coordinator (host-b:2"));

  EXPECT_THAT((*store)->PutJob(Job("j-after")),
              StatusIsWith(absl::StatusCode::kFailedPrecondition,
                           "host-b:2 leads epoch " + std::to_string(standby->epoch())));
  EXPECT_OK((*store)->GetJob("j-led"));  // reads are not fenced
  EXPECT_THAT((*store)->GetJob("j-after"), StatusIs(absl::StatusCode::kNotFound));
  // An unfenced store (a tool's) writes whoever leads.
  absl::StatusOr<std::unique_ptr<Store>> tool = OpenStore(database_->url());
  ASSERT_OK(tool);
  EXPECT_OK((*tool)->PutJob(Job("j-tool")));
}

TEST_P(PostgresLeadershipTest, ALeaderWhoseSessionEndedLeadsOnWhenNobodyLedMeanwhile) {
  auto fence = std::make_shared<LeaderFence>();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(database_->url(), fence);
  ASSERT_OK(store);
  std::unique_ptr<Leadership> leader = Open("host-a:1", fence);
  ASSERT_TRUE(Acquired(*leader));
  const int64_t epoch = leader->epoch();
  // The server restarted, or the connection was cut: the lock went with the
  // session, and nobody else took it.
  ASSERT_OK(TerminateLeaderSession(database_->url()));
  EXPECT_OK(leader->Check());
  EXPECT_EQ(leader->epoch(), epoch + 1);
  EXPECT_EQ(fence->epoch(), epoch + 1);
  EXPECT_OK((*store)->PutJob(Job("j-after-restart")));
  std::unique_ptr<Leadership> standby = Open("host-b:2");
  absl::StatusOr<bool> refused = standby->TryAcquire();
  ASSERT_OK(refused);
  EXPECT_FALSE(*refused);  // the lead is still the first's
}

TEST_P(PostgresLeadershipTest, ALeaderThatChecksNothingForTheSessionTimeoutLosesTheLead) {
  auto fence = std::make_shared<LeaderFence>();
  absl::StatusOr<std::unique_ptr<Leadership>> paused =
      OpenLeadership(database_->url(), "host-a:1", fence, absl::Seconds(1));
  ASSERT_OK(paused);
  ASSERT_TRUE(Acquired(**paused));
  std::unique_ptr<Leadership> standby = Open("host-b:2");
  // A leader that checks more often than the timeout keeps the lead.
  for (int i = 0; i < 6; ++i) {
    absl::SleepFor(absl::Milliseconds(400));
    ASSERT_OK((*paused)->Check());
  }
  absl::StatusOr<bool> refused = standby->TryAcquire();
  ASSERT_OK(refused);
  EXPECT_FALSE(*refused);
  // Paused past it (the process stopped, the host frozen), it loses it: the
  // server ends its idle session, and the standby takes over.
  ASSERT_TRUE(AcquireWithin(*standby, absl::Seconds(10)));
  EXPECT_THAT((*paused)->Check(), StatusIsWith(absl::StatusCode::kFailedPrecondition,
                                               "another coordinator (host-b:2"));
  EXPECT_THAT(OpenLeadership(database_->url(), "host-c:3", nullptr, absl::Milliseconds(500)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

INSTANTIATE_TEST_SUITE_P(Databases, PostgresLeadershipTest, ::testing::Values(Backend::kPostgres),
                         [](const auto& info) { return BackendName(info.param); });

}  // namespace
}  // namespace tunefleet::server::testing
