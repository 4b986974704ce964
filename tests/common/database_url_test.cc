// Where the database URL comes from, how it is printed, and what of an error
// a client may see.
#include "common/database_url.h"

#include <sys/stat.h>

#include <fstream>

#include "common/public_status.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;

constexpr char kUrl[] = "postgresql://tunefleet:secret@db.example:5432/tunefleet";

std::string WriteFile(const TempDir& dir, const std::string& text, mode_t mode) {
  const std::string path = dir.path() + "/database-url";
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(ResolveDatabaseUrlTest, FlagThenFileThenEnvironment) {
  TempDir dir;
  const std::string file = WriteFile(dir, std::string(kUrl) + "\nignored\n", 0600);
  EXPECT_EQ(*ResolveDatabaseUrl({"sqlite:///flag.db", "", "sqlite:///env.db"}),
            "sqlite:///flag.db");
  EXPECT_EQ(*ResolveDatabaseUrl({"", file, "sqlite:///env.db"}), kUrl);
  EXPECT_EQ(*ResolveDatabaseUrl({"", "", "sqlite:///env.db"}), "sqlite:///env.db");
  EXPECT_EQ(*ResolveDatabaseUrl({"", "", std::nullopt}), "");
  EXPECT_EQ(*ResolveDatabaseUrl({"", "", ""}), "");
}

TEST(ResolveDatabaseUrlTest, BothFlagsAreRefused) {
  TempDir dir;
  const std::string file = WriteFile(dir, kUrl, 0600);
  EXPECT_THAT(ResolveDatabaseUrl({"sqlite:///a.db", file, std::nullopt}),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "not both"));
}

TEST(ResolveDatabaseUrlTest, FileReadableByOthersIsRefusedLikeSsh) {
  TempDir dir;
  const std::string file = WriteFile(dir, kUrl, 0644);
  absl::StatusOr<std::string> url = ResolveDatabaseUrl({"", file, std::nullopt});
  EXPECT_THAT(url, StatusIsWith(absl::StatusCode::kFailedPrecondition,
                                "permissions 0644 are too open"));
  EXPECT_EQ(url.status().message().find("secret"), absl::string_view::npos);
  chmod(file.c_str(), 0660);  // the group may write it
  EXPECT_THAT(ResolveDatabaseUrl({"", file, std::nullopt}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  chmod(file.c_str(), 0440);  // a Kubernetes Secret under this process's fsGroup
  EXPECT_EQ(*ResolveDatabaseUrl({"", file, std::nullopt}), kUrl);
}

TEST(ResolveDatabaseUrlTest, MissingOrEmptyFileIsAnError) {
  TempDir dir;
  EXPECT_THAT(ResolveDatabaseUrl({"", dir.path() + "/none", std::nullopt}),
              StatusIs(absl::StatusCode::kNotFound));
  const std::string file = WriteFile(dir, "  \n", 0600);
  EXPECT_THAT(ResolveDatabaseUrl({"", file, std::nullopt}),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "is empty"));
}

TEST(RedactUrlTest, MasksThePasswordOnly) {
  EXPECT_EQ(RedactUrl(kUrl), "postgresql://tunefleet:***@db.example:5432/tunefleet");
  EXPECT_EQ(RedactUrl("postgresql://u:p%40ss@h/db?sslmode=require"),
            "postgresql://u:***@h/db?sslmode=require");
  EXPECT_EQ(RedactUrl("postgresql://h/db?user=u&password=p&sslmode=require"),
            "postgresql://h/db?user=u&password=***&sslmode=require");
  EXPECT_EQ(RedactUrl("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactUrl("sqlite:///var/lib/tunefleet/a@b.db"), "sqlite:///var/lib/tunefleet/a@b.db");
  EXPECT_TRUE(HasPassword(kUrl));
  EXPECT_FALSE(HasPassword("postgresql://u@h/db"));
}

TEST(RedactUrlTest, PasswordsQuotedInOtherTextAreMasked) {
  EXPECT_EQ(RedactPasswordOf("postgresql://u:s%zzcret@h/db",
                             "invalid percent-encoded token: \"s%zzcret\""),
            "invalid percent-encoded token: \"***\"");
  EXPECT_EQ(RedactPasswordOf("postgresql://h/db?password=pw1&user=u", "pw1 and pw1"),
            "*** and ***");
  EXPECT_EQ(RedactPasswordOf("postgresql://u@h/db", "u@h"), "u@h");
}

TEST(PublicMessageTest, StoreDetailsAndInternalErrorsAreNotShown) {
  const absl::Status outage = absl::UnavailableError(
      "postgres: insert trials: connection to server at \"10.0.0.5\", port 5432 failed");
  EXPECT_TRUE(IsStoreError(outage));
  EXPECT_EQ(PublicMessage(outage), "store unavailable");
  EXPECT_EQ(PublicMessage(absl::AbortedError("postgres: INSERT INTO trials: could not "
                                             "serialize access")),
            "store conflict");
  EXPECT_EQ(PublicMessage(absl::InvalidArgumentError("postgres: put: invalid byte sequence")),
            "internal error");
  EXPECT_EQ(PublicMessage(absl::UnavailableError(
                "the SQLite database file /var/lib/x.db was deleted while open")),
            "store unavailable");
  EXPECT_EQ(PublicMessage(absl::InternalError("rename /tmp/x: EPERM")), "internal error");
  EXPECT_EQ(PublicMessage(absl::InvalidArgumentError("shape is missing dim K")),
            "shape is missing dim K");
  EXPECT_EQ(PublicMessage(absl::UnavailableError("the coordinator is shutting down")),
            "the coordinator is shutting down");
  EXPECT_EQ(PublicMessage(absl::InvalidArgumentError("sources: the job does not carry "
                                                     "sqlite: a.cc")),
            "sources: the job does not carry sqlite: a.cc");
}

}  // namespace
}  // namespace tunefleet
