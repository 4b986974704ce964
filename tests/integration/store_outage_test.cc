// The store failing under a running fleet: real coordinator and worker
// processes, a real PostgreSQL stopped hard mid-job and started again, and a
// SQLite data directory deleted under the coordinator.
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "bench/local_fleet.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;

// The coordinator's gRPC health status ("" service): 1 SERVING, 2
// NOT_SERVING, 0 when the call failed. The request is the empty
// HealthCheckRequest; the answer's field 1 is the status.
int HealthStatus(const std::string& address) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  grpc::Slice empty;
  request = grpc::ByteBuffer(&empty, 1);
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                 &response, [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  std::vector<grpc::Slice> slices;
  if (!status.ok() || !response.Dump(&slices).ok()) return 0;
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes.size() == 2 && bytes[0] == 0x08 ? bytes[1] : 0;
}

class StoreOutageTest : public ::testing::Test {
 protected:
  void StartFleet(const std::string& database) {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path() + "/fleet";
    options.database = database;
    options.finalists = 0;
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
    ASSERT_OK(fleet_->StartWorker());
  }

  SubmitRequest Matmul(int64_t budget) {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = "M=256,N=256,K=256";
    request.strategy = "random";
    request.budget = budget;
    request.seed = 7;
    return request;
  }

  // Submits a 30-config job and waits until `trials` of them are done, so
  // that what follows happens mid-job. Sets *job.
  void SubmitAndWaitForTrials(int trials, Job* job) {
    absl::StatusOr<Job> submitted = client_->Submit(Matmul(/*budget=*/30));
    ASSERT_OK(submitted);
    *job = WaitFor(submitted->id, absl::Seconds(120),
                   [trials](const Job& j) { return j.trials_done >= trials; });
    ASSERT_GE(job->trials_done, trials) << JobStateName(job->state) << " " << job->reason;
    ASSERT_LT(job->trials_done, job->trials_total) << "the job ended too soon";
  }

  // Polls the job until `done(job)` or the deadline; returns the last view.
  Job WaitFor(const std::string& id, absl::Duration timeout,
              const std::function<bool(const Job&)>& done) {
    const absl::Time deadline = absl::Now() + timeout;
    Job job;
    while (absl::Now() < deadline) {
      absl::StatusOr<Job> current = client_->GetJob(id);
      if (current.ok()) {
        job = *current;
        if (done(job)) break;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return job;
  }

  // A submission over raw gRPC while the store is down: refused with a
  // short message that carries nothing of the store (no SQL, no host or
  // port, no password).
  void ExpectStoreFailureHidesItsDetail(const std::string& port) {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    v1::SubmitJobRequest request;
    *request.mutable_spec()->mutable_kernel() = bundle->spec;
    for (const auto& file : bundle->sources) *request.mutable_spec()->add_sources() = file;
    *request.mutable_spec()->mutable_shape() = *ParseShape("M=96,N=96,K=96");
    auto stub = v1::TuningService::NewStub(
        grpc::CreateChannel(fleet_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::SubmitJobResponse response;
    grpc::Status status = stub->SubmitJob(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    EXPECT_EQ(status.error_message(), "store unavailable");
    for (const std::string& secret : {std::string("secret"), std::string("127.0.0.1"), port,
                                      std::string("postgres"), std::string("SELECT")}) {
      EXPECT_EQ(status.error_message().find(secret), std::string::npos) << secret;
    }
  }

  // Every stored search trial of the job (the finalists' and verifiers' own
  // rows aside), checked to hold each config once.
  void ExpectEveryConfigOnce(const std::string& url, const Job& job) {
    absl::StatusOr<std::unique_ptr<server::Store>> store = server::OpenStore(url);
    ASSERT_OK(store);
    absl::StatusOr<std::vector<server::TrialRecord>> trials = (*store)->ListTrials(job.id);
    ASSERT_OK(trials);
    std::erase_if(*trials, [](const server::TrialRecord& trial) {
      return trial.round != server::TrialRound::kSearch;
    });
    std::set<std::string> configs;
    std::map<int, int> stored;
    for (const server::TrialRecord& trial : *trials) {
      configs.insert(trial.config);
      ++stored[trial.status];
    }
    std::string counts;
    for (const auto& [status, count] : job.outcomes) absl::StrAppend(&counts, status, "=", count, " ");
    absl::StrAppend(&counts, "; stored:");
    for (const auto& [status, count] : stored) absl::StrAppend(&counts, " ", status, "=", count);
    EXPECT_EQ(static_cast<int64_t>(trials->size()), job.trials_total) << counts;
    EXPECT_EQ(configs.size(), trials->size());
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(StoreOutageTest, JobFinishesAfterPostgresIsStoppedHardAndStartedAgain) {
  const std::string cluster = dir_.path() + "/pg";
  std::filesystem::create_directories(cluster);
  // The server may run as another user (postgres, under root): it must reach
  // its directory.
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all |
                                                std::filesystem::perms::group_exec |
                                                std::filesystem::perms::others_exec);
  const std::string script = SourceDir() + "/scripts/pg-cluster.sh";
  auto run = [&](std::vector<std::string> argv) {
    absl::StatusOr<bench::RunResult> result = RunProgram(argv, absl::Seconds(90));
    return result.ok() && result->exit.code == 0;
  };
  ASSERT_TRUE(run({script, "init", cluster}));
  // A fixed port, since the coordinator keeps the URL across the outage,
  // and one below Linux's ephemeral range (32768 and up by default): while
  // the server is down no outgoing connection of another test can take it.
  const std::string port = std::to_string(20000 + (::getpid() % 12000));
  ASSERT_TRUE(run({script, "start", cluster, port}));
  const std::string url =
      absl::StrCat("postgresql://tunefleet:secret@127.0.0.1:", port, "/postgres");
  StartFleet(url);
  Job job;
  ASSERT_NO_FATAL_FAILURE(SubmitAndWaitForTrials(3, &job));

  ASSERT_TRUE(run({script, "stop", cluster}));
  const absl::Time stopped = absl::Now();
  ExpectStoreFailureHidesItsDetail(port);
  absl::SleepFor(absl::Seconds(15) - (absl::Now() - stopped));
  ASSERT_TRUE(run({script, "start", cluster, port}));

  Job done = WaitFor(job.id, absl::Seconds(180), [](const Job& j) {
    return j.state == JobState::kSucceeded || j.state == JobState::kFailed;
  });
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.reason;
  EXPECT_EQ(done.trials_done, done.trials_total);
  ExpectEveryConfigOnce(url, done);
  EXPECT_EQ(HealthStatus(fleet_->address()), 1);
  fleet_.reset();  // the coordinator goes before its database
  EXPECT_TRUE(run({script, "stop", cluster}));
}

TEST_F(StoreOutageTest, JobFinishesAfterTheSqliteFileRefusedWritesForAWhile) {
  const std::string db_dir = dir_.path() + "/db";
  const std::string url = absl::StrCat("sqlite://", db_dir, "/tunefleet.db");
  StartFleet(url);
  Job job;
  ASSERT_NO_FATAL_FAILURE(SubmitAndWaitForTrials(3, &job));
  // Root writes through file modes, so the files are made immutable
  // (chattr +i) instead: the database and its write-ahead log.
  const std::vector<std::string> files = {db_dir + "/tunefleet.db", db_dir + "/tunefleet.db-wal"};
  auto chattr = [&](const char* flag) {
    std::vector<std::string> argv = {"chattr", flag};
    argv.insert(argv.end(), files.begin(), files.end());
    absl::StatusOr<bench::RunResult> result = RunProgram(argv, absl::Seconds(10));
    return result.ok() && result->exit.code == 0;
  };
  if (!chattr("+i")) {
    chattr("-i");
    GTEST_SKIP() << "chattr +i is refused here (needs root on ext2/3/4, xfs or btrfs)";
  }
  absl::SleepFor(absl::Seconds(8));
  const int during = HealthStatus(fleet_->address());
  ASSERT_TRUE(chattr("-i"));
  EXPECT_EQ(during, 2);  // NOT_SERVING while writes fail
  Job done = WaitFor(job.id, absl::Seconds(180), [](const Job& j) {
    return j.state == JobState::kSucceeded || j.state == JobState::kFailed;
  });
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.reason;
  EXPECT_EQ(done.trials_done, done.trials_total);
  ExpectEveryConfigOnce(url, done);
  EXPECT_EQ(HealthStatus(fleet_->address()), 1);
}

TEST_F(StoreOutageTest, DeletedSqliteDirectoryTurnsTheCoordinatorUnavailable) {
  const std::string db_dir = dir_.path() + "/db";
  StartFleet(absl::StrCat("sqlite://", db_dir, "/tunefleet.db"));
  EXPECT_EQ(HealthStatus(fleet_->address()), 1);
  Job job;
  ASSERT_NO_FATAL_FAILURE(SubmitAndWaitForTrials(2, &job));

  std::filesystem::remove_all(db_dir);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (HealthStatus(fleet_->address()) != 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(HealthStatus(fleet_->address()), 2);  // NOT_SERVING
  absl::StatusOr<Job> refused = client_->Submit(Matmul(/*budget=*/5));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kUnavailable));
  // The running job cannot record anything any more: it never claims success.
  absl::SleepFor(absl::Seconds(5));
  absl::StatusOr<Job> after = client_->GetJob(job.id);
  ASSERT_OK(after);
  EXPECT_NE(after->state, JobState::kSucceeded);
  EXPECT_FALSE(std::filesystem::exists(db_dir + "/tunefleet.db"));
}

}  // namespace
}  // namespace tunefleet::testing
