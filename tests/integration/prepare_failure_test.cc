// A job whose Prepare spins (its reference never returns) against a real
// coordinator and a real worker process: the worker spends its prepare
// deadline on the job once, fails its trials and serves the next job; and
// SIGTERM stops the worker within its drain time while the child spins.
#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/local_fleet.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;

class PrepareFailureTest : public ::testing::Test {
 protected:
  void StartFleet(std::vector<std::string> worker_flags) {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path() + "/fleet";
    options.finalists = 0;
    options.worker_flags = std::move(worker_flags);
    // The spinning reference logs its pid to this test's directory, and the
    // test signals it by that pid: both need the child outside a sandbox.
    options.worker_flags.push_back("--sandbox=none");
    std::filesystem::create_directories(options.data_dir);
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    ClientOptions client_options;
    client_options.target = fleet_->address();
    client_options.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
    ASSERT_OK(client);
    client_ = *std::move(client);
    ASSERT_OK(fleet_->StartWorker());
  }

  // faulty_cpu with a reference that logs its process id, then spins.
  SubmitRequest SpinningJob() {
    const std::string kernel = dir_.path() + "/spinning";
    std::filesystem::copy(SourceDir() + "/tests/worker/faulty_cpu", kernel);
    std::ofstream(kernel + "/reference.cc", std::ios::trunc)
        << "#include <cstdio>\n#include <unistd.h>\n"
        << "extern \"C\" void faulty_reference(void**) {\n"
        << "  FILE* log = std::fopen(\"" << log_ << "\", \"a\");\n"
        << "  std::fprintf(log, \"%d\\n\", static_cast<int>(getpid()));\n"
        << "  std::fclose(log);\n"
        << "  for (volatile unsigned long i = 0;; ++i) {}\n"
        << "}\n";
    SubmitRequest request;
    request.kernel_dir = kernel;
    request.shape = "N=1024";
    return request;
  }

  // The process ids of the Prepares that reached the reference so far.
  std::vector<std::string> Prepares() {
    std::ifstream in(log_);
    std::vector<std::string> pids;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) pids.push_back(line);
    }
    return pids;
  }

  TempDir dir_;
  std::string log_ = dir_.path() + "/prepares.log";
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(PrepareFailureTest, SpinningPrepareFailsTheJobOnceAndTheWorkerServesTheNextJob) {
  StartFleet({"--prepare-deadline", "2"});
  absl::StatusOr<Job> submitted = client_->Submit(SpinningJob());
  ASSERT_OK(submitted);
  absl::StatusOr<Job> job = client_->Watch(submitted->id, [](const Job&) {});
  ASSERT_OK(job);
  EXPECT_EQ(job->state, JobState::kFailed) << job->reason;
  ASSERT_GT(job->trials_total, 2);  // more trials than one lease carries
  // Every config that compiles times out with the Prepare (FAULT=4 does not
  // compile).
  EXPECT_GT(job->outcomes["TIMEOUT"], 2);
  EXPECT_EQ(job->outcomes["TIMEOUT"] + job->outcomes["COMPILE_ERROR"], job->trials_total);
  EXPECT_EQ(Prepares().size(), 1u) << "the worker prepared the job more than once";

  SubmitRequest matmul;
  matmul.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
  matmul.shape = "M=64,N=64,K=64";
  matmul.config_set = "quick";
  absl::StatusOr<Job> next = client_->Submit(matmul);
  ASSERT_OK(next);
  absl::StatusOr<Job> done = client_->Watch(next->id, [](const Job&) {});
  ASSERT_OK(done);
  EXPECT_EQ(done->state, JobState::kSucceeded) << done->reason;
  EXPECT_FALSE(fleet_->worker(0)->Poll().has_value());
}

TEST_F(PrepareFailureTest, SigtermStopsTheWorkerWhileItsChildSpinsInPrepare) {
  StartFleet({"--prepare-deadline", "600", "--drain-time", "1"});
  absl::StatusOr<Job> submitted = client_->Submit(SpinningJob());
  ASSERT_OK(submitted);
  for (int i = 0; i < 1200 && Prepares().empty(); ++i) absl::SleepFor(absl::Milliseconds(100));
  ASSERT_EQ(Prepares().size(), 1u);
  const pid_t child = std::stoi(Prepares().front());

  fleet_->worker(0)->Kill(SIGTERM);
  absl::StatusOr<ExitInfo> exit = fleet_->worker(0)->Wait(absl::Seconds(120));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->ToString();
  EXPECT_EQ(kill(child, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the spinning child outlived its worker";
  // The interrupted trials were handed back, not recorded as failures.
  absl::StatusOr<Job> job = client_->GetJob(submitted->id);
  ASSERT_OK(job);
  EXPECT_EQ(job->trials_done, 0);
  EXPECT_FALSE(IsFinal(job->state));
}

}  // namespace
}  // namespace tunefleet::testing
