// Kernels are code from clients: what they try against a real fleet
// (coordinator, worker processes with their default sandbox, the real
// compiler) and what comes of it.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/local_fleet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;

namespace fs = std::filesystem;

// Appended to the matmul kernel: runs when the benchmark child loads it.
// Its writes must not land outside; each probe of the sandbox aborts the
// child when it finds a way out, which fails the trial as CRASHED.
constexpr char kPayload[] = R"(
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
namespace {
bool Readable(const char* path) {
  FILE* file = std::fopen(path, "r");
  if (file != nullptr) std::fclose(file);
  return file != nullptr;
}
bool Connects(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return connected;
}
__attribute__((constructor)) void Payload() {
  std::system("id > @OUTSIDE@/pwned-by-system 2>/dev/null");
  std::ofstream("@OUTSIDE@/pwned-by-ofstream") << "escaped";
  std::ofstream("@CACHE@/pwned-in-cache") << "escaped";
  if (getuid() != 65534 || getgid() != 65534) std::abort();
  if (Readable("/etc/passwd") || Readable("@SECRET@")) std::abort();
  if (Readable("@CACHE@")) std::abort();  // other jobs' artifacts
  if (Connects(@PORT@)) std::abort();
}
}  // namespace
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    ClientOptions client_options;
    client_options.target = fleet_->address();
    client_options.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  // A copy of the matmul kernel under the test's directory.
  std::string CopyMatmul(const std::string& name) {
    const std::string kernel_dir = dir_.path() + "/" + name;
    fs::copy(SourceDir() + "/kernels/cpu/matmul", kernel_dir);
    return kernel_dir;
  }

  SubmitRequest Quick(const std::string& kernel_dir) {
    SubmitRequest request;
    request.kernel_dir = kernel_dir;
    request.shape = "M=96,N=96,K=96";
    request.config_set = "quick";
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

  std::vector<server::TrialRecord> Trials(const std::string& job_id) {
    auto store = server::OpenStore(fleet_->database_url());
    EXPECT_TRUE(store.ok()) << store.status();
    auto trials = (*store)->ListTrials(job_id);
    EXPECT_TRUE(trials.ok()) << trials.status();
    return trials.ok() ? *trials : std::vector<server::TrialRecord>();
  }

  int CoordinatorPort() const {
    std::vector<std::string> parts = absl::StrSplit(fleet_->address(), ':');
    return std::stoi(parts.back());
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(SandboxTest, ConstructorPayloadRunsAsNobodyAndNothingEscapes) {
  ASSERT_OK(fleet_->StartWorker());
  const std::string outside = dir_.path() + "/outside";
  fs::create_directories(outside);
  const std::string secret = outside + "/worker-key";
  std::ofstream(secret) << "not for kernels";
  // Another client's job first: its artifacts are in the worker's cache.
  ASSERT_EQ(SubmitAndWait(Quick(CopyMatmul("other"))).state, JobState::kSucceeded);
  ASSERT_TRUE(fs::is_directory(dir_.path() + "/worker-cache-0/artifacts/cpu"));
  const std::string kernel_dir = CopyMatmul("payload");
  std::string payload = Replace(kPayload, "@OUTSIDE@", outside);
  payload = Replace(payload, "@CACHE@", dir_.path() + "/worker-cache-0/artifacts");
  payload = Replace(payload, "@SECRET@", secret);
  payload = Replace(payload, "@PORT@", std::to_string(CoordinatorPort()));
  std::ofstream(kernel_dir + "/matmul.cc", std::ios::app) << payload;

  Job job = SubmitAndWait(Quick(kernel_dir));
  // Every probe found the way shut (else the child aborts: CRASHED).
  EXPECT_EQ(job.state, JobState::kSucceeded) << job.reason;
  EXPECT_EQ(job.outcomes["OK"], job.trials_total);
  EXPECT_FALSE(fs::exists(outside + "/pwned-by-system"));
  EXPECT_FALSE(fs::exists(outside + "/pwned-by-ofstream"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/worker-cache-0/artifacts/pwned-in-cache"));
  EXPECT_OK(client_->ListJobs(10));
}

TEST_F(SandboxTest, WrapperCompileOptionIsRefusedAtSubmitAndByTunectlValidate) {
  ASSERT_OK(fleet_->StartWorker());
  const std::string kernel_dir = CopyMatmul("wrapper");
  const std::string marker = dir_.path() + "/pwned-by-wrapper";
  std::ofstream(kernel_dir + "/kernel.textproto", std::ios::app)
      << "compile_options: \"-wrapper\"\ncompile_options: \"/bin/sh,-c,touch " << marker
      << "\"\n";
  absl::StatusOr<Job> job = client_->Submit(Quick(kernel_dir));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(job.status().message()), HasSubstr("\"-wrapper\" is not allowed"));
  EXPECT_FALSE(fs::exists(marker));

  absl::StatusOr<RunResult> validate = RunProgram(
      {"/bin/sh", "-c", absl::StrCat(BuildDir(), "/bin/tunectl validate ", kernel_dir, " 2>&1")},
      absl::Seconds(30));
  ASSERT_OK(validate);
  EXPECT_FALSE(validate->exit.success()) << validate->out;
  EXPECT_THAT(validate->out, HasSubstr("\"-wrapper\" is not allowed"));
  // The coordinator keeps serving.
  EXPECT_EQ(SubmitAndWait(Quick(CopyMatmul("plain"))).state, JobState::kSucceeded);
}

TEST_F(SandboxTest, IncludedSystemFileNeverReachesTheTrialError) {
  ASSERT_OK(fleet_->StartWorker());
  const std::string kernel_dir = CopyMatmul("include-passwd");
  std::ofstream(kernel_dir + "/matmul.cc", std::ios::trunc) << "#include \"/etc/passwd\"\n";
  Job job = SubmitAndWait(Quick(kernel_dir));
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_THAT(job.reason, Not(HasSubstr("root:")));
  const std::vector<server::TrialRecord> trials = Trials(job.id);
  ASSERT_FALSE(trials.empty());
  for (const server::TrialRecord& trial : trials) {
    EXPECT_THAT(trial.error, Not(HasSubstr("root:"))) << trial.error;
    EXPECT_THAT(trial.error, HasSubstr("matmul.cc:1"));  // the job's own diagnostic stays
  }
}

}  // namespace
}  // namespace tunefleet::testing
