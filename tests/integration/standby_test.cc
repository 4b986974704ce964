// One active coordinator per database, and a standby: two coordinator
// processes on one PostgreSQL database, workers and a client given both
// addresses; the leader is killed (or paused) mid-job, the standby takes
// over and the job finishes with every config stored once, and a paused
// leader that wakes writes nothing. And a second coordinator on one SQLite
// file is refused. Real processes over loopback, a real PostgreSQL.
#include <signal.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "bench/local_fleet.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/server/store/test_database.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::testing {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::server::testing::Backend;
using ::tunefleet::server::testing::SkipOrFailWithoutPostgres;
using ::tunefleet::server::testing::TestDatabase;
using ::tunefleet::testing::HttpGet;
using ::tunefleet::testing::ParseSamples;

// tunectl health for `address` (one, or a list): its exit code (0 one
// serves, 6 none) and what it printed.
bench::RunResult HealthOf(const std::string& address) {
  absl::StatusOr<bench::RunResult> result = RunProgram(
      {BuildDir() + "/bin/tunectl", "--server", address, "--insecure", "--timeout", "2", "health"},
      absl::Seconds(10));
  return result.ok() ? *result : bench::RunResult{ExitInfo{.code = -1}, ""};
}

int Health(const std::string& address) { return HealthOf(address).exit.code; }

class StandbyTest : public ::testing::Test {
 public:
  std::unique_ptr<Fleet> StartCoordinator(const std::string& name, const std::string& database) {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path() + "/" + name;
    options.database = database;
    options.finalists = 0;
    // A paused leader's session ends 3 s after its last check.
    options.coordinator_flags = {"--standby-poll-ms", "200", "--leader-session-timeout-ms",
                                 "3000"};
    std::filesystem::create_directories(options.data_dir);
    auto fleet = std::make_unique<Fleet>(options);
    absl::Status started = fleet->StartCoordinator();
    EXPECT_OK(started);
    return started.ok() ? std::move(fleet) : nullptr;
  }


 protected:
  TempDir dir_;
};

// How the leader goes away mid-job.
enum class Outage {
  kKilled,  // SIGKILL: its session, and the lock, end at once
  kPaused,  // SIGSTOP: its session stays open until the server's idle timeout ends it
};

// A leader and a standby on one PostgreSQL database, two workers and a
// client given both; the leader goes away as `outage` says mid-job, the
// standby takes over within 10 s and the job finishes with every config
// stored once. A paused leader is then resumed: it finds it lost the lead,
// stops serving, and writes nothing (its store is fenced).
void TakeOverMidJob(StandbyTest* test, Outage outage) {
  SkipOrFailWithoutPostgres();
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  absl::StatusOr<std::unique_ptr<TestDatabase>> database = TestDatabase::Create(Backend::kPostgres);
  ASSERT_OK(database);
  const std::string url = (*database)->url();

  std::unique_ptr<Fleet> leader = test->StartCoordinator("a", url);
  ASSERT_NE(leader, nullptr);
  std::unique_ptr<Fleet> standby = test->StartCoordinator("b", url);
  ASSERT_NE(standby, nullptr);
  EXPECT_EQ(Health(leader->address()), 0);
  EXPECT_EQ(Health(standby->address()), 6);  // NOT_SERVING: it waits

  // Clients and workers know both; calls reach the one that leads.
  const std::string both = absl::StrCat(leader->address(), ",", standby->address());
  bench::RunResult roles = HealthOf(both);
  EXPECT_EQ(roles.exit.code, 0);
  EXPECT_THAT(roles.out, HasSubstr(leader->address() + "  SERVING  leader"));
  EXPECT_THAT(roles.out, HasSubstr(standby->address() + "  NOT_SERVING  standby"));
  leader->set_worker_target(both);
  ASSERT_OK(leader->StartWorker("host-a"));
  ASSERT_OK(leader->StartWorker("host-b"));
  ClientOptions client_options;
  client_options.target = both;
  client_options.insecure = true;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
  ASSERT_OK(client);
  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
  request.shape = "M=256,N=256,K=256";
  request.strategy = "random";
  request.budget = 30;
  request.seed = 7;
  absl::StatusOr<Job> submitted = (*client)->Submit(request);
  ASSERT_OK(submitted);
  auto wait_for = [&](absl::Duration timeout, const std::function<bool(const Job&)>& done) {
    const absl::Time deadline = absl::Now() + timeout;
    Job job;
    while (absl::Now() < deadline) {
      absl::StatusOr<Job> current = (*client)->GetJob(submitted->id);
      if (current.ok()) {
        job = *current;
        if (done(job)) break;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return job;
  };
  Job midway = wait_for(absl::Seconds(120), [](const Job& j) { return j.trials_done >= 3; });
  ASSERT_GE(midway.trials_done, 3);
  ASSERT_LT(midway.trials_done, midway.trials_total) << "the job ended too soon";

  const pid_t old_leader = leader->coordinator_pid();
  ASSERT_EQ(kill(old_leader, outage == Outage::kKilled ? SIGKILL : SIGSTOP), 0);
  const absl::Time gone = absl::Now();
  while (Health(standby->address()) != 0 && absl::Now() - gone < absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(Health(standby->address()), 0) << "no takeover within 10 s";
  roles = HealthOf(both);
  EXPECT_THAT(roles.out, HasSubstr(leader->address() + "  UNREACHABLE"));
  EXPECT_THAT(roles.out, HasSubstr(standby->address() + "  SERVING  leader"));
  const absl::Duration takeover = absl::Now() - gone;
  ::testing::Test::RecordProperty("takeover_ms",
                                  static_cast<int>(absl::ToInt64Milliseconds(takeover)));
  std::cout << "the standby served " << absl::FormatDuration(takeover) << " after the leader was "
            << (outage == Outage::kKilled ? "killed" : "paused") << std::endl;

  Job done = wait_for(absl::Seconds(180), [](const Job& j) {
    return j.state == JobState::kSucceeded || j.state == JobState::kFailed;
  });
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.reason;
  EXPECT_EQ(done.trials_done, done.trials_total);
  absl::StatusOr<std::unique_ptr<server::Store>> store = server::OpenStore(url);
  ASSERT_OK(store);
  const auto stored_rows = [&] {
    absl::StatusOr<std::vector<server::TrialRecord>> trials = (*store)->ListTrials(done.id);
    EXPECT_OK(trials);
    std::set<std::tuple<std::string, std::string, int>> keys;
    int64_t searched = 0;
    for (const server::TrialRecord& trial : trials.value_or(std::vector<server::TrialRecord>())) {
      EXPECT_TRUE(
          keys.emplace(trial.tuning_key, trial.config, static_cast<int>(trial.round)).second)
          << trial.config << " stored twice";
      if (trial.round == server::TrialRound::kSearch) ++searched;
    }
    EXPECT_EQ(searched, done.trials_total);  // the verification's row aside
    return keys;
  };
  const std::set<std::tuple<std::string, std::string, int>> rows = stored_rows();
  if (outage == Outage::kKilled) {
    // The killed leader's leases were adopted from their receipts: what the
    // workers measured across the takeover was kept, not measured again.
    absl::StatusOr<std::string> metrics = HttpGet(standby->metrics_address(), "/metrics");
    ASSERT_OK(metrics);
    std::map<std::string, double> samples = ParseSamples(*metrics);
    EXPECT_GE(samples["tunefleet_coordinator_leases_adopted_total"], 1);
    EXPECT_EQ(samples["tunefleet_coordinator_lease_receipts_refused_total"], 0);
    std::cout << "the standby adopted " << samples["tunefleet_coordinator_leases_adopted_total"]
              << " lease(s) with " << samples["tunefleet_coordinator_adopted_results_total"]
              << " result(s) measured across the takeover" << std::endl;
  }

  if (outage == Outage::kPaused) {
    // The old leader wakes up holding a job it no longer leads: it finds it
    // lost the lead and stops serving, and whatever it tried to write
    // meanwhile (expired leases, the job's state) the fence refused.
    ASSERT_EQ(kill(old_leader, SIGCONT), 0);
    const absl::Time resumed = absl::Now();
    while (Health(leader->address()) == 0 && absl::Now() - resumed < absl::Seconds(15)) {
      absl::SleepFor(absl::Milliseconds(200));
    }
    EXPECT_NE(Health(leader->address()), 0) << "the old leader still serves";
    absl::SleepFor(absl::Seconds(1));
    EXPECT_EQ(stored_rows(), rows);
    absl::StatusOr<server::JobRecord> job = (*store)->GetJob(done.id);
    ASSERT_OK(job);
    EXPECT_EQ(job->state, static_cast<int>(tunefleet::v1::JOB_STATE_SUCCEEDED));
    EXPECT_EQ(Health(standby->address()), 0);
  }
  standby.reset();  // the coordinator goes before its database
  leader.reset();
}

TEST_F(StandbyTest, TheStandbyTakesOverAKilledLeadersJobAndEveryConfigIsStoredOnce) {
  TakeOverMidJob(this, Outage::kKilled);
}

TEST_F(StandbyTest, APausedLeaderLosesTheLeadToTheStandbyAndWritesNothingWhenItWakes) {
  TakeOverMidJob(this, Outage::kPaused);
}

TEST_F(StandbyTest, ASecondCoordinatorOnOneSqliteFileIsRefused) {
  std::unique_ptr<Fleet> first = StartCoordinator("shared", "");
  ASSERT_NE(first, nullptr);
  SubprocessOptions second;
  second.argv = {BuildDir() + "/bin/tunefleet-coordinator", "--listen", "127.0.0.1:0",
                 "--data-dir", dir_.path() + "/shared", "--metrics-listen", "", "--insecure"};
  second.stdout_mode = SubprocessOptions::Output::kNull;
  second.stderr_mode = SubprocessOptions::Output::kFile;
  second.stderr_path = dir_.path() + "/second.err";
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(second);
  ASSERT_OK(started);
  absl::StatusOr<ExitInfo> exit = (*started)->Wait(absl::Seconds(60));
  ASSERT_OK(exit);
  EXPECT_FALSE(exit->success());
  absl::StatusOr<std::string> error = ReadFile(second.stderr_path);
  ASSERT_OK(error);
  EXPECT_THAT(*error, HasSubstr("another coordinator ("));
  EXPECT_THAT(*error, HasSubstr("serves this SQLite database"));
  EXPECT_EQ(Health(first->address()), 0);
}

}  // namespace
}  // namespace tunefleet::testing
