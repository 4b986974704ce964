#include "server/shared_artifacts.h"

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "common/file_util.h"
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::TempDir;

constexpr char kAlice[] = "host:alice";
constexpr char kBob[] = "host:bob";
constexpr char kBuilder[] = "host:builder";

// A publisher known by its principal alone.
ArtifactPublisher By(const std::string& principal) { return {principal, "", ""}; }

std::string Key(const std::string& name) { return Sha256Hex(name); }

v1::Artifact Cubin(const std::string& content, const std::string& log = "") {
  v1::Artifact artifact;
  artifact.set_content(content);
  artifact.set_compile_log(log);
  return artifact;
}

std::unique_ptr<SharedArtifacts> Open(const std::string& dir, int64_t capacity = 1 << 20,
                                      CoordinatorMetrics* metrics = nullptr) {
  SharedArtifactsOptions options;
  options.dir = dir;
  options.capacity_bytes = capacity;
  options.max_artifact_bytes = 4096;
  absl::StatusOr<std::unique_ptr<SharedArtifacts>> shelf = SharedArtifacts::Open(options, metrics);
  EXPECT_TRUE(shelf.ok()) << shelf.status();
  return shelf.ok() ? *std::move(shelf) : nullptr;
}

// What the shelf tells the metrics.
class ShelfMetrics : public NullMetrics {
 public:
  void ArtifactsShelved(int64_t count, int64_t bytes) override {
    count_ = count;
    bytes_ = bytes;
  }
  void ArtifactRequested(bool found) override { ++(found ? hits_ : misses_); }
  void ArtifactConflicted() override { ++conflicts_; }
  int64_t count_ = -1, bytes_ = -1, hits_ = 0, misses_ = 0, conflicts_ = 0;
};

// A shelf whose builder (--artifact-builders) is kBuilder.
std::unique_ptr<SharedArtifacts> OpenWithBuilder(const std::string& dir) {
  SharedArtifactsOptions options;
  options.dir = dir;
  options.builders = {kBuilder};
  absl::StatusOr<std::unique_ptr<SharedArtifacts>> shelf = SharedArtifacts::Open(options);
  EXPECT_TRUE(shelf.ok()) << shelf.status();
  return shelf.ok() ? *std::move(shelf) : nullptr;
}

TEST(SharedArtifactsTest, ServesAnArtifactToItsPrincipalOnly) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path());
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("cubin a", "ptxas: 40 registers")));

  absl::StatusOr<v1::Artifact> got = shelf->Get(kAlice, Key("a"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->content(), "cubin a");
  EXPECT_EQ(got->compile_log(), "ptxas: 40 registers");
  EXPECT_THAT(shelf->Get(kBob, Key("a")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(shelf->Get(kAlice, Key("b")).status(), StatusIs(absl::StatusCode::kNotFound));
}

TEST(SharedArtifactsTest, ABuildersArtifactsServeEveryPrincipalAfterItsOwn) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = OpenWithBuilder(dir.path());
  ASSERT_OK(shelf->Put(By(kBuilder), Key("a"), Cubin("built")));
  EXPECT_EQ(shelf->Get(kAlice, Key("a"))->content(), "built");
  // Bob compiled it too: the same bytes, kept as its own copy.
  ASSERT_OK(shelf->Put(By(kBob), Key("a"), Cubin("built")));
  EXPECT_EQ(shelf->count(), 2);
  // Alice's artifacts serve neither Bob nor the builder.
  ASSERT_OK(shelf->Put(By(kAlice), Key("b"), Cubin("alice's")));
  EXPECT_THAT(shelf->Get(kBob, Key("b")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(shelf->Get(kBuilder, Key("b")).status(),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(SharedArtifactsTest, APublishOfTheSameBytesIsAcknowledgedAndOtherBytesAreAConflict) {
  TempDir dir;
  ShelfMetrics metrics;
  std::unique_ptr<SharedArtifacts> opened = Open(dir.path(), 1 << 20, &metrics);
  SharedArtifacts& shelf = *opened;
  const ArtifactPublisher alice{kAlice, "w-1", "j-1"};
  ASSERT_OK(shelf.Put(alice, Key("a"), Cubin("compiled", "log one")));
  ASSERT_OK(shelf.Put(alice, Key("a"), Cubin("compiled", "log two")));  // the same content
  ASSERT_OK(shelf.Put(By(kBob), Key("a"), Cubin("bob's")));  // Bob's own namespace
  EXPECT_EQ(shelf.count(), 2);
  EXPECT_EQ(metrics.conflicts_, 0);

  // Another worker of Alice compiled the key to other bytes: a poisoned
  // copy, or a wrong compile. Neither is served again.
  EXPECT_THAT(shelf.Put({kAlice, "w-2", "j-2"}, Key("a"), Cubin("poisoned")),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(metrics.conflicts_, 1);
  EXPECT_THAT(shelf.Get(kAlice, Key("a")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(shelf.Put(alice, Key("a"), Cubin("compiled")),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(shelf.Get(kBob, Key("a"))->content(), "bob's");
  EXPECT_EQ(shelf.count(), 1);
  ASSERT_OK(shelf.Put(alice, Key("b"), Cubin("b")));  // other keys are shared as before

  // The conflict outlives a restart.
  opened.reset();
  std::unique_ptr<SharedArtifacts> again = Open(dir.path());
  EXPECT_EQ(again->count(), 2);
  EXPECT_THAT(again->Get(kAlice, Key("a")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(again->Put(alice, Key("a"), Cubin("compiled")),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(again->Get(kAlice, Key("b"))->content(), "b");
}

TEST(SharedArtifactsTest, ABuildersCopyContradictedByOnePrincipalIsNoMoreServedToItAlone) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = OpenWithBuilder(dir.path());
  ASSERT_OK(shelf->Put(By(kBuilder), Key("a"), Cubin("built")));
  EXPECT_THAT(shelf->Put(By(kAlice), Key("a"), Cubin("compiled")),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // Alice compiles the key herself now; one principal's word does not take
  // the builder's artifact from the others.
  EXPECT_THAT(shelf->Get(kAlice, Key("a")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(shelf->Get(kBob, Key("a"))->content(), "built");
  EXPECT_EQ(shelf->count(), 1);
}

TEST(SharedArtifactsTest, APrincipalWithTooManyConflictsIsRefusedUntilPurged) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path());
  for (int i = 0; i < 1024; ++i) {
    const std::string key = Key(std::to_string(i));
    ASSERT_OK(shelf->Put(By(kAlice), key, Cubin("a")));
    ASSERT_THAT(shelf->Put(By(kAlice), key, Cubin("b")),
                StatusIs(absl::StatusCode::kFailedPrecondition));
  }
  EXPECT_EQ(shelf->Unshared(kAlice).size(), 1024u);
  EXPECT_THAT(shelf->Put(By(kAlice), Key("next"), Cubin("a")),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_OK(shelf->Put(By(kBob), Key("next"), Cubin("a")));  // others publish as before
  EXPECT_TRUE(shelf->Unshared(kBob).empty());
  EXPECT_EQ(shelf->Purge(kAlice), 0);
  EXPECT_EQ(shelf->conflicts(), 0);
  ASSERT_OK(shelf->Put(By(kAlice), Key("next"), Cubin("a")));
}

TEST(SharedArtifactsTest, PurgeDropsEveryArtifactOfOnePrincipal) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path());
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("a")));
  ASSERT_OK(shelf->Put(By(kAlice), Key("b"), Cubin("b")));
  ASSERT_OK(shelf->Put(By(kBob), Key("a"), Cubin("bob's")));
  EXPECT_EQ(shelf->Purge(kAlice), 2);
  EXPECT_EQ(shelf->Purge(kAlice), 0);
  EXPECT_THAT(shelf->Get(kAlice, Key("a")).status(), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("a")));  // a purge is no conflict
  // A purge forgets the principal's conflicts: the repaired host shares again.
  EXPECT_THAT(shelf->Put(By(kAlice), Key("a"), Cubin("other")),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(shelf->Purge(kAlice), 0);
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("a")));
  shelf.reset();
  std::unique_ptr<SharedArtifacts> again = Open(dir.path());
  EXPECT_EQ(again->count(), 2);
  EXPECT_EQ(again->Get(kBob, Key("a"))->content(), "bob's");
}

TEST(SharedArtifactsTest, RefusesBadKeysAndOversizedArtifacts) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path());
  for (const std::string& key : {std::string(""), std::string("../../etc/passwd"),
                                 Key("a").substr(1), absl::AsciiStrToUpper(Key("a")),
                                 Key("a") + "0"}) {
    EXPECT_THAT(shelf->Put(By(kAlice), key, Cubin("x")), StatusIs(absl::StatusCode::kInvalidArgument))
        << key;
    EXPECT_THAT(shelf->Get(kAlice, key).status(), StatusIs(absl::StatusCode::kInvalidArgument))
        << key;
  }
  EXPECT_THAT(shelf->Put(By(kAlice), Key("big"), Cubin(std::string(5000, 'x'))),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(shelf->count(), 0);
}

TEST(SharedArtifactsTest, EvictsTheLeastRecentlyUsedBeyondItsCapacity) {
  TempDir dir;
  const std::string kilobyte(1000, 'x');
  const int64_t one = static_cast<int64_t>(Cubin(kilobyte).SerializeAsString().size());
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path(), /*capacity=*/3 * one);
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin(kilobyte)));
  ASSERT_OK(shelf->Put(By(kAlice), Key("b"), Cubin(kilobyte)));
  ASSERT_OK(shelf->Put(By(kAlice), Key("c"), Cubin(kilobyte)));
  ASSERT_OK(shelf->Get(kAlice, Key("a")).status());  // b is now the least recent
  ASSERT_OK(shelf->Put(By(kAlice), Key("d"), Cubin(kilobyte)));

  EXPECT_THAT(shelf->Get(kAlice, Key("b")).status(), StatusIs(absl::StatusCode::kNotFound));
  for (const char* kept : {"a", "c", "d"}) EXPECT_OK(shelf->Get(kAlice, Key(kept)).status());
  EXPECT_EQ(shelf->bytes(), 3 * one);
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    files += entry.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(files, 3);  // the evicted file is gone from disk too
}

// One principal that publishes without end (an insider's certificate)
// evicts its own artifacts, never another's that keeps to its share.
TEST(SharedArtifactsTest, APrincipalOverItsShareEvictsItsOwnArtifactsFirst) {
  TempDir dir;
  const std::string kilobyte(1000, 'x');
  const int64_t one = static_cast<int64_t>(Cubin(kilobyte).SerializeAsString().size());
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path(), /*capacity=*/4 * one);
  ASSERT_OK(shelf->Put(By(kBob), Key("bob-1"), Cubin(kilobyte)));  // the least recent
  ASSERT_OK(shelf->Put(By(kBob), Key("bob-2"), Cubin(kilobyte)));
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(shelf->Put(By(kAlice), Key("flood-" + std::to_string(i)), Cubin(kilobyte)));
  }
  EXPECT_OK(shelf->Get(kBob, Key("bob-1")).status());
  EXPECT_OK(shelf->Get(kBob, Key("bob-2")).status());
  EXPECT_OK(shelf->Get(kAlice, Key("flood-19")).status());
  EXPECT_THAT(shelf->Get(kAlice, Key("flood-0")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(shelf->bytes(), 4 * one);
  // Over its share, bob loses its own least recent artifact first.
  ASSERT_OK(shelf->Put(By(kBob), Key("bob-3"), Cubin(kilobyte)));
  EXPECT_THAT(shelf->Get(kBob, Key("bob-1")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(shelf->count(), 4);
}

TEST(SharedArtifactsTest, ARestartedShelfServesWhatTheLastOneKept) {
  TempDir dir;
  ASSERT_OK(Open(dir.path())->Put(By(kAlice), Key("a"), Cubin("cubin a")));
  // A temporary file a crashed write left is not an artifact.
  ASSERT_OK(WriteFileAtomic(dir.path() + "/stray.tmp", "junk"));

  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path());
  EXPECT_EQ(shelf->count(), 1);
  EXPECT_EQ(shelf->Get(kAlice, Key("a"))->content(), "cubin a");
}

TEST(SharedArtifactsTest, ADamagedFileIsNotServed) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path());
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("cubin a")));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) ASSERT_OK(WriteFileAtomic(entry.path().string(), "\xff\xff"));
  }
  EXPECT_THAT(shelf->Get(kAlice, Key("a")).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(shelf->count(), 0);
}

TEST(SharedArtifactsTest, WithNoCapacitySharingIsOff) {
  TempDir dir;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path(), /*capacity=*/0);
  EXPECT_FALSE(shelf->enabled());
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("cubin a")));  // dropped
  EXPECT_THAT(shelf->Get(kAlice, Key("a")).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + Sha256Hex(kAlice).substr(0, 16)));
}

TEST(SharedArtifactsTest, TellsTheMetricsItsSizeAndEachRequestsResult) {
  TempDir dir;
  ShelfMetrics metrics;
  std::unique_ptr<SharedArtifacts> shelf = Open(dir.path(), 1 << 20, &metrics);
  EXPECT_EQ(metrics.count_, 0);
  ASSERT_OK(shelf->Put(By(kAlice), Key("a"), Cubin("cubin a")));
  EXPECT_EQ(metrics.count_, 1);
  EXPECT_EQ(metrics.bytes_, shelf->bytes());
  ASSERT_OK(shelf->Get(kAlice, Key("a")).status());
  EXPECT_FALSE(shelf->Get(kBob, Key("a")).ok());
  EXPECT_EQ(metrics.hits_, 1);
  EXPECT_EQ(metrics.misses_, 1);
}

}  // namespace
}  // namespace tunefleet::server
