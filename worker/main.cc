// tunefleet-worker: the worker daemon's composition root.
//
//   tunefleet-worker --coordinator HOST:PORT [--cache-dir DIR] [--max-trials N]
//                    [--name NAME] [--measure-budget SECONDS] [--cut-factor K]
//                    [--precision FRACTION]
//                    [--backend cpu|cuda|python] [--python PATH]
//                    [--python-package DIR]
//                    [--sandbox bwrap|none] [--sandbox-ro PATH]...
//                    [--sandbox-memory-mb MB]
//
// Child mode (started by the daemon itself, one per device):
//   tunefleet-worker --child --backend cpu|cuda|python
// speaks the bench_child.proto pipe protocol on stdin/stdout (python: by
// exec'ing the interpreter's tunefleet.backend.bench_child).
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "worker/backends.h"
#include "worker/bench_child.h"
#include "worker/python/python_backend.h"
#include "common/install_layout.h"
#include "common/grpc_logging.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "worker/compile_pool.h"
#include "worker/prometheus_metrics.h"
#include "worker/idle_meter.h"
#include "worker/artifact_sharing.h"
#include "worker/compile_only.h"
#include "worker/ncu_profiler.h"
#include "worker/ncu_report.h"
#include "common/subprocess.h"
#include "common/usable_cpus.h"
#include "worker/sandbox.h"
#include "worker/coordinator_link.h"
#include "worker/source_cache.h"
#include "worker/trial_executor.h"
#include "worker/worker_daemon.h"

namespace tunefleet::worker {
namespace {

// Everything the command line sets.
struct Flags {
  std::string coordinator;
  std::string cache_dir;
  std::string name;
  std::string backend = "cpu";
  std::string python;          // --backend python: the interpreter
  std::string python_package;  // and the tunefleet package's directory
  std::string log_level = "info";
  std::string log_format = "text";
  int metrics_port = -1;  // off
  std::string metrics_host = "0.0.0.0";
  std::string metrics_address_file;
  std::string sandbox = "bwrap";
  std::vector<std::string> sandbox_read_only;
  uint64_t sandbox_memory_mb = 0;  // 0 = DefaultAddressSpaceBytes()
  int max_trials = 0;
  int lookahead_trials = -1;  // trials of the lease held ahead per device; 0 = off, -1 = auto
  std::string stats_dir;     // where worker-<pid>.stats is kept up to date
  int compile_threads = 0;  // 0 = usable CPUs (CompileThreads)
  double measure_budget = 0.2;
  double cut_factor = 1.5;  // the early-cut rule's k; negative = never cut
  double precision = 0.005;  // the precision rule; negative = sample to the budget
  double compile_timeout = 60;
  double trial_deadline = 0;  // 0 = max(10 s, 20 x budget); CUDA, python: at least 30 s
  double prepare_deadline = 180;
  double drain_time = 10;
  bool child = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  bool insecure = false;
  std::string ncu;  // "": `ncu` from PATH, else /usr/local/cuda/bin/ncu; "none": no profiling
  bool share_artifacts = true;
  bool compile_only = false;
  bool preflight = false;  // check the sandbox, devices and compiler, then exit
  std::string target;  // --compile-only: the CUDA arch, "sm_90"
};

// The ncu binary profile leases use, with its version; {"", ""} when this
// host has none (each profile then says so).
std::pair<std::string, std::string> FindNcu(const std::string& flag, v1::Backend backend) {
  if (flag == "none" || backend != v1::BACKEND_CUDA) return {};
  absl::StatusOr<std::string> path = FindProgram(flag.empty() ? "ncu" : flag);
  if (!path.ok() && flag.empty()) path = FindProgram("/usr/local/cuda/bin/ncu");
  if (!path.ok()) {
    spdlog::info("no ncu found: profile leases will say so");
    return {};
  }
  absl::StatusOr<CommandResult> version = RunCommand({*path, "--version"}, absl::Seconds(30));
  std::string text = version.ok() ? NcuVersion(version->output) : "";
  spdlog::info("profiles with {} ({})", *path, text.empty() ? "version unknown" : text);
  return {*path, text};
}

// Rewrites <dir>/worker-<pid>.stats (WriteIdleStats) every 200 ms and once
// more on Stop; does nothing for an empty dir.
class StatsWriter {
 public:
  StatsWriter(const std::string& dir, IdleMeter* pool, std::vector<IdleMeter*> devices)
      : path_(dir.empty() ? "" : absl::StrCat(dir, "/worker-", getpid(), ".stats")),
        pool_(pool),
        devices_(std::move(devices)) {
    if (path_.empty()) return;
    thread_ = std::thread([this] {
      absl::MutexLock lock(&mu_);
      while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(200))) {
        Write();
      }
    });
  }
  ~StatsWriter() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    thread_.join();
    Write();
  }

 private:
  void Write() {
    absl::Status written = WriteIdleStats(path_, pool_, devices_);
    if (!written.ok()) spdlog::warn("{}", written.ToString());
  }
  const std::string path_;
  IdleMeter* const pool_;
  const std::vector<IdleMeter*> devices_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

std::string DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/tunefleet-worker");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/tunefleet-worker");
  }
  return absl::StrCat("/tmp/tunefleet-worker-", getuid());
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "unknown-host";
}

// A Python compile server imports torch and triton and holds a CUDA context:
// about half a GiB resident, a GiB with a compile's peak. No more servers
// start than usable memory holds at this size.
constexpr int64_t kPythonServerBytes = int64_t{1} << 30;

// The compile pool's size: --compile-threads, else (0) the device's "cores"
// limit (a CPU device's usable cores), else the CPUs this process may use
// (UsableCpus: its affinity and cgroup quota, never the host's count); for
// the python backend, whose threads each drive a compile server, also no
// more than usable memory holds. Null `device`: a device without a "cores"
// limit, as every GPU is.
int CompileThreads(const Flags& flags, const v1::Device* device) {
  if (flags.compile_threads > 0) return flags.compile_threads;
  if (device != nullptr) {
    for (const v1::DeviceLimit& limit : device->limits()) {
      if (limit.name() == "cores") return std::max(1, static_cast<int>(limit.value()));
    }
  }
  int threads = UsableCpus();
  if (flags.backend == "python") {
    if (std::optional<int64_t> memory = UsableMemoryBytes(); memory.has_value()) {
      threads = std::min<int64_t>(threads, std::max<int64_t>(1, *memory / kPythonServerBytes));
    }
  }
  return threads;
}

// SIGINT/SIGTERM are blocked in every thread and taken by one thread with
// sigwait: the first asks the daemon to stop, a second exits at once.
void BlockStopSignals(sigset_t* set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// On a thread of its own: the first of `signals` calls `stop`, a second
// exits at once.
void StopOnSignal(const sigset_t& signals, std::function<void()> stop) {
  std::thread([signals, stop = std::move(stop)] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    spdlog::info("received {}", strsignal(signal_number));
    stop();
    sigwait(&signals, &signal_number);
    spdlog::warn("second signal: exiting now");
    std::_Exit(128 + signal_number);
  }).detach();
}

// The sandbox job code runs in; an error when --sandbox=bwrap cannot work.
absl::StatusOr<Sandbox> MakeSandbox(const Flags& flags) {
  SandboxOptions options;
  options.extra_read_only = flags.sandbox_read_only;
  options.limits.address_space_bytes = flags.sandbox_memory_mb << 20;
  if (flags.sandbox == "none") {
    spdlog::warn("*** --sandbox=none: kernels submitted by clients are compiled and run "
                 "WITHOUT a sandbox, with this worker's user, files and network. Use it only "
                 "where every client is trusted. ***");
    return Sandbox::Create(options);
  }
  if (flags.sandbox != "bwrap") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sandbox=", flags.sandbox, ": expected bwrap or none"));
  }
  options.mode = SandboxMode::kBwrap;
  return Sandbox::Create(options);
}

// Serves /metrics when --metrics-port asks for it; writes the bound address
// to --metrics-address-file. Null (and no error) when it is off.
absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> StartMetrics(
    const Flags& flags, v1::Backend backend, const std::vector<v1::Device>& devices,
    const WorkerPools& pools) {
  if (flags.metrics_port < 0) return nullptr;
  const std::string listen = absl::StrCat(flags.metrics_host, ":", flags.metrics_port);
  absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> metrics =
      PrometheusWorkerMetrics::Start(listen, kVersion, BackendName(backend), devices, pools);
  if (!metrics.ok()) return metrics.status();
  const std::string host = flags.metrics_host == "0.0.0.0" ? "127.0.0.1" : flags.metrics_host;
  const std::string address = absl::StrCat(host, ":", (*metrics)->port());
  spdlog::info("metrics on {}/metrics", address);
  if (!flags.metrics_address_file.empty()) {
    const std::string& path = flags.metrics_address_file;
    std::ofstream(path + ".tmp") << address << "\n";
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  return metrics;
}

// The backend's compiler, caching under --cache-dir, running in `sandbox`.
absl::StatusOr<std::unique_ptr<Compiler>> MakeCompiler(const Flags& flags, v1::Backend backend,
                                                       const Sandbox& sandbox) {
  CompilerOptions options;
  options.cache_dir = flags.cache_dir;
  options.timeout = absl::Seconds(flags.compile_timeout);
  options.sandbox = sandbox;
  return CreateCompiler(backend, options);
}

absl::StatusOr<std::unique_ptr<Coordinator>> Link(const Flags& flags) {
  CoordinatorLinkOptions link_options;
  link_options.security.insecure = flags.insecure;
  link_options.security.ca_file = flags.tls_ca;
  link_options.security.cert_file = flags.tls_cert;
  link_options.security.key_file = flags.tls_key;
  return CreateGrpcCoordinator(flags.coordinator, link_options);
}

// --compile-only: no devices, no benchmark children; compiles what the
// coordinator proposes ahead for --target and shares it (CompileOnlyWorker).
int RunCompileOnly(const Flags& flags, v1::Backend backend, const Sandbox& sandbox,
                   const sigset_t& stop_signals) {
  if (backend != v1::BACKEND_CUDA || flags.target.empty()) {
    spdlog::critical("--compile-only compiles CUDA kernels: give --backend cuda and --target "
                     "sm_XY (CPU code is built for the host that runs it)");
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = MakeCompiler(flags, backend, sandbox);
  if (!compiler.ok()) {
    spdlog::critical("no compiler: {}", compiler.status().ToString());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator = Link(flags);
  if (!coordinator.ok()) {
    spdlog::critical("{}", std::string(coordinator.status().message()));
    return 2;
  }
  ArtifactSharing sharing(compiler->get(), coordinator->get());
  const int threads = CompileThreads(flags, nullptr);
  CompilePool pool(&sharing, threads);
  CompileOnlyOptions options;
  options.host = flags.name.empty() ? HostName() : flags.name;
  options.toolkit = (*compiler)->toolkit();
  options.target = flags.target;
  options.version = kVersion;
  options.max_configs = 2 * threads;
  CompileOnlyWorker worker(options, coordinator->get(), &pool);
  StopOnSignal(stop_signals, [&worker] { worker.Stop(); });
  spdlog::info("tunefleet-worker {}: compile-only for {} ({}, {} threads) from {}", options.host,
               flags.target, options.toolkit, threads, flags.coordinator);
  worker.Run();
  spdlog::info("stopped: {} configs compiled or fetched, {} shared, {} fetched",
               worker.compiled(), sharing.shared(), sharing.fetched());
  return 0;
}

// Runs `true` in `sandbox`: bwrap needs unprivileged user namespaces,
// which a host or a container's seccomp profile may refuse.
absl::Status TrySandbox(const Sandbox& sandbox) {
  if (!sandbox.enabled()) return absl::OkStatus();
  SubprocessOptions options;
  options.argv = sandbox.Wrap(SandboxPolicy{}, {"/bin/true"});
  options.stdout_mode = SubprocessOptions::Output::kNull;
  options.stderr_mode = SubprocessOptions::Output::kNull;
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> child, Subprocess::Start(options));
  absl::StatusOr<ExitInfo> exit = child->Wait(absl::Seconds(30));
  if (!exit.ok()) {
    child->KillAndWait();
    return exit.status();
  }
  if (!exit->success()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "bwrap could not start a sandbox (", exit->ToString(),
        "): the host must allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1; in a container, a seccomp profile that "
        "permits them)"));
  }
  return absl::OkStatus();
}

// --preflight: everything the daemon needs before it reaches for the
// coordinator (sandbox, interpreter, devices, compiler; no devices for
// --compile-only), each step on one line of stdout, "ok" or why not; exit
// status 0 when every step is ok, 1 otherwise. For ExecStartPre=, image
// health checks and install tests.
int RunPreflight(const Flags& flags, v1::Backend backend) {
  bool all_ok = true;
  const auto report = [&all_ok](absl::string_view step, const absl::Status& status,
                                absl::string_view detail) {
    all_ok = all_ok && status.ok();
    std::cout << step << ": "
              << (status.ok() ? absl::StrCat("ok", detail.empty() ? "" : " (", detail,
                                             detail.empty() ? "" : ")")
                              : absl::StrCat("FAILED: ", status.message()))
              << std::endl;
  };
  std::cout << "backend: " << BackendName(backend) << std::endl;
  absl::StatusOr<Sandbox> sandbox = MakeSandbox(flags);
  report("sandbox", sandbox.ok() ? TrySandbox(*sandbox) : sandbox.status(),
         sandbox.ok() && sandbox->enabled() ? "bwrap" : "none");
  if (!sandbox.ok()) return 1;
  if (backend == v1::BACKEND_PYTHON) {
    absl::StatusOr<const python::PythonInfo*> info = python::Configure(
        {flags.python, flags.python_package, flags.cache_dir + "/python",
         CompileThreads(flags, /*device=*/nullptr)},
        /*devices=*/true);
    report("python", info.ok() ? absl::OkStatus() : info.status(),
           info.ok() ? absl::StrCat((*info)->python, ", package in ", (*info)->package_dir) : "");
  }
  if (flags.compile_only) {
    std::cout << "devices: skipped (--compile-only compiles for --target, runs nothing)"
              << std::endl;
  } else {
    absl::StatusOr<std::vector<v1::Device>> devices = DiscoverDevices(backend);
    std::vector<std::string> models;
    if (devices.ok()) {
      for (const v1::Device& device : *devices) models.push_back(device.model());
    }
    report("devices",
           !devices.ok()       ? devices.status()
           : devices->empty() ? absl::NotFoundError("none found")
                              : absl::OkStatus(),
           absl::StrJoin(models, ", "));
  }
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = MakeCompiler(flags, backend, *sandbox);
  report("compiler", compiler.ok() ? absl::OkStatus() : compiler.status(),
         compiler.ok() ? (*compiler)->toolkit() : "");
  return all_ok ? 0 : 1;
}

int RunDaemon(const Flags& flags, v1::Backend backend) {
  sigset_t stop_signals;
  BlockStopSignals(&stop_signals);
  absl::StatusOr<Sandbox> sandbox = MakeSandbox(flags);
  if (!sandbox.ok()) {
    spdlog::critical("{}", std::string(sandbox.status().message()));
    return 1;
  }
  if (flags.compile_only) return RunCompileOnly(flags, backend, *sandbox, stop_signals);

  if (backend == v1::BACKEND_PYTHON) {
    // Before discovery, which asks the probe for the GPUs; they carry no
    // "cores" limit, so the pool below gets as many threads as servers here.
    absl::StatusOr<const python::PythonInfo*> info = python::Configure(
        {flags.python, flags.python_package, flags.cache_dir + "/python",
         CompileThreads(flags, /*device=*/nullptr)},
        /*devices=*/true);
    if (!info.ok()) {
      spdlog::critical("{}", std::string(info.status().message()));
      return 1;
    }
  }
  absl::StatusOr<std::vector<v1::Device>> devices = DiscoverDevices(backend);
  if (!devices.ok() || devices->empty()) {
    spdlog::critical("no {} device: {}", BackendName(backend),
                     devices.ok() ? "none found" : devices.status().ToString());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = MakeCompiler(flags, backend, *sandbox);
  if (!compiler.ok()) {
    spdlog::critical("no compiler: {}", compiler.status().ToString());
    return 1;
  }
  const int threads = CompileThreads(flags, &devices->front());
  const WorkerPools pools{UsableCpus(), threads,
                          backend == v1::BACKEND_PYTHON ? python::Info().compile_servers : 0};
  spdlog::info("{} usable CPUs: {} compile threads{}", pools.usable_cpus, threads,
               pools.compile_servers > 0
                   ? absl::StrCat(", ", pools.compile_servers, " python compile servers")
                   : "");
  absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> metrics =
      StartMetrics(flags, backend, *devices, pools);
  if (!metrics.ok()) {
    spdlog::critical("{}", std::string(metrics.status().message()));
    return 1;
  }
  WorkerMetrics* const sink = metrics->get();
  absl::StatusOr<std::unique_ptr<Coordinator>> link = Link(flags);
  if (!link.ok()) {
    spdlog::critical("{}", std::string(link.status().message()));
    return 2;
  }
  std::unique_ptr<Coordinator> coordinator = *std::move(link);
  // Each config compiled once for the principal's workers, unless turned off.
  ArtifactSharing sharing(compiler->get(), coordinator.get());
  Compiler* const pool_compiler =
      flags.share_artifacts ? static_cast<Compiler*>(&sharing) : compiler->get();
  IdleMeter pool_meter(threads);
  CompilePool pool(pool_compiler, threads, &pool_meter);

  ExecutorOptions executor_options;
  executor_options.measure.set_budget_seconds(flags.measure_budget);
  executor_options.measure.set_cut_factor(flags.cut_factor);
  executor_options.measure.set_precision(flags.precision);
  // A CUDA runner reports a hung launch itself after 10 s; the daemon's kill
  // is the backstop behind it, so it must come later. A Python child's first
  // launch of a config may compile it (when its warm-up compile could not).
  const double deadline = flags.trial_deadline > 0 ? flags.trial_deadline
                          : backend == v1::BACKEND_CUDA || backend == v1::BACKEND_PYTHON
                              ? std::max(30.0, 20 * flags.measure_budget)
                              : 0;
  executor_options.trial_deadline = absl::Seconds(deadline);
  executor_options.prepare_deadline = absl::Seconds(flags.prepare_deadline);
  executor_options.failed_prepares = std::make_shared<FailedPrepares>();
  std::vector<std::unique_ptr<TrialExecutor>> executors;
  absl::flat_hash_map<std::string, std::unique_ptr<Profiler>> profilers;
  NcuProfilerOptions profiler_options;
  std::tie(profiler_options.ncu, profiler_options.ncu_version) = FindNcu(flags.ncu, backend);
  profiler_options.scratch_dir = absl::StrCat(flags.cache_dir, "/profiles");
  std::error_code ignored_error;  // a missing directory fails each profile with ncu's reason
  std::filesystem::create_directories(profiler_options.scratch_dir, ignored_error);
  profiler_options.executor.prepare_deadline = absl::Seconds(flags.prepare_deadline);
  std::vector<IdleMeter*> device_meters;
  for (const v1::Device& device : *devices) {
    executor_options.device_meter = std::make_shared<IdleMeter>(/*units=*/1);
    device_meters.push_back(executor_options.device_meter.get());
    const std::string self = SelfExecutable().empty() ? "tunefleet-worker" : SelfExecutable();
    const std::string inbox = absl::StrCat(flags.cache_dir, "/children/", executors.size());
    ChildOptions child{{self, "--child", "--backend", BackendName(backend), "--log-format",
                        flags.log_format},
                       ChildEnvironment(device), *sandbox,
                       ChildSandboxPolicy(backend, self, inbox), inbox};
    ExecutorOptions device_options = executor_options;
    if (sink != nullptr) {
      device_options.on_measured = [sink, id = device.id()](const v1::TrialResult& result,
                                                            absl::Duration elapsed) {
        sink->Measured(id, result, elapsed);
      };
    }
    profilers[device.id()] =
        std::make_unique<NcuProfiler>(&pool, device, child, profiler_options);
    executors.push_back(
        std::make_unique<TrialExecutor>(&pool, device, std::move(child), device_options));
    spdlog::info("device {}: {}", device.id(), device.model());
  }

  SourceCache sources(flags.cache_dir + "/blobs", [&](const std::string& digest) {
    return coordinator->GetBlob(digest);
  });
  WorkerOptions options;
  options.host = flags.name.empty() ? HostName() : flags.name;
  options.toolkit = (*compiler)->toolkit();
  options.max_trials = flags.max_trials;
  options.lookahead_trials =
      flags.lookahead_trials >= 0
          ? flags.lookahead_trials
          : DefaultLookaheadTrials(threads, static_cast<int>(devices->size()));
  options.pool_meter = &pool_meter;
  options.drain_time = absl::Seconds(flags.drain_time);
  WorkerDaemon daemon(options, coordinator.get(), &sources, std::move(executors), sink,
                      std::move(profilers));

  StopOnSignal(stop_signals, [&daemon] { daemon.Stop(); });

  spdlog::info("tunefleet-worker {} serving {} for {}", options.host, options.toolkit,
               flags.coordinator);
  StatsWriter stats(flags.stats_dir, &pool_meter, device_meters);
  daemon.Run();
  stats.Stop();
  spdlog::info("stopped: compile pool idle {:.2f} thread-s, devices idle {:.2f} s, while "
               "holding work for {:.2f} s", pool_meter.idle_seconds(),
               [&] {
                 double idle = 0;
                 for (IdleMeter* meter : device_meters) idle += meter->idle_seconds();
                 return idle;
               }(),
               pool_meter.held_seconds());
  return 0;
}

}  // namespace
}  // namespace tunefleet::worker

int main(int argc, char** argv) {
  using tunefleet::worker::Flags;
  Flags flags;
  CLI::App app{"tunefleet worker daemon: compiles and benchmarks kernel configs "
               "leased from a tunefleet coordinator"};
  app.add_option("--coordinator", flags.coordinator, "coordinator address HOST:PORT");
  app.add_option("--cache-dir", flags.cache_dir,
                 "artifact and source cache (default ~/.cache/tunefleet-worker)");
  app.add_option("--max-trials", flags.max_trials, "trials per lease (0 = coordinator's)");
  app.add_flag("--compile-only", flags.compile_only,
               "no devices: compile the configs the coordinator proposes ahead for --target "
               "and share them, so GPU workers fetch instead of compiling (--backend cuda)");
  app.add_option("--target", flags.target,
                 "--compile-only: the CUDA arch to compile for, e.g. sm_90");
  app.add_flag("--share-artifacts,!--no-share-artifacts", flags.share_artifacts,
               "fetch compiled configs that workers of this worker's principal (or a "
               "builder the coordinator names) shared through the coordinator, and share "
               "those compiled here (default: on)");
  app.add_option("--ncu", flags.ncu,
                 "Nsight Compute binary for profile leases (default: ncu from PATH, else "
                 "/usr/local/cuda/bin/ncu; \"none\": never profile)");
  app.add_option("--stats-dir", flags.stats_dir,
                 "keep DIR/worker-<pid>.stats up to date with the compile pool's and the "
                 "devices' idle seconds while work was held (for bench/tune_bench)");
  app.add_option("--lookahead-trials", flags.lookahead_trials,
                 "trials of the next lease each device holds and compiles ahead while it "
                 "measures the current one (0 = no look-ahead; default: the compile "
                 "threads per device, at least 4)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--name", flags.name, "name reported to the coordinator (default hostname)");
  app.add_option("--measure-budget", flags.measure_budget,
                 "seconds of timing samples per config")->check(CLI::PositiveNumber);
  app.add_option("--precision", flags.precision,
                 "precision rule: stop sampling a config once the 95% confidence interval of "
                 "its median lies within +/- this fraction of it (negative: sample the whole "
                 "--measure-budget)")
      ->check(CLI::Range(-1.0, 1.0))->capture_default_str();
  app.add_option("--cut-factor", flags.cut_factor,
                 "early-cut rule: stop sampling a config once its p20 over the first "
                 "samples exceeds this many times the best median (negative = never cut)")
      ->check(CLI::NonNegativeNumber | CLI::Range(-1e9, 0.0))->capture_default_str();
  app.add_option("--backend", flags.backend, "cpu, cuda or python")->capture_default_str();
  app.add_option("--python", flags.python,
                 "--backend python: the interpreter with torch and triton (default "
                 "$TUNEFLEET_PYTHON, else python3)");
  app.add_option("--python-package", flags.python_package,
                 "--backend python: the directory holding the tunefleet package (default "
                 "$TUNEFLEET_PYTHON_PACKAGE, else <binary dir>/../python)");
  app.add_option("--compile-timeout", flags.compile_timeout, "seconds per compile")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--compile-threads", flags.compile_threads, "compile pool size (0 = the CPUs this worker may use: its affinity and cgroup "
                 "quota; python: also 1 per GiB of usable memory)");
  app.add_option("--trial-deadline", flags.trial_deadline,
                 "seconds before a silent benchmark child is killed (0 = max(10, 20 x budget); "
                 "cuda, python: max(30, 20 x budget))");
  app.add_option("--sandbox", flags.sandbox,
                 "how compilers and benchmark children run job code: bwrap (bubblewrap "
                 "namespaces, the default) or none (unsandboxed; trusted clients only)")
      ->check(CLI::IsMember({"bwrap", "none"}))->capture_default_str();
  app.add_option("--sandbox-ro", flags.sandbox_read_only,
                 "a host path every sandboxed process also sees read-only (a toolchain "
                 "outside /usr); repeatable");
  app.add_option("--sandbox-memory-mb", flags.sandbox_memory_mb,
                 "the address space a sandboxed compiler or CPU benchmark child may map, in "
                 "MiB (0 = half of this host's memory, at least 4096; GPU children are not "
                 "limited: their runtimes reserve far more than they use)")
      ->capture_default_str();
  app.add_option("--prepare-deadline", flags.prepare_deadline,
                 "seconds a job's input generation and reference run may take; a job that "
                 "overruns it is not prepared again by this worker")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--drain-time", flags.drain_time,
                 "seconds after SIGTERM for the trial in progress to finish; then the "
                 "benchmark children are killed and the trial handed back")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--log-format", flags.log_format,
                 "text, or json: one JSON object per line, for log collectors")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--metrics-port", flags.metrics_port,
                 "serve Prometheus /metrics on this port (0 picks a free one; -1: off)")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  app.add_option("--metrics-host", flags.metrics_host, "address /metrics listens on")
      ->capture_default_str();
  app.add_option("--metrics-address-file", flags.metrics_address_file,
                 "write the bound host:port of /metrics to this file once serving");
  app.add_option("--tls-ca", flags.tls_ca,
                 "PEM CA that signed the coordinator's certificate (default: the system's)");
  app.add_option("--tls-cert", flags.tls_cert,
                 "PEM certificate of this worker, signed by the fleet's CA; its common name "
                 "is the worker's identity");
  app.add_option("--tls-key", flags.tls_key, "PEM private key of --tls-cert");
  app.add_flag("--insecure", flags.insecure,
               "plaintext, no certificate: for a coordinator started with --insecure");
  app.add_flag("--preflight", flags.preflight,
               "check what the daemon needs (sandbox, python, devices, compiler), print one "
               "line per step and exit: 0 when all are ok, 1 otherwise; needs no coordinator");
  app.add_flag("--child", flags.child, "internal: run as a benchmark child")->group("");
  CLI11_PARSE(app, argc, argv);

  const absl::Status logging = tunefleet::ConfigureLogging(
      flags.child ? "bench-child" : "worker",
      flags.log_format == "json" ? tunefleet::LogFormat::kJson : tunefleet::LogFormat::kText,
      flags.log_level);
  if (!logging.ok()) {
    std::cerr << "tunefleet-worker: " << logging.message() << "\n";
    return 2;
  }
  tunefleet::RouteGrpcLogging();

  absl::StatusOr<tunefleet::v1::Backend> backend =
      tunefleet::worker::ParseBackendName(flags.backend);
  if (!backend.ok()) {
    spdlog::critical("{}", backend.status().ToString());
    return 2;
  }
  if (flags.child && *backend == tunefleet::v1::BACKEND_PYTHON) {
    return tunefleet::worker::python::ExecBenchChild();
  }
  if (flags.child) return tunefleet::worker::BenchChildMain(*backend);
  if (flags.cache_dir.empty()) flags.cache_dir = tunefleet::worker::DefaultCacheDir();
  if (flags.preflight) return tunefleet::worker::RunPreflight(flags, *backend);
  if (flags.coordinator.empty()) {
    spdlog::critical("--coordinator HOST:PORT is required");
    return 2;
  }
  if (flags.insecure && !(flags.tls_cert.empty() && flags.tls_key.empty())) {
    spdlog::critical("--insecure and --tls-cert/--tls-key exclude each other");
    return 2;
  }
  if (!flags.insecure && (flags.tls_cert.empty() || flags.tls_key.empty())) {
    spdlog::critical("give --tls-cert and --tls-key (the worker's certificate from the fleet's "
                     "CA; scripts/dev-ca.sh makes a development one), or --insecure");
    return 2;
  }
  if (flags.insecure) spdlog::warn("--insecure: plaintext connection, no worker identity");
  return tunefleet::worker::RunDaemon(flags, *backend);
}
