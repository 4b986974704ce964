// load_bench: drives a real coordinator over loopback gRPC and prints tables.
//   workers  N fake workers lease, report and heartbeat while jobs keep coming
//   best     GetBestConfig callers over a store seeded with T tuned shapes
//   soak     many small jobs through fake workers; the coordinator's RSS
//   watch    N WatchJob streams of one job: the coordinator's threads and RSS
//            as they open, and how soon all of them see the job end
// The coordinator is started from the build (SQLite in a temporary directory
// or --database), or is an already running one (--server).
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <random>
#include <regex>

#include <grpcpp/create_channel.h>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/call_loop.h"
#include "bench/fake_workers.h"
#include "bench/job_driver.h"
#include "bench/load_stats.h"
#include "bench/local_fleet.h"
#include "bench/watch_streams.h"
#include "common/config_text.h"
#include "common/grpc_status.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"
#include "server/store/store.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::bench {
namespace {

struct Flags {
  std::string scenario;
  std::string database;
  std::string server;
  int coordinator_pid = 0;
  int coordinator_cpu = -1;
  int load_cpu = -1;
  int seconds = 0;  // 0: the scenario's default
  int workers = 0;  // 0: the scenario's default
  std::string callers = "1";
  int shapes = 10'000;
  int soak_shapes = 0;
  bool soak_cached = false;  // soak: repeated shapes answered from the store
  int jobs = 10'000;
  int watchers = 10'000;
  int with_workers = 0;
  int loops = 1;
  int batch_size = 4;
  int64_t lease_wait_ms = 5000;
  int64_t heartbeat_ms = 1000;
  int64_t lease_ttl_ms = 10000;
  int finalists = -1;  // -1: the scenario's default
  std::vector<std::string> coordinator_flags;  // appended to the started coordinator's
  int in_flight = 0;   // 0: the scenario's default
  std::string bin_dir;
  std::string matmul_dir = TUNEFLEET_SOURCE_DIR "/kernels/cpu/matmul";
  std::string load_kernel_dir = TUNEFLEET_SOURCE_DIR "/bench/load_kernel";
};

constexpr char kModel[] = "load-bench CPU x1";
constexpr char kToolkit[] = "load-bench g++ 12.2";
// Nothing is tuned with it: a default answer (a device model nothing knows
// would be NOT_FOUND).
constexpr char kUntunedToolkit[] = "load-bench clang 16";

// The coordinator under load: started here, or one already running.
struct Target {
  std::unique_ptr<Fleet> fleet;  // null with --server
  std::string address;
  pid_t pid = 0;  // 0: unknown, no process figures
  std::string database_url;
  std::string data_dir;  // removed at the end; empty with --server
  ~Target() {
    fleet.reset();
    if (!data_dir.empty()) std::filesystem::remove_all(data_dir);
  }
};

// Builds the fleet (not started yet), so that the store can be seeded first.
std::unique_ptr<Target> MakeTarget(const Flags& flags, int finalists) {
  auto target = std::make_unique<Target>();
  if (!flags.server.empty()) {
    target->address = flags.server;
    target->pid = flags.coordinator_pid;
    target->database_url = flags.database;
    return target;
  }
  char pattern[] = "/tmp/tunefleet-load-XXXXXX";
  target->data_dir = mkdtemp(pattern);
  FleetOptions options;
  options.bin_dir = flags.bin_dir;
  options.data_dir = target->data_dir;
  options.database = flags.database;
  options.lease_ttl_ms = flags.lease_ttl_ms;
  options.heartbeat_ms = flags.heartbeat_ms;
  options.batch_size = flags.batch_size;
  options.finalists = finalists;
  options.coordinator_cpu = flags.coordinator_cpu;
  options.coordinator_flags = flags.coordinator_flags;
  target->fleet = std::make_unique<Fleet>(options);
  target->database_url = target->fleet->database_url();
  return target;
}

absl::Status StartTarget(Target* target) {
  if (target->fleet == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(target->fleet->StartCoordinator());
  target->address = target->fleet->address();
  target->pid = target->fleet->coordinator_pid();
  return absl::OkStatus();
}

absl::StatusOr<ProcessSample> Sample(const Target& target) {
  if (target.pid <= 0) return absl::NotFoundError("no --coordinator-pid");
  return SampleProcess(target.pid);
}

std::string DatabaseName(const std::string& url) {
  return url.rfind("postgres", 0) == 0 ? "PostgreSQL" : "SQLite";
}

v1::JobSpec JobOf(const KernelBundle& bundle, const v1::Shape& shape) {
  v1::JobSpec spec;
  *spec.mutable_kernel() = bundle.spec;
  for (const v1::SourceFile& file : bundle.sources) *spec.add_sources() = file;
  *spec.mutable_shape() = shape;
  return spec;
}

v1::Shape MakeShape(std::initializer_list<std::pair<const char*, int64_t>> dims) {
  v1::Shape shape;
  for (const auto& [name, value] : dims) {
    v1::DimValue* dim = shape.add_dims();
    dim->set_name(name);
    dim->set_value(value);
  }
  return shape;
}

// Exhaustive jobs over the load kernel's 32,768 configs, one shape each (so
// none is answered from the store), `--in-flight` of them unfinished (2).
JobDriverOptions FeedOptions(const Flags& flags, const std::string& address,
                             const KernelBundle& load_kernel) {
  JobDriverOptions options;
  options.address = address;
  options.make_job = [&load_kernel](int64_t index) {
    v1::JobSpec spec = JobOf(load_kernel, MakeShape({{"N", index + 1}}));
    spec.set_strategy("exhaustive");
    spec.set_seed(static_cast<uint64_t>(index));
    return spec;
  };
  options.in_flight = flags.in_flight > 0 ? flags.in_flight : 2;
  options.poll_every = absl::Milliseconds(100);
  return options;
}

FakeWorkerOptions WorkerOptions(const Flags& flags, const std::string& address, int workers) {
  FakeWorkerOptions options;
  options.address = address;
  options.workers = workers;
  options.loops = flags.loops;
  options.device_model = kModel;
  options.toolkit = kToolkit;
  options.lease_wait_ms = flags.lease_wait_ms;
  return options;
}

int Fail(const absl::Status& status) {
  std::cerr << "load_bench: " << status << "\n";
  return 1;
}

// --- workers -----------------------------------------------------------

struct WorkersRun {
  WorkerCounters counters;
  double seconds = 0;
  absl::StatusOr<ProcessSample> before = absl::UnknownError("");
  absl::StatusOr<ProcessSample> after = absl::UnknownError("");
  absl::StatusOr<ProcessSample> self_before = absl::UnknownError("");
  absl::StatusOr<ProcessSample> self_after = absl::UnknownError("");
  int peak_threads = 0;  // of the coordinator, sampled every 250 ms
};

// Measures `workers` (already running) for `seconds` after a warm-up.
WorkersRun MeasureWorkers(FakeWorkers* workers, const Target& target, int seconds) {
  absl::SleepFor(absl::Seconds(2));  // every worker has leased and heartbeated once
  WorkersRun run;
  workers->ResetCounters();
  run.before = Sample(target);
  run.self_before = SampleProcess(getpid());
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  for (absl::Time now = start; now < end; now = absl::Now()) {
    absl::SleepFor(std::min(absl::Milliseconds(250), end - now));
    if (absl::StatusOr<ProcessSample> sample = Sample(target); sample.ok()) {
      run.peak_threads = std::max(run.peak_threads, sample->threads);
    }
  }
  run.counters = workers->Counters();
  run.after = Sample(target);
  run.self_after = SampleProcess(getpid());
  run.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return run;
}

void PrintWorkersRun(WorkersRun& run, const std::string& database, int workers) {
  WorkerCounters& c = run.counters;
  Table table({"database", "workers", "results/s", "leases", "empty polls", "lease p50 ms",
               "lease p99 ms", "report p50 ms", "report p99 ms", "heartbeat p50 ms",
               "heartbeat p99 ms", "coord CPU %", "blocks/result", "RSS MiB", "threads (max)",
               "load CPU %", "errors"});
  const bool proc = run.before.ok() && run.after.ok();
  table.AddRow({database, absl::StrCat(workers),
                absl::StrFormat("%.0f", c.results / std::max(run.seconds, 1e-9)),
                absl::StrCat(c.leases), absl::StrCat(c.empty_polls),
                FormatMs(c.lease.QuantileMs(0.5), c.lease.count()),
                FormatMs(c.lease.QuantileMs(0.99), c.lease.count()),
                FormatMs(c.report.QuantileMs(0.5), c.report.count()),
                FormatMs(c.report.QuantileMs(0.99), c.report.count()),
                FormatMs(c.heartbeat.QuantileMs(0.5), c.heartbeat.count()),
                FormatMs(c.heartbeat.QuantileMs(0.99), c.heartbeat.count()),
                proc ? absl::StrFormat("%.0f", CpuPercent(*run.before, *run.after)) : "-",
                proc ? absl::StrFormat("%.2f", BlockedPer(*run.before, *run.after, c.results))
                     : "-",
                proc ? FormatMib(run.after->rss_kib) : "-",
                proc ? absl::StrCat(run.after->threads, " (",
                                    std::max(run.peak_threads, run.after->threads), ")")
                     : "-",
                run.self_before.ok() && run.self_after.ok()
                    ? absl::StrFormat("%.0f", CpuPercent(*run.self_before, *run.self_after))
                    : "-",
                absl::StrCat(c.errors)});
  table.Print();
  if (!c.first_error.empty()) std::printf("first error: %s\n\n", c.first_error.c_str());
  if (c.cancelled_reports > 0 || c.reregisters > 0) {
    std::printf("cancelled reports: %lld, reregister answers: %lld\n\n",
                static_cast<long long>(c.cancelled_reports),
                static_cast<long long>(c.reregisters));
  }
}

int RunWorkersScenario(const Flags& flags) {
  const int workers = flags.workers > 0 ? flags.workers : 1000;
  const int seconds = flags.seconds > 0 ? flags.seconds : 10;
  absl::StatusOr<KernelBundle> load_kernel = LoadKernelDir(flags.load_kernel_dir);
  if (!load_kernel.ok()) return Fail(load_kernel.status());
  std::unique_ptr<Target> target = MakeTarget(flags, flags.finalists >= 0 ? flags.finalists : 5);
  if (absl::Status started = StartTarget(target.get()); !started.ok()) return Fail(started);
  JobDriverOptions feed = FeedOptions(flags, target->address, *load_kernel);
  feed.deadline = absl::Now() + absl::Seconds(seconds + 120);
  JobDriver driver(feed);
  absl::StatusOr<std::unique_ptr<FakeWorkers>> fleet =
      FakeWorkers::Start(WorkerOptions(flags, target->address, workers));
  if (!fleet.ok()) return Fail(fleet.status());
  WorkersRun run = MeasureWorkers(fleet->get(), *target, seconds);
  (*fleet)->Stop();
  driver.Stop();
  PrintWorkersRun(run, DatabaseName(target->database_url), workers);
  if (!driver.error().empty()) return Fail(absl::InternalError(driver.error()));
  return 0;
}

// --- best --------------------------------------------------------------

enum class QueryKind { kExact, kNearest, kDefault };

const char* KindName(QueryKind kind) {
  switch (kind) {
    case QueryKind::kExact: return "exact";
    case QueryKind::kNearest: return "nearest";
    case QueryKind::kDefault: return "default";
  }
  return "?";
}

v1::GetBestConfigResponse::Source Expected(QueryKind kind) {
  switch (kind) {
    case QueryKind::kExact: return v1::GetBestConfigResponse::SOURCE_EXACT;
    case QueryKind::kNearest: return v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE;
    case QueryKind::kDefault: return v1::GetBestConfigResponse::SOURCE_DEFAULT;
  }
  return v1::GetBestConfigResponse::SOURCE_UNSPECIFIED;
}

// The i-th tuned shape: multiples of 64, distinct for every i.
v1::Shape TunedShape(int64_t i) {
  return MakeShape({{"M", 64 * (1 + i % 25)}, {"N", 64 * (1 + (i / 25) % 20)},
                    {"K", 64 * (1 + i / 500)}});
}

// Shapes no seeded row has (no dim is a multiple of 64).
v1::Shape UntunedShape(int64_t i) {
  return MakeShape({{"M", 100 + 7 * (i % 16)}, {"N", 300 + 11 * (i % 16)}, {"K", 500}});
}

// Writes `count` best rows of the kernel on kModel, keyed as the
// coordinator keys them.
absl::Status SeedBest(const std::string& url, const KernelBundle& bundle, int count) {
  ASSIGN_OR_RETURN(std::unique_ptr<server::Store> store, server::OpenStore(url));
  std::vector<std::string> configs;
  for (const std::string& text : bundle.spec.config_sets(0).configs()) {
    ASSIGN_OR_RETURN(v1::Config config, ParseConfig(text));
    ASSIGN_OR_RETURN(config, NormalizeConfig(bundle.spec, config));
    configs.push_back(ConfigToString(config));
  }
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> seconds(std::log(1e-3), 0.5);
  for (int i = 0; i < count; ++i) {
    server::BestRecord row;
    const v1::Shape shape = TunedShape(i);
    row.tuning_key = ComputeTuningKey({&bundle.spec, &bundle.sources, shape, kModel, kToolkit});
    row.kernel_name = bundle.spec.name();
    row.shape = ShapeToString(shape);
    row.device_model = kModel;
    row.toolkit = kToolkit;
    row.config = configs[i % configs.size()];
    row.median_seconds = seconds(rng);
    row.job_id = "load-bench-seed";
    row.updated_unix_ms = absl::ToUnixMillis(absl::Now());
    RETURN_IF_ERROR(store->UpsertBest(row).status());
  }
  return absl::OkStatus();
}

v1::GetBestConfigRequest BestRequest(QueryKind kind, int64_t i, const std::string& kernel) {
  v1::GetBestConfigRequest request;
  request.set_kernel_name(kernel);
  request.set_toolkit(kind == QueryKind::kDefault ? kUntunedToolkit : kToolkit);
  request.set_device_model(kModel);
  *request.mutable_shape() = kind == QueryKind::kNearest ? UntunedShape(i) : TunedShape(i);
  return request;
}

// Submits one job of the kernel (so that the coordinator knows its spec) and
// checks that a seeded shape is answered SOURCE_EXACT.
absl::Status IntroduceKernel(v1::TuningService::Stub* stub, const KernelBundle& bundle) {
  grpc::ClientContext submit;
  submit.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  v1::SubmitJobRequest request;
  *request.mutable_spec() = JobOf(bundle, TunedShape(0));
  request.mutable_spec()->set_device_model(kModel);
  v1::SubmitJobResponse submitted;
  RETURN_IF_ERROR(FromGrpcStatus(stub->SubmitJob(&submit, request, &submitted)));
  grpc::ClientContext query;
  query.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  v1::GetBestConfigResponse best;
  RETURN_IF_ERROR(FromGrpcStatus(stub->GetBestConfig(
      &query, BestRequest(QueryKind::kExact, 1, bundle.spec.name()), &best)));
  if (best.source() != v1::GetBestConfigResponse::SOURCE_EXACT) {
    return absl::InternalError(absl::StrCat(
        "a seeded shape came back as ", v1::GetBestConfigResponse::Source_Name(best.source()),
        ", not SOURCE_EXACT: the seeded tuning keys do not match the coordinator's"));
  }
  return absl::OkStatus();
}

struct Phase {
  QueryKind kind = QueryKind::kExact;
  int callers = 1;
  LatencySamples latency;
  int64_t errors = 0;
  int64_t wrong_source = 0;
  std::string first_error;
  double seconds = 0;
  absl::StatusOr<ProcessSample> before = absl::UnknownError("");
  absl::StatusOr<ProcessSample> after = absl::UnknownError("");
  absl::StatusOr<ProcessSample> self_before = absl::UnknownError("");
  absl::StatusOr<ProcessSample> self_after = absl::UnknownError("");
};

// One caller: GetBestConfig after GetBestConfig until `end`. Runs on `loop`.
class BestCaller {
 public:
  BestCaller(CallLoop* loop, v1::TuningService::Stub* stub, Phase* phase, int shapes,
             std::string kernel, absl::Time end, uint64_t seed)
      : loop_(loop), stub_(stub), phase_(phase), shapes_(shapes), kernel_(std::move(kernel)),
        end_(end), rng_(seed) {}

  void Call() {
    const int64_t i = std::uniform_int_distribution<int64_t>(0, shapes_ - 1)(rng_);
    v1::GetBestConfigRequest request = BestRequest(phase_->kind, i, kernel_);
    loop_->Call<v1::GetBestConfigResponse>(
        [this, request](grpc::ClientContext* context, grpc::CompletionQueue* cq) {
          return stub_->PrepareAsyncGetBestConfig(context, request, cq);
        },
        absl::Seconds(30), [this](CallResult<v1::GetBestConfigResponse>& call) { Done(call); });
  }

 private:
  void Done(CallResult<v1::GetBestConfigResponse>& call) {
    if (absl::Now() > end_ || loop_->stopping()) return;
    if (!call.status.ok()) {
      ++phase_->errors;
      if (phase_->first_error.empty()) phase_->first_error = call.status.error_message();
    } else {
      phase_->latency.Add(call.latency);
      if (call.response.source() != Expected(phase_->kind)) ++phase_->wrong_source;
    }
    Call();
  }

  CallLoop* const loop_;
  v1::TuningService::Stub* const stub_;
  Phase* const phase_;
  const int shapes_;
  const std::string kernel_;
  const absl::Time end_;
  std::mt19937_64 rng_;
};

Phase RunPhase(v1::TuningService::Stub* stub, const Target& target, QueryKind kind,
               int callers, int shapes, const std::string& kernel, int seconds) {
  Phase phase;
  phase.kind = kind;
  phase.callers = callers;
  phase.before = Sample(target);
  phase.self_before = SampleProcess(getpid());
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::unique_ptr<BestCaller>> chains;
  {
    CallLoop loop;  // stops (joins) before the callers go away
    for (int c = 0; c < callers; ++c) {
      chains.push_back(
          std::make_unique<BestCaller>(&loop, stub, &phase, shapes, kernel, end, 1000 + c));
    }
    loop.Post([&chains] {
      for (auto& chain : chains) chain->Call();
    });
    absl::SleepFor(end - absl::Now());
    phase.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    phase.after = Sample(target);
    phase.self_after = SampleProcess(getpid());
    loop.Stop([] {});
  }
  return phase;
}

void PrintPhases(std::vector<Phase>& phases, const std::string& database) {
  Table table({"database", "query", "callers", "QPS", "p50 ms", "p99 ms", "p999 ms",
               "coord CPU %", "load CPU %", "errors", "wrong source"});
  for (Phase& p : phases) {
    const int64_t n = p.latency.count();
    table.AddRow({database, KindName(p.kind), absl::StrCat(p.callers),
                  absl::StrFormat("%.0f", n / std::max(p.seconds, 1e-9)),
                  FormatMs(p.latency.QuantileMs(0.5), n), FormatMs(p.latency.QuantileMs(0.99), n),
                  FormatMs(p.latency.QuantileMs(0.999), n),
                  p.before.ok() && p.after.ok()
                      ? absl::StrFormat("%.0f", CpuPercent(*p.before, *p.after))
                      : "-",
                  p.self_before.ok() && p.self_after.ok()
                      ? absl::StrFormat("%.0f", CpuPercent(*p.self_before, *p.self_after))
                      : "-",
                  absl::StrCat(p.errors), absl::StrCat(p.wrong_source)});
  }
  table.Print();
  for (const Phase& p : phases) {
    if (!p.first_error.empty()) std::printf("first error: %s\n", p.first_error.c_str());
  }
}

absl::StatusOr<std::vector<int>> ParseCallers(const std::string& text) {
  std::vector<int> callers;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int value = 0;
    if (!absl::SimpleAtoi(part, &value) || value <= 0 || value > 4096) {
      return absl::InvalidArgumentError(absl::StrCat("--callers: bad count '", part, "'"));
    }
    callers.push_back(value);
  }
  if (callers.empty()) return absl::InvalidArgumentError("--callers: no count");
  return callers;
}

int RunBestScenario(const Flags& flags) {
  const int seconds = flags.seconds > 0 ? flags.seconds : 10;
  absl::StatusOr<std::vector<int>> callers = ParseCallers(flags.callers);
  if (!callers.ok()) return Fail(callers.status());
  absl::StatusOr<KernelBundle> matmul = LoadKernelDir(flags.matmul_dir);
  if (!matmul.ok()) return Fail(matmul.status());
  absl::StatusOr<KernelBundle> load_kernel = LoadKernelDir(flags.load_kernel_dir);
  if (!load_kernel.ok()) return Fail(load_kernel.status());
  std::unique_ptr<Target> target = MakeTarget(flags, flags.finalists >= 0 ? flags.finalists : 5);
  if (target->database_url.empty()) {
    return Fail(absl::InvalidArgumentError("best with --server needs --database to seed"));
  }
  const absl::Time seed_start = absl::Now();
  if (absl::Status seeded = SeedBest(target->database_url, *matmul, flags.shapes); !seeded.ok()) {
    return Fail(seeded);
  }
  std::printf("seeded %d best rows in %.1f s\n\n", flags.shapes,
              absl::ToDoubleSeconds(absl::Now() - seed_start));
  if (absl::Status started = StartTarget(target.get()); !started.ok()) return Fail(started);
  auto stub = v1::TuningService::NewStub(
      grpc::CreateChannel(target->address, grpc::InsecureChannelCredentials()));
  if (absl::Status known = IntroduceKernel(stub.get(), *matmul); !known.ok()) return Fail(known);
  std::unique_ptr<JobDriver> driver;
  std::unique_ptr<FakeWorkers> workers;
  if (flags.with_workers > 0) {
    JobDriverOptions feed = FeedOptions(flags, target->address, *load_kernel);
    feed.deadline = absl::Now() + absl::Seconds(3 * seconds * callers->size() + 120);
    driver = std::make_unique<JobDriver>(feed);
    FakeWorkerOptions options = WorkerOptions(flags, target->address, flags.with_workers);
    // The callers share the load's core with the workers: the workers run
    // below them, as the coordinator's reports run below its reads.
    options.nice = 10;
    auto started = FakeWorkers::Start(options);
    if (!started.ok()) return Fail(started.status());
    workers = *std::move(started);
    absl::SleepFor(absl::Seconds(2));
    workers->ResetCounters();
  }
  WorkersRun meanwhile;
  meanwhile.before = Sample(*target);
  meanwhile.self_before = SampleProcess(getpid());
  const absl::Time phases_start = absl::Now();
  std::vector<Phase> phases;
  for (int c : *callers) {
    for (QueryKind kind : {QueryKind::kExact, QueryKind::kNearest, QueryKind::kDefault}) {
      phases.push_back(
          RunPhase(stub.get(), *target, kind, c, flags.shapes, matmul->spec.name(), seconds));
    }
  }
  meanwhile.after = Sample(*target);
  meanwhile.self_after = SampleProcess(getpid());
  meanwhile.seconds = absl::ToDoubleSeconds(absl::Now() - phases_start);
  PrintPhases(phases, DatabaseName(target->database_url));
  if (workers != nullptr) {
    meanwhile.counters = workers->Counters();
    workers->Stop();
    driver->Stop();
    std::printf("the fake workers meanwhile (CPU: over every phase):\n\n");
    PrintWorkersRun(meanwhile, DatabaseName(target->database_url), flags.with_workers);
  }
  return 0;
}

// --- soak --------------------------------------------------------------

struct SoakPoint {
  int64_t jobs = 0;
  double elapsed = 0;
  ProcessSample process;
};

int RunSoakScenario(const Flags& flags) {
  const int workers = flags.workers > 0 ? flags.workers : 16;
  const int seconds = flags.seconds > 0 ? flags.seconds : 180;
  absl::StatusOr<KernelBundle> matmul = LoadKernelDir(flags.matmul_dir);
  if (!matmul.ok()) return Fail(matmul.status());
  std::unique_ptr<Target> target = MakeTarget(flags, flags.finalists >= 0 ? flags.finalists : 0);
  if (absl::Status started = StartTarget(target.get()); !started.ok()) return Fail(started);
  absl::StatusOr<std::unique_ptr<FakeWorkers>> fleet =
      FakeWorkers::Start(WorkerOptions(flags, target->address, workers));
  if (!fleet.ok()) return Fail(fleet.status());
  absl::Mutex mu;
  std::vector<SoakPoint> points;
  absl::StatusOr<ProcessSample> first = Sample(*target);
  const absl::Time start = absl::Now();
  JobDriverOptions options;
  options.address = target->address;
  const int soak_shapes = flags.soak_shapes;
  const bool force = soak_shapes > 0 && !flags.soak_cached;
  options.make_job = [&matmul, soak_shapes, force](int64_t index) {
    // A shape of its own, so that no job is answered from the store; or,
    // with --soak-shapes N, N shapes over and over, measured again each time
    // (force_retune), so that the tuned table stops growing; with
    // --soak-cached as well, every job after the first N is answered from
    // the store (a resubmission of a tuned key).
    const int64_t shape = soak_shapes > 0 ? index % soak_shapes : index;
    v1::JobSpec spec = JobOf(*matmul, MakeShape({{"M", 256 + shape}, {"N", 256}, {"K", 256}}));
    spec.set_config_set("quick");
    spec.set_device_model(kModel);
    spec.set_force_retune(force);
    return spec;
  };
  options.in_flight = flags.in_flight > 0 ? flags.in_flight : 32;
  options.max_jobs = flags.jobs;
  options.deadline = start + absl::Seconds(seconds);
  options.on_finished = [&](int64_t done) {
    if (done != 100 && done % 1000 != 0 && done != flags.jobs) return;
    absl::StatusOr<ProcessSample> sample = Sample(*target);
    absl::MutexLock lock(&mu);
    points.push_back({done, absl::ToDoubleSeconds(absl::Now() - start),
                      sample.ok() ? *sample : ProcessSample()});
  };
  JobDriver driver(options);
  driver.WaitUntilDone();
  const int64_t finished = driver.finished();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  absl::StatusOr<ProcessSample> last = Sample(*target);
  driver.Stop();
  (*fleet)->Stop();
  WorkerCounters counters = (*fleet)->Counters();
  absl::MutexLock lock(&mu);
  if (points.empty() || points.back().jobs != finished) {
    points.push_back({finished, elapsed, last.ok() ? *last : ProcessSample()});
  }
  Table table({"jobs done", "elapsed s", "jobs/s since previous", "RSS MiB", "threads"});
  SoakPoint previous;
  for (const SoakPoint& p : points) {
    const double rate = (p.jobs - previous.jobs) / std::max(p.elapsed - previous.elapsed, 1e-9);
    table.AddRow({absl::StrCat(p.jobs), absl::StrFormat("%.1f", p.elapsed),
                  absl::StrFormat("%.1f", rate), FormatMib(p.process.rss_kib),
                  absl::StrCat(p.process.threads)});
    previous = p;
  }
  table.Print();
  const SoakPoint& at100 = points.front();
  std::printf("%lld of %d jobs finished in %.1f s (%lld not SUCCEEDED), %lld trials reported; "
              "RSS at start %s MiB, after %lld jobs %s MiB, final %s MiB, final/after-%lld %.2fx\n",
              static_cast<long long>(finished), flags.jobs, elapsed,
              static_cast<long long>(driver.failed()), static_cast<long long>(counters.results),
              first.ok() ? FormatMib(first->rss_kib).c_str() : "-",
              static_cast<long long>(at100.jobs), FormatMib(at100.process.rss_kib).c_str(),
              FormatMib(points.back().process.rss_kib).c_str(),
              static_cast<long long>(at100.jobs),
              at100.process.rss_kib > 0
                  ? static_cast<double>(points.back().process.rss_kib) / at100.process.rss_kib
                  : 0.0);
  if (!driver.error().empty()) return Fail(absl::InternalError(driver.error()));
  return 0;
}

// --- watch -------------------------------------------------------------

int RunWatchScenario(const Flags& flags) {
  Flags with_caps = flags;
  for (const char* cap : {"--max-watches-per-principal", "--max-watches"}) {
    with_caps.coordinator_flags.push_back(absl::StrCat(cap, "=", flags.watchers));
  }
  std::unique_ptr<Target> target = MakeTarget(with_caps, /*finalists=*/0);
  if (absl::Status started = StartTarget(target.get()); !started.ok()) return Fail(started);
  absl::StatusOr<KernelBundle> matmul = LoadKernelDir(flags.matmul_dir);
  if (!matmul.ok()) return Fail(matmul.status());
  // A job no worker runs: it waits, with its watchers.
  auto stub = v1::TuningService::NewStub(
      grpc::CreateChannel(target->address, grpc::InsecureChannelCredentials()));
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = JobOf(*matmul, MakeShape({{"M", 256}, {"N", 256}, {"K", 256}}));
  submit.mutable_spec()->set_config_set("quick");
  v1::SubmitJobResponse submitted;
  grpc::ClientContext submit_context;
  grpc::Status status = stub->SubmitJob(&submit_context, submit, &submitted);
  if (!status.ok()) return Fail(FromGrpcStatus(status));
  const std::string job_id = submitted.job().id();

  WatchStreams streams(target->address, grpc::InsecureChannelCredentials(), /*channels=*/8);
  Table table({"streams open", "coordinator threads", "RSS MiB", "KiB per stream",
               "open s"});
  absl::StatusOr<ProcessSample> base = Sample(*target);
  auto row = [&](int open, double seconds) {
    absl::StatusOr<ProcessSample> now = Sample(*target);
    const bool known = now.ok() && base.ok();
    table.AddRow({absl::StrCat(open), known ? absl::StrCat(now->threads) : "-",
                  known ? FormatMib(now->rss_kib) : "-",
                  known && open > 0 ? absl::StrFormat("%.1f", static_cast<double>(
                                                                   now->rss_kib - base->rss_kib) /
                                                                   open)
                                    : "-",
                  absl::StrFormat("%.2f", seconds)});
  };
  row(0, 0);
  int open = 0;
  for (int step : {flags.watchers / 10, flags.watchers / 2, flags.watchers}) {
    if (step <= open) continue;
    const absl::Time start = absl::Now();
    streams.Open(step - open, job_id);
    if (!streams.Await(step, 0, absl::Minutes(2))) {
      return Fail(absl::DeadlineExceededError(
          absl::StrCat(streams.opened(), " of ", step, " streams open after 2 minutes (",
                       streams.ended(), " ended)")));
    }
    open = step;
    row(open, absl::ToDoubleSeconds(absl::Now() - start));
  }
  table.Print();
  // One change, every stream: the job's end.
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job_id);
  v1::CancelJobResponse cancelled;
  grpc::ClientContext cancel_context;
  const absl::Time cancel_start = absl::Now();
  status = stub->CancelJob(&cancel_context, cancel, &cancelled);
  if (!status.ok()) return Fail(FromGrpcStatus(status));
  const bool all = streams.Await(open, open, absl::Minutes(2));
  const double fan_out_ms = absl::ToDoubleMilliseconds(absl::Now() - cancel_start);
  std::printf("%d of %d streams ended %s %.0f ms after CancelJob was sent; %d saw CANCELLED, "
              "%d ended OK\n",
              streams.ended(), open, all ? "within" : "(not all) after", fan_out_ms,
              streams.last_states()[v1::JOB_STATE_CANCELLED],
              streams.codes()[grpc::StatusCode::OK]);
  return all ? 0 : 1;
}

// --- main --------------------------------------------------------------

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

absl::Status PinSelf(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot run on CPU ", cpu));
  }
  return absl::OkStatus();
}

// The one-line summary of what runs: the command line, then where.
void PrintSummary(const std::string& command, const Flags& flags) {
  const std::string database =
      flags.database.empty() ? "SQLite (temporary)" : DatabaseName(flags.database);
  std::printf("%s\n  coordinator %s, %s, coordinator CPU %s, load CPU %s, %s, load average %s\n\n",
              command.c_str(), flags.server.empty() ? "started here" : flags.server.c_str(),
              database.c_str(),
              flags.coordinator_cpu >= 0 ? absl::StrCat(flags.coordinator_cpu).c_str() : "any",
              flags.load_cpu >= 0 ? absl::StrCat(flags.load_cpu).c_str() : "any",
              absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::Now(), absl::UTCTimeZone()).c_str(),
              LoadAverage().c_str());
  std::fflush(stdout);
}

int Main(const std::string& command, const Flags& flags) {
  if (flags.load_cpu >= 0) {
    // Before any thread starts: every later thread inherits the affinity.
    if (absl::Status pinned = PinSelf(flags.load_cpu); !pinned.ok()) return Fail(pinned);
  }
  PrintSummary(command, flags);
  if (flags.scenario == "workers") return RunWorkersScenario(flags);
  if (flags.scenario == "best") return RunBestScenario(flags);
  if (flags.scenario == "soak") return RunSoakScenario(flags);
  if (flags.scenario == "watch") return RunWatchScenario(flags);
  return Fail(absl::InvalidArgumentError(
      absl::StrCat("unknown scenario '", flags.scenario, "' (workers, best, soak or watch)")));
}

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("scenario,--scenario", flags.scenario, "workers, best, soak or watch")
      ->required();
  app.add_option("--database", flags.database,
                 "the coordinator's store: empty = SQLite in a temporary directory, or a "
                 "postgresql:// URL (use an empty database: best seeds it, the coordinator "
                 "recovers every unfinished job in it)");
  app.add_option("--server", flags.server,
                 "host:port of a running coordinator instead of starting one");
  app.add_option("--coordinator-pid", flags.coordinator_pid,
                 "with --server: its pid, for CPU, RSS and thread figures");
  app.add_option("--coordinator-cpu", flags.coordinator_cpu,
                 "run the started coordinator on this CPU only (taskset -c)");
  app.add_option("--load-cpu", flags.load_cpu,
                 "run load_bench on this CPU only; on the 2-core dev machine: "
                 "--coordinator-cpu 0 --load-cpu 1 (PostgreSQL stays unpinned)");
  app.add_option("--seconds", flags.seconds,
                 "workers: measured window (default 10); best: per query kind and caller "
                 "count (default 10); soak: time limit (default 180)");
  app.add_option("--workers", flags.workers, "fake workers (workers: 1000, soak: 16)");
  app.add_option("--callers", flags.callers, "best: concurrent callers, a list: 1,8,64")
      ->capture_default_str();
  app.add_option("--shapes", flags.shapes, "best: tuned shapes seeded")->capture_default_str();
  app.add_option("--jobs", flags.jobs, "soak: jobs to run")->capture_default_str();
  app.add_option("--watchers", flags.watchers, "watch: WatchJob streams opened")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--with-workers", flags.with_workers,
                 "best: run this many fake workers (as in 'workers') meanwhile");
  app.add_option("--loops", flags.loops, "threads that run the fake workers")
      ->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "the coordinator's --batch-size")
      ->capture_default_str();
  app.add_option("--lease-wait-ms", flags.lease_wait_ms, "fake workers' LeaseWork long-poll")
      ->capture_default_str();
  app.add_option("--heartbeat-ms", flags.heartbeat_ms, "the coordinator's --heartbeat-ms")
      ->capture_default_str();
  app.add_option("--lease-ttl-ms", flags.lease_ttl_ms, "the coordinator's --lease-ttl-ms")
      ->capture_default_str();
  app.add_option("--coordinator-flag", flags.coordinator_flags,
                 "a flag for the started coordinator, e.g. --coordinator-flag=--report-nice=0 "
                 "(repeat for more)");
  app.add_option("--finalists", flags.finalists,
                 "the coordinator's --finalists (default: soak 0, else 5)");
  app.add_option("--in-flight", flags.in_flight,
                 "unfinished jobs kept: soak (default 32), workers and best --with-workers "
                 "(default 2)");
  app.add_option("--soak-shapes", flags.soak_shapes,
                 "soak: jobs cycle through this many shapes, each re-measured (force_retune); "
                 "default 0: every job a new shape, so every job adds a tuned key");
  app.add_flag("--soak-cached", flags.soak_cached,
               "soak, with --soak-shapes N: no force_retune, so every job after the first N "
               "is answered from the store");
  app.add_option("--bin-dir", flags.bin_dir, "where tunefleet-coordinator is");
  app.add_option("--matmul-kernel", flags.matmul_dir, "best and soak: the kernel directory")
      ->capture_default_str();
  app.add_option("--load-kernel", flags.load_kernel_dir, "workers: the kernel directory")
      ->capture_default_str();
}

}  // namespace
}  // namespace tunefleet::bench

int main(int argc, char** argv) {
  CLI::App app{
      "load_bench: drives a real coordinator over loopback gRPC and prints tables.\n"
      "  workers  fake workers lease, report and heartbeat while jobs keep coming\n"
      "  best     GetBestConfig callers (exact, nearest, default) over seeded shapes\n"
      "  soak     many small jobs through fake workers; the coordinator's RSS\n"
      "  watch    WatchJob streams of one job: the coordinator's threads and RSS"};
  tunefleet::bench::Flags flags;
  flags.bin_dir = std::filesystem::absolute(argv[0]).parent_path().string();
  tunefleet::bench::AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> words(argv, argv + argc);
  words[0] = "load_bench";
  // Redact a password in a PostgreSQL URL.
  for (std::string& word : words) word = std::regex_replace(word, std::regex(":[^:/@]*@"), ":***@");
  return tunefleet::bench::Main(absl::StrJoin(words, " "), flags);
}
