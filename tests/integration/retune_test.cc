// A retune against a real TLS coordinator and CPU worker process: a retune
// measures the served config beside its own configs and keeps it served
// while it wins or ties (CONFIRMED); with the finalists round off, a slower
// retune of a tuned key is stored and reported REGRESSED while the faster
// best stays served (tunectl submit --wait, history, the job, GetBestConfig,
// the coordinator's retune counter), and `--replace` replaces it all the same.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "bench/local_fleet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/fleet_client.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::RunResult;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kShape[] = "M=96,N=96,K=96";
// i-j-k with the smallest blocks: dot products down B's columns, which the
// vectorised i-k-j configs of the exhaustive search beat several times over.
constexpr char kSlowConfig[] = "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=1";

class RetuneTest : public ::testing::Test {
 protected:
  // `finalists` = 0 turns the finalists round off, and with it the served
  // config's re-measurement: a retune is then judged across runs.
  void StartFleet(int finalists) {
    bench::FleetOptions options = SecureFleetOptions(dir_.path() + "/fleet");
    options.finalists = finalists;
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
    ASSERT_OK(fleet_->StartWorker());
  }

  // A copy of the CPU matmul kernel with a config set "slow" of kSlowConfig
  // alone. Config sets are no part of the tuning key: its key is matmul's.
  std::string SlowMatmulDir() {
    const std::string kernel_dir = dir_.path() + "/matmul";
    if (!std::filesystem::exists(kernel_dir)) {
      std::filesystem::copy(SourceDir() + "/kernels/cpu/matmul", kernel_dir);
      std::ofstream(kernel_dir + "/kernel.textproto", std::ios::app)
          << "\nconfig_sets { name: \"slow\" configs: [\"" << kSlowConfig << "\"] }\n";
    }
    return kernel_dir;
  }

  BestConfig Served() {
    absl::StatusOr<BestConfig> best = client_->GetBestConfig("matmul", kShape, "", "");
    EXPECT_TRUE(best.ok()) << best.status();
    return best.ok() ? *best : BestConfig();
  }

  // tunectl submit of the slow set, forced, waiting; stdout and exit code.
  RunResult SubmitSlow(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"submit", SlowMatmulDir(), "--shape", kShape,
                                     "--config-set", "slow", "--wait"};
    args.insert(args.end(), flags.begin(), flags.end());
    return TunectlAsAdmin(*fleet_, args, absl::Minutes(3));
  }

  Job LatestJob() {
    JobFilter newest;
    newest.limit = 1;
    absl::StatusOr<JobPage> page = client_->ListJobs(newest);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() && !page->jobs.empty() ? page->jobs[0] : Job();
  }

  std::map<std::string, double> Counters() {
    absl::StatusOr<std::string> text = HttpGet(fleet_->metrics_address(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? ParseSamples(*text) : std::map<std::string, double>();
  }

  // The exhaustive search's best, served.
  Job TuneExhaustively() {
    SubmitRequest exhaustive;
    exhaustive.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    exhaustive.shape = kShape;
    absl::StatusOr<Job> submitted = client_->Submit(exhaustive);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return Job();
    absl::StatusOr<Job> tuned = client_->Watch(submitted->id, [](const Job&) {});
    EXPECT_TRUE(tuned.ok()) << tuned.status();
    return tuned.ok() ? *tuned : Job();
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(RetuneTest, ASlowerRetuneIsKeptAsARecordAndReplaceServesIt) {
  ASSERT_NO_FATAL_FAILURE(StartFleet(/*finalists=*/0));
  const Job tuned = TuneExhaustively();
  ASSERT_EQ(tuned.state, JobState::kSucceeded) << tuned.reason;
  ASSERT_EQ(tuned.targets.size(), 1u);
  EXPECT_EQ(tuned.targets[0].retune, "first");
  const BestConfig before = Served();
  ASSERT_EQ(before.job_id, tuned.id);
  ASSERT_NE(before.config, kSlowConfig);

  RunResult slower = SubmitSlow({"--force"});
  ASSERT_TRUE(slower.exit.success()) << slower.exit.ToString() << "\n" << slower.out;
  EXPECT_THAT(slower.out, HasSubstr("REGRESSED"));
  EXPECT_THAT(slower.out, HasSubstr(absl::StrCat("of job ", tuned.id, ", which is still served")));
  const Job regressed = LatestJob();
  ASSERT_EQ(regressed.state, JobState::kSucceeded) << regressed.reason;
  ASSERT_EQ(regressed.targets.size(), 1u);
  const JobTarget& target = regressed.targets[0];
  EXPECT_EQ(target.tuning_key, tuned.targets[0].tuning_key);
  EXPECT_EQ(target.retune, "regressed");
  EXPECT_EQ(target.best_config, kSlowConfig);
  EXPECT_GT(target.best_seconds, before.median_seconds);
  EXPECT_EQ(target.served_job_id, tuned.id);
  EXPECT_EQ(target.served_seconds, before.median_seconds);
  absl::StatusOr<std::vector<Trial>> kept = client_->ListAllTrials(regressed.id, "OK");
  ASSERT_OK(kept);
  EXPECT_FALSE(kept->empty());  // its trials are stored
  const BestConfig still = Served();
  EXPECT_EQ(still.job_id, tuned.id);
  EXPECT_EQ(still.config, before.config);
  EXPECT_EQ(still.median_seconds, before.median_seconds);

  RunResult history = TunectlAsAdmin(*fleet_, {"-o", "json", "history", "matmul"});
  ASSERT_TRUE(history.exit.success()) << history.out;
  Json points = Json::parse(history.out, nullptr, /*allow_exceptions=*/false)["history"];
  ASSERT_EQ(points.size(), 2u) << history.out;
  EXPECT_EQ(points[1]["job_id"], regressed.id);
  EXPECT_EQ(points[1]["retune"], "regressed");

  RunResult replaced = SubmitSlow({"--replace", "--replace-reason", "pinned for a bisect"});
  ASSERT_TRUE(replaced.exit.success()) << replaced.exit.ToString() << "\n" << replaced.out;
  EXPECT_THAT(replaced.out, HasSubstr("FORCED"));
  EXPECT_THAT(replaced.out, HasSubstr("pinned for a bisect"));
  const Job forced = LatestJob();
  ASSERT_EQ(forced.targets.size(), 1u);
  EXPECT_EQ(forced.targets[0].retune, "forced");
  EXPECT_EQ(forced.targets[0].previous_job_id, tuned.id);
  const BestConfig after = Served();
  EXPECT_EQ(after.job_id, forced.id);
  EXPECT_EQ(after.config, kSlowConfig);

  std::map<std::string, double> counters = Counters();
  EXPECT_EQ(counters["tunefleet_coordinator_retunes_total{outcome=\"regressed\"}"], 1);
  EXPECT_EQ(counters["tunefleet_coordinator_retunes_total{outcome=\"forced\"}"], 1);
  EXPECT_EQ(counters["tunefleet_coordinator_retunes_total{outcome=\"replaced\"}"], 0);
}

// With the finalists round on, the slow set's retune measures the served
// config beside kSlowConfig, on one device: the served config wins there and
// stays served, with the retune's time for it.
TEST_F(RetuneTest, ARetuneMeasuresTheServedConfigBesideItsOwnAndConfirmsIt) {
  ASSERT_NO_FATAL_FAILURE(StartFleet(/*finalists=*/5));
  const Job tuned = TuneExhaustively();
  ASSERT_EQ(tuned.state, JobState::kSucceeded) << tuned.reason;
  const BestConfig before = Served();
  ASSERT_EQ(before.job_id, tuned.id);

  RunResult again = SubmitSlow({"--force"});
  ASSERT_TRUE(again.exit.success()) << again.exit.ToString() << "\n" << again.out;
  EXPECT_THAT(again.out, HasSubstr("CONFIRMED"));
  const Job confirmed = LatestJob();
  ASSERT_EQ(confirmed.state, JobState::kSucceeded) << confirmed.reason;
  ASSERT_EQ(confirmed.targets.size(), 1u);
  EXPECT_EQ(confirmed.targets[0].retune, "confirmed");
  EXPECT_EQ(confirmed.targets[0].best_config, before.config);
  EXPECT_EQ(confirmed.targets[0].served_job_id, confirmed.id);
  EXPECT_EQ(confirmed.targets[0].previous_job_id, tuned.id);
  absl::StatusOr<std::vector<Trial>> rows = client_->ListAllTrials(confirmed.id, "OK");
  ASSERT_OK(rows);
  bool defended = false;
  for (const Trial& trial : *rows) defended |= trial.config == before.config;
  EXPECT_TRUE(defended) << "the served config was not measured again";
  const BestConfig after = Served();
  EXPECT_EQ(after.config, before.config);
  EXPECT_EQ(after.job_id, confirmed.id);
  // How sure: the served config is in its round's tie set (alone, beating
  // kSlowConfig), re-measured over the finalist rounds, measured twice.
  ASSERT_FALSE(after.tie_set.empty());
  EXPECT_EQ(after.tie_set.front().config, before.config);
  EXPECT_EQ(after.configs_in_round, 2);
  EXPECT_GE(after.rounds, 3);
  EXPECT_GE(after.measurements, 2);
  EXPECT_GE(after.devices, 1);
  EXPECT_EQ(Counters()["tunefleet_coordinator_retunes_total{outcome=\"confirmed\"}"], 1);
}

}  // namespace
}  // namespace tunefleet::testing
