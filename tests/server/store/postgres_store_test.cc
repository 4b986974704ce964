// What only the PostgreSQL store does: a connection pool that survives
// dropped connections and stays within its size, and text checks.
#include "server/store/postgres_store.h"

#include <atomic>
#include <exception>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/store/test_database.h"
#include "tests/support/test_support.h"

namespace tunefleet::server::testing {
namespace {

using ::tunefleet::testing::StatusIs;

// Runs `sql` (returning one number) on a connection of the test's own.
absl::StatusOr<int64_t> QueryNumber(const std::string& url,
                                    const std::string& sql) {
  try {
    pqxx::connection connection(url);
    pqxx::nontransaction txn(connection);
    return txn.exec1(sql)[0].as<int64_t>();
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
}

// Server sessions on the test database other than the asking one.
constexpr char kCountOtherSessions[] =
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()";

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SkipOrFailWithoutPostgres();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<TestDatabase>> database =
        TestDatabase::Create(Backend::kPostgres);
    ASSERT_TRUE(database.ok()) << database.status();
    database_ = std::move(database).value();
  }

  std::unique_ptr<PostgresStore> Open(int max_connections) {
    PostgresStore::Options options;
    options.max_connections = max_connections;
    absl::StatusOr<std::unique_ptr<PostgresStore>> store =
        PostgresStore::Open(database_->url(), options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::unique_ptr<TestDatabase> database_;
};

TEST_F(PostgresStoreTest, ReconnectsWhenTheServerDropsItsConnection) {
  std::unique_ptr<PostgresStore> store = Open(/*max_connections=*/1);
  ASSERT_NE(store, nullptr);
  JobRecord job;
  job.id = "job-1";
  ASSERT_OK(store->PutJob(job));

  absl::StatusOr<int64_t> killed = QueryNumber(
      database_->url(),
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE datname = current_database() AND pid <> pg_backend_pid()");
  ASSERT_OK(killed);
  ASSERT_EQ(*killed, 1);

  absl::StatusOr<JobRecord> stored = store->GetJob("job-1");
  EXPECT_OK(stored);
}

TEST_F(PostgresStoreTest, CheckHealthReconnectsWhenTheServerDropsConnections) {
  std::unique_ptr<PostgresStore> store = Open(/*max_connections=*/2);
  ASSERT_NE(store, nullptr);
  ASSERT_OK(store->CheckHealth());

  absl::StatusOr<int64_t> killed = QueryNumber(
      database_->url(),
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE datname = current_database() AND pid <> pg_backend_pid()");
  ASSERT_OK(killed);
  ASSERT_GE(*killed, 1);

  EXPECT_OK(store->CheckHealth());
}

TEST_F(PostgresStoreTest, CheckHealthIsUnavailableWhenTheDatabaseIsGone) {
  std::unique_ptr<PostgresStore> store = Open(/*max_connections=*/1);
  ASSERT_NE(store, nullptr);
  ASSERT_OK(store->CheckHealth());

  database_.reset();  // drops the database, ending every session on it

  EXPECT_THAT(store->CheckHealth(), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(PostgresStoreTest, OpensAtMostMaxConnections) {
  std::unique_ptr<PostgresStore> store = Open(/*max_connections=*/2);
  ASSERT_NE(store, nullptr);
  std::atomic<int> failed{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        TrialRecord trial;
        trial.job_id = "job-1";
        trial.config = absl::StrCat("t=", t, ",i=", i);
        if (!store->InsertTrial(trial).ok()) ++failed;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(failed.load(), 0);
  absl::StatusOr<int64_t> sessions =
      QueryNumber(database_->url(), kCountOtherSessions);
  ASSERT_OK(sessions);
  EXPECT_GE(*sessions, 1);
  EXPECT_LE(*sessions, 2);
}

TEST_F(PostgresStoreTest, RefusesTextWithANulByte) {
  std::unique_ptr<PostgresStore> store = Open(/*max_connections=*/1);
  ASSERT_NE(store, nullptr);
  JobRecord job;
  job.id = std::string("job\0-1", 6);

  EXPECT_THAT(store->PutJob(job), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(store->GetJob("job"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(PostgresStoreTest, RefusesTextThatIsNotUtf8) {
  std::unique_ptr<PostgresStore> store = Open(/*max_connections=*/1);
  ASSERT_NE(store, nullptr);
  BestRecord best;
  best.tuning_key = "key-\xff\xfe";

  EXPECT_THAT(store->UpsertBest(best),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_OK(store->ListBest("", "", ""));
}

}  // namespace
}  // namespace tunefleet::server::testing
