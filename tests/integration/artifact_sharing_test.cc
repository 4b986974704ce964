// Compile once for the fleet, across real processes: a coordinator (SQLite)
// and CPU workers, one at a time, each with its own artifact cache. A worker
// of the principal that compiled a space compiles none of it again (every
// artifact is fetched from the coordinator); a worker of another principal
// compiles everything itself.
#include <memory>
#include <string>
#include <vector>

#include "bench/local_fleet.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;

class ArtifactSharingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectPlaintext(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  // Tunes repeat_cpu's 8 configs on whichever worker is up; the job's rows.
  std::vector<server::TrialRecord> Tune(bool force) {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/tests/worker/repeat_cpu";
    request.shape = "N=4096";
    request.force_retune = force;
    absl::StatusOr<Job> job = client_->Submit(request);
    EXPECT_OK(job);
    if (!job.ok()) return {};
    absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
    EXPECT_OK(done);
    if (!done.ok()) return {};
    EXPECT_EQ(done->state, JobState::kSucceeded) << done->reason;
    auto store = server::OpenStore(fleet_->database_url());
    EXPECT_OK(store);
    if (!store.ok()) return {};
    absl::StatusOr<std::vector<server::TrialRecord>> rows = (*store)->ListTrials(done->id);
    EXPECT_OK(rows);
    return rows.ok() ? *rows : std::vector<server::TrialRecord>{};
  }

  // Runs `name`'s worker for one tuning of the space, then stops it.
  std::vector<server::TrialRecord> TuneOn(const std::string& name, bool force) {
    absl::StatusOr<int> worker = fleet_->StartWorker(name);
    EXPECT_OK(worker);
    if (!worker.ok()) return {};
    std::vector<server::TrialRecord> rows = Tune(force);
    fleet_->worker(*worker)->KillAndWait();
    return rows;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(ArtifactSharingTest, AWorkerOfTheSamePrincipalFetchesEveryArtifact) {
  const std::vector<server::TrialRecord> first = TuneOn("host-a", /*force=*/false);
  ASSERT_GE(first.size(), 8u);
  for (const server::TrialRecord& row : first) {
    if (row.round != server::TrialRound::kSearch) continue;
    EXPECT_EQ(row.status, ::tunefleet::v1::TRIAL_STATUS_OK) << row.config << ": " << row.error;
    EXPECT_GT(row.compile_seconds, 0) << row.config << " was not compiled";
  }

  // Another process of host-a, with an empty cache of its own.
  const std::vector<server::TrialRecord> again = TuneOn("host-a", /*force=*/true);
  ASSERT_GE(again.size(), 8u);
  for (const server::TrialRecord& row : again) {
    EXPECT_EQ(row.status, ::tunefleet::v1::TRIAL_STATUS_OK) << row.config << ": " << row.error;
    EXPECT_EQ(row.principal, "host:host-a");
    EXPECT_EQ(row.compile_seconds, 0) << row.config << " was compiled again";
  }

  // host-b trusts nothing host-a compiled: it compiles the space itself.
  const std::vector<server::TrialRecord> other = TuneOn("host-b", /*force=*/true);
  ASSERT_GE(other.size(), 8u);
  for (const server::TrialRecord& row : other) {
    if (row.round != server::TrialRound::kSearch) continue;
    EXPECT_EQ(row.status, ::tunefleet::v1::TRIAL_STATUS_OK) << row.config << ": " << row.error;
    EXPECT_GT(row.compile_seconds, 0) << row.config << " was not compiled by host-b";
  }
}

}  // namespace
}  // namespace tunefleet::testing
