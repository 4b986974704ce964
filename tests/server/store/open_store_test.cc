// OpenStore: choosing the database from the URL.
#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;

TEST(OpenStoreTest, RejectsAnUnknownSchemeByName) {
  absl::StatusOr<std::unique_ptr<Store>> store =
      OpenStore("mysql://admin:hunter2@db.example/tunefleet");
  EXPECT_THAT(store, StatusIsWith(absl::StatusCode::kInvalidArgument, "mysql"));
  EXPECT_THAT(std::string(store.status().message()), Not(HasSubstr("hunter2")));
}

TEST(OpenStoreTest, RejectsAUrlWithoutScheme) {
  EXPECT_THAT(OpenStore("/var/lib/tunefleet/store.db"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(OpenStore(""), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OpenStoreTest, RejectsASqliteUrlWithoutPath) {
  EXPECT_THAT(OpenStore("sqlite://"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OpenStoreTest, CreatesTheSqliteParentDirectory) {
  TempDir dir;
  const std::string path = dir.path() + "/data/coordinator/store.db";

  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore("sqlite://" + path);

  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(std::filesystem::exists(path));
  JobRecord job;
  job.id = "job-1";
  EXPECT_TRUE((*store)->PutJob(job).ok());
}

TEST(OpenStoreTest, SqliteParentThatCannotBeCreatedIsUnavailable) {
  TempDir dir;
  const std::string file = dir.path() + "/file";
  ASSERT_TRUE(OpenStore("sqlite://" + file).ok());  // a file, not a directory

  EXPECT_THAT(OpenStore("sqlite://" + file + "/store.db"),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST(OpenStoreTest, UnreachablePostgresIsUnavailable) {
  // Port 1 on loopback refuses connections at once.
  EXPECT_THAT(OpenStore("postgresql://tunefleet:secret@127.0.0.1:1/tunefleet"
                        "?connect_timeout=5"),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(OpenStore("postgres://tunefleet@127.0.0.1:1/tunefleet"),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(OpenStore("postgresql:host=127.0.0.1 port=1 dbname=tunefleet"),
              StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace tunefleet::server
