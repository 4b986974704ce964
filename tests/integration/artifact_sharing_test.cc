// Compile once for the fleet, across real processes: a coordinator (SQLite)
// and CPU workers, one at a time, each with its own artifact cache. A worker
// of the principal that compiled a space compiles none of it again in the
// search (every artifact is fetched from the coordinator), and compiles the
// finalists from their sources, to the same bytes; a worker of another
// principal compiles everything itself. A host of a principal that publishes
// a fast config's binary under a slow config's key is caught by the
// finalists' own build, and the slow config is never served.
#include <csignal>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/local_fleet.h"
#include "common/config_text.h"
#include "common/file_util.h"
#include "common/spec_loader.h"
#include "common/tuning_key.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/support/fleet_client.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"
#include "tunefleet/v1/types.pb.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"
#include "worker/cpu/cpu_compiler.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;

class ArtifactSharingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    // Every search fetches what it can: no lease is drawn for an audit build.
    options.coordinator_flags = {"--audit-build-rate=0"};
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectPlaintext(*fleet_);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  static SubmitRequest RepeatCpu(bool force) {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/tests/worker/repeat_cpu";
    request.shape = "N=4096";
    request.force_retune = force;
    return request;
  }

  // Tunes repeat_cpu's 8 configs on whichever worker is up; the job's rows.
  std::vector<server::TrialRecord> Tune(bool force) {
    absl::StatusOr<Job> job = client_->Submit(RepeatCpu(force));
    EXPECT_OK(job);
    if (!job.ok()) return {};
    return Rows(job->id);
  }

  // Waits for job `id` to succeed; its rows.
  std::vector<server::TrialRecord> Rows(const std::string& id) {
    absl::StatusOr<Job> done = client_->Watch(id, [](const Job&) {});
    EXPECT_OK(done);
    if (!done.ok()) return {};
    EXPECT_EQ(done->state, JobState::kSucceeded) << done->reason;
    auto store = server::OpenStore(fleet_->database_url());
    EXPECT_OK(store);
    if (!store.ok()) return {};
    absl::StatusOr<std::vector<server::TrialRecord>> rows = (*store)->ListTrials(done->id);
    EXPECT_OK(rows);
    return rows.ok() ? *rows : std::vector<server::TrialRecord>{};
  }

  // Runs `name`'s worker for one tuning of the space, then stops it.
  std::vector<server::TrialRecord> TuneOn(const std::string& name, bool force) {
    absl::StatusOr<int> worker = fleet_->StartWorker(name);
    EXPECT_OK(worker);
    if (!worker.ok()) return {};
    std::vector<server::TrialRecord> rows = Tune(force);
    fleet_->worker(*worker)->KillAndWait();
    return rows;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(ArtifactSharingTest, AWorkerOfTheSamePrincipalFetchesEveryArtifact) {
  const std::vector<server::TrialRecord> first = TuneOn("host-a", /*force=*/false);
  ASSERT_GE(first.size(), 8u);
  for (const server::TrialRecord& row : first) {
    if (row.round != server::TrialRound::kSearch) continue;
    EXPECT_EQ(row.status, ::tunefleet::v1::TRIAL_STATUS_OK) << row.config << ": " << row.error;
    EXPECT_GT(row.compile_seconds, 0) << row.config << " was not compiled";
  }

  // Another process of host-a, with an empty cache of its own: it fetches
  // what it searches, and compiles the finalists from their sources, to the
  // bytes shared (no conflict).
  const std::vector<server::TrialRecord> again = TuneOn("host-a", /*force=*/true);
  ASSERT_GE(again.size(), 8u);
  int finalists = 0;
  for (const server::TrialRecord& row : again) {
    EXPECT_EQ(row.status, ::tunefleet::v1::TRIAL_STATUS_OK) << row.config << ": " << row.error;
    EXPECT_EQ(row.principal, "host:host-a");
    if (row.round == server::TrialRound::kSearch) {
      EXPECT_EQ(row.compile_seconds, 0) << row.config << " was compiled again";
    } else if (row.round == server::TrialRound::kFinalists) {
      EXPECT_GT(row.compile_seconds, 0) << row.config << " was not built here";
      ++finalists;
    }
  }
  EXPECT_GT(finalists, 0);
  absl::StatusOr<std::string> metrics = HttpGet(fleet_->metrics_address(), "/metrics");
  ASSERT_OK(metrics);
  EXPECT_EQ(ParseSamples(*metrics)["tunefleet_coordinator_artifact_conflicts_total"], 0);

  // host-b trusts nothing host-a compiled: it compiles the space itself.
  const std::vector<server::TrialRecord> other = TuneOn("host-b", /*force=*/true);
  ASSERT_GE(other.size(), 8u);
  for (const server::TrialRecord& row : other) {
    if (row.round != server::TrialRound::kSearch) continue;
    EXPECT_EQ(row.status, ::tunefleet::v1::TRIAL_STATUS_OK) << row.config << ": " << row.error;
    EXPECT_GT(row.compile_seconds, 0) << row.config << " was not compiled by host-b";
  }
}

// A host holding the principal's identity (here: the same host name) leases
// the slowest config, REPEAT=32, and publishes the fastest config's binary
// under its key; the coordinator takes it, as the host holds the config's
// lease. An honest worker of the principal then fetches it and measures the
// slow config fast in the search. The finalists round builds from the
// sources: the slow config is measured as it is, its publish differs from
// the shared copy (a conflict, counted), and it is never served.
TEST_F(ArtifactSharingTest, APoisonedArtifactIsCaughtByTheFinalistsOwnBuildAndNeverServed) {
  auto channel = grpc::CreateChannel(fleet_->address(), grpc::InsecureChannelCredentials());
  auto workers = v1::WorkerService::NewStub(channel);
  auto tuning = v1::TuningService::NewStub(channel);
  auto context = [] {
    auto made = std::make_unique<grpc::ClientContext>();
    made->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return made;
  };
  // The honest worker registers, then stops until the poison is in place.
  // It never cuts a config early: the poisoned binary's sub-microsecond time
  // is noisy on a loaded machine, and a config cut early is no finalist.
  absl::StatusOr<int> honest = fleet_->StartWorker("host-a", {"--cut-factor=-1"});
  ASSERT_OK(honest);
  v1::ListWorkersResponse listed;
  for (int i = 0; i < 300 && listed.workers_size() == 0; ++i) {
    ASSERT_TRUE(tuning->ListWorkers(context().get(), v1::ListWorkersRequest(), &listed).ok());
    if (listed.workers_size() == 0) absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_EQ(listed.workers_size(), 1);
  fleet_->worker(*honest)->Kill(SIGSTOP);
  absl::StatusOr<Job> job = client_->Submit(RepeatCpu(/*force=*/false));
  ASSERT_OK(job);

  // The rogue: registers as host-a, leases what is left of the space (the
  // honest worker's long poll may have taken a first lease as it stopped).
  v1::RegisterWorkerRequest registration;
  registration.set_host("host-a");
  registration.set_toolkit(listed.workers(0).toolkit());
  registration.set_measurement_protocol(kMeasurementProtocolVersion);
  *registration.add_devices() = listed.workers(0).devices(0);
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(workers->RegisterWorker(context().get(), registration, &registered).ok());
  v1::LeaseWorkRequest ask;
  ask.set_worker_id(registered.worker_id());
  ask.set_max_trials(64);
  ask.set_wait_ms(5000);
  v1::LeaseWorkResponse leased;
  ASSERT_TRUE(workers->LeaseWork(context().get(), ask, &leased).ok());
  const v1::Lease& lease = leased.lease();
  std::vector<v1::SourceFile> sources;
  for (const v1::SourceFile& file : lease.sources()) {
    v1::GetBlobRequest blob;
    blob.set_worker_id(registered.worker_id());
    blob.set_digest(file.digest());
    v1::GetBlobResponse content;
    ASSERT_TRUE(workers->GetBlob(context().get(), blob, &content).ok());
    sources.push_back(file);
    sources.back().set_content(content.content());
  }
  v1::Config slow;
  for (const v1::Trial& trial : lease.trials()) {
    if (ConfigToString(trial.config()) == "REPEAT=32,VARIANT=1") slow = trial.config();
  }
  ASSERT_EQ(slow.values_size(), 2) << "the slowest config is not leased: "
                                   << leased.ShortDebugString();
  absl::StatusOr<v1::Config> fast = ParseConfig("REPEAT=1,VARIANT=0");
  ASSERT_OK(fast);
  // It compiles as the honest worker does (the same compiler, the same key).
  TempDir rogue_cache;
  worker::CompilerOptions compiler_options;
  compiler_options.cache_dir = rogue_cache.path();
  absl::StatusOr<std::unique_ptr<worker::CpuCompiler>> compiler =
      worker::CpuCompiler::Create(compiler_options);
  ASSERT_OK(compiler);
  absl::StatusOr<v1::Shape> shape = NormalizeShape(lease.kernel(), lease.shape());
  ASSERT_OK(shape);
  const worker::CompileJob slow_job{&lease.kernel(), &sources, slow, listed.workers(0).devices(0),
                                    false, *shape};
  const worker::CompileJob fast_job{&lease.kernel(), &sources, *fast, listed.workers(0).devices(0),
                                    false, *shape};
  const std::optional<worker::ArtifactLocation> slow_key = (*compiler)->Locate(slow_job);
  ASSERT_TRUE(slow_key.has_value());
  absl::StatusOr<worker::CompileOutcome> fast_built = (*compiler)->Compile(fast_job);
  ASSERT_OK(fast_built);
  ASSERT_TRUE(fast_built->ok) << fast_built->log;
  absl::StatusOr<std::string> fast_binary = ReadFile(fast_built->artifact);
  ASSERT_OK(fast_binary);
  v1::PutArtifactRequest poison;
  poison.set_worker_id(registered.worker_id());
  poison.set_key(slow_key->key);
  poison.mutable_artifact()->set_content(*fast_binary);
  poison.set_job_id(lease.job_id());
  *poison.mutable_config() = slow;
  v1::PutArtifactResponse put;
  ASSERT_TRUE(workers->PutArtifact(context().get(), poison, &put).ok());
  // Its lease goes back, measured by nobody.
  v1::ReportResultsRequest give_back;
  give_back.set_worker_id(registered.worker_id());
  give_back.set_lease_id(lease.lease_id());
  give_back.set_epoch(lease.epoch());
  give_back.set_release(true);
  v1::ReportResultsResponse reported;
  ASSERT_TRUE(workers->ReportResults(context().get(), give_back, &reported).ok());

  fleet_->worker(*honest)->Kill(SIGCONT);
  const std::vector<server::TrialRecord> rows = Rows(job->id);
  double fast_search = 0, slow_search = 0, slow_final = 0;
  for (const server::TrialRecord& row : rows) {
    if (row.status != v1::TRIAL_STATUS_OK) continue;
    if (row.round == server::TrialRound::kSearch && row.config == "REPEAT=1,VARIANT=0") {
      fast_search = row.median_seconds;
    } else if (row.config == "REPEAT=32,VARIANT=1") {
      (row.round == server::TrialRound::kSearch ? slow_search : slow_final) = row.median_seconds;
    }
  }
  ASSERT_GT(fast_search, 0);
  ASSERT_GT(slow_search, 0);
  // The search ran the poisoned binary (32 repeats measured as one)...
  EXPECT_LT(slow_search, 4 * fast_search) << "the poison did not take";
  // ...the finalists round built the config from its sources.
  EXPECT_GT(slow_final, 8 * fast_search) << "the finalists round ran the poisoned binary";
  absl::StatusOr<BestConfig> best = client_->GetBestConfig("repeat_cpu", "N=4096", "", "");
  ASSERT_OK(best);
  EXPECT_EQ(best->config.rfind("REPEAT=1,", 0), 0u) << best->config;
  absl::StatusOr<std::string> metrics = HttpGet(fleet_->metrics_address(), "/metrics");
  ASSERT_OK(metrics);
  EXPECT_EQ(ParseSamples(*metrics)["tunefleet_coordinator_artifact_conflicts_total"], 1);

  // The operator's repair drops what the principal shared (what a host
  // measured wrong, it may have compiled wrong).
  std::vector<std::string> argv = {fleet_->BinPath("tunectl"), "--server", fleet_->address()};
  for (const std::string& flag : fleet_->TunectlFlags()) argv.push_back(flag);
  argv.insert(argv.end(), {"admin", "invalidate", "--worker", "host:host-a"});
  absl::StatusOr<bench::RunResult> repaired = bench::RunProgram(argv, absl::Seconds(30));
  ASSERT_OK(repaired);
  EXPECT_EQ(repaired->exit.code, 0) << repaired->out;
  EXPECT_NE(repaired->out.find("shared artifacts dropped"), std::string::npos) << repaired->out;
}

}  // namespace
}  // namespace tunefleet::testing
