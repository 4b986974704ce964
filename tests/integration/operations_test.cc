// What an operator relies on, against real coordinator and worker processes:
// a taken port refused at start, the jobs gauge through cached submits (read
// from the real /metrics endpoint), dead workers leaving the list, and a job
// whose worker died saying so.
#include <csignal>
#include <fstream>
#include <sstream>

#include <algorithm>
#include <set>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "bench/local_fleet.h"
#include "common/subprocess.h"
#include "common/usable_cpus.h"
#include "gtest/gtest.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;

constexpr char kShape[] = "M=96,N=96,K=96";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `done` every 50 ms for up to a minute; whether it became true.
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return done();
}

class OperationsTest : public ::testing::Test {
 protected:
  void StartFleet(std::vector<std::string> coordinator_flags = {}) {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    options.coordinator_flags = std::move(coordinator_flags);
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    ClientOptions client;
    client.target = fleet_->address();
    client.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> connected = Client::Connect(client);
    ASSERT_OK(connected);
    client_ = *std::move(connected);
  }

  SubmitRequest Matmul() {
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = kShape;
    request.config_set = "quick";
    return request;
  }

  std::map<std::string, double> Scrape() {
    absl::StatusOr<std::string> text = HttpGet(fleet_->metrics_address(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    return ParseSamples(text.ok() ? *text : "");
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Client> client_;
};

TEST_F(OperationsTest, SecondCoordinatorOnATakenPortFailsAtStartAndTheFirstServesOn) {
  StartFleet();
  SubprocessOptions second;
  second.argv = {BuildDir() + "/bin/tunefleet-coordinator", "--listen", fleet_->address(),
                 "--data-dir", dir_.path() + "/second", "--metrics-listen", "", "--insecure"};
  second.stdout_mode = SubprocessOptions::Output::kNull;
  second.stderr_mode = SubprocessOptions::Output::kFile;
  second.stderr_path = dir_.path() + "/second.err";
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(second);
  ASSERT_OK(started);
  absl::StatusOr<ExitInfo> exit = (*started)->Wait(absl::Seconds(60));
  ASSERT_OK(exit);
  EXPECT_FALSE(exit->success()) << "a second coordinator started on " << fleet_->address();
  const std::string error = Slurp(second.stderr_path);
  EXPECT_THAT(error, HasSubstr("cannot listen on " + fleet_->address()));
  EXPECT_THAT(error, HasSubstr("in use"));
  EXPECT_OK(client_->ListJobs());
}

TEST_F(OperationsTest, JobsGaugeStaysExactThroughCachedSubmits) {
  StartFleet();
  ASSERT_OK(fleet_->StartWorker());
  absl::StatusOr<Job> first = client_->Submit(Matmul());
  ASSERT_OK(first);
  absl::StatusOr<Job> done = client_->Watch(first->id, [](const Job&) {});
  ASSERT_OK(done);
  ASSERT_EQ(done->state, JobState::kSucceeded) << done->reason;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Job> cached = client_->Submit(Matmul());
    ASSERT_OK(cached);
    EXPECT_EQ(cached->state, JobState::kSucceeded);
    ASSERT_EQ(cached->targets.size(), 1u);
    EXPECT_TRUE(cached->targets[0].cached);
  }
  std::map<std::string, double> samples = Scrape();
  for (const std::string state : {"queued", "running", "succeeded", "failed", "cancelled"}) {
    const std::string series = absl::StrCat("tunefleet_coordinator_jobs{state=\"", state, "\"}");
    ASSERT_TRUE(samples.contains(series)) << series;
    EXPECT_GE(samples[series], 0) << series;
  }
  EXPECT_EQ(samples["tunefleet_coordinator_jobs{state=\"queued\"}"], 0);
  EXPECT_EQ(samples["tunefleet_coordinator_jobs{state=\"running\"}"], 0);
  EXPECT_EQ(samples["tunefleet_coordinator_jobs{state=\"succeeded\"}"], 3);
  EXPECT_EQ(samples["tunefleet_coordinator_jobs_submitted_total{result=\"cached\"}"], 2);
  EXPECT_EQ(samples["tunefleet_coordinator_jobs_submitted_total{result=\"accepted\"}"], 1);
  // The job's leases and reports ran through the job lock's batches, which
  // the upkeep counts every 200 ms.
  EXPECT_TRUE(Eventually([&] {
    std::map<std::string, double> now = Scrape();
    const double batches = now["tunefleet_coordinator_job_lock_batches_total"];
    const double sections = now["tunefleet_coordinator_job_lock_sections_total"];
    return batches >= 1 && sections >= batches;
  })) << "the job lock's batches are not counted";
}

// The coordinator sizes itself by the CPUs it may use (this test's own:
// the same affinity and cgroup), and says so.
TEST_F(OperationsTest, ExportsHowTheCoordinatorSizedItself) {
  StartFleet({"--report-threads", "7", "--lease-threads", "5"});
  std::map<std::string, double> samples = Scrape();
  EXPECT_EQ(samples["tunefleet_coordinator_usable_cpus"], UsableCpus());
  EXPECT_EQ(samples["tunefleet_coordinator_report_threads"], 7);
  EXPECT_EQ(samples["tunefleet_coordinator_lease_threads"], 5);
}

TEST_F(OperationsTest, DeadWorkerLeavesTheWorkerListAfterItsExpiry) {
  StartFleet({"--forget-workers-after-ms", "2000"});
  ASSERT_OK(fleet_->StartWorker());
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<std::vector<WorkerInfo>> workers = client_->ListWorkers();
    return workers.ok() && workers->size() == 1 && (*workers)[0].alive;
  }));
  fleet_->worker(0)->Kill(SIGKILL);
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<std::vector<WorkerInfo>> workers = client_->ListWorkers();
    return workers.ok() && workers->empty();
  })) << "a dead worker is still listed";
  absl::StatusOr<bench::RunResult> listed = RunProgram(
      {BuildDir() + "/bin/tunectl", "--insecure", "--server", fleet_->address(), "workers",
       "-o", "json"},
      absl::Seconds(30));
  ASSERT_OK(listed);
  EXPECT_TRUE(listed->exit.success()) << listed->exit.ToString();
  EXPECT_THAT(listed->out, ::testing::Not(HasSubstr("test-worker-0")));
}

TEST_F(OperationsTest, RunningJobWhoseWorkerDiedSaysSoInStatus) {
  StartFleet();
  ASSERT_OK(fleet_->StartWorker());
  SubmitRequest request = Matmul();
  request.config_set = "";  // the whole space: long enough to catch it running
  absl::StatusOr<Job> job = client_->Submit(request);
  ASSERT_OK(job);
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<Job> now = client_->GetJob(job->id);
    return now.ok() && now->state == JobState::kRunning;
  }));
  fleet_->worker(0)->Kill(SIGKILL);
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<Job> now = client_->GetJob(job->id);
    return now.ok() && absl::StrContains(now->reason, "no live worker");
  })) << "a job whose only worker died gives no reason";
  absl::StatusOr<bench::RunResult> status = RunProgram(
      {BuildDir() + "/bin/tunectl", "--insecure", "--server", fleet_->address(), "status",
       job->id},
      absl::Seconds(30));
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr("RUNNING"));
  EXPECT_THAT(status->out, HasSubstr("no live worker can take its work"));
  ASSERT_OK(fleet_->StartWorker());  // a replacement finishes it
  absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
  ASSERT_OK(done);
  EXPECT_EQ(done->state, JobState::kSucceeded) << done->reason;
  EXPECT_EQ(done->reason, "");
}

// Every family declared once, every series once, and promtool satisfied.
void ExpectValidExposition(const std::string& text, const std::string& dir) {
  std::set<std::string> series;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(series.insert(std::string(line.substr(0, line.rfind(' ')))).second)
        << "duplicate series: " << line;
  }
  std::ofstream(dir + "/exposition.txt") << text;
  absl::StatusOr<bench::RunResult> checked = RunProgram(
      {"sh", "-c", "promtool check metrics < " + dir + "/exposition.txt"}, absl::Seconds(30));
  ASSERT_OK(checked);
  EXPECT_TRUE(checked->exit.success())
      << "promtool check metrics: " << checked->exit.ToString()
      << " (install the Debian package prometheus)";
}

TEST_F(OperationsTest, WorkerAndCoordinatorExportWhatAJobDid) {
  StartFleet();
  ASSERT_OK(fleet_->StartWorker());
  absl::StatusOr<Job> job = client_->Submit(Matmul());
  ASSERT_OK(job);
  absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
  ASSERT_OK(done);
  ASSERT_EQ(done->state, JobState::kSucceeded) << done->reason;
  absl::StatusOr<std::string> worker_address = fleet_->WorkerMetricsAddress(0);
  ASSERT_OK(worker_address);
  absl::StatusOr<std::string> worker_text = HttpGet(*worker_address, "/metrics");
  ASSERT_OK(worker_text);
  std::map<std::string, double> worker = ParseSamples(*worker_text);
  EXPECT_EQ(worker["tunefleet_worker_trials_total{device=\"cpu0\",outcome=\"ok\"}"],
            done->trials_done + 0.0)
      << *worker_text;
  EXPECT_EQ(worker["tunefleet_worker_trials_total{device=\"cpu0\",outcome=\"crashed\"}"], 0);
  EXPECT_GT(worker["tunefleet_worker_compile_seconds_count{device=\"cpu0\"}"], 0);
  EXPECT_GT(worker["tunefleet_worker_measure_seconds_count{device=\"cpu0\"}"], 0);
  EXPECT_GE(worker["tunefleet_worker_child_starts_total{device=\"cpu0\"}"], 1);
  EXPECT_GE(worker["tunefleet_worker_leases_total{device=\"cpu0\"}"], 1);
  EXPECT_GE(worker["tunefleet_worker_lease_wait_seconds_count{device=\"cpu0\"}"],
            worker["tunefleet_worker_leases_total{device=\"cpu0\"}"]);
  EXPECT_GT(worker["process_start_time_seconds"], 1.6e9);
  EXPECT_GT(worker["process_resident_memory_bytes"], 0);
  EXPECT_GT(worker["process_open_fds"], 0);
  EXPECT_THAT(*worker_text, HasSubstr("tunefleet_worker_info{"));
  ExpectValidExposition(*worker_text, dir_.path());

  absl::StatusOr<std::string> text = HttpGet(fleet_->metrics_address(), "/metrics");
  ASSERT_OK(text);
  std::map<std::string, double> coordinator = ParseSamples(*text);
  EXPECT_EQ(coordinator["tunefleet_coordinator_rpc_seconds_count{code=\"OK\",method=\"TuningService/SubmitJob\"}"], 1)
      << *text;
  EXPECT_GE(coordinator["tunefleet_coordinator_rpc_seconds_count{code=\"OK\",method=\"WorkerService/ReportResults\"}"], 1);
  EXPECT_GE(coordinator["tunefleet_coordinator_store_operation_seconds_count{operation=\"InsertTrials\"}"], 1);
  EXPECT_EQ(coordinator["tunefleet_coordinator_queued_trials{device_model=\"" +
                        done->targets[0].device_model + "\"}"], 0);
  EXPECT_GT(coordinator["process_cpu_seconds_total"], 0);
  EXPECT_GT(coordinator["process_start_time_seconds"], 1.6e9);
  ExpectValidExposition(*text, dir_.path());
}

TEST(CoordinatorLogTest, JsonFormatWritesOneObjectPerLineWithTheJobLifecycle) {
  TempDir dir;
  SubprocessOptions options;
  options.argv = {BuildDir() + "/bin/tunefleet-coordinator", "--listen", "127.0.0.1:0",
                  "--data-dir", dir.path(), "--metrics-listen", "", "--insecure",
                  "--address-file", dir.path() + "/address", "--log-format", "json"};
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = dir.path() + "/coordinator.out";
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir.path() + "/coordinator.log";
  absl::StatusOr<std::unique_ptr<Subprocess>> coordinator = Subprocess::Start(options);
  ASSERT_OK(coordinator);
  std::string address;
  ASSERT_TRUE(Eventually([&] { return static_cast<bool>(std::ifstream(dir.path() + "/address") >> address); }));
  ClientOptions client_options;
  client_options.target = address;
  client_options.insecure = true;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
  ASSERT_OK(client);
  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
  request.shape = "M=64,N=64,K=64";
  absl::StatusOr<Job> job = (*client)->Submit(request);  // waits: no worker
  ASSERT_OK(job);
  ASSERT_OK((*client)->CancelJob(job->id));
  (*coordinator)->Kill(SIGTERM);
  absl::StatusOr<ExitInfo> exit = (*coordinator)->Wait(absl::Seconds(30));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->ToString();

  EXPECT_EQ(Slurp(options.stdout_path), "") << "JSON logs hold only JSON: no banner";
  std::vector<std::string> messages;
  std::vector<google::protobuf::Struct> objects;
  std::istringstream log(Slurp(options.stderr_path));
  for (std::string line; std::getline(log, line);) {
    google::protobuf::Struct object;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &object).ok())
        << "not a JSON object: " << line;
    for (const char* field : {"time", "level", "logger", "message"}) {
      EXPECT_TRUE(object.fields().contains(field)) << field << " missing: " << line;
    }
    EXPECT_EQ(object.fields().at("logger").string_value(), "coordinator");
    EXPECT_THAT(object.fields().at("level").string_value(),
                ::testing::AnyOf("trace", "debug", "info", "warn", "error", "critical"));
    messages.push_back(object.fields().at("message").string_value());
    objects.push_back(object);
  }
  // A job's lines name it and its kernel in fields of their own.
  const auto submitted = std::find_if(objects.begin(), objects.end(), [&](const auto& object) {
    return absl::StrContains(object.fields().at("message").string_value(), "submitted");
  });
  ASSERT_NE(submitted, objects.end());
  EXPECT_EQ(submitted->fields().at("job_id").string_value(), job->id);
  EXPECT_EQ(submitted->fields().at("kernel").string_value(), "matmul");
  auto logged = [&](const std::string& text) {
    return std::any_of(messages.begin(), messages.end(),
                       [&](const std::string& m) { return absl::StrContains(m, text); });
  };
  EXPECT_TRUE(logged("listening on " + address));
  EXPECT_TRUE(logged("job " + job->id + " submitted"));
  EXPECT_TRUE(logged("job " + job->id + " CANCELLED"));
  EXPECT_TRUE(logged("draining"));
}

TEST_F(OperationsTest, WorkerJsonLogIsOneObjectPerLine) {
  StartFleet();
  SubprocessOptions options;
  options.argv = {BuildDir() + "/bin/tunefleet-worker", "--coordinator", fleet_->address(),
                  "--insecure", "--cache-dir", dir_.path() + "/json-worker-cache",
                  "--name", "json-worker", "--compile-threads", "1", "--log-format", "json"};
  options.stdout_mode = SubprocessOptions::Output::kNull;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir_.path() + "/worker.log";
  absl::StatusOr<std::unique_ptr<Subprocess>> worker = Subprocess::Start(options);
  ASSERT_OK(worker);
  ASSERT_TRUE(Eventually([&] {
    return absl::StrContains(Slurp(options.stderr_path), "registered as worker");
  })) << Slurp(options.stderr_path);
  absl::StatusOr<Job> job = client_->Submit(Matmul());  // its benchmark child logs too
  ASSERT_OK(job);
  absl::StatusOr<Job> done = client_->Watch(job->id, [](const Job&) {});
  ASSERT_OK(done);
  EXPECT_EQ(done->state, JobState::kSucceeded) << done->reason;
  (*worker)->Kill(SIGTERM);
  absl::StatusOr<ExitInfo> exit = (*worker)->Wait(absl::Seconds(60));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->ToString();
  std::istringstream log(Slurp(options.stderr_path));
  int lines = 0;
  bool lease_line = false;
  for (std::string line; std::getline(log, line); ++lines) {
    google::protobuf::Struct object;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &object).ok())
        << "not a JSON object: " << line;
    EXPECT_THAT(object.fields().at("logger").string_value(),
                ::testing::AnyOf("worker", "bench-child"))
        << line;
    EXPECT_NE(object.fields().at("level").string_value(), "warning") << line;
    if (object.fields().contains("lease")) {
      lease_line = true;
      EXPECT_EQ(object.fields().at("job_id").string_value(), job->id) << line;
      EXPECT_EQ(object.fields().at("kernel").string_value(), "matmul") << line;
      EXPECT_TRUE(object.fields().contains("worker")) << line;  // registered by then
    }
  }
  EXPECT_GE(lines, 3);  // a warning about --insecure, the device, registration, ...
  EXPECT_TRUE(lease_line) << "no line names its lease";
}

// gRPC's own complaints (here: a TLS handshake with a certificate no CA of
// the coordinator's signed) are JSON lines of the worker's logger too.
TEST(WorkerLogTest, GrpcCoreLinesAreJsonToo) {
  TempDir dir;
  absl::StatusOr<bench::RunResult> ca = RunProgram(
      {"sh", "-c",
       absl::StrCat(SourceDir(), "/scripts/dev-ca.sh ", dir.path(), "/fleet coordinator && ",
                    SourceDir(), "/scripts/dev-ca.sh ", dir.path(), "/other worker rogue 2>&1")},
      absl::Minutes(1));
  ASSERT_OK(ca);
  ASSERT_TRUE(ca->exit.success()) << ca->out;
  SubprocessOptions coordinator_options;
  coordinator_options.argv = {
      BuildDir() + "/bin/tunefleet-coordinator", "--listen", "127.0.0.1:0", "--data-dir",
      dir.path() + "/data", "--metrics-listen", "", "--address-file", dir.path() + "/address",
      "--tls-cert", dir.path() + "/fleet/coordinator.crt", "--tls-key",
      dir.path() + "/fleet/coordinator.key", "--tls-client-ca", dir.path() + "/fleet/ca.crt",
      "--admin-token-file", dir.path() + "/admin.token"};
  coordinator_options.stdout_mode = SubprocessOptions::Output::kNull;
  coordinator_options.stderr_mode = SubprocessOptions::Output::kNull;
  absl::StatusOr<std::unique_ptr<Subprocess>> coordinator = Subprocess::Start(coordinator_options);
  ASSERT_OK(coordinator);
  std::string address;
  ASSERT_TRUE(Eventually([&] { return static_cast<bool>(std::ifstream(dir.path() + "/address") >> address); }));
  SubprocessOptions options;
  options.argv = {BuildDir() + "/bin/tunefleet-worker", "--coordinator", address,
                  "--tls-ca", dir.path() + "/other/ca.crt",  // not the coordinator's CA
                  "--tls-cert", dir.path() + "/other/worker-rogue.crt", "--tls-key",
                  dir.path() + "/other/worker-rogue.key", "--cache-dir", dir.path() + "/cache",
                  "--compile-threads", "1", "--log-format", "json"};
  options.stdout_mode = SubprocessOptions::Output::kNull;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir.path() + "/worker.log";
  absl::StatusOr<std::unique_ptr<Subprocess>> worker = Subprocess::Start(options);
  ASSERT_OK(worker);
  EXPECT_TRUE(Eventually([&] {
    return absl::StrContains(Slurp(options.stderr_path), "\"message\":\"grpc: ");
  })) << Slurp(options.stderr_path);
  (*worker)->KillAndWait();
  (*coordinator)->KillAndWait();
  std::istringstream log(Slurp(options.stderr_path));
  for (std::string line; std::getline(log, line);) {
    google::protobuf::Struct object;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &object).ok())
        << "not a JSON object: " << line;
  }
}

}  // namespace
}  // namespace tunefleet::testing
