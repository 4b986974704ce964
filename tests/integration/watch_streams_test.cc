// WatchJob streams against a real coordinator process over TLS: 10,000 of
// them from one read token. Past the per-principal cap each is refused with
// RESOURCE_EXHAUSTED naming the flag, and another principal still watches;
// where the caps allow 10,000, they are open at once on a bounded number of
// coordinator threads (a stream holds no thread), and every one of them sees
// the job end.
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/local_fleet.h"
#include "bench/watch_streams.h"
#include "common/grpc_security.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::WatchStreams;

constexpr int kWatchers = 10000;
// Connections the watchers are spread over (HTTP/2 streams of each).
constexpr int kChannels = 8;

// The threads of process `pid` now (Threads: of /proc/PID/status); -1 when
// unreadable.
int ThreadsOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

class WatchStreamsTest : public ::testing::Test {
 protected:
  void StartFleet(std::vector<std::string> coordinator_flags) {
    bench::FleetOptions options = SecureFleetOptions(dir_.path());
    options.coordinator_flags = std::move(coordinator_flags);
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::string> token = AdminToken(*fleet_);
    ASSERT_OK(token);
    absl::StatusOr<std::unique_ptr<Client>> admin = ConnectAs(*fleet_, *token);
    ASSERT_OK(admin);
    admin_ = *std::move(admin);
    absl::StatusOr<IssuedToken> reader = admin_->CreateToken("rita", "read");
    ASSERT_OK(reader);
    ChannelSecurity security;
    security.ca_file = fleet_->ca_file();
    security.token = reader->token;
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(security);
    ASSERT_OK(credentials);
    watchers_ = std::make_unique<WatchStreams>(fleet_->address(), *credentials, kChannels);
    // A job no worker runs: it waits, and its watchers with it.
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = "M=96,N=96,K=96";
    request.config_set = "quick";
    absl::StatusOr<Job> job = admin_->Submit(request);
    ASSERT_OK(job);
    job_id_ = job->id;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> admin_;
  std::string job_id_;
  std::unique_ptr<WatchStreams> watchers_;  // rita's, the read token's
};

TEST_F(WatchStreamsTest, OneTokensTenThousandWatchesAreCappedAndAnotherPrincipalStillWatches) {
  StartFleet({});  // the defaults: 64 per principal, 1,024 in all
  watchers_->Open(kWatchers, job_id_);
  ASSERT_TRUE(watchers_->Await(64, kWatchers - 64, absl::Minutes(1)))
      << watchers_->opened() << " open";
  std::map<grpc::StatusCode, int> codes = watchers_->codes();
  EXPECT_EQ(codes[grpc::StatusCode::RESOURCE_EXHAUSTED], kWatchers - 64);
  EXPECT_EQ(codes.size(), 1u);
  EXPECT_EQ(watchers_->opened(), 64);
  EXPECT_TRUE(absl::StrContains(watchers_->refusal(), "--max-watches-per-principal"))
      << watchers_->refusal();
  // The admin watches the same job to its end; so do rita's 64.
  std::vector<JobState> seen;
  absl::StatusOr<Job> ended;
  std::thread watch([&] {
    ended = admin_->Watch(job_id_, [&](const Job& job) { seen.push_back(job.state); });
  });
  absl::SleepFor(absl::Milliseconds(500));
  ASSERT_OK(admin_->CancelJob(job_id_));
  watch.join();
  ASSERT_OK(ended);
  EXPECT_EQ(ended->state, JobState::kCancelled);
  EXPECT_FALSE(seen.empty());
  ASSERT_TRUE(watchers_->Await(64, kWatchers, absl::Minutes(1)));
  EXPECT_EQ(watchers_->codes()[grpc::StatusCode::OK], 64);
  EXPECT_EQ(watchers_->last_states()[v1::JOB_STATE_CANCELLED], 64);
}

TEST_F(WatchStreamsTest, TenThousandOpenWatchesHoldNoThreadsAndEachSeesTheJobEnd) {
  StartFleet({"--max-watches-per-principal", absl::StrCat(kWatchers), "--max-watches",
              absl::StrCat(kWatchers)});
  // A few calls first, so that the pools settle before the count.
  for (int i = 0; i < 20; ++i) ASSERT_OK(admin_->ListJobs());
  const int threads_before = ThreadsOf(fleet_->coordinator_pid());
  ASSERT_GT(threads_before, 0);
  watchers_->Open(kWatchers, job_id_);
  ASSERT_TRUE(watchers_->Await(kWatchers, 0, absl::Minutes(1)))
      << watchers_->opened() << " open";
  const int threads_open = ThreadsOf(fleet_->coordinator_pid());
  // gRPC's own pollers may add a few; a thread per stream would add 10,000.
  EXPECT_LT(threads_open, threads_before + 64)
      << threads_before << " threads before, " << threads_open << " with the streams open";
  ASSERT_OK(admin_->CancelJob(job_id_));
  ASSERT_TRUE(watchers_->Await(kWatchers, kWatchers, absl::Minutes(1)));
  EXPECT_EQ(watchers_->codes()[grpc::StatusCode::OK], kWatchers);
  EXPECT_EQ(watchers_->last_states()[v1::JOB_STATE_CANCELLED], kWatchers);
}

// A watch of a job that has left memory (finished) gets its stored final
// view and ends; a watch of a job nobody submitted is NOT_FOUND.
TEST_F(WatchStreamsTest, AFinishedJobsWatchGetsItsFinalViewAndAnUnknownJobsIsNotFound) {
  StartFleet({});
  ASSERT_OK(admin_->CancelJob(job_id_));
  std::vector<JobState> seen;
  absl::StatusOr<Job> ended =
      admin_->Watch(job_id_, [&](const Job& job) { seen.push_back(job.state); });
  ASSERT_OK(ended);
  EXPECT_EQ(ended->state, JobState::kCancelled);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), JobState::kCancelled);
  EXPECT_EQ(admin_->Watch("jnosuchjob", [](const Job&) {}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tunefleet::testing
