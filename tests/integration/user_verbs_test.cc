// What a user reads of a fleet, against a real TLS coordinator and worker
// process: every trial of a job with its failure reason (ListTrials, `tunectl
// trials` as table, JSON and CSV), and jobs filtered by state, kernel and
// owner, a page at a time (ListJobs, `tunectl jobs`).
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/local_fleet.h"
#include "common/file_util.h"
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

constexpr char kShape[] = "M=256,N=256,K=256";
constexpr char kRefusal[] = "UNROLL 4 is refused by this kernel";

class UserVerbsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_ = std::make_unique<Fleet>(SecureFleetOptions(dir_.path() + "/fleet"));
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  // A copy of the CPU matmul kernel whose UNROLL=4 configs do not compile.
  SubmitRequest PartlyBrokenMatmul() {
    const std::string kernel_dir = dir_.path() + "/matmul";
    if (!std::filesystem::exists(kernel_dir)) {
      std::filesystem::copy(SourceDir() + "/kernels/cpu/matmul", kernel_dir);
      std::ofstream(kernel_dir + "/matmul.cc", std::ios::app)
          << "\n#if UNROLL == 4\n#error \"" << kRefusal << "\"\n#endif\n";
    }
    SubmitRequest request;
    request.kernel_dir = kernel_dir;
    request.shape = kShape;
    request.config_set = "quick";  // one UNROLL=1 config, two UNROLL=4 ones
    return request;
  }

  Job SubmitAndWait(const SubmitRequest& request) {
    absl::StatusOr<Job> job = client_->Submit(request);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return Job();
    absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
    EXPECT_TRUE(done.ok()) << done.status();
    return done.ok() ? *done : Job();
  }

  // A job submitted while no worker runs: it stays QUEUED.
  Job SubmitQueued() {
    absl::StatusOr<Job> job = client_->Submit(PartlyBrokenMatmul());
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : Job();
  }

  // tunectl `args` as the fleet's admin; stdout and the exit code.
  RunResult Tunectl(const std::vector<std::string>& args) {
    return TunectlAsAdmin(*fleet_, args, absl::Seconds(60));
  }

  // The same, with stderr after stdout in `out`.
  RunResult TunectlWithErrors(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1",
                                     BuildDir() + "/bin/tunectl", "--server",
                                     fleet_->address()};
    for (const std::string& flag : fleet_->TunectlFlags()) argv.push_back(flag);
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RunResult> run = bench::RunProgram(argv, absl::Seconds(60));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *std::move(run) : RunResult();
  }

  Json TunectlJson(std::vector<std::string> args) {
    args.insert(args.begin(), {"-o", "json"});
    RunResult run = Tunectl(args);
    EXPECT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
    return Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

std::vector<std::string> Statuses(const std::vector<Trial>& trials) {
  std::vector<std::string> statuses;
  for (const Trial& trial : trials) statuses.push_back(trial.status);
  return statuses;
}

// Each trial's round, config, status and error, a line each: what a failed
// expectation about a job's trials prints.
std::string Describe(const absl::StatusOr<std::vector<Trial>>& trials) {
  if (!trials.ok()) return trials.status().ToString();
  std::string out;
  for (const Trial& trial : *trials) {
    absl::StrAppend(&out, trial.round, " ", trial.config, ": ", trial.status, " ",
                    trial.error.substr(0, 300), "\n");
  }
  return out;
}

TEST_F(UserVerbsTest, TrialsShowEveryConfigWithTheReasonOfEachFailure) {
  ASSERT_OK(fleet_->StartWorker());
  Job job = SubmitAndWait(PartlyBrokenMatmul());
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason << "\n"
                                              << Describe(client_->ListAllTrials(job.id));
  ASSERT_EQ(job.outcomes["COMPILE_ERROR"], 2) << Describe(client_->ListAllTrials(job.id));

  absl::StatusOr<std::vector<Trial>> failed = client_->ListAllTrials(job.id, "COMPILE_ERROR");
  ASSERT_OK(failed);
  ASSERT_THAT(*failed, SizeIs(2));
  std::set<std::string> failed_configs;
  for (const Trial& trial : *failed) {
    EXPECT_EQ(trial.status, "COMPILE_ERROR");
    EXPECT_THAT(trial.error, HasSubstr(kRefusal)) << trial.config;
    EXPECT_THAT(trial.config, HasSubstr("UNROLL=4"));
    EXPECT_EQ(trial.round, "search");
    EXPECT_FALSE(trial.device_model.empty());
    failed_configs.insert(trial.config);
  }
  EXPECT_THAT(failed_configs, SizeIs(2));
  absl::StatusOr<std::vector<Trial>> all = client_->ListAllTrials(job.id);
  ASSERT_OK(all);
  ASSERT_GE(all->size(), 3u);  // the search, and the finalists' own rows
  EXPECT_EQ((*all)[0].tuning_key, job.targets[0].tuning_key);

  // One trial per page, in the same order.
  std::vector<Trial> paged;
  std::string token;
  do {
    absl::StatusOr<TrialPage> page = client_->ListTrials(job.id, "", /*page_size=*/1, token);
    ASSERT_OK(page);
    ASSERT_LE(page->trials.size(), 1u);
    paged.insert(paged.end(), page->trials.begin(), page->trials.end());
    token = page->next_page_token;
  } while (!token.empty() && paged.size() <= all->size());
  EXPECT_EQ(Statuses(paged), Statuses(*all)) << Describe(*all);
}

TEST_F(UserVerbsTest, TunectlTrialsPrintsTableJsonAndCsv) {
  ASSERT_OK(fleet_->StartWorker());
  Job job = SubmitAndWait(PartlyBrokenMatmul());
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;

  Json json = TunectlJson({"trials", job.id, "--status", "compile_error"});
  ASSERT_TRUE(json.is_object()) << json;
  EXPECT_EQ(json["job_id"], job.id);
  ASSERT_THAT(json["trials"], SizeIs(2));
  for (const Json& trial : json["trials"]) {
    EXPECT_EQ(trial["status"], "COMPILE_ERROR");
    EXPECT_THAT(trial["error"].get<std::string>(), HasSubstr(kRefusal));
  }

  RunResult table = Tunectl({"trials", job.id});
  ASSERT_TRUE(table.exit.success()) << table.out;
  std::vector<std::string> lines = absl::StrSplit(table.out, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 4u);  // header, and a row per trial
  EXPECT_THAT(lines[0], HasSubstr("REASON"));
  EXPECT_THAT(table.out, HasSubstr("COMPILE_ERROR"));
  EXPECT_THAT(table.out, HasSubstr("OK"));
  EXPECT_THAT(table.out, HasSubstr(kRefusal));  // the compiler's diagnostic

  RunResult wide = Tunectl({"-o", "wide", "trials", job.id});
  ASSERT_TRUE(wide.exit.success()) << wide.out;
  EXPECT_THAT(wide.out, HasSubstr("PRINCIPAL"));
  EXPECT_THAT(wide.out, HasSubstr(job.targets[0].tuning_key));

  RunResult csv = Tunectl({"-o", "csv", "trials", job.id, "--status", "ok"});
  ASSERT_TRUE(csv.exit.success()) << csv.out;
  std::vector<std::string> rows = absl::StrSplit(csv.out, "\r\n", absl::SkipEmpty());
  ASSERT_GE(rows.size(), 2u);
  EXPECT_THAT(rows[0], ::testing::StartsWith("config,device_model,status,median_seconds"));
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_THAT(rows[i], HasSubstr(",OK,"));

  EXPECT_EQ(Tunectl({"trials", "j-unknown"}).exit.code, 5);  // not found
  EXPECT_EQ(Tunectl({"trials", job.id, "--status", "nonsense"}).exit.code, 2);
}

TEST_F(UserVerbsTest, AReadTokenListsTrialsButABadPageTokenIsRefused) {
  Job queued = SubmitQueued();
  absl::StatusOr<IssuedToken> reader = client_->CreateToken("reader", "read");
  ASSERT_OK(reader);
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectAs(*fleet_, reader->token);
  ASSERT_OK(client);
  absl::StatusOr<TrialPage> page = (*client)->ListTrials(queued.id);
  ASSERT_OK(page);
  EXPECT_TRUE(page->trials.empty());
  EXPECT_THAT((*client)->ListTrials(queued.id, "", 0, "t1:nonsense"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT((*client)->ListTrials(queued.id, "SLOW"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  JobFilter filter;
  filter.page_token = "garbage";
  EXPECT_THAT((*client)->ListJobs(filter), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_OK((*client)->ListJobs(JobFilter{}));  // the coordinator keeps serving
}

// A wrong result's values are the kernel's output, which a kernel can fill
// with whatever it read: its owner (and an admin) sees them, another reader
// the outcome alone.
TEST_F(UserVerbsTest, AWrongResultsValuesAreShownToTheJobsOwnerAlone) {
  ASSERT_OK(fleet_->StartWorker());
  const std::string kernel_dir = dir_.path() + "/wrong";
  std::filesystem::copy(SourceDir() + "/kernels/cpu/matmul", kernel_dir);
  absl::StatusOr<std::string> read_source = ReadFile(kernel_dir + "/matmul.cc");
  ASSERT_OK(read_source);
  std::string source = *std::move(read_source);
  const std::string zeroed = "std::memset(C, 0, sizeof(float) * M * N);";
  ASSERT_NE(source.find(zeroed), std::string::npos);
  source.replace(source.find(zeroed), zeroed.size(),
                 zeroed + "\n  if (UNROLL == 4) C[3] = 1234.5f;");
  std::ofstream(kernel_dir + "/matmul.cc") << source;
  SubmitRequest request;
  request.kernel_dir = kernel_dir;
  request.shape = kShape;
  request.config_set = "quick";  // one UNROLL=1 config, two UNROLL=4 ones
  Job job = SubmitAndWait(request);
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  ASSERT_EQ(job.outcomes["WRONG_RESULT"], 2) << Describe(client_->ListAllTrials(job.id));

  absl::StatusOr<std::vector<Trial>> owned = client_->ListAllTrials(job.id, "WRONG_RESULT");
  ASSERT_OK(owned);
  ASSERT_THAT(*owned, SizeIs(2));
  for (const Trial& trial : *owned) EXPECT_THAT(trial.error, HasSubstr("first at [3]: got"));

  absl::StatusOr<IssuedToken> reader = client_->CreateToken("reader", "read");
  ASSERT_OK(reader);
  absl::StatusOr<std::unique_ptr<Client>> other = ConnectAs(*fleet_, reader->token);
  ASSERT_OK(other);
  absl::StatusOr<std::vector<Trial>> read = (*other)->ListAllTrials(job.id);
  ASSERT_OK(read);
  int wrong = 0;
  for (const Trial& trial : *read) {
    if (trial.status != "WRONG_RESULT") continue;
    ++wrong;
    EXPECT_THAT(trial.error, HasSubstr("shown to the job's owner"));
    EXPECT_THAT(trial.error, ::testing::Not(HasSubstr("got"))) << trial.error;
  }
  EXPECT_EQ(wrong, 2);

  // A job that found no right config says so to every reader, without the
  // values.
  const std::string every = "if (UNROLL == 4) C[3]";
  source.replace(source.find(every), every.size(), "if (UNROLL > 0) C[3]");
  std::ofstream(kernel_dir + "/matmul.cc") << source;
  Job failed = SubmitAndWait(request);
  ASSERT_EQ(failed.state, JobState::kFailed) << failed.reason;
  EXPECT_THAT(failed.reason, HasSubstr("WRONG_RESULT: the outputs differ from the reference"));
  EXPECT_THAT(failed.reason, ::testing::Not(HasSubstr("got")));
}

TEST_F(UserVerbsTest, JobsAreFilteredByStateKernelAndOwnerAndPaged) {
  Job cancelled = SubmitQueued();
  ASSERT_OK(client_->CancelJob(cancelled.id));
  Job queued = SubmitQueued();
  ASSERT_FALSE(queued.owner.empty());

  Json json = TunectlJson({"jobs", "--state", "queued"});
  ASSERT_THAT(json["jobs"], SizeIs(1));
  EXPECT_EQ(json["jobs"][0]["id"], queued.id);
  json = TunectlJson({"jobs", "--state", "CANCELLED", "--kernel", "matmul"});
  ASSERT_THAT(json["jobs"], SizeIs(1));
  EXPECT_EQ(json["jobs"][0]["id"], cancelled.id);
  RunResult unknown = TunectlWithErrors({"jobs", "--kernel", "softmax"});
  EXPECT_EQ(unknown.exit.code, 5) << unknown.out;  // never submitted here
  EXPECT_THAT(unknown.out, HasSubstr("known kernels: \"matmul\""));
  EXPECT_THAT(TunectlJson({"jobs", "--owner", "somebody-else"})["jobs"], SizeIs(0));
  EXPECT_THAT(TunectlJson({"jobs", "--owner", queued.owner})["jobs"], SizeIs(2));

  // Newest first, one per page.
  json = TunectlJson({"jobs", "--limit", "1"});
  ASSERT_THAT(json["jobs"], SizeIs(1));
  EXPECT_EQ(json["jobs"][0]["id"], queued.id);
  ASSERT_TRUE(json.contains("next_page_token"));
  json = TunectlJson(
      {"jobs", "--limit", "1", "--page-token", json["next_page_token"].get<std::string>()});
  ASSERT_THAT(json["jobs"], SizeIs(1));
  EXPECT_EQ(json["jobs"][0]["id"], cancelled.id);

  RunResult yaml = Tunectl({"-o", "yaml", "jobs", "--state", "queued"});
  ASSERT_TRUE(yaml.exit.success());
  EXPECT_THAT(yaml.out, ::testing::StartsWith("\"jobs\":\n  -\n    \"id\": \"" + queued.id + "\"\n"));

  RunResult table = Tunectl({"jobs", "--state", "queued"});
  ASSERT_TRUE(table.exit.success());
  EXPECT_THAT(table.out, HasSubstr(queued.id));
  EXPECT_THAT(table.out, ::testing::Not(HasSubstr(cancelled.id)));
  EXPECT_EQ(Tunectl({"jobs", "--state", "sleeping"}).exit.code, 2);
}

TEST_F(UserVerbsTest, VersionShowsTheClientsAndTheCoordinatorsVersions) {
  absl::StatusOr<std::string> server = client_->ServerVersion();
  ASSERT_OK(server);
  EXPECT_EQ(*server, ClientVersion());
  Json json = TunectlJson({"version"});
  EXPECT_EQ(json["client"], ClientVersion());
  EXPECT_EQ(json["server"], *server);
  RunResult table = Tunectl({"version"});
  ASSERT_TRUE(table.exit.success());
  EXPECT_THAT(table.out, ::testing::ContainsRegex("client +" + *server));
  EXPECT_THAT(table.out, ::testing::ContainsRegex("server +" + *server));
}

TEST_F(UserVerbsTest, HistoryShowsEachShapesBestAndCompareLinesUpConfigs) {
  ASSERT_OK(fleet_->StartWorker());
  Job first = SubmitAndWait(PartlyBrokenMatmul());
  SubmitRequest other_shape = PartlyBrokenMatmul();
  other_shape.shape = "M=256,N=256,K=128";
  Job second = SubmitAndWait(other_shape);
  ASSERT_EQ(first.state, JobState::kSucceeded) << first.reason;
  ASSERT_EQ(second.state, JobState::kSucceeded) << second.reason;

  Json history = TunectlJson({"history", "matmul"});
  ASSERT_THAT(history["history"], SizeIs(2));
  EXPECT_EQ(history["history"][0]["shape"], "M=256,N=256,K=128");  // by shape
  EXPECT_EQ(history["history"][0]["job_id"], second.id);
  EXPECT_EQ(history["history"][1]["job_id"], first.id);
  EXPECT_EQ(history["history"][1]["best_config"], first.targets[0].best_config);
  EXPECT_THAT(TunectlJson({"history", "matmul", "--device", first.targets[0].device_model})
                  ["history"],
              SizeIs(2));
  EXPECT_EQ(Tunectl({"history", "matmul", "--device", "no-such-device"}).exit.code, 5);
  RunResult table = Tunectl({"history", "matmul"});
  ASSERT_TRUE(table.exit.success());
  EXPECT_THAT(table.out, HasSubstr("M=256,N=256,K=128"));
  EXPECT_THAT(table.out, HasSubstr(first.id));

  Json compared = TunectlJson({"compare", first.id, second.id});
  ASSERT_THAT(compared["jobs"], SizeIs(2));
  ASSERT_THAT(compared["common_configs"], SizeIs(1));  // the one config that compiles
  EXPECT_THAT(compared["common_configs"][0]["config"].get<std::string>(), HasSubstr("UNROLL=1"));
  EXPECT_GT(compared["common_configs"][0]["second_seconds"].get<double>(), 0);
  RunResult side_by_side = Tunectl({"compare", first.id, second.id});
  ASSERT_TRUE(side_by_side.exit.success());
  EXPECT_THAT(side_by_side.out, HasSubstr("RATIO"));
  EXPECT_EQ(Tunectl({"compare", first.id, "j-unknown"}).exit.code, 5);
}

// A name that matches nothing the fleet knows exits 5 (not found) with the
// known names on stderr, for every verb that takes one; a shape with a dim
// the kernel lacks, or without one it has, lists the kernel's dims.
TEST_F(UserVerbsTest, UnknownNamesExitFiveListingTheKnownOnes) {
  ASSERT_OK(fleet_->StartWorker());
  Job job = SubmitAndWait(PartlyBrokenMatmul());
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  const std::string model = job.targets[0].device_model;
  const std::string kernel_dir = dir_.path() + "/matmul";

  const std::vector<std::vector<std::string>> typed_kernel = {
      {"best", "matmull", "--shape", kShape},
      {"history", "matmull"},
      {"export", "matmull"},
      {"jobs", "--kernel", "matmull"}};
  for (const std::vector<std::string>& args : typed_kernel) {
    RunResult run = TunectlWithErrors(args);
    EXPECT_EQ(run.exit.code, 5) << args[0] << ": " << run.out;
    EXPECT_THAT(run.out, HasSubstr("kernel_name \"matmull\" names no kernel this coordinator "
                                   "knows; known kernels: \"matmul\""))
        << args[0];
  }
  const std::vector<std::vector<std::string>> typed_model = {
      {"best", "matmul", "--shape", kShape, "--device", "H10O"},
      {"history", "matmul", "--device", "H10O"},
      {"export", "matmul", "--device", "H10O"},
      {"submit", kernel_dir, "--shape", kShape, "--device", "H10O"}};
  for (const std::vector<std::string>& args : typed_model) {
    RunResult run = TunectlWithErrors(args);
    EXPECT_EQ(run.exit.code, 5) << args[0] << ": " << run.out;
    EXPECT_THAT(run.out, HasSubstr("tunectl: device_model \"H10O\" names no device model "
                                   "this coordinator knows; known device models: \"" +
                                   model + "\""))
        << args[0];
  }
  EXPECT_THAT(TunectlJson({"-q", "submit", kernel_dir, "--shape", kShape, "--device", model})
                  ["targets"],
              SizeIs(1));  // a known model: accepted (and answered from the store)

  RunResult missing = TunectlWithErrors({"best", "matmul", "--shape", "M=256,N=256"});
  EXPECT_EQ(missing.exit.code, 1) << missing.out;
  EXPECT_THAT(missing.out, HasSubstr("shape is missing dim K of kernel matmul (its dims: M, N, K)"));
  RunResult extra =
      TunectlWithErrors({"submit", kernel_dir, "--shape", "M=256,N=256,K=256,Q=2"});
  EXPECT_EQ(extra.exit.code, 1) << extra.out;
  EXPECT_THAT(extra.out, HasSubstr("shape names dim Q, which kernel matmul does not have (its "
                                   "dims: M, N, K)"));
}

}  // namespace
}  // namespace tunefleet::testing
