// WatchJob streams against a real coordinator process over TLS: 10,000 of
// them from one read token. Past the per-principal cap each is refused with
// RESOURCE_EXHAUSTED naming the flag, and another principal still watches;
// where the caps allow 10,000, they are open at once on a bounded number of
// coordinator threads (a stream holds no thread), and every one of them sees
// the job end.
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/local_fleet.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;

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

// What the watchers saw, in all.
class Tally {
 public:
  void Opened() {
    absl::MutexLock lock(&mu_);
    ++opened_;
  }
  void Done(const grpc::Status& status, v1::JobState last) {
    absl::MutexLock lock(&mu_);
    ++done_;
    ++codes_[status.error_code()];
    ++last_states_[last];
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      refusal_ = status.error_message();
    }
  }
  // Whether `opened` streams saw a first event and `done` ended, within a
  // minute.
  bool Await(int opened, int done) {
    absl::MutexLock lock(&mu_);
    auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return opened_ >= opened && done_ >= done;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), absl::Minutes(1));
  }
  int opened() const {
    absl::MutexLock lock(&mu_);
    return opened_;
  }
  std::map<grpc::StatusCode, int> codes() const {
    absl::MutexLock lock(&mu_);
    return codes_;
  }
  std::map<v1::JobState, int> last_states() const {
    absl::MutexLock lock(&mu_);
    return last_states_;
  }
  std::string refusal() const {
    absl::MutexLock lock(&mu_);
    return refusal_;
  }

 private:
  mutable absl::Mutex mu_;
  int opened_ ABSL_GUARDED_BY(mu_) = 0;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<grpc::StatusCode, int> codes_ ABSL_GUARDED_BY(mu_);
  std::map<v1::JobState, int> last_states_ ABSL_GUARDED_BY(mu_);
  std::string refusal_ ABSL_GUARDED_BY(mu_);
};

// One WatchJob call on gRPC's callback client API: reads every event, tells
// the tally of its first and of its end. Must live until its end is told.
class Watcher final : public grpc::ClientReadReactor<v1::WatchJobEvent> {
 public:
  Watcher(v1::TuningService::Stub* stub, const std::string& job_id, Tally* tally)
      : tally_(tally) {
    request_.set_job_id(job_id);
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
    stub->async()->WatchJob(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    if (last_ == v1::JOB_STATE_UNSPECIFIED) tally_->Opened();
    last_ = event_.job().state();
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override { tally_->Done(status, last_); }
  void Cancel() { context_.TryCancel(); }

 private:
  Tally* const tally_;
  grpc::ClientContext context_;
  v1::WatchJobRequest request_;
  v1::WatchJobEvent event_;
  v1::JobState last_ = v1::JOB_STATE_UNSPECIFIED;
};

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
    absl::StatusOr<std::string> ca = ReadFile(fleet_->ca_file());
    ASSERT_OK(ca);
    for (int i = 0; i < kChannels; ++i) {
      grpc::ChannelArguments args;
      args.SetInt("tunefleet.test_connection", i);  // a connection of its own
      stubs_.push_back(v1::TuningService::NewStub(grpc::CreateCustomChannel(
          fleet_->address(),
          grpc::CompositeChannelCredentials(grpc::SslCredentials({.pem_root_certs = *ca,
                                                                 .pem_private_key = "",
                                                                 .pem_cert_chain = ""}),
                                            grpc::AccessTokenCredentials(reader->token)),
          args)));
    }
    // A job no worker runs: it waits, and its watchers with it.
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = "M=96,N=96,K=96";
    request.config_set = "quick";
    absl::StatusOr<Job> job = admin_->Submit(request);
    ASSERT_OK(job);
    job_id_ = job->id;
  }

  // Opens `count` WatchJob streams as the read token, spread over the
  // connections.
  void OpenWatchers(int count, Tally* tally) {
    for (int i = 0; i < count; ++i) {
      watchers_.push_back(
          std::make_unique<Watcher>(stubs_[i % kChannels].get(), job_id_, tally));
    }
  }

  // Ends every watcher still open and waits for all to be done.
  void CloseWatchers(Tally* tally) {
    for (const std::unique_ptr<Watcher>& watcher : watchers_) watcher->Cancel();
    EXPECT_TRUE(tally->Await(0, static_cast<int>(watchers_.size())));
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> admin_;
  std::vector<std::unique_ptr<v1::TuningService::Stub>> stubs_;
  std::string job_id_;
  std::vector<std::unique_ptr<Watcher>> watchers_;
};

TEST_F(WatchStreamsTest, OneTokensTenThousandWatchesAreCappedAndAnotherPrincipalStillWatches) {
  StartFleet({});  // the defaults: 64 per principal, 1,024 in all
  Tally tally;
  OpenWatchers(kWatchers, &tally);
  ASSERT_TRUE(tally.Await(64, kWatchers - 64)) << tally.opened() << " open";
  std::map<grpc::StatusCode, int> codes = tally.codes();
  EXPECT_EQ(codes[grpc::StatusCode::RESOURCE_EXHAUSTED], kWatchers - 64);
  EXPECT_EQ(codes.size(), 1u);
  EXPECT_EQ(tally.opened(), 64);
  EXPECT_TRUE(absl::StrContains(tally.refusal(), "--max-watches-per-principal"))
      << tally.refusal();
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
  ASSERT_TRUE(tally.Await(64, kWatchers));
  codes = tally.codes();
  EXPECT_EQ(codes[grpc::StatusCode::OK], 64);
  EXPECT_EQ(tally.last_states()[v1::JOB_STATE_CANCELLED], 64);
  CloseWatchers(&tally);
}

TEST_F(WatchStreamsTest, TenThousandOpenWatchesHoldNoThreadsAndEachSeesTheJobEnd) {
  StartFleet({"--max-watches-per-principal", absl::StrCat(kWatchers), "--max-watches",
              absl::StrCat(kWatchers)});
  // A few calls first, so that the pools settle before the count.
  for (int i = 0; i < 20; ++i) ASSERT_OK(admin_->ListJobs());
  const int threads_before = ThreadsOf(fleet_->coordinator_pid());
  ASSERT_GT(threads_before, 0);
  Tally tally;
  OpenWatchers(kWatchers, &tally);
  ASSERT_TRUE(tally.Await(kWatchers, 0)) << tally.opened() << " open";
  const int threads_open = ThreadsOf(fleet_->coordinator_pid());
  std::cout << "coordinator threads: " << threads_before << " before, " << threads_open
            << " with " << kWatchers << " WatchJob streams open\n";
  // gRPC's own pollers may add a few; a thread per stream would add 10,000.
  EXPECT_LT(threads_open, threads_before + 64)
      << threads_before << " threads before, " << threads_open << " with the streams open";
  ASSERT_OK(admin_->CancelJob(job_id_));
  ASSERT_TRUE(tally.Await(kWatchers, kWatchers));
  EXPECT_EQ(tally.codes()[grpc::StatusCode::OK], kWatchers);
  EXPECT_EQ(tally.last_states()[v1::JOB_STATE_CANCELLED], kWatchers);
  CloseWatchers(&tally);
}

}  // namespace
}  // namespace tunefleet::testing
