// Sweeps against a real TLS coordinator and CPU worker: one submission over
// several shapes (SubmitSweep, `tunectl submit --shape ... --shape ...`),
// each shape a job with its own best, shown as a whole (`tunectl sweep`);
// shapes checked before any job is made; a sweep cancelled in part, and one
// carried over a coordinator restart.
#include <filesystem>
#include <fstream>

#include "bench/local_fleet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::RunResult;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using Json = nlohmann::json;

const std::vector<std::string> kShapes = {"M=128,N=128,K=128", "M=256,N=128,K=128",
                                          "M=256,N=256,K=128"};

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_ = std::make_unique<Fleet>(SecureFleetOptions(dir_.path() + "/fleet"));
    ASSERT_OK(fleet_->StartCoordinator());
    Connect();
  }

  void Connect() {
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  static SubmitRequest Matmul() {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.config_set = "quick";
    return request;
  }

  RunResult Tunectl(const std::vector<std::string>& args) {
    return TunectlAsAdmin(*fleet_, args, absl::Seconds(120));
  }

  std::vector<Job> SweepJobs(const std::string& sweep_id) {
    JobFilter filter;
    filter.sweep_id = sweep_id;
    absl::StatusOr<JobPage> page = client_->ListJobs(filter);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->jobs : std::vector<Job>();
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(SweepTest, OneSubmissionTunesEveryShapeAndEachShapeServesItsOwnBest) {
  ASSERT_OK(fleet_->StartWorker());
  std::vector<std::string> args = {"-o", "json", "submit", SourceDir() + "/kernels/cpu/matmul",
                                   "--config-set", "quick", "--wait"};
  for (const std::string& shape : kShapes) args.insert(args.end(), {"--shape", shape});
  RunResult run = Tunectl(args);
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
  Json sweep = Json::parse(run.out);
  const std::string sweep_id = sweep["sweep_id"];
  ASSERT_THAT(sweep["jobs"], SizeIs(3));
  for (size_t i = 0; i < kShapes.size(); ++i) {
    EXPECT_EQ(sweep["jobs"][i]["shape"], kShapes[i]);  // in the order given
    EXPECT_EQ(sweep["jobs"][i]["state"], "SUCCEEDED");
    EXPECT_EQ(sweep["jobs"][i]["sweep_id"], sweep_id);
  }
  // Each shape has a key and a best of its own, served exactly.
  for (size_t i = 0; i < kShapes.size(); ++i) {
    absl::StatusOr<BestConfig> best = client_->GetBestConfig("matmul", kShapes[i]);
    ASSERT_OK(best);
    EXPECT_EQ(best->source, BestConfig::Source::kExact) << kShapes[i];
    EXPECT_EQ(best->job_id, sweep["jobs"][i]["id"]);
  }
  EXPECT_THAT(SweepJobs(sweep_id), SizeIs(3));
  RunResult table = Tunectl({"sweep", sweep_id});
  ASSERT_TRUE(table.exit.success()) << table.out;
  for (const std::string& shape : kShapes) EXPECT_THAT(table.out, HasSubstr(shape));
  EXPECT_THAT(table.out, HasSubstr("3 shapes, 3 succeeded"));
  EXPECT_EQ(Tunectl({"status", sweep_id}).out, table.out);  // status takes a sweep's id too
  EXPECT_EQ(Tunectl({"sweep", "s-unknown"}).exit.code, 5);
  EXPECT_EQ(Tunectl({"status", "s-unknown"}).exit.code, 5);
}

// A dim's range (and a list) in one --shape is a sweep over its terms, in
// order; a range whose last value is not a term submits nothing.
TEST_F(SweepTest, ARangeInOneShapeIsASweepOverItsTerms) {
  RunResult run = Tunectl({"-o", "json", "submit", SourceDir() + "/kernels/cpu/matmul",
                           "--config-set", "quick", "--shape", "M=64,128,...,256,N=64,K=64,128"});
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
  Json sweep = Json::parse(run.out);
  std::vector<std::string> shapes;
  for (const Json& job : sweep["jobs"]) shapes.push_back(job["shape"]);
  EXPECT_THAT(shapes, ::testing::ElementsAre("M=64,N=64,K=64", "M=64,N=64,K=128",
                                             "M=128,N=64,K=64", "M=128,N=64,K=128",
                                             "M=192,N=64,K=64", "M=192,N=64,K=128",
                                             "M=256,N=64,K=64", "M=256,N=64,K=128"));
  RunResult bad = Tunectl({"submit", SourceDir() + "/kernels/cpu/matmul", "--shape",
                           "M=64,128,...,250,N=64,K=64"});
  EXPECT_FALSE(bad.exit.success());  // why is on stderr (ExpandShapesTest)
  absl::StatusOr<JobPage> page = client_->ListJobs(JobFilter{});
  ASSERT_OK(page);
  EXPECT_THAT(page->jobs, SizeIs(8));  // the sweep's, nothing of the bad range
}

TEST_F(SweepTest, EveryShapeIsCheckedBeforeAnyJobIsMade) {
  absl::StatusOr<Sweep> bad =
      client_->SubmitSweep(Matmul(), {kShapes[0], "M=128,N=128", kShapes[2]});
  EXPECT_THAT(bad.status(), StatusIsWith(absl::StatusCode::kInvalidArgument, "shapes[1]"));
  absl::StatusOr<Sweep> twice = client_->SubmitSweep(Matmul(), {kShapes[0], kShapes[0]});
  EXPECT_THAT(twice.status(), StatusIsWith(absl::StatusCode::kInvalidArgument, "given twice"));
  absl::StatusOr<std::vector<Job>> jobs = client_->ListJobs();
  ASSERT_OK(jobs);
  EXPECT_THAT(*jobs, SizeIs(0));
}

TEST_F(SweepTest, APartlyCancelledSweepSaysWhichShapesFailed) {
  absl::StatusOr<Sweep> sweep = client_->SubmitSweep(Matmul(), kShapes);  // no worker yet
  ASSERT_OK(sweep);
  ASSERT_OK(client_->CancelJob(sweep->jobs[1].id));
  ASSERT_OK(fleet_->StartWorker());
  RunResult waited = Tunectl({"sweep", sweep->id, "--wait"});
  EXPECT_EQ(waited.exit.code, 3) << waited.out;  // a shape did not finish well
  EXPECT_THAT(waited.out, HasSubstr("CANCELLED"));
  EXPECT_THAT(waited.out, HasSubstr("3 shapes, 2 succeeded"));
}

TEST_F(SweepTest, ASweepOutlivesACoordinatorRestart) {
  absl::StatusOr<Sweep> sweep = client_->SubmitSweep(Matmul(), kShapes);
  ASSERT_OK(sweep);
  absl::StatusOr<ExitInfo> stopped = fleet_->StopCoordinator();
  ASSERT_OK(stopped);
  ASSERT_OK(fleet_->StartCoordinator());
  Connect();
  ASSERT_OK(fleet_->StartWorker());
  Json done = Json::parse(Tunectl({"-o", "json", "sweep", sweep->id, "--wait"}).out);
  ASSERT_THAT(done["jobs"], SizeIs(3));
  for (const Json& job : done["jobs"]) {
    EXPECT_EQ(job["state"], "SUCCEEDED") << job.dump();
    EXPECT_EQ(job["sweep_id"], sweep->id);
  }
}

}  // namespace
}  // namespace tunefleet::testing
