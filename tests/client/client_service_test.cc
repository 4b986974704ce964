// The client library over real gRPC against a scripted fake coordinator:
// what crosses the wire, deadlines, status codes, and watch streaming.
#include <sstream>

#include "client/tunectl/commands.h"
#include "client/tunectl/trials.h"
#include "client/tunectl/exit_codes.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "tests/client/fake_tuning_service.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ClientServiceTest : public ::testing::Test {
 protected:
  std::unique_ptr<Client> Connect(
      std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    ClientOptions options;
    options.target = server_.address();
    options.insecure = true;
    options.deadline = deadline;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    EXPECT_OK(client.status());
    return std::move(client).value();
  }

  std::string MatmulDir() const { return SourceDir() + "/kernels/cpu/matmul"; }

  FakeTuningService service_;
  FakeServer server_{&service_};
};

TEST_F(ClientServiceTest, SubmitSendsSpecSourcesAndNormalizedShape) {
  SubmitRequest request;
  request.kernel_dir = MatmulDir();
  request.shape = "K=64,M=128,N=256";
  request.strategy = "random";
  request.budget = 7;
  request.seed = 42;
  request.config_set = "quick";
  absl::StatusOr<Job> job = Connect()->Submit(request);
  ASSERT_OK(job.status());
  EXPECT_EQ(job->id, "job-1");
  EXPECT_EQ(job->shape, "M=128,N=256,K=64");

  std::optional<v1::SubmitJobRequest> sent = service_.last_submit();
  ASSERT_TRUE(sent.has_value());
  const v1::JobSpec& spec = sent->spec();
  EXPECT_EQ(spec.kernel().name(), "matmul");
  std::vector<std::string> paths;
  for (const v1::SourceFile& file : spec.sources()) {
    paths.push_back(file.path());
    EXPECT_FALSE(file.content().empty()) << file.path();
    EXPECT_EQ(file.digest(), Sha256Hex(file.content())) << file.path();
  }
  EXPECT_THAT(paths, ElementsAre("matmul.cc", "reference.cc"));
  EXPECT_EQ(spec.strategy(), "random");
  EXPECT_EQ(spec.budget(), 7);
  EXPECT_EQ(spec.seed(), 42u);
  EXPECT_EQ(spec.config_set(), "quick");
}

TEST_F(ClientServiceTest, SubmitRejectsABadShapeWithoutCallingTheServer) {
  SubmitRequest request;
  request.kernel_dir = MatmulDir();
  request.shape = "M=128,N=256";
  EXPECT_THAT(Connect()->Submit(request),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(service_.last_submit().has_value());
}

TEST_F(ClientServiceTest, SubmitOfAMissingKernelDirIsNotFound) {
  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/no/such";
  request.shape = "M=1,N=1,K=1";
  EXPECT_THAT(Connect()->Submit(request),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientServiceTest, SlowServerGivesDeadlineExceeded) {
  std::unique_ptr<Client> client = Connect(std::chrono::milliseconds(200));
  EXPECT_THAT(client->GetJob(kSlowJob),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(ClientServiceTest, UnreachableServerGivesUnavailable) {
  std::string address;
  {
    FakeTuningService gone;
    FakeServer stopped(&gone);
    address = stopped.address();
  }
  ClientOptions options;
  options.target = address;
  options.insecure = true;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_OK(client.status());
  EXPECT_THAT((*client)->ListJobs(),
              StatusIsWith(absl::StatusCode::kUnavailable, address));
  EXPECT_THAT((*client)->Watch("job-1", [](const Job&) {}),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(ClientServiceTest, ConnectRejectsAnEmptyTarget) {
  ClientOptions options;
  options.target = "";
  options.insecure = true;
  EXPECT_THAT(Client::Connect(options),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(ClientServiceTest, NotFoundPassesThrough) {
  std::unique_ptr<Client> client = Connect();
  EXPECT_THAT(client->GetJob("nope"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client->CancelJob("nope"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client->Watch("nope", [](const Job&) {}),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client->GetBestConfig("conv", "M=1"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientServiceTest, WatchDeliversUpdatesUntilAFinalState) {
  service_.AddJob("j", {MakeJob("j", v1::JOB_STATE_QUEUED, 0, 4),
                        MakeJob("j", v1::JOB_STATE_RUNNING, 2, 4),
                        MakeJob("j", v1::JOB_STATE_SUCCEEDED, 4, 4)});
  std::vector<int64_t> seen;
  absl::StatusOr<Job> last = Connect()->Watch(
      "j", [&seen](const Job& job) { seen.push_back(job.trials_done); });
  ASSERT_OK(last.status());
  EXPECT_EQ(last->state, JobState::kSucceeded);
  EXPECT_THAT(seen, ElementsAre(0, 2, 4));
}

TEST_F(ClientServiceTest, WatchOfAFinishedJobReturnsItOnce) {
  service_.AddJob("done", {MakeJob("done", v1::JOB_STATE_FAILED, 3, 4)});
  int calls = 0;
  absl::StatusOr<Job> last =
      Connect()->Watch("done", [&](const Job&) { ++calls; });
  ASSERT_OK(last.status());
  EXPECT_EQ(last->state, JobState::kFailed);
  EXPECT_EQ(calls, 1);
}

TEST_F(ClientServiceTest, StreamEndingBeforeAFinalStateIsUnavailable) {
  service_.AddJob("cut", {MakeJob("cut", v1::JOB_STATE_RUNNING, 1, 4)});
  EXPECT_THAT(
      Connect()->Watch("cut", [](const Job&) {}),
      StatusIsWith(absl::StatusCode::kUnavailable, "before the job finished"));
}

TEST_F(ClientServiceTest, CancelWatchesEndsAWatchInProgress) {
  std::unique_ptr<Client> client = Connect();
  int updates = 0;
  absl::StatusOr<Job> last = client->Watch(kEndlessJob, [&](const Job&) {
    ++updates;
    client->CancelWatches();
  });
  EXPECT_THAT(last, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(updates, 1);
  // Later watches end at once.
  EXPECT_THAT(client->Watch(kEndlessJob, [](const Job&) {}),
              StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(ClientServiceTest, GetBestConfigConvertsTheAnswer) {
  v1::GetBestConfigResponse best;
  best.set_source(v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE);
  v1::ParamValue* value = best.mutable_config()->add_values();
  value->set_name("BLOCK_M");
  value->set_value(64);
  best.set_config_text("BLOCK_M=64");
  best.set_median_seconds(0.5);
  service_.set_best(best);
  absl::StatusOr<BestConfig> got =
      Connect()->GetBestConfig("matmul", "M=1,N=2,K=3");
  ASSERT_OK(got.status());
  EXPECT_EQ(got->source, BestConfig::Source::kNearestShape);
  EXPECT_EQ(got->values.at("BLOCK_M"), 64);
  EXPECT_EQ(got->config, "BLOCK_M=64");
}

TEST_F(ClientServiceTest, GetBestConfigRejectsABadShapeText) {
  EXPECT_THAT(Connect()->GetBestConfig("matmul", "M=one"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(ClientServiceTest, ListWorkersConvertsDevices) {
  absl::StatusOr<std::vector<WorkerInfo>> workers = Connect()->ListWorkers();
  ASSERT_OK(workers.status());
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_EQ((*workers)[0].devices.at(0).backend, "CPU");
}

// tunectl's verbs over the same fake.
class TunectlServiceTest : public ClientServiceTest {
 protected:
  tunectl::Console MakeConsole(tunectl::OutputFormat format) {
    tunectl::Console console;
    console.out = &out_;
    console.err = &err_;
    console.format = format;
    return console;
  }
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(TunectlServiceTest, WatchPrintsTheSummaryAndFlagsFailedTrials) {
  v1::Job done = MakeJob("j", v1::JOB_STATE_SUCCEEDED, 4, 4);
  v1::StatusCount* bad = done.add_outcomes();
  bad->set_status(v1::TRIAL_STATUS_COMPILE_ERROR);
  bad->set_count(1);
  service_.AddJob("j", {MakeJob("j", v1::JOB_STATE_RUNNING, 1, 4), done});
  std::unique_ptr<Client> client = Connect();
  int code = tunectl::RunWatch(*client, "j",
                               MakeConsole(tunectl::OutputFormat::kTable));
  EXPECT_EQ(code, tunectl::kExitJobFailed);
  EXPECT_THAT(out_.str(), HasSubstr("COMPILE_ERROR 1"));
  EXPECT_THAT(err_.str(), HasSubstr("RUNNING 1/4"));
}

TEST_F(TunectlServiceTest, QuietWatchPrintsTheSummaryWithoutProgressButStillErrors) {
  v1::Job done = MakeJob("j", v1::JOB_STATE_SUCCEEDED, 4, 4);
  service_.AddJob("j", {MakeJob("j", v1::JOB_STATE_RUNNING, 1, 4), done});
  std::unique_ptr<Client> client = Connect();
  tunectl::Console console = MakeConsole(tunectl::OutputFormat::kTable);
  console.quiet = true;
  EXPECT_EQ(tunectl::RunWatch(*client, "j", console), tunectl::kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("SUCCEEDED"));
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(tunectl::RunStatus(*client, "nope", console), tunectl::kExitNotFound);
  EXPECT_THAT(err_.str(), HasSubstr("no job nope"));
}

TEST_F(TunectlServiceTest, StatusOfAnUnknownJobExitsNotFound) {
  std::unique_ptr<Client> client = Connect();
  EXPECT_EQ(tunectl::RunStatus(*client, "nope",
                               MakeConsole(tunectl::OutputFormat::kJson)),
            tunectl::kExitNotFound);
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(err_.str(), HasSubstr("no job nope"));
}

TEST_F(TunectlServiceTest, JobsAsJsonIsOneDocument) {
  service_.AddJob("a", {MakeJob("a", v1::JOB_STATE_SUCCEEDED, 4, 4)});
  std::unique_ptr<Client> client = Connect();
  ASSERT_EQ(
      tunectl::RunJobs(*client, tunectl::JobsFlags{}, MakeConsole(tunectl::OutputFormat::kJson)),
      tunectl::kExitOk);
  EXPECT_THAT(out_.str(), ::testing::StartsWith("{\n  \"jobs\": [\n"));
  EXPECT_THAT(out_.str(), HasSubstr("\"state\": \"SUCCEEDED\""));
}

TEST_F(TunectlServiceTest, SubmitPrintsOnlyTheJobIdOnStdout) {
  SubmitRequest request;
  request.kernel_dir = MatmulDir();
  request.shape = "M=64,N=64,K=64";
  std::unique_ptr<Client> client = Connect();
  EXPECT_EQ(tunectl::RunSubmit(*client, request, /*wait=*/false,
                               MakeConsole(tunectl::OutputFormat::kTable)),
            tunectl::kExitOk);
  EXPECT_EQ(out_.str(), "job-1\n");
}

}  // namespace
}  // namespace tunefleet::testing
