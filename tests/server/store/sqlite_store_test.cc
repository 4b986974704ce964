// What only the SQLite store does: noticing that its file was deleted,
// replaced or made unwritable under it, and never writing to a lost file;
// and its in-memory databases, which have no file.
#include "server/store/sqlite_store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::testing::IsEmpty;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;
namespace fs = std::filesystem;

JobRecord MakeJob(const std::string& id) {
  JobRecord job;
  job.id = id;
  job.kernel_name = "matmul";
  job.state = 1;
  return job;
}

TrialRecord MakeTrial(const std::string& config) {
  TrialRecord trial;
  trial.job_id = "job-1";
  trial.tuning_key = "key-1";
  trial.config = config;
  return trial;
}

// Runs `sql` on the SQLite file at `path` with a connection of the test's
// own; returns the first column of the first row (0 when there is none), or
// -1 on error.
int64_t QueryNumber(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  int64_t result = rc == SQLITE_ROW    ? sqlite3_column_int64(stmt, 0)
                   : rc == SQLITE_DONE ? 0
                                       : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return result;
}

// The names in `dir`, or empty when it does not exist.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// Sets or clears the immutable attribute (which stops root too).
bool Chattr(const std::string& flag, const std::string& path) {
  std::string command = "chattr " + flag + " '" + path + "' 2>/dev/null";
  return std::system(command.c_str()) == 0;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(path_);
    ASSERT_OK(store);
    store_ = *std::move(store);
    ASSERT_OK(store_->PutJob(MakeJob("job-1")));
  }

  void RemoveDatabaseFiles() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path_ + suffix);
  }

  // Every call of `store_` that writes answers Unavailable.
  void ExpectWritesUnavailable() {
    EXPECT_THAT(store_->PutJob(MakeJob("job-2")),
                StatusIs(absl::StatusCode::kUnavailable));
    EXPECT_THAT(store_->InsertTrials({MakeTrial("a"), MakeTrial("b")}),
                StatusIs(absl::StatusCode::kUnavailable));
    BestRecord best;
    best.tuning_key = "key-1";
    EXPECT_THAT(store_->UpsertBest(best),
                StatusIs(absl::StatusCode::kUnavailable));
    EXPECT_THAT(store_->PutBlobs({{"digest-1", "content"}}),
                StatusIs(absl::StatusCode::kUnavailable));
    KernelRecord kernel;
    kernel.name = "matmul";
    EXPECT_THAT(store_->PutKernel(kernel),
                StatusIs(absl::StatusCode::kUnavailable));
  }

  TempDir temp_;
  const std::string dir_ = temp_.path() + "/data";
  const std::string path_ = dir_ + "/store.db";
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteStoreTest, CheckHealthIsOkWhileTheFileIsInPlace) {
  EXPECT_OK(store_->CheckHealth());
  EXPECT_OK(store_->CheckHealth());
}

TEST_F(SqliteStoreTest, EveryCallIsUnavailableOnceTheFileIsDeleted) {
  RemoveDatabaseFiles();

  EXPECT_THAT(store_->CheckHealth(),
              StatusIsWith(absl::StatusCode::kUnavailable,
                           "the SQLite database file " + path_ +
                               " was deleted while open"));
  ExpectWritesUnavailable();
  EXPECT_THAT(store_->GetJob("job-1"),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(store_->ListTrials("job-1"),
              StatusIs(absl::StatusCode::kUnavailable));

  EXPECT_THAT(Entries(dir_), IsEmpty()) << "nothing was created at the path";
  store_.reset();
  EXPECT_THAT(Entries(dir_), IsEmpty()) << "closing created nothing either";
}

TEST_F(SqliteStoreTest, EveryCallIsUnavailableOnceTheFileIsReplaced) {
  const std::string other = dir_ + "/other.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE marker (x); INSERT INTO marker "
                           "VALUES (42)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  fs::rename(other, path_);

  EXPECT_THAT(store_->CheckHealth(),
              StatusIsWith(absl::StatusCode::kUnavailable, "was replaced"));
  ExpectWritesUnavailable();
  EXPECT_THAT(store_->GetJob("job-1"),
              StatusIs(absl::StatusCode::kUnavailable));

  store_.reset();
  EXPECT_EQ(QueryNumber(path_, "SELECT x FROM marker"), 42);
  EXPECT_EQ(
      QueryNumber(path_,
                  "SELECT count(*) FROM sqlite_master WHERE name = 'jobs'"),
      0)
      << "the replacement holds none of the old database";
}

TEST_F(SqliteStoreTest, EveryCallIsUnavailableOnceTheDirectoryIsDeleted) {
  fs::remove_all(dir_);

  EXPECT_THAT(store_->CheckHealth(),
              StatusIsWith(absl::StatusCode::kUnavailable,
                           "was deleted with its directory"));
  ExpectWritesUnavailable();

  store_.reset();
  EXPECT_FALSE(fs::exists(dir_)) << "nothing recreated the directory";
}

TEST_F(SqliteStoreTest, StaysUnavailableWhenANewDatabaseAppearsAtThePath) {
  RemoveDatabaseFiles();
  ASSERT_THAT(store_->CheckHealth(), StatusIs(absl::StatusCode::kUnavailable));

  absl::StatusOr<std::unique_ptr<SqliteStore>> fresh = SqliteStore::Open(path_);
  ASSERT_OK(fresh);
  ASSERT_OK((*fresh)->PutJob(MakeJob("job-9")));

  EXPECT_THAT(store_->CheckHealth(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(store_->GetJob("job-9"),
              StatusIs(absl::StatusCode::kUnavailable));
  ExpectWritesUnavailable();
  store_.reset();
  absl::StatusOr<JobRecord> job = (*fresh)->GetJob("job-9");
  EXPECT_OK(job);
  EXPECT_OK((*fresh)->CheckHealth());
}

TEST_F(SqliteStoreTest, CheckHealthReportsAFailedWriteUntilOneSucceeds) {
  if (!Chattr("+i", path_) || !Chattr("+i", path_ + "-wal")) {
    Chattr("-i", path_);
    GTEST_SKIP() << "chattr +i is not permitted here, so the file cannot be "
                    "made unwritable";
  }

  absl::Status written = store_->PutJob(MakeJob("job-2"));
  absl::Status health = store_->CheckHealth();
  Chattr("-i", path_);
  Chattr("-i", path_ + "-wal");

  EXPECT_THAT(written, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(health, StatusIsWith(absl::StatusCode::kUnavailable,
                                   "the last write to the SQLite database"));
  EXPECT_THAT(store_->CheckHealth(), StatusIs(absl::StatusCode::kUnavailable))
      << "until a write succeeds";
  ASSERT_OK(store_->PutJob(MakeJob("job-2")));
  EXPECT_OK(store_->CheckHealth());
  EXPECT_OK(store_->GetJob("job-2"));
}

TEST_F(SqliteStoreTest, OpeningAnUnwritableFileIsUnavailable) {
  store_.reset();
  if (!Chattr("+i", path_)) {
    GTEST_SKIP() << "chattr +i is not permitted here, so the file cannot be "
                    "made unwritable";
  }

  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
  absl::Status status = store.status();
  store = absl::UnknownError("closed");
  Chattr("-i", path_);

  EXPECT_THAT(status,
              StatusIsWith(absl::StatusCode::kUnavailable, "read-only"));
}

TEST(SqliteMemoryStoreTest, NamesAnInMemoryDatabaseOnlyForMemoryPaths) {
  EXPECT_TRUE(SqliteStore::IsInMemory(":memory:"));
  EXPECT_TRUE(SqliteStore::IsInMemory("file:jobs?mode=memory&cache=shared"));
  EXPECT_TRUE(SqliteStore::IsInMemory("file:jobs?cache=shared&mode=memory"));
  EXPECT_FALSE(SqliteStore::IsInMemory("/var/lib/tunefleet/store.db"));
  EXPECT_FALSE(SqliteStore::IsInMemory("file:jobs?mode=rwc"));
  EXPECT_FALSE(SqliteStore::IsInMemory("file:jobs"));
  EXPECT_FALSE(SqliteStore::IsInMemory("./:memory:"));
}

TEST(SqliteMemoryStoreTest, EachPrivateDatabaseIsItsOwnAndHealthy) {
  TempDir cwd;  // nothing may appear on disk
  const fs::path before = fs::current_path();
  fs::current_path(cwd.path());
  absl::StatusOr<std::unique_ptr<SqliteStore>> first = SqliteStore::Open(":memory:");
  absl::StatusOr<std::unique_ptr<SqliteStore>> second = SqliteStore::Open(":memory:");
  fs::current_path(before);
  ASSERT_OK(first);
  ASSERT_OK(second);
  ASSERT_OK((*first)->PutJob(MakeJob("job-1")));
  EXPECT_OK((*first)->GetJob("job-1").status());
  EXPECT_THAT((*second)->GetJob("job-1").status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK((*first)->CheckHealth());
  EXPECT_THAT(Entries(cwd.path()), IsEmpty());
}

TEST(SqliteMemoryStoreTest, ANamedSharedDatabaseOutlivesAStoreWhileAnotherConnectionHoldsIt) {
  const std::string name = "file:tunefleet-sqlite-store-test?mode=memory&cache=shared";
  absl::StatusOr<std::unique_ptr<SqliteStore>> holder = SqliteStore::Open(name);
  ASSERT_OK(holder);
  {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(name);
    ASSERT_OK(store);
    ASSERT_OK((*store)->PutJob(MakeJob("job-7")));
  }
  EXPECT_OK((*holder)->GetJob("job-7").status());
}

}  // namespace
}  // namespace tunefleet::server
