// A rogue worker against a real fleet over mutual TLS: a program holding a
// valid worker certificate of the fleet's CA that speaks WorkerService
// directly, registers with the model and toolkit an honest CPU worker process
// published, leases a job's trials and claims 1 ns for one config. Its claim
// is not served before another worker re-measured it; the re-measurement and
// a referee's quarantine it; tunectl admin invalidate undoes a claim that was
// served; as a verifier, its word against an honest claim is overruled by a
// referee and quarantines the rogue, not the honest worker; and reporting
// every search trial slow, to hide the fast configs, is caught by the spot
// checks, which quarantine it and measure what it measured again. Three that
// stall instead (one heartbeats and never reports, one vanishes with a
// lease, one registers invented device models and leaves) delay a job by
// their limits, and every config is still measured by honest workers.
#include <atomic>
#include <csignal>
#include <thread>
#include <grpcpp/grpcpp.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/file_util.h"
#include "common/tuning_key.h"
#include "gtest/gtest.h"
#include "bench/local_fleet.h"
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

constexpr char kShape[] = "M=96,N=96,K=96";
constexpr char kRogueHost[] = "rogue.example";
// The rogue's certificate's common name: its identity to the coordinator.
constexpr char kRoguePrincipal[] = "rogue.example";
constexpr double kClaimed = 1e-9;

std::unique_ptr<grpc::ClientContext> Context(int seconds = 10) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return context;
}

std::string Contents(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFile(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.value_or("");
}

// The rogue: registers as a copy of the first live worker, leases as much as
// it can, and reports 1 ns for the first config it was given (1 s for the
// others), in the search and in the finalists round. It speaks WorkerService
// with its certificate, and reads TuningService (ListWorkers, GetJob) with a
// token, as any client can.
class RogueWorker {
 public:
  RogueWorker(const std::string& address, const std::string& ca_file, const std::string& cert,
              const std::string& key, const std::string& token)
      : tuning_(v1::TuningService::NewStub(grpc::CreateChannel(
            address, grpc::CompositeChannelCredentials(
                         grpc::SslCredentials({.pem_root_certs = Contents(ca_file),
                                               .pem_private_key = "",
                                               .pem_cert_chain = ""}),
                         grpc::AccessTokenCredentials(token))))),
        workers_(v1::WorkerService::NewStub(grpc::CreateChannel(
            address, grpc::SslCredentials({.pem_root_certs = Contents(ca_file),
                                           .pem_private_key = Contents(key),
                                           .pem_cert_chain = Contents(cert)})))) {}

  void Register() {
    v1::ListWorkersResponse listed;
    ASSERT_TRUE(tuning_->ListWorkers(Context().get(), v1::ListWorkersRequest(), &listed).ok());
    ASSERT_GT(listed.workers_size(), 0);
    const v1::WorkerInfo& honest = listed.workers(0);
    v1::RegisterWorkerRequest request;
    request.set_host(kRogueHost);
    request.set_toolkit(honest.toolkit());
    request.set_measurement_protocol(kMeasurementProtocolVersion);
    *request.add_devices() = honest.devices(0);
    v1::RegisterWorkerResponse registered;
    ASSERT_TRUE(workers_->RegisterWorker(Context().get(), request, &registered).ok());
    id_ = registered.worker_id();
  }

  // Registers `models` devices of invented models (the honest worker's
  // toolkit and backend), as one that wants jobs bound to devices nobody has.
  grpc::Status RegisterInvented(int models) {
    // An honest worker's device is the template; it registers in its own
    // time, after the fleet started it.
    const v1::WorkerInfo* honest = nullptr;
    v1::ListWorkersResponse listed;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(30); honest == nullptr;) {
      listed.Clear();
      grpc::Status status =
          tuning_->ListWorkers(Context().get(), v1::ListWorkersRequest(), &listed);
      if (!status.ok()) return status;
      for (const v1::WorkerInfo& worker : listed.workers()) {
        if (worker.host() != kRogueHost && worker.devices_size() > 0) honest = &worker;
      }
      if (honest == nullptr && absl::Now() > deadline) {
        return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no honest worker registered");
      }
      if (honest == nullptr) absl::SleepFor(absl::Milliseconds(20));
    }
    v1::RegisterWorkerRequest request;
    request.set_host(kRogueHost);
    request.set_toolkit(honest->toolkit());
    request.set_measurement_protocol(kMeasurementProtocolVersion);
    for (int i = 0; i < models; ++i) {
      v1::Device* device = request.add_devices();
      *device = honest->devices(0);
      device->set_id(absl::StrCat("invented", i));
      device->set_model(absl::StrCat("Invented Accelerator ", i));
    }
    v1::RegisterWorkerResponse registered;
    grpc::Status status = workers_->RegisterWorker(Context().get(), request, &registered);
    if (status.ok()) id_ = registered.worker_id();
    return status;
  }

  grpc::Status Heartbeat() {
    v1::HeartbeatRequest request;
    request.set_worker_id(id_);
    v1::HeartbeatResponse response;
    return workers_->Heartbeat(Context().get(), request, &response);
  }

  grpc::Status Lease(v1::LeaseWorkResponse* response, int wait_ms = 1000, int max_trials = 1000) {
    v1::LeaseWorkRequest request;
    request.set_worker_id(id_);
    request.set_max_trials(max_trials);
    request.set_wait_ms(wait_ms);
    return workers_->LeaseWork(Context().get(), request, response);
  }

  // Reports `every` seconds for each trial of `lease`, or (0) the claim.
  grpc::Status Report(const v1::Lease& lease, double every = 0) {
    v1::ReportResultsRequest request;
    request.set_worker_id(id_);
    request.set_lease_id(lease.lease_id());
    request.set_epoch(lease.epoch());
    for (const v1::Trial& trial : lease.trials()) {
      if (poisoned_ < 0) poisoned_ = trial.index();
      const double seconds = every > 0 ? every : trial.index() == poisoned_ ? kClaimed : 1.0;
      v1::ReportedTrial* reported = request.add_trials();
      reported->set_index(trial.index());
      v1::TrialResult* result = reported->mutable_result();
      result->set_status(v1::TRIAL_STATUS_OK);
      result->set_device_id("cpu0");
      result->mutable_measurement()->set_median_seconds(seconds);
      result->mutable_measurement()->set_p20_seconds(seconds);
      result->mutable_measurement()->set_p80_seconds(seconds);
      result->mutable_measurement()->set_samples(10);
      result->mutable_measurement()->set_calibration_seconds(1e-4);  // plausible, as a liar's is
    }
    v1::ReportResultsResponse response;
    return workers_->ReportResults(Context().get(), request, &response);
  }

  // Leases and reports until it has reported a finalists round.
  void ClaimUntilFinalsReported(const std::string& job_id) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    bool finals = false;
    while (!finals && absl::Now() < deadline) {
      v1::LeaseWorkResponse leased;
      ASSERT_TRUE(Lease(&leased).ok());
      if (!leased.has_lease()) continue;
      EXPECT_LE(leased.lease().trials_size(), 64);  // the coordinator's cap
      ASSERT_TRUE(Report(leased.lease()).ok());
      finals = leased.lease().kind() == v1::LEASE_KIND_FINALISTS;
    }
    ASSERT_TRUE(finals) << "the rogue never got the finalists round: "
                        << GetJob(job_id).ShortDebugString();
  }

  v1::Job GetJob(const std::string& id) {
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::GetJobResponse response;
    EXPECT_TRUE(tuning_->GetJob(Context().get(), request, &response).ok());
    return response.job();
  }

  bool Alive(size_t honest_workers) {
    v1::ListWorkersResponse listed;
    if (!tuning_->ListWorkers(Context().get(), v1::ListWorkersRequest(), &listed).ok()) {
      return false;
    }
    size_t alive = 0;
    for (const v1::WorkerInfo& worker : listed.workers()) {
      alive += worker.alive() && worker.host() != kRogueHost;
    }
    return alive == honest_workers;
  }

 private:
  std::unique_ptr<v1::TuningService::Stub> tuning_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
  std::string id_;
  int64_t poisoned_ = -1;
};

class RogueWorkerTest : public ::testing::Test {
 protected:
  void StartFleet(std::vector<std::string> coordinator_flags, int honest_workers,
                  int64_t lease_ttl_ms = 0) {
    FleetOptions options = SecureFleetOptions(dir_.path());
    options.coordinator_flags = std::move(coordinator_flags);
    if (lease_ttl_ms > 0) options.lease_ttl_ms = lease_ttl_ms;
    // Honest CPU workers sharing this machine's cores can measure one config
    // up to twice apart; the rogues' numbers are orders of magnitude off.
    options.coordinator_flags.push_back("--verify-tolerance=1");
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    for (int i = 0; i < honest_workers; ++i) ASSERT_OK(fleet_->StartWorker());
    absl::StatusOr<std::string> token = AdminToken(*fleet_);
    ASSERT_OK(token);
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAs(*fleet_, *token);
    ASSERT_OK(client);
    client_ = *std::move(client);
    // A certificate the fleet's CA really issued: TLS alone does not stop it.
    absl::StatusOr<std::vector<std::string>> rogue_tls =
        fleet_->WorkerCertificateFlags(kRoguePrincipal);
    ASSERT_OK(rogue_tls);
    rogue_ = std::make_unique<RogueWorker>(fleet_->address(), fleet_->ca_file(), (*rogue_tls)[3],
                                           (*rogue_tls)[5], *token);
    // A worker process is up before it has registered: a test that stops it
    // at once would find no honest worker to copy or to wait for.
    ASSERT_NO_FATAL_FAILURE(WaitUntilAlive(static_cast<size_t>(honest_workers)));
  }

  SubmitRequest Matmul(bool force) {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = kShape;
    request.strategy = "random";
    request.budget = 6;
    request.seed = 7;
    request.force_retune = force;
    return request;
  }

  Job Wait(const std::string& job_id) {
    absl::StatusOr<Job> done = client_->Watch(job_id, [](const Job&) {});
    EXPECT_TRUE(done.ok()) << done.status();
    return done.ok() ? *done : Job();
  }

  BestConfig Served() {
    absl::StatusOr<BestConfig> best = client_->GetBestConfig("matmul", kShape, "", "");
    EXPECT_TRUE(best.ok()) << best.status();
    return best.ok() ? *best : BestConfig();
  }

  // Stops (or resumes) every honest worker process.
  void SignalWorkers(int count, int signal) {
    for (int i = 0; i < count; ++i) fleet_->worker(i)->Kill(signal);
  }

  // With the honest worker stopped, the rogue registers and takes the search
  // work of a new job (what a stopped worker's waiting LeaseWork got comes
  // back once that lease expires); then the honest worker runs again.
  // Returns the job's id and the rogue's lease.
  std::pair<std::string, v1::Lease> RogueTakesAJob() {
    SignalWorkers(1, SIGSTOP);
    WaitUntilAlive(0);
    rogue_->Register();
    absl::StatusOr<Job> job = client_->Submit(Matmul(/*force=*/false));
    EXPECT_TRUE(job.ok()) << job.status();
    v1::LeaseWorkResponse leased;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (job.ok() && !leased.has_lease() && absl::Now() < deadline) {
      const grpc::Status asked = rogue_->Lease(&leased);
      EXPECT_TRUE(asked.ok()) << asked.error_code() << ": " << asked.error_message();
    }
    EXPECT_TRUE(leased.has_lease());
    EXPECT_EQ(leased.lease().kind(), v1::LEASE_KIND_SEARCH);
    SignalWorkers(1, SIGCONT);
    return {job.ok() ? job->id : "", leased.lease()};
  }

  // Every config of the job measured, by honest workers only, none lost.
  void ExpectMeasuredByHonestWorkersOnly(const Job& done) {
    EXPECT_EQ(done.state, JobState::kSucceeded) << done.reason;
    EXPECT_EQ(done.outcomes.count("WORKER_LOST"), 0u);
    ASSERT_EQ(done.outcomes.count("OK"), 1u);
    EXPECT_EQ(done.outcomes.at("OK"), Matmul(false).budget);
    absl::StatusOr<std::vector<Trial>> trials = client_->ListAllTrials(done.id);
    ASSERT_OK(trials);
    for (const Trial& trial : *trials) EXPECT_NE(trial.principal, kRoguePrincipal) << trial.config;
  }

  void WaitUntilAlive(size_t honest_workers) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    bool reached = false;
    while (!(reached = rogue_->Alive(honest_workers)) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    ASSERT_TRUE(reached) << "never " << honest_workers << " live honest worker(s) in 30 s";
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<RogueWorker> rogue_;
};

TEST_F(RogueWorkerTest, AClaimIsNotServedUntilReMeasuredAndADisagreeingClaimantIsQuarantined) {
  // Two honest worker processes, two principals: one verifies the rogue's
  // claim, and the other referees the dispute.
  ASSERT_NO_FATAL_FAILURE(StartFleet({"--verify-best=required"}, /*honest_workers=*/2));
  Job first = Wait(client_->Submit(Matmul(/*force=*/false))->id);
  ASSERT_EQ(first.state, JobState::kSucceeded) << first.reason;
  const BestConfig honest = Served();
  ASSERT_EQ(honest.source, BestConfig::Source::kExact);
  ASSERT_GT(honest.median_seconds, 1e-7);

  SignalWorkers(2, SIGSTOP);
  ASSERT_NO_FATAL_FAILURE(WaitUntilAlive(0));
  ASSERT_NO_FATAL_FAILURE(rogue_->Register());  // it reads them from ListWorkers
  absl::StatusOr<Job> retune = client_->Submit(Matmul(/*force=*/true));
  ASSERT_OK(retune);
  ASSERT_NO_FATAL_FAILURE(rogue_->ClaimUntilFinalsReported(retune->id));

  // The claim waits for a verifier, which the rogue can never be.
  v1::LeaseWorkResponse nothing;
  ASSERT_TRUE(rogue_->Lease(&nothing, /*wait_ms=*/500).ok());
  EXPECT_FALSE(nothing.has_lease());
  v1::Job pending = rogue_->GetJob(retune->id);
  EXPECT_EQ(pending.state(), v1::JOB_STATE_RUNNING);
  ASSERT_EQ(pending.targets_size(), 1);
  EXPECT_EQ(pending.targets(0).verification().state(), v1::VERIFICATION_STATE_PENDING);
  EXPECT_EQ(pending.targets(0).verification().claimed_seconds(), kClaimed);
  EXPECT_EQ(Served().config, honest.config);
  EXPECT_EQ(Served().median_seconds, honest.median_seconds);

  SignalWorkers(2, SIGCONT);
  Job retuned = Wait(retune->id);
  ASSERT_EQ(retuned.state, JobState::kSucceeded) << retuned.reason;
  v1::Job judged = rogue_->GetJob(retune->id);
  EXPECT_EQ(judged.targets(0).verification().state(), v1::VERIFICATION_STATE_DISAGREED);
  EXPECT_EQ(judged.targets(0).verification().verifiers_size(), 2);  // verifier and referee
  EXPECT_GT(judged.targets(0).verification().verified_seconds(), 1e-7);
  const BestConfig after = Served();
  EXPECT_GT(after.median_seconds, 1e-7);  // the verifier's numbers stand
  // They are the retune's candidate, served only when it beat the first
  // job's best (or re-measured that config and found it tied).
  ASSERT_EQ(retuned.targets.size(), 1u);
  const std::string& outcome = retuned.targets[0].retune;
  EXPECT_EQ(after.job_id,
            outcome == "replaced" || outcome == "confirmed" ? retune->id : first.id)
      << outcome;

  v1::LeaseWorkResponse refused;
  grpc::Status denied = rogue_->Lease(&refused, 0);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find("quarantined"), std::string::npos);
  v1::Lease stale;
  stale.set_lease_id("l1");
  EXPECT_EQ(rogue_->Report(stale).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(RogueWorkerTest, AdminInvalidateRestoresTheHonestBestAfterAnUnverifiedClaim) {
  // verify_best=auto with nobody to verify: the claim is served (and logged).
  ASSERT_NO_FATAL_FAILURE(StartFleet({"--verify-best=auto"}, /*honest_workers=*/1));
  Job first = Wait(client_->Submit(Matmul(/*force=*/false))->id);
  ASSERT_EQ(first.state, JobState::kSucceeded) << first.reason;
  const BestConfig honest = Served();

  SignalWorkers(1, SIGSTOP);
  ASSERT_NO_FATAL_FAILURE(WaitUntilAlive(0));
  ASSERT_NO_FATAL_FAILURE(rogue_->Register());
  absl::StatusOr<Job> retune = client_->Submit(Matmul(/*force=*/true));
  ASSERT_OK(retune);
  ASSERT_NO_FATAL_FAILURE(rogue_->ClaimUntilFinalsReported(retune->id));
  ASSERT_EQ(Wait(retune->id).state, JobState::kSucceeded);
  EXPECT_EQ(Served().median_seconds, kClaimed);
  EXPECT_EQ(rogue_->GetJob(retune->id).targets(0).verification().state(),
            v1::VERIFICATION_STATE_UNVERIFIED);

  absl::StatusOr<bench::RunResult> run =
      RunProgram({BuildDir() + "/bin/tunectl", "--server", fleet_->address(), "--ca-file",
                  fleet_->ca_file(), "--token-file", fleet_->admin_token_file(), "admin",
                  "invalidate", "--worker", kRoguePrincipal},
                 absl::Seconds(30));
  ASSERT_OK(run);
  EXPECT_EQ(run->exit.code, 0) << run->out;
  EXPECT_NE(run->out.find("best configs changed"), std::string::npos) << run->out;
  EXPECT_EQ(run->out.find("0 trials excluded"), std::string::npos) << run->out;

  const BestConfig restored = Served();
  EXPECT_EQ(restored.config, honest.config);
  EXPECT_EQ(restored.median_seconds, honest.median_seconds);
  EXPECT_EQ(restored.job_id, first.id);
  SignalWorkers(1, SIGCONT);
}

TEST_F(RogueWorkerTest, ARogueVerifierIsOverruledByARefereeAndQuarantinedNotTheHonestClaimant) {
  ASSERT_NO_FATAL_FAILURE(StartFleet({"--verify-best=required"}, /*honest_workers=*/2));
  fleet_->worker(1)->Kill(SIGSTOP);  // the referee, later
  ASSERT_NO_FATAL_FAILURE(rogue_->Register());
  absl::StatusOr<Job> job = client_->Submit(Matmul(/*force=*/false));
  ASSERT_OK(job);
  // The honest worker tunes; the rogue asks only once the best waits for a
  // verifier, and answers 0.5 s for everything.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (rogue_->GetJob(job->id).targets(0).verification().state() !=
             v1::VERIFICATION_STATE_PENDING &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  v1::LeaseWorkResponse verify;
  const grpc::Status leased = rogue_->Lease(&verify);
  ASSERT_TRUE(leased.ok()) << leased.error_code() << ": " << leased.error_message();
  ASSERT_TRUE(verify.has_lease()) << rogue_->GetJob(job->id).ShortDebugString();
  ASSERT_EQ(verify.lease().kind(), v1::LEASE_KIND_FINALISTS);
  ASSERT_TRUE(rogue_->Report(verify.lease(), /*every=*/0.5).ok());

  // Its word alone decides nothing: the job waits for a referee.
  v1::Job disputed = rogue_->GetJob(job->id);
  EXPECT_EQ(disputed.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(disputed.targets(0).verification().state(), v1::VERIFICATION_STATE_PENDING);
  ASSERT_EQ(disputed.targets(0).verification().verifiers_size(), 1);
  EXPECT_EQ(disputed.targets(0).verification().verifiers(0), kRoguePrincipal);
  absl::StatusOr<BestConfig> untuned = client_->GetBestConfig("matmul", kShape, "", "");
  EXPECT_TRUE(!untuned.ok() || untuned->source != BestConfig::Source::kExact);

  fleet_->worker(1)->Kill(SIGCONT);
  Job done = Wait(job->id);
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.reason;
  v1::Job judged = rogue_->GetJob(job->id);
  EXPECT_EQ(judged.targets(0).verification().state(), v1::VERIFICATION_STATE_AGREED);
  EXPECT_EQ(judged.targets(0).verification().verifiers_size(), 2);
  const BestConfig served = Served();
  EXPECT_EQ(served.job_id, job->id);
  EXPECT_LT(served.median_seconds, 0.1);  // never the rogue's 0.5 s
  v1::LeaseWorkResponse refused;
  grpc::Status denied = rogue_->Lease(&refused, 0);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // The honest claimant keeps working: a retune runs to the end.
  absl::StatusOr<Job> retune = client_->Submit(Matmul(/*force=*/true));
  ASSERT_OK(retune);
  EXPECT_EQ(Wait(retune->id).state, JobState::kSucceeded);
}

TEST_F(RogueWorkerTest, ASearchLiarIsCaughtBySpotChecksQuarantinedAndItsConfigsMeasuredAgain) {
  // Two honest principals: one checks the rogue's results, the other
  // referees. The agreement band is wide (a factor of 3) for CPU workers
  // sharing this machine's cores; the rogue is off by far more.
  ASSERT_NO_FATAL_FAILURE(StartFleet({"--verify-best=auto", "--spot-check-tolerance=2"},
                                     /*honest_workers=*/2));
  Job first = Wait(client_->Submit(Matmul(/*force=*/false))->id);
  ASSERT_EQ(first.state, JobState::kSucceeded) << first.reason;
  const BestConfig honest = Served();
  ASSERT_LT(honest.median_seconds, 0.01);

  // The rogue takes the whole retune while the honest workers are stopped,
  // and reports once they ask for work again: 20 ms for every config, so
  // that none of them would reach the finalists round.
  SignalWorkers(2, SIGSTOP);
  ASSERT_NO_FATAL_FAILURE(WaitUntilAlive(0));
  ASSERT_NO_FATAL_FAILURE(rogue_->Register());
  absl::StatusOr<Job> retune = client_->Submit(Matmul(/*force=*/true));
  ASSERT_OK(retune);
  // A stopped worker's waiting LeaseWork may have been answered with some
  // of the configs: the rogue gets them once that lease expires.
  v1::LeaseWorkResponse leased;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!leased.has_lease() && absl::Now() < deadline) {
    const grpc::Status asked = rogue_->Lease(&leased);
    ASSERT_TRUE(asked.ok()) << asked.error_code() << ": " << asked.error_message();
  }
  ASSERT_TRUE(leased.has_lease()) << rogue_->GetJob(retune->id).ShortDebugString();
  ASSERT_EQ(leased.lease().kind(), v1::LEASE_KIND_SEARCH);
  ASSERT_GE(leased.lease().trials_size(), 2);
  SignalWorkers(2, SIGCONT);
  ASSERT_NO_FATAL_FAILURE(WaitUntilAlive(2));
  absl::SleepFor(absl::Seconds(1));  // they ask for work (and find none)
  ASSERT_TRUE(rogue_->Report(leased.lease(), /*every=*/0.02).ok());

  Job retuned = Wait(retune->id);
  ASSERT_EQ(retuned.state, JobState::kSucceeded) << retuned.reason;
  v1::LeaseWorkResponse refused;
  grpc::Status denied = rogue_->Lease(&refused, 0);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find("quarantined"), std::string::npos);

  // Every config the rogue claimed was measured again by an honest worker,
  // and the served best is an honest measurement, as fast as the first job's.
  absl::StatusOr<std::vector<Trial>> trials = client_->ListAllTrials(retune->id);
  ASSERT_OK(trials);
  absl::flat_hash_set<std::string> claimed;
  absl::flat_hash_set<std::string> checked;  // honest workers' checks of anyone's results
  absl::flat_hash_set<std::string> searched;
  bool refereed = false;
  for (const Trial& trial : *trials) {
    if (trial.round == "search") searched.insert(trial.config);
    if (trial.principal == kRoguePrincipal && trial.round == "search") {
      claimed.insert(trial.config);
      EXPECT_TRUE(trial.excluded) << trial.config;
    }
    if (trial.principal != kRoguePrincipal && trial.round == "spot" && trial.status == "OK") {
      checked.insert(trial.config);
    }
    refereed = refereed || trial.round == "spot-referee";
  }
  EXPECT_EQ(claimed.size(), static_cast<size_t>(leased.lease().trials_size()));
  for (const std::string& config : claimed) EXPECT_TRUE(checked.contains(config)) << config;
  EXPECT_TRUE(refereed);
  const BestConfig served = Served();
  EXPECT_LT(served.median_seconds, 0.01);  // never the rogue's 20 ms
  EXPECT_LT(served.median_seconds, 3 * honest.median_seconds);
  EXPECT_TRUE(searched.contains(served.config)) << served.config;
}

// A worker that takes a job's configs and heartbeats but never reports:
// its lease is taken back at the idle limit however it heartbeats, and the
// honest worker measures every config.
TEST_F(RogueWorkerTest, AHoarderThatHeartbeatsAndNeverReportsCannotStallAJob) {
  ASSERT_NO_FATAL_FAILURE(StartFleet({"--lease-idle-limit-s", "2"}, /*honest_workers=*/1));
  auto [job_id, hoarded] = RogueTakesAJob();
  ASSERT_FALSE(job_id.empty());
  EXPECT_GE(hoarded.trials_size(), 2);
  std::atomic<bool> beating{true};
  std::thread heartbeats([&] {
    while (beating) {
      EXPECT_TRUE(rogue_->Heartbeat().ok());
      absl::SleepFor(absl::Milliseconds(200));
    }
  });
  const Job done = Wait(job_id);
  beating = false;
  heartbeats.join();
  ExpectMeasuredByHonestWorkersOnly(done);
}

// A worker that takes a job's configs and vanishes (no heartbeat, no
// report): its lease expires and its configs are leased again, not stored
// as lost.
TEST_F(RogueWorkerTest, AWorkerThatLeasesAndVanishesLosesNoConfig) {
  ASSERT_NO_FATAL_FAILURE(StartFleet({}, /*honest_workers=*/1, /*lease_ttl_ms=*/2000));
  auto [job_id, taken] = RogueTakesAJob();
  ASSERT_FALSE(job_id.empty());
  EXPECT_GE(taken.trials_size(), 2);
  ExpectMeasuredByHonestWorkersOnly(Wait(job_id));
}

// A worker registering devices of invented models binds a job's targets to
// them, then leaves: those targets are given up after the orphan timeout
// (stop reason no_workers) and the job ends with the honest target's best.
// A worker of more devices than the cap is refused.
TEST_F(RogueWorkerTest, InventedDeviceModelsCannotHoldAJobForGood) {
  ASSERT_NO_FATAL_FAILURE(StartFleet({"--orphan-timeout-s", "2"}, /*honest_workers=*/1));
  const grpc::Status too_many = rogue_->RegisterInvented(65);
  EXPECT_EQ(too_many.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(too_many.error_message().find("at most 64 devices"), std::string::npos);
  const grpc::Status registered = rogue_->RegisterInvented(8);
  ASSERT_TRUE(registered.ok()) << registered.error_message();
  // Alive while the job is submitted (so that its targets bind to the
  // invented models), silent from then on: it dies, and its targets wait.
  std::atomic<bool> beating{true};
  std::thread heartbeats([&] {
    while (beating) {
      EXPECT_TRUE(rogue_->Heartbeat().ok());
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  absl::StatusOr<Job> job = client_->Submit(Matmul(/*force=*/false));
  beating = false;
  heartbeats.join();
  ASSERT_OK(job);
  ASSERT_EQ(job->targets.size(), 9u);  // the honest worker's model and the eight invented
  const Job done = Wait(job->id);
  EXPECT_EQ(done.state, JobState::kSucceeded) << done.reason;
  ASSERT_EQ(done.targets.size(), 9u);
  int given_up = 0;
  for (const JobTarget& target : done.targets) {
    if (absl::StartsWith(target.device_model, "Invented Accelerator ")) {
      EXPECT_EQ(target.stop_reason, "no_workers") << target.device_model;
      EXPECT_EQ(target.trials_done, 0) << target.device_model;
      ++given_up;
    } else {
      EXPECT_FALSE(target.best_config.empty());
    }
  }
  EXPECT_EQ(given_up, 8);
}

}  // namespace
}  // namespace tunefleet::testing
