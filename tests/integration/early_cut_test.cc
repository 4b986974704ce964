// The early-cut rule across a real fleet: a coordinator process, a CPU worker
// process, the SQLite store. The same job tuned with the rule off and on
// picks the same best; with it on, the slow configs are stored cut, with
// fewer samples than their full measurement.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "bench/local_fleet.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;

constexpr char kShape[] = "N=65536";

// One fleet (coordinator and one worker with `worker_flags`) tuning
// repeat_cpu; the finished job and its search rows by config.
struct Tuned {
  Job job;
  std::map<std::string, server::TrialRecord> rows;
};

class EarlyCutFleetTest : public ::testing::Test {
 protected:
  Tuned Tune(const std::string& name, std::vector<std::string> worker_flags) {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path() + "/" + name;
    options.worker_flags = std::move(worker_flags);
    std::filesystem::create_directories(options.data_dir);
    Fleet fleet(options);
    Tuned tuned;
    EXPECT_OK(fleet.StartCoordinator());
    EXPECT_OK(fleet.StartWorker());
    ClientOptions client_options;
    client_options.target = fleet.address();
    client_options.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
    EXPECT_OK(client);
    if (!client.ok()) return tuned;
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/tests/worker/repeat_cpu";
    request.shape = kShape;
    absl::StatusOr<Job> job = (*client)->Submit(request);
    EXPECT_OK(job);
    if (!job.ok()) return tuned;
    absl::StatusOr<Job> done = (*client)->Watch(job->id, [](const Job&) {});
    EXPECT_OK(done);
    if (!done.ok()) return tuned;
    tuned.job = *done;
    auto store = server::OpenStore(fleet.database_url());
    EXPECT_OK(store);
    auto trials = (*store)->ListTrials(done->id);
    EXPECT_OK(trials);
    for (const server::TrialRecord& row : *trials) {
      if (row.round == server::TrialRound::kSearch) tuned.rows[row.config] = row;
    }
    return tuned;
  }

  static bool Fastest(const std::string& config) {
    return absl::StartsWith(config, "REPEAT=1,");
  }

  TempDir dir_;
};

TEST_F(EarlyCutFleetTest, LosersAreCutAndTheBestIsTheSameAsWithoutCutting) {
  // The full measurement samples its whole budget: neither the cut nor the
  // precision rule stops it.
  Tuned full = Tune("full", {"--cut-factor=-1", "--precision=-1"});
  Tuned cut = Tune("cut", {});
  ASSERT_EQ(full.job.state, JobState::kSucceeded) << full.job.reason;
  ASSERT_EQ(cut.job.state, JobState::kSucceeded) << cut.job.reason;
  // Every config once in both, all OK.
  ASSERT_EQ(full.rows.size(), 8u);
  ASSERT_EQ(cut.rows.size(), 8u);
  int cut_rows = 0;
  for (const auto& [config, row] : full.rows) {
    EXPECT_EQ(row.status, 1) << config << ": " << row.error;
    EXPECT_FALSE(row.cut_early) << config;
  }
  for (const auto& [config, row] : cut.rows) {
    EXPECT_EQ(row.status, 1) << config << ": " << row.error;
    if (!row.cut_early) continue;
    ++cut_rows;
    EXPECT_FALSE(Fastest(config)) << "the fastest config was cut";
    // Cut after the minimum samples (5), before the full measurement's.
    EXPECT_GE(row.samples, 5) << config;
    ASSERT_TRUE(full.rows.contains(config));
    EXPECT_LT(row.samples, full.rows.at(config).samples) << config;
    EXPECT_GT(row.median_seconds, 0) << config;
  }
  // REPEAT=16 and 32 are 16 and 32 times slower than REPEAT=1: every
  // config measured after a REPEAT=1 one is cut at least.
  EXPECT_GE(cut_rows, 2);
  // The same best: a REPEAT=1 config (the two differ only in a no-op).
  ASSERT_EQ(full.job.targets.size(), 1u);
  ASSERT_EQ(cut.job.targets.size(), 1u);
  EXPECT_TRUE(Fastest(full.job.targets[0].best_config)) << full.job.targets[0].best_config;
  EXPECT_TRUE(Fastest(cut.job.targets[0].best_config)) << cut.job.targets[0].best_config;
  EXPECT_FALSE(cut.rows.at(cut.job.targets[0].best_config).cut_early);
}

}  // namespace
}  // namespace tunefleet::testing
