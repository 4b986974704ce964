// Exported tables between real fleets: a table exported from one TLS
// coordinator (tunectl export) imported into a second (tunectl import), both
// then serving the same answers; an import never replacing a measured row
// unless asked; the client library answering from the file offline.
#include <fstream>

#include "bench/local_fleet.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using Json = nlohmann::json;

constexpr char kShape[] = "M=256,N=256,K=256";
// Every config of the quick set fits it: the nearest answer is the tuned row.
constexpr char kOtherShape[] = "M=300,N=300,K=256";

// One TLS fleet and an admin client of it.
struct Site {
  std::unique_ptr<Fleet> fleet;
  std::unique_ptr<Client> client;
};

class BestTransferTest : public ::testing::Test {
 protected:
  void StartSite(const std::string& name, Site* site) {
    site->fleet = std::make_unique<Fleet>(SecureFleetOptions(dir_.path() + "/" + name));
    ASSERT_OK(site->fleet->StartCoordinator());
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectAdmin(*site->fleet);
    ASSERT_OK(client);
    site->client = *std::move(client);
  }

  // Starts sites a and b (coordinators only) and tunes matmul on a: the
  // fleet that measured, and the one an exported table goes to.
  void StartSitesAndTuneOnA(Site* a, Site* b, Job* job) {
    ASSERT_NO_FATAL_FAILURE(StartSite("a", a));
    ASSERT_NO_FATAL_FAILURE(StartSite("b", b));
    *job = Tune(*a, /*seed=*/1);
    ASSERT_EQ(job->state, JobState::kSucceeded) << job->reason;
  }

  // Tunes matmul's quick set at kShape on `site` (starting a worker there).
  Job Tune(Site& site, uint64_t seed) {
    EXPECT_OK(site.fleet->StartWorker());
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = kShape;
    request.config_set = "quick";
    request.seed = seed;
    absl::StatusOr<Job> job = site.client->Submit(request);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return Job();
    absl::StatusOr<Job> done = site.client->Watch(job->id, [](const Job&) {});
    EXPECT_TRUE(done.ok()) << done.status();
    return done.ok() ? *done : Job();
  }

  RunResult Tunectl(const Site& site, std::vector<std::string> args) {
    std::vector<std::string> argv = {BuildDir() + "/bin/tunectl", "--server",
                                     site.fleet->address()};
    for (const std::string& flag : site.fleet->TunectlFlags()) argv.push_back(flag);
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RunResult> run = RunProgram(argv, absl::Seconds(60));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunResult();
  }

  // `tunectl export matmul` of `site`, written to a file; its path.
  std::string Export(const Site& site, const std::string& name) {
    RunResult run = Tunectl(site, {"export", "matmul"});
    EXPECT_TRUE(run.exit.success()) << run.exit.ToString() << run.out;
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << run.out;
    return path;
  }

  Json Import(const Site& site, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"-o", "json", "import"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult run = Tunectl(site, args);
    EXPECT_TRUE(run.exit.success()) << run.exit.ToString() << run.out;
    return Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  }

  static BestConfig Best(const Site& site, const std::string& shape,
                         const std::string& device_model = "") {
    absl::StatusOr<BestConfig> best =
        site.client->GetBestConfig("matmul", shape, device_model, "");
    EXPECT_TRUE(best.ok()) << best.status();
    return best.ok() ? *best : BestConfig();
  }

  static void ExpectSameAnswer(const BestConfig& a, const BestConfig& b) {
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.config, b.config);
    EXPECT_EQ(a.values, b.values);
    EXPECT_EQ(a.median_seconds, b.median_seconds);
    EXPECT_EQ(a.tuning_key, b.tuning_key);
    EXPECT_EQ(a.job_id, b.job_id);
    EXPECT_EQ(a.tuned_shape, b.tuned_shape);
  }

  TempDir dir_;
};

TEST_F(BestTransferTest, AnImportedTableIsServedAsOnTheFleetThatMeasuredIt) {
  Site a, b;
  Job job;
  ASSERT_NO_FATAL_FAILURE(StartSitesAndTuneOnA(&a, &b, &job));
  const std::string file = Export(a, "best.json");

  absl::StatusOr<std::string> text = ReadFile(file);
  ASSERT_OK(text);
  Json table = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(table.is_object()) << *text;
  EXPECT_EQ(table["format"], "tunefleet.best_configs");
  EXPECT_EQ(table["version"], 1);
  ASSERT_THAT(table["configs"], SizeIs(1));
  EXPECT_EQ(table["configs"][0]["job_id"], job.id);
  EXPECT_EQ(table["configs"][0]["dims"]["M"], 256);
  EXPECT_EQ(table["kernels"][0]["name"], "matmul");

  Json imported = Import(b, {file});
  EXPECT_EQ(imported["imported"], 1);
  EXPECT_EQ(imported["kernels_added"], 1);
  EXPECT_EQ(imported["kept_measured"], 0);
  EXPECT_EQ(imported["not_served"], 0);
  EXPECT_EQ(imported["origin"], "best.json");

  const std::string model = job.targets[0].device_model;
  for (const char* shape : {kShape, kOtherShape}) {
    SCOPED_TRACE(shape);
    BestConfig on_a = Best(a, shape);
    ExpectSameAnswer(Best(b, shape), on_a);
    EXPECT_EQ(on_a.source, std::string(shape) == kShape ? BestConfig::Source::kExact
                                                        : BestConfig::Source::kNearestShape);
  }
  // A model neither fleet knows is not found on either.
  EXPECT_THAT(b.client->GetBestConfig("matmul", kShape, "no-such-device", ""),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(a.client->GetBestConfig("matmul", kShape, "no-such-device", ""),
              StatusIs(absl::StatusCode::kNotFound));

  // The second fleet's export shows where the row came from.
  RunResult again = Tunectl(b, {"export", "matmul", "--device", model});
  ASSERT_TRUE(again.exit.success());
  Json exported = Json::parse(again.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_THAT(exported["configs"], SizeIs(1));
  EXPECT_EQ(exported["configs"][0]["imported"], true);
  EXPECT_EQ(exported["configs"][0]["origin"], "best.json");
  EXPECT_EQ(exported["configs"][0]["job_id"], job.id);
}

// Kernel Tuner's T4 results, as `export --format t4` writes them, round-trip
// through `import --format t4` into a fleet that never saw the kernel.
TEST_F(BestTransferTest, AT4ExportImportsIntoAnotherFleetAndServesTheSameAnswer) {
  Site a, b;
  Job job;
  ASSERT_NO_FATAL_FAILURE(StartSitesAndTuneOnA(&a, &b, &job));
  RunResult exported = Tunectl(a, {"export", "matmul", "--format", "t4"});
  ASSERT_TRUE(exported.exit.success()) << exported.exit.ToString() << exported.out;
  Json t4 = Json::parse(exported.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(t4.is_object()) << exported.out;
  EXPECT_EQ(t4["schema_version"], "1.0.0");
  ASSERT_THAT(t4["results"], SizeIs(1));
  const std::string path = dir_.path() + "/matmul.t4.json";
  std::ofstream(path) << exported.out;

  Json imported = Import(b, {path, "--format", "t4"});
  EXPECT_EQ(imported["imported"], 1);
  EXPECT_EQ(imported["kernels_added"], 1);
  BestConfig on_a = Best(a, kShape);
  BestConfig on_b = Best(b, kShape);
  EXPECT_EQ(on_b.source, BestConfig::Source::kExact);
  EXPECT_EQ(on_b.config, on_a.config);
  EXPECT_EQ(on_b.values, on_a.values);
  EXPECT_EQ(on_b.tuning_key, on_a.tuning_key);
  EXPECT_DOUBLE_EQ(on_b.median_seconds, on_a.median_seconds);
  EXPECT_EQ(on_b.job_id, job.id);
}

TEST_F(BestTransferTest, AnImportNeverReplacesAMeasuredRowUnlessOverwriting) {
  Site a, b;
  ASSERT_NO_FATAL_FAILURE(StartSite("a", &a));
  ASSERT_NO_FATAL_FAILURE(StartSite("b", &b));
  Job on_a = Tune(a, /*seed=*/1);
  Job on_b = Tune(b, /*seed=*/2);
  ASSERT_EQ(on_a.state, JobState::kSucceeded) << on_a.reason;
  ASSERT_EQ(on_b.state, JobState::kSucceeded) << on_b.reason;
  ASSERT_EQ(on_a.targets[0].tuning_key, on_b.targets[0].tuning_key);
  const std::string file = Export(a, "from-a.json");

  Json kept = Import(b, {file});
  EXPECT_EQ(kept["imported"], 0);
  EXPECT_EQ(kept["kept_measured"], 1);
  EXPECT_EQ(Best(b, kShape).job_id, on_b.id);

  Json overwritten = Import(b, {file, "--overwrite", "--origin", "site-a"});
  EXPECT_EQ(overwritten["imported"], 1);
  ExpectSameAnswer(Best(b, kShape), Best(a, kShape));

  // A job measured here replaces the imported row again: the best its trials
  // and on_b's derive.
  SubmitRequest retune;
  retune.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
  retune.shape = kShape;
  retune.config_set = "quick";
  retune.force_retune = true;
  absl::StatusOr<Job> submitted = b.client->Submit(retune);
  ASSERT_OK(submitted);
  absl::StatusOr<Job> done = b.client->Watch(submitted->id, [](const Job&) {});
  ASSERT_OK(done);
  ASSERT_EQ(done->state, JobState::kSucceeded) << done->reason;
  ASSERT_EQ(done->targets.size(), 1u);
  // The retune measured on_b's best config too, side by side with the
  // others: it decides, keeping that config while it is tied.
  const std::string& outcome = done->targets[0].retune;
  EXPECT_TRUE(outcome == "replaced" || outcome == "confirmed") << outcome;
  EXPECT_EQ(Best(b, kShape).job_id, submitted->id);
  EXPECT_EQ(done->targets[0].served_job_id, Best(b, kShape).job_id);
}

TEST_F(BestTransferTest, TheClientLibraryAnswersFromTheFileOffline) {
  Site a;
  ASSERT_NO_FATAL_FAILURE(StartSite("a", &a));
  Job job = Tune(a, /*seed=*/1);
  ASSERT_EQ(job.state, JobState::kSucceeded) << job.reason;
  const std::string file = Export(a, "best.json");
  absl::StatusOr<ExitInfo> stopped = a.fleet->StopCoordinator();  // offline from here
  ASSERT_OK(stopped);

  absl::StatusOr<BestConfigTable> table = BestConfigTable::Load(file);
  ASSERT_OK(table);
  EXPECT_EQ(table->size(), 1u);
  absl::StatusOr<BestConfig> exact = table->Lookup("matmul", kShape);
  ASSERT_OK(exact);
  EXPECT_EQ(exact->source, BestConfig::Source::kExact);
  EXPECT_EQ(exact->config, job.targets[0].best_config);
  EXPECT_EQ(exact->median_seconds, job.targets[0].best_seconds);
  EXPECT_EQ(exact->job_id, job.id);
  EXPECT_EQ(exact->values.at("BLOCK_M") > 0, true);
  absl::StatusOr<BestConfig> nearest = table->Lookup("matmul", kOtherShape);
  ASSERT_OK(nearest);
  EXPECT_EQ(nearest->source, BestConfig::Source::kNearestShape);
  EXPECT_EQ(nearest->config, exact->config);
  absl::StatusOr<BestConfig> fallback = table->Lookup("matmul", kShape, "no-such-device");
  ASSERT_OK(fallback);
  EXPECT_EQ(fallback->source, BestConfig::Source::kDefault);
  EXPECT_EQ(fallback->config, "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0");
  EXPECT_THAT(table->Lookup("softmax", kShape), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(table->Lookup("matmul", "M="), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BestConfigTable::Parse("{\"format\": \"tunefleet.best_configs\", \"version\": 2}"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BestConfigTable::Load(dir_.path() + "/missing.json"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(BestTransferTest, ImportNeedsAdminAndRefusesWhatIsNotATable) {
  Site a;
  ASSERT_NO_FATAL_FAILURE(StartSite("a", &a));
  const std::string file = dir_.path() + "/not-a-table.json";
  std::ofstream(file) << "{\"format\": \"something else\"}";
  RunResult refused = Tunectl(a, {"import", file});
  EXPECT_EQ(refused.exit.code, 1);
  EXPECT_EQ(Tunectl(a, {"import", dir_.path() + "/missing.json"}).exit.code, 5);
  EXPECT_EQ(Tunectl(a, {"export", "no-such-kernel"}).exit.code, 5);

  absl::StatusOr<IssuedToken> reader = a.client->CreateToken("reader", "read");
  ASSERT_OK(reader);
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectAs(*a.fleet, reader->token);
  ASSERT_OK(client);
  const std::string empty_table =
      "{\"format\": \"tunefleet.best_configs\", \"version\": 1, \"kernels\": [], "
      "\"configs\": []}";
  EXPECT_THAT((*client)->ImportBest(empty_table, "x"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  absl::StatusOr<ImportResult> nothing = a.client->ImportBest(empty_table, "x");
  ASSERT_OK(nothing);
  EXPECT_EQ(nothing->imported, 0);
  const std::string bad_row =
      "{\"format\": \"tunefleet.best_configs\", \"version\": 1, \"kernels\": [], "
      "\"configs\": [{\"kernel\": \"matmul\", \"shape\": \"M=1\", \"device_model\": \"d\", "
      "\"toolkit\": \"t\", \"config\": \"not a config\", \"tuning_key\": \"k\", "
      "\"median_seconds\": 1}]}";
  EXPECT_THAT(a.client->ImportBest(bad_row, "x"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace tunefleet::testing
