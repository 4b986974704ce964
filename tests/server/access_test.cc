// The access policy, the token book over a real SQLite store, and quotas.
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/access_policy.h"
#include "server/store/store.h"
#include "server/submit_quotas.h"
#include "server/token_book.h"
#include "tests/server/faulty_store.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::server::testing::FaultyStore;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::TempDir;

constexpr char kSubmit[] = "/tunefleet.v1.TuningService/SubmitJob";
constexpr char kCancel[] = "/tunefleet.v1.TuningService/CancelJob";
constexpr char kBest[] = "/tunefleet.v1.TuningService/GetBestConfig";
constexpr char kLease[] = "/tunefleet.v1.WorkerService/LeaseWork";
constexpr char kCreateToken[] = "/tunefleet.v1.TokenService/CreateToken";

Caller As(Role role) { return Caller{"p", role, /*authenticated=*/true}; }

TEST(AccessPolicyTest, EachRoleCallsWhatItsRankAllows) {
  EXPECT_OK(CheckAllowed(As(Role::kRead), kBest));
  EXPECT_THAT(CheckAllowed(As(Role::kRead), kSubmit),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_OK(CheckAllowed(As(Role::kSubmit), kSubmit));
  EXPECT_OK(CheckAllowed(As(Role::kSubmit), kCancel));
  EXPECT_THAT(CheckAllowed(As(Role::kSubmit), kCreateToken),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_OK(CheckAllowed(As(Role::kAdmin), kCreateToken));
  EXPECT_OK(CheckAllowed(As(Role::kAdmin), kSubmit));
}

TEST(AccessPolicyTest, WorkerMethodsAreForWorkerCertificatesOnly) {
  EXPECT_OK(CheckAllowed(As(Role::kWorker), kLease));
  EXPECT_THAT(CheckAllowed(As(Role::kAdmin), kLease),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(CheckAllowed(As(Role::kWorker), kBest),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST(AccessPolicyTest, ProfilingAJobNeedsSubmitAndReadingProfilesRead) {
  EXPECT_EQ(RequiredRole("/tunefleet.v1.TuningService/ProfileJob"), Role::kSubmit);
  EXPECT_EQ(RequiredRole("/tunefleet.v1.TuningService/ListProfiles"), Role::kRead);
}

TEST(AccessPolicyTest, HealthIsOpenAndUnknownMethodsNeedAdmin) {
  EXPECT_EQ(RequiredRole("/grpc.health.v1.Health/Check"), Role::kNone);
  EXPECT_EQ(RequiredRole("/tunefleet.v1.AdminService/Invalidate"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/some.Other/Method"), Role::kAdmin);
  EXPECT_EQ(RequiredRole(""), Role::kAdmin);
}

TEST(AccessPolicyTest, OnlyTheOwnerOrAnAdminActsForAJob) {
  Caller alice{"alice", Role::kSubmit, true};
  EXPECT_TRUE(alice.MayActFor("alice"));
  EXPECT_FALSE(alice.MayActFor("bob"));
  EXPECT_TRUE(As(Role::kAdmin).MayActFor("bob"));
  EXPECT_TRUE(AnonymousCaller().MayActFor("bob"));
}

TEST(AccessPolicyTest, TokensNeverCarryTheWorkerRole) {
  EXPECT_THAT(ParseTokenRole("worker"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseTokenRole(""), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK(ParseTokenRole("submit"));
}

class TokenBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store =
        FaultyStore::OpenInMemory(&faulty_);
    ASSERT_OK(store);
    store_ = *std::move(store);
    book_ = NewBook();
  }
  std::unique_ptr<TokenBook> NewBook() {
    return std::make_unique<TokenBook>(faulty_.get(), [] { return absl::FromUnixSeconds(1e9); });
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<FaultyStore> faulty_;
  std::unique_ptr<TokenBook> book_;
};

TEST_F(TokenBookTest, ACreatedTokenAuthenticatesItsPrincipalAndIsStoredOnlyHashed) {
  absl::StatusOr<TokenBook::Issued> issued = book_->Create("alice", Role::kSubmit);
  ASSERT_OK(issued);
  std::optional<Caller> caller = book_->Authenticate(issued->token);
  ASSERT_TRUE(caller.has_value());
  EXPECT_EQ(caller->principal, "alice");
  EXPECT_EQ(caller->role, Role::kSubmit);
  absl::StatusOr<std::vector<TokenRecord>> stored = store_->ListTokens();
  ASSERT_OK(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_FALSE(absl::StrContains((*stored)[0].secret_hash, issued->token));
  EXPECT_FALSE(absl::StrContains(issued->token.substr(4 + 12 + 1), (*stored)[0].secret_hash));
  EXPECT_FALSE(book_->Authenticate(issued->token + "x").has_value());
  EXPECT_FALSE(book_->Authenticate("").has_value());
}

TEST_F(TokenBookTest, TokensSurviveARestartAndRevocationToo) {
  absl::StatusOr<TokenBook::Issued> kept = book_->Create("alice", Role::kRead);
  absl::StatusOr<TokenBook::Issued> revoked = book_->Create("bob", Role::kAdmin);
  ASSERT_OK(kept);
  ASSERT_OK(revoked);
  ASSERT_OK(book_->Revoke(revoked->record.id));
  std::unique_ptr<TokenBook> restarted = NewBook();
  ASSERT_OK(restarted->Load());
  EXPECT_TRUE(restarted->Authenticate(kept->token).has_value());
  EXPECT_FALSE(restarted->Authenticate(revoked->token).has_value());
  EXPECT_THAT(restarted->Revoke("nope"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(TokenBookTest, BadNamesAndRolesAreRefused) {
  EXPECT_THAT(book_->Create("", Role::kRead), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(book_->Create("a\x1b[31m", Role::kRead),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(book_->Create("w", Role::kWorker), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(TokenBookTest, AStoreThatRefusesTheWriteCreatesNoToken) {
  faulty_->refuse_tokens = true;
  EXPECT_THAT(book_->Create("alice", Role::kRead), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(book_->List().empty());
}

TEST_F(TokenBookTest, BootstrapWritesAPrivateAdminTokenOnceAndTrustsItAfter) {
  const std::string path = dir_.path() + "/admin.token";
  ASSERT_OK(book_->Bootstrap(path));
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600);
  std::string token;
  std::ifstream(path) >> token;
  std::optional<Caller> admin = book_->Authenticate(token);
  ASSERT_TRUE(admin.has_value());
  EXPECT_EQ(admin->role, Role::kAdmin);
  std::unique_ptr<TokenBook> restarted = NewBook();
  ASSERT_OK(restarted->Load());
  ASSERT_OK(restarted->Bootstrap(path));  // the same token, not a new one
  chmod(path.c_str(), 0440);  // a Kubernetes Secret under this process's fsGroup
  EXPECT_OK(restarted->Bootstrap(path));
  EXPECT_EQ(restarted->List().size(), 1u);
  ASSERT_OK(restarted->Revoke(restarted->List()[0].id));
  EXPECT_THAT(restarted->Bootstrap(path), StatusIs(absl::StatusCode::kFailedPrecondition));
  chmod(path.c_str(), 0644);
  EXPECT_THAT(NewBook()->Bootstrap(path), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(SubmitQuotasTest, ActiveJobsAndTrialsOfTheLastDayAreCapped) {
  SubmitQuotas quotas(QuotaOptions{/*max_active_jobs=*/2, /*max_trials_per_day=*/100});
  const absl::Time now = absl::FromUnixSeconds(1'000'000'000);
  EXPECT_OK(quotas.CheckSubmit("alice", 1, now));
  EXPECT_THAT(quotas.CheckSubmit("alice", 2, now),
              StatusIs(absl::StatusCode::kResourceExhausted));
  quotas.CountTrials("alice", 60, now - absl::Hours(23));
  quotas.CountTrials("alice", 40, now);
  EXPECT_EQ(quotas.TrialsLastDay("alice", now), 100);
  EXPECT_THAT(quotas.CheckSubmit("alice", 0, now),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_OK(quotas.CheckSubmit("bob", 0, now));
  // A day later the old hour has left the window.
  EXPECT_EQ(quotas.TrialsLastDay("alice", now + absl::Hours(1)), 40);
  EXPECT_OK(quotas.CheckSubmit("alice", 0, now + absl::Hours(1)));
}

TEST(SubmitQuotasTest, TheAnonymousPrincipalHasNoQuota) {
  SubmitQuotas quotas(QuotaOptions{1, 1});
  quotas.CountTrials("", 10, absl::Now());
  EXPECT_OK(quotas.CheckSubmit("", 100, absl::Now()));
}

}  // namespace
}  // namespace tunefleet::server
