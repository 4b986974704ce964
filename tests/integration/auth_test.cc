// Authentication and roles on a real fleet over TLS: a coordinator process
// with a development CA, worker processes with certificates, tunectl and the
// client library with bearer tokens, and raw WorkerService calls made the
// way a rogue program would.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/local_fleet.h"
#include "common/grpc_security.h"
#include "common/file_util.h"
#include "common/grpc_status.h"
#include "common/tuning_key.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;

constexpr char kShape[] = "M=96,N=96,K=96";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options = SecureFleetOptions(dir_.path());
    options.coordinator_flags = {"--max-active-jobs", "2"};
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::string> admin = AdminToken(*fleet_);
    ASSERT_OK(admin);
    admin_token_ = *admin;
    admin_ = Connect(admin_token_);
  }

  std::unique_ptr<Client> Connect(const std::string& token) {
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAs(*fleet_, token);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::string NewToken(const std::string& name, const std::string& role) {
    absl::StatusOr<IssuedToken> issued = admin_->CreateToken(name, role);
    EXPECT_TRUE(issued.ok()) << issued.status();
    return issued.ok() ? issued->token : "";
  }

  SubmitRequest Matmul() {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = kShape;
    request.config_set = "quick";
    return request;
  }

  // A WorkerService stub over TLS with `security` (the CA is the fleet's).
  std::unique_ptr<v1::WorkerService::Stub> WorkerStub(ChannelSecurity security) {
    security.ca_file = fleet_->ca_file();
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(security);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return v1::WorkerService::NewStub(grpc::CreateChannel(fleet_->address(), *credentials));
  }

  static absl::Status Register(v1::WorkerService::Stub* stub) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::RegisterWorkerRequest request;
    request.set_host("rogue");
    request.set_toolkit("g++ 12");
    request.set_measurement_protocol(kMeasurementProtocolVersion);
    v1::Device* device = request.add_devices();
    device->set_id("cpu0");
    device->set_model("test cpu");
    device->set_backend(v1::BACKEND_CPU);
    v1::RegisterWorkerResponse response;
    return FromGrpcStatus(stub->RegisterWorker(&context, request, &response));
  }

  RunResult Tunectl(std::vector<std::string> args, const char* token = nullptr) {
    std::vector<std::string> argv = {"env", "-u", "TUNEFLEET_TOKEN"};
    if (token != nullptr) argv = {"env", absl::StrCat("TUNEFLEET_TOKEN=", token)};
    argv.insert(argv.end(), {"HOME=/nonexistent", BuildDir() + "/bin/tunectl", "--server",
                             fleet_->address(), "--ca-file", fleet_->ca_file()});
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RunResult> run = RunProgram(argv, absl::Seconds(60));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunResult{};
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::string admin_token_;
  std::unique_ptr<Client> admin_;
};

TEST_F(AuthTest, ACallWithoutOrWithAWrongTokenIsUnauthenticated) {
  EXPECT_THAT(Connect("")->ListJobs(), StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_THAT(Connect("tft_000000000000_0123")->ListJobs(),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_THAT(Connect("not even a token")->GetBestConfig("matmul", kShape),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_OK(admin_->ListJobs());
}

TEST_F(AuthTest, APlaintextClientCannotTalkToATlsCoordinator) {
  ClientOptions options;
  options.target = fleet_->address();
  options.insecure = true;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_OK(client);
  EXPECT_THAT((*client)->ListJobs(), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(AuthTest, AReadTokenReadsButCannotSubmit) {
  std::unique_ptr<Client> reader = Connect(NewToken("rita", "read"));
  EXPECT_OK(reader->ListJobs());
  // Nothing tuned and the kernel unknown: NOT_FOUND, which the role may ask.
  EXPECT_THAT(reader->GetBestConfig("matmul", kShape),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(reader->Submit(Matmul()), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(reader->CreateToken("mallory", "admin"),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST_F(AuthTest, OnlyTheOwnerOrAnAdminCancelsAJob) {
  std::unique_ptr<Client> alice = Connect(NewToken("alice", "submit"));
  std::unique_ptr<Client> bob = Connect(NewToken("bob", "submit"));
  absl::StatusOr<Job> job = alice->Submit(Matmul());  // no worker: it waits
  ASSERT_OK(job);
  EXPECT_EQ(job->owner, "alice");
  EXPECT_THAT(bob->CancelJob(job->id), StatusIs(absl::StatusCode::kPermissionDenied));
  absl::StatusOr<Job> still = bob->GetJob(job->id);
  ASSERT_OK(still);
  EXPECT_FALSE(IsFinal(still->state));
  absl::StatusOr<Job> cancelled = admin_->CancelJob(job->id);
  ASSERT_OK(cancelled);
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  absl::StatusOr<Job> own = alice->Submit(Matmul());
  ASSERT_OK(own);
  absl::StatusOr<Job> own_cancelled = alice->CancelJob(own->id);
  ASSERT_OK(own_cancelled);
  EXPECT_EQ(own_cancelled->state, JobState::kCancelled);
}

// One connection carrying calls of three tokens, at once: each call is its
// own token's caller. (gRPC gives every call of a connection the same
// AuthContext; a caller recorded there would be the first token's for all.)
TEST_F(AuthTest, CallsOfTwoTokensOnOneConnectionAreEachTheirOwnCaller) {
  std::unique_ptr<Client> alice = Connect(NewToken("alice", "submit"));
  const std::string alice_token = NewToken("alice2", "submit");
  const std::string bob_token = NewToken("bob", "submit");
  absl::StatusOr<Job> job = alice->Submit(Matmul());  // no worker: it waits
  ASSERT_OK(job);
  absl::StatusOr<std::string> ca = ReadFile(fleet_->ca_file());
  ASSERT_OK(ca);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
      fleet_->address(), grpc::SslCredentials({.pem_root_certs = *ca,
                                               .pem_private_key = "",
                                               .pem_cert_chain = ""}));
  auto tuning = v1::TuningService::NewStub(channel);
  auto context_as = [](const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_credentials(grpc::AccessTokenCredentials(token));
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  };
  // The admin's call comes first on the connection.
  v1::ListJobsResponse listed;
  ASSERT_TRUE(tuning->ListJobs(context_as(admin_token_).get(), {}, &listed).ok());
  // Many calls of three tokens at once, on the one connection: the admin's
  // and alice2's succeed, and every one of bob's cancels of alice's job is
  // refused, however the admin's calls interleave with it.
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job->id);
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  std::atomic<int> bob_not_refused{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        switch ((t + i) % 3) {
          case 0: {
            v1::ListJobsResponse jobs;
            if (!tuning->ListJobs(context_as(admin_token_).get(), {}, &jobs).ok()) ++failed;
            break;
          }
          case 1: {
            v1::GetJobRequest get;
            get.set_job_id(job->id);
            v1::GetJobResponse got;
            if (!tuning->GetJob(context_as(alice_token).get(), get, &got).ok()) ++failed;
            break;
          }
          default: {
            v1::CancelJobResponse cancelled;
            const grpc::Status bobs =
                tuning->CancelJob(context_as(bob_token).get(), cancel, &cancelled);
            if (bobs.error_code() != grpc::StatusCode::PERMISSION_DENIED) ++bob_not_refused;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(bob_not_refused.load(), 0);
  v1::CancelJobResponse cancelled;
  absl::StatusOr<Job> still = admin_->GetJob(job->id);
  ASSERT_OK(still);
  EXPECT_FALSE(IsFinal(still->state));
  ASSERT_TRUE(tuning->CancelJob(context_as(admin_token_).get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.job().state(), v1::JOB_STATE_CANCELLED);
}

TEST_F(AuthTest, APrincipalOverItsActiveJobQuotaIsResourceExhausted) {
  std::unique_ptr<Client> alice = Connect(NewToken("alice", "submit"));
  std::unique_ptr<Client> bob = Connect(NewToken("bob", "submit"));
  ASSERT_OK(alice->Submit(Matmul()));
  ASSERT_OK(alice->Submit(Matmul()));
  EXPECT_THAT(alice->Submit(Matmul()), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_OK(bob->Submit(Matmul()));  // the quota is per principal
}

TEST_F(AuthTest, ARevokedTokenIsUnauthenticated) {
  absl::StatusOr<IssuedToken> issued = admin_->CreateToken("carol", "submit");
  ASSERT_OK(issued);
  std::unique_ptr<Client> carol = Connect(issued->token);
  ASSERT_OK(carol->ListJobs());
  ASSERT_OK(admin_->RevokeToken(issued->info.id));
  EXPECT_THAT(carol->ListJobs(), StatusIs(absl::StatusCode::kUnauthenticated));
  absl::StatusOr<std::vector<TokenInfo>> tokens = admin_->ListTokens();
  ASSERT_OK(tokens);
  bool listed = false;
  for (const TokenInfo& token : *tokens) {
    if (token.id == issued->info.id) listed = token.revoked_unix_ms != 0;
  }
  EXPECT_TRUE(listed);
}

TEST_F(AuthTest, TunectlCreatesATokenThatThenWorksAndExitsFourWithoutOne) {
  RunResult created = Tunectl({"--token-file", fleet_->admin_token_file(), "admin", "token",
                               "create", "--role", "submit", "--name", "dana"});
  ASSERT_TRUE(created.exit.success()) << created.exit.ToString();
  const std::string token(absl::StripAsciiWhitespace(created.out));
  EXPECT_EQ(token.rfind("tft_", 0), 0u) << token;
  RunResult jobs = Tunectl({"jobs"}, token.c_str());
  EXPECT_TRUE(jobs.exit.success()) << jobs.exit.ToString();
  RunResult refused = Tunectl({"jobs"});
  EXPECT_EQ(refused.exit.code, 4) << refused.exit.ToString();
  RunResult not_admin = Tunectl({"admin", "token", "list"}, token.c_str());
  EXPECT_EQ(not_admin.exit.code, 4) << not_admin.exit.ToString();
}

TEST_F(AuthTest, AWorkerWithoutAValidCertificateCannotRegister) {
  EXPECT_THAT(Register(WorkerStub(ChannelSecurity{}).get()),
              StatusIs(absl::StatusCode::kUnauthenticated));
  ChannelSecurity client;
  client.token = admin_token_;  // a client's token is no worker credential
  EXPECT_THAT(Register(WorkerStub(client).get()),
              StatusIs(absl::StatusCode::kPermissionDenied));
  // A certificate from another CA fails the TLS handshake.
  const std::string other = dir_.path() + "/other-ca";
  absl::StatusOr<RunResult> made = RunProgram(
      {SourceDir() + "/scripts/dev-ca.sh", other, "worker", "impostor"}, absl::Seconds(30));
  ASSERT_OK(made);
  ChannelSecurity impostor;
  impostor.cert_file = other + "/worker-impostor.crt";
  impostor.key_file = other + "/worker-impostor.key";
  EXPECT_THAT(Register(WorkerStub(impostor).get()),
              StatusIs(absl::StatusCode::kUnavailable));
  absl::StatusOr<std::vector<std::string>> flags = fleet_->WorkerCertificateFlags("honest");
  ASSERT_OK(flags);
  ChannelSecurity honest;
  honest.cert_file = (*flags)[3];
  honest.key_file = (*flags)[5];
  EXPECT_OK(Register(WorkerStub(honest).get()));
}

TEST_F(AuthTest, ACertifiedWorkerTunesAJobOverTls) {
  std::unique_ptr<Client> alice = Connect(NewToken("alice", "submit"));
  ASSERT_OK(fleet_->StartWorker());
  absl::StatusOr<Job> job = alice->Submit(Matmul());
  ASSERT_OK(job);
  absl::StatusOr<Job> done = alice->Watch(job->id, [](const Job&) {});
  ASSERT_OK(done);
  EXPECT_EQ(done->state, JobState::kSucceeded) << done->reason;
  absl::StatusOr<BestConfig> best = alice->GetBestConfig("matmul", kShape);
  ASSERT_OK(best);
  EXPECT_EQ(best->source, BestConfig::Source::kExact);
}

}  // namespace
}  // namespace tunefleet::testing
