// ArtifactSharing above its two seams: a compiler that writes a file for
// each artifact and a coordinator that shares one copy. (The real ones, with
// real processes: tests/integration/artifact_sharing_test.cc; with NVRTC:
// tests/gpu/cuda_backend_test.cc.)
#include "worker/artifact_sharing.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/support/unimplemented_coordinator.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::testing::TempDir;

// Compiles every job to "built" at one path; a cache hit when the file is
// there and the job does not ask to rebuild.
class FileCompiler final : public Compiler {
 public:
  explicit FileCompiler(std::string path) : path_(std::move(path)) {}

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override {
    CompileOutcome outcome;
    outcome.ok = true;
    outcome.artifact = path_;
    if (!job.rebuild && std::filesystem::exists(path_)) {
      outcome.cached = true;
      return outcome;
    }
    ++compiles;
    outcome.seconds = 0.5;
    if (fail) {
      outcome.ok = false;
      outcome.log = "error: does not compile";
      return outcome;
    }
    if (absl::Status written = WriteFileAtomic(path_, "built"); !written.ok()) return written;
    return outcome;
  }
  std::optional<ArtifactLocation> Locate(const CompileJob&) const override {
    return ArtifactLocation{std::string(64, 'a'), path_, ""};
  }
  std::string toolkit() const override { return "test"; }

  int compiles = 0;
  bool fail = false;  // every compile fails

 private:
  const std::string path_;
};

// Shares "poisoned" bytes under every key, and records what is published.
class Shelf final : public ::tunefleet::testing::UnimplementedCoordinator {
 public:
  absl::StatusOr<v1::Artifact> GetArtifact(const std::string&) override {
    v1::Artifact artifact;
    artifact.set_content("poisoned");
    return artifact;
  }
  absl::Status PutArtifact(const v1::PutArtifactRequest& request) override {
    published.push_back(request);
    return absl::OkStatus();
  }

  std::vector<v1::PutArtifactRequest> published;
};

class ArtifactSharingTest : public ::testing::Test {
 protected:
  std::string Content() const { return ReadFile(path_).value_or("(none)"); }

  TempDir dir_;
  const std::string path_ = dir_.path() + "/artifact.so";
  FileCompiler compiler_{path_};
  Shelf shelf_;
  ArtifactSharing sharing_{&compiler_, &shelf_};
  CompileJob job_ = [] {
    CompileJob job;
    job.job_id = "j-1";
    return job;
  }();
};

TEST_F(ArtifactSharingTest, AnOwnBuildBuildsAFetchedCopyAgainAndPublishesIt) {
  absl::StatusOr<CompileOutcome> fetched = sharing_.Compile(job_);
  ASSERT_TRUE(fetched.ok() && fetched->fetched);
  EXPECT_EQ(Content(), "poisoned");
  EXPECT_EQ(compiler_.compiles, 0);
  EXPECT_TRUE(shelf_.published.empty());

  CompileJob own = job_;
  own.own_build = true;
  absl::StatusOr<CompileOutcome> built = sharing_.Compile(own);
  ASSERT_TRUE(built.ok() && built->ok);
  EXPECT_FALSE(built->cached || built->fetched);
  EXPECT_EQ(Content(), "built");
  ASSERT_EQ(shelf_.published.size(), 1u);  // for the coordinator to compare
  EXPECT_EQ(shelf_.published[0].artifact().content(), "built");
  EXPECT_EQ(shelf_.published[0].job_id(), "j-1");

  // Built here now: the next own build is a cache hit, published again.
  absl::StatusOr<CompileOutcome> again = sharing_.Compile(own);
  ASSERT_TRUE(again.ok() && again->cached);
  EXPECT_EQ(compiler_.compiles, 1);
  EXPECT_EQ(shelf_.published.size(), 2u);
  // A search compile uses it as it is.
  ASSERT_TRUE(sharing_.Compile(job_)->cached);
  EXPECT_EQ(shelf_.published.size(), 2u);
}

TEST_F(ArtifactSharingTest, AFetchedCopyOfAKeyTheCoordinatorUnsharedIsBuiltAgain) {
  ASSERT_TRUE(sharing_.Compile(job_)->fetched);
  sharing_.SetUnshared({std::string(64, 'a')});
  absl::StatusOr<CompileOutcome> built = sharing_.Compile(job_);  // a search compile
  ASSERT_TRUE(built.ok() && built->ok);
  EXPECT_FALSE(built->cached || built->fetched);
  EXPECT_EQ(Content(), "built");
  EXPECT_TRUE(shelf_.published.empty());  // the coordinator would refuse it
  ASSERT_TRUE(sharing_.Compile(job_)->cached);
  EXPECT_EQ(compiler_.compiles, 1);

  // An unshared key is never fetched either.
  std::filesystem::remove(path_);
  ASSERT_FALSE(sharing_.Compile(job_)->fetched);
  EXPECT_EQ(Content(), "built");
}

TEST_F(ArtifactSharingTest, AFetchedCopyWhoseSourcesDoNotCompileHereIsRemoved) {
  ASSERT_TRUE(sharing_.Compile(job_)->fetched);
  compiler_.fail = true;
  CompileJob own = job_;
  own.own_build = true;
  absl::StatusOr<CompileOutcome> built = sharing_.Compile(own);
  ASSERT_TRUE(built.ok());
  EXPECT_FALSE(built->ok);
  EXPECT_FALSE(std::filesystem::exists(path_));  // no search measures it again
  EXPECT_FALSE(std::filesystem::exists(path_ + ".fetched"));
  EXPECT_TRUE(shelf_.published.empty());
}

}  // namespace
}  // namespace tunefleet::worker
