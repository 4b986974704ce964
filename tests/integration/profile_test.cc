// Profiles of a finished job's fastest configs (ProfileJob, ListProfiles,
// `tunectl profile`) against a real TLS coordinator and real CPU workers:
// a worker takes the profile lease and answers, for each config, why no
// Nsight Compute metrics can be read on a CPU device; the job stays as it
// was. The GPU side (a real ncu) is tests/gpu/profile_gpu_test.cc.
#include <signal.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
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
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunResult;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;
using Json = nlohmann::json;

constexpr char kCpuReason[] = "profiling is not supported for the cpu backend";

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options = SecureFleetOptions(dir_.path() + "/fleet");
    // Every config measured in full: a config cut early is never profiled,
    // and on a loaded machine the early-cut rule could leave fewer than the
    // top configs the tests ask for.
    options.worker_flags = {"--cut-factor=-1"};
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  // The CPU matmul's three "quick" configs, measured.
  Job TunedMatmul() {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = "M=128,N=128,K=128";
    request.config_set = "quick";
    absl::StatusOr<Job> job = client_->Submit(request);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return Job();
    absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
    EXPECT_TRUE(done.ok()) << done.status();
    return done.ok() ? *done : Job();
  }

  RunResult Tunectl(const std::vector<std::string>& args) {
    return TunectlAsAdmin(*fleet_, args, absl::Seconds(120));
  }

  Json TunectlJson(std::vector<std::string> args) {
    args.insert(args.begin(), {"-o", "json"});
    RunResult run = Tunectl(args);
    EXPECT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
    return Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  }

  // Polls ListProfiles until none is pending (at most a minute).
  std::vector<KernelProfile> Profiled(const std::string& job_id) {
    for (int i = 0; i < 600; ++i) {
      absl::StatusOr<std::vector<KernelProfile>> profiles = client_->ListProfiles(job_id);
      EXPECT_TRUE(profiles.ok()) << profiles.status();
      if (!profiles.ok()) return {};
      bool pending = false;
      for (const KernelProfile& profile : *profiles) pending |= profile.pending;
      if (!pending) return *profiles;
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "profiles of " << job_id << " still pending";
    return {};
  }

  // The coordinator's sample of `series` now (-1 when it has none).
  double Sample(const std::string& series) {
    absl::StatusOr<std::string> text = HttpGet(fleet_->metrics_address(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return -1;
    std::map<std::string, double> samples = ParseSamples(*text);
    auto it = samples.find(series);
    return it == samples.end() ? -1 : it->second;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(ProfileTest, ACpuJobsTopConfigsSayWhyTheyHaveNoMetricsAndTheJobStaysSucceeded) {
  ASSERT_OK(fleet_->StartWorker());
  Job job = TunedMatmul();
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;

  RunResult table = Tunectl({"profile", job.id, "--top", "2"});
  ASSERT_TRUE(table.exit.success()) << table.exit.ToString() << "\n" << table.out;
  EXPECT_THAT(table.out, HasSubstr("OCCUPANCY %"));
  EXPECT_THAT(table.out, HasSubstr(kCpuReason));
  EXPECT_THAT(table.out, Not(HasSubstr("pending")));

  Json json = TunectlJson({"profile", "--show", job.id});
  EXPECT_EQ(json["job_id"], job.id);
  ASSERT_THAT(json["profiles"], SizeIs(2));
  for (int i = 0; i < 2; ++i) {
    const Json& profile = json["profiles"][i];
    EXPECT_EQ(profile["rank"], i + 1);
    EXPECT_EQ(profile["unavailable"], kCpuReason);
    EXPECT_EQ(profile["pending"], false);
    EXPECT_EQ(profile["device_model"], job.targets[0].device_model);
    EXPECT_FALSE(profile["worker_id"].get<std::string>().empty());
    EXPECT_GT(profile["median_seconds"].get<double>(), 0);
    EXPECT_GT(profile["profiled_unix_ms"].get<int64_t>(), 0);
  }
  // The fastest config is the job's best.
  EXPECT_EQ(json["profiles"][0]["config"], job.targets[0].best_config);

  RunResult csv = Tunectl({"-o", "csv", "profile", "--show", job.id});
  ASSERT_TRUE(csv.exit.success()) << csv.out;
  std::vector<std::string> lines = absl::StrSplit(csv.out, "\r\n", absl::SkipEmpty());
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], HasSubstr("achieved_occupancy_pct"));
  EXPECT_THAT(lines[1], HasSubstr(kCpuReason));

  RunResult yaml = Tunectl({"-o", "yaml", "profile", "--show", job.id});
  ASSERT_TRUE(yaml.exit.success()) << yaml.out;
  EXPECT_THAT(yaml.out, HasSubstr("\"job_id\": \"" + job.id + "\"\n"));
  EXPECT_THAT(yaml.out, HasSubstr("\"unavailable\": \"" + std::string(kCpuReason) + "\"\n"));
  EXPECT_THAT(yaml.out, HasSubstr("\"config\": \"" + job.targets[0].best_config + "\"\n"));

  absl::StatusOr<Job> after = client_->GetJob(job.id);
  ASSERT_OK(after);
  EXPECT_EQ(after->state, JobState::kSucceeded);
  EXPECT_EQ(after->targets[0].best_config, job.targets[0].best_config);
}

TEST_F(ProfileTest, AProfileWaitsForAWorkerOfTheModelAndIsAskedForOnce) {
  absl::StatusOr<int> first = fleet_->StartWorker();
  ASSERT_OK(first);
  Job job = TunedMatmul();
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  fleet_->worker(*first)->KillAndWait();

  Json queued = TunectlJson({"profile", job.id, "--top", "1", "--no-wait"});
  ASSERT_THAT(queued["profiles"], SizeIs(1));
  EXPECT_EQ(queued["profiles"][0]["pending"], true);
  absl::StatusOr<std::vector<KernelProfile>> again = client_->ProfileJob(job.id, 1);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
  Json shown = TunectlJson({"profile", "--show", job.id});
  ASSERT_THAT(shown["profiles"], SizeIs(1));
  EXPECT_EQ(shown["profiles"][0]["pending"], true);

  ASSERT_OK(fleet_->StartWorker());
  std::vector<KernelProfile> profiles = Profiled(job.id);
  ASSERT_THAT(profiles, SizeIs(1));
  EXPECT_EQ(profiles[0].unavailable, kCpuReason);
  EXPECT_EQ(profiles[0].config, job.targets[0].best_config);
}

// A request no worker has taken yet is kept by the store: the restarted
// coordinator queues it again, and a worker that joins it profiles it.
TEST_F(ProfileTest, APendingRequestSurvivesACoordinatorRestart) {
  absl::StatusOr<int> first = fleet_->StartWorker();
  ASSERT_OK(first);
  Job job = TunedMatmul();
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  fleet_->worker(*first)->KillAndWait();

  Json queued = TunectlJson({"profile", job.id, "--top", "2", "--no-wait"});
  ASSERT_THAT(queued["profiles"], SizeIs(2));
  EXPECT_EQ(queued["profiles"][1]["pending"], true);
  EXPECT_EQ(Sample("tunefleet_coordinator_profile_requests_pending"), 2);

  absl::StatusOr<ExitInfo> stopped = fleet_->StopCoordinator();
  ASSERT_OK(stopped);
  EXPECT_TRUE(stopped->success()) << stopped->ToString();
  ASSERT_OK(fleet_->StartCoordinator());  // same data dir, new port
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*fleet_);
  ASSERT_OK(client);
  client_ = *std::move(client);
  Json shown = TunectlJson({"profile", "--show", job.id});
  ASSERT_THAT(shown["profiles"], SizeIs(2));
  EXPECT_EQ(shown["profiles"][0]["pending"], true);
  EXPECT_EQ(shown["profiles"][1]["pending"], true);
  EXPECT_EQ(Sample("tunefleet_coordinator_profile_requests_pending"), 2);

  ASSERT_OK(fleet_->StartWorker());
  std::vector<KernelProfile> profiles = Profiled(job.id);
  ASSERT_THAT(profiles, SizeIs(2));
  for (const KernelProfile& profile : profiles) EXPECT_EQ(profile.unavailable, kCpuReason);
  EXPECT_EQ(profiles[0].config, job.targets[0].best_config);
  EXPECT_EQ(Sample("tunefleet_coordinator_profile_requests_pending"), 0);
  EXPECT_EQ(Sample("tunefleet_coordinator_profiles_total{outcome=\"unavailable\"}"), 2);
  EXPECT_EQ(Sample("tunefleet_coordinator_profiles_total{outcome=\"read\"}"), 0);
}

TEST_F(ProfileTest, BadRequestsGetClearErrorsAndTheCoordinatorKeepsServing) {
  EXPECT_EQ(client_->ProfileJob("no-such-job", 3).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->ListProfiles("no-such-job").status().code(),
            absl::StatusCode::kNotFound);
  RunResult unknown = Tunectl({"profile", "no-such-job"});
  EXPECT_EQ(unknown.exit.code, 5) << unknown.exit.ToString();

  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
  request.shape = "M=128,N=128,K=128";
  // No worker runs: the job stays QUEUED.
  absl::StatusOr<Job> queued = client_->Submit(request);
  ASSERT_OK(queued);
  absl::StatusOr<std::vector<KernelProfile>> unfinished = client_->ProfileJob(queued->id, 3);
  EXPECT_EQ(unfinished.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unfinished.status().message(), HasSubstr("SUCCEEDED"));

  for (int top : {0, -1, 17}) {
    absl::StatusOr<std::vector<KernelProfile>> bad = client_->ProfileJob(queued->id, top);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << top;
    EXPECT_THAT(bad.status().message(), HasSubstr("top must be 1..16"));
  }
  RunResult too_many = Tunectl({"profile", queued->id, "--top", "17"});
  EXPECT_EQ(too_many.exit.code, 1) << too_many.exit.ToString();

  absl::StatusOr<Job> still = client_->GetJob(queued->id);
  ASSERT_OK(still);
  EXPECT_EQ(still->state, JobState::kQueued);
}

}  // namespace
}  // namespace tunefleet::testing
