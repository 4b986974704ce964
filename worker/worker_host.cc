#include "worker/worker_host.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/install_layout.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/usable_cpus.h"
#include "common/version.h"
#include "spdlog/spdlog.h"
#include "worker/artifact_sharing.h"
#include "worker/backends.h"
#include "worker/bench_child.h"
#include "worker/compile_only.h"
#include "worker/compile_pool.h"
#include "worker/idle_meter.h"
#include "worker/ncu_profiler.h"
#include "worker/ncu_report.h"
#include "worker/prometheus_metrics.h"
#include "worker/python/python_backend.h"
#include "worker/sandbox.h"
#include "worker/source_cache.h"
#include "worker/trial_executor.h"
#include "worker/worker_daemon.h"

namespace tunefleet::worker {
namespace {

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

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name)) == 0 ? name : "unknown-host";
}

// A Python compile server imports torch and triton and compiles in warm-up
// mode without a CUDA context (python/tunefleet/backend/compile.py): a GiB
// bounds it at a compile's peak. No more servers start than usable memory
// holds at this size.
constexpr int64_t kPythonServerBytes = int64_t{1} << 30;

// --backend python: the interpreter and the package, probed once, before
// device discovery (which asks the probe for the GPUs); its compile servers
// are as many as the pool has threads (GPUs carry no "cores" limit).
absl::StatusOr<const python::PythonInfo*> ConfigurePython(const WorkerHostOptions& options) {
  return python::Configure({options.python, options.python_package,
                            options.cache_dir + "/python",
                            CompileThreads(options, /*device=*/nullptr)},
                           /*devices=*/true);
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
absl::StatusOr<Sandbox> MakeSandbox(const WorkerHostOptions& options) {
  SandboxOptions sandbox;
  sandbox.extra_read_only = options.sandbox_read_only;
  sandbox.limits.address_space_bytes = options.sandbox_memory_mb << 20;
  sandbox.memory_bytes = options.sandbox_cgroup_memory_mb < 0
                             ? -1
                             : options.sandbox_cgroup_memory_mb * (int64_t{1} << 20);
  if (options.sandbox == "none") {
    spdlog::warn("*** --sandbox=none: kernels submitted by clients are compiled and run "
                 "WITHOUT a sandbox, with this worker's user, files and network. Use it only "
                 "where every client is trusted. ***");
    return Sandbox::Create(sandbox);
  }
  if (options.sandbox != "bwrap") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sandbox=", options.sandbox, ": expected bwrap or none"));
  }
  sandbox.mode = SandboxMode::kBwrap;
  return Sandbox::Create(sandbox);
}

// Serves /metrics when --metrics-port asks for it; writes the bound address
// to --metrics-address-file. Null (and no error) when it is off.
absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> StartMetrics(
    const WorkerHostOptions& options, const std::vector<v1::Device>& devices,
    const WorkerPools& pools) {
  if (options.metrics_port < 0) return nullptr;
  const std::string listen = absl::StrCat(options.metrics_host, ":", options.metrics_port);
  absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> metrics =
      PrometheusWorkerMetrics::Start(listen, kVersion, BackendName(options.backend), devices,
                                     pools);
  if (!metrics.ok()) return metrics.status();
  const std::string host = options.metrics_host == "0.0.0.0" ? "127.0.0.1" : options.metrics_host;
  const std::string address = absl::StrCat(host, ":", (*metrics)->port());
  spdlog::info("metrics on {}/metrics", address);
  if (!options.metrics_address_file.empty()) {
    const std::string& path = options.metrics_address_file;
    std::ofstream(path + ".tmp") << address << "\n";
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  return metrics;
}

// The backend's compiler, caching under --cache-dir, running in `sandbox`.
absl::StatusOr<std::unique_ptr<Compiler>> MakeCompiler(const WorkerHostOptions& options,
                                                       const Sandbox& sandbox) {
  CompilerOptions compiler;
  compiler.cache_dir = options.cache_dir;
  compiler.timeout = absl::Seconds(options.compile_timeout);
  compiler.sandbox = sandbox;
  return CreateCompiler(options.backend, compiler);
}

// --compile-only: no devices, no benchmark children; compiles what the
// coordinator proposes ahead for --target and shares it (CompileOnlyWorker).
int RunCompileOnly(const WorkerHostOptions& options, const Sandbox& sandbox,
                   const sigset_t& stop_signals) {
  if (options.backend != v1::BACKEND_CUDA || options.target.empty()) {
    spdlog::critical("--compile-only compiles CUDA kernels: give --backend cuda and --target "
                     "sm_XY (CPU code is built for the host that runs it)");
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = MakeCompiler(options, sandbox);
  if (!compiler.ok()) {
    spdlog::critical("no compiler: {}", compiler.status().ToString());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator =
      CreateGrpcCoordinator(options.coordinator, options.link);
  if (!coordinator.ok()) {
    spdlog::critical("{}", std::string(coordinator.status().message()));
    return 2;
  }
  ArtifactSharing sharing(compiler->get(), coordinator->get());
  const int threads = CompileThreads(options, nullptr);
  CompilePool pool(&sharing, threads);
  CompileOnlyOptions builder;
  builder.host = options.name.empty() ? HostName() : options.name;
  builder.toolkit = (*compiler)->toolkit();
  builder.target = options.target;
  builder.version = kVersion;
  builder.max_configs = 2 * threads;
  CompileOnlyWorker worker(builder, coordinator->get(), &pool);
  StopOnSignal(stop_signals, [&worker] { worker.Stop(); });
  spdlog::info("tunefleet-worker {}: compile-only for {} ({}, {} threads) from {}", builder.host,
               options.target, builder.toolkit, threads, options.coordinator);
  worker.Run();
  spdlog::info("stopped: {} configs compiled or fetched, {} shared, {} fetched",
               worker.compiled(), sharing.shared(), sharing.fetched());
  return 0;
}

// Runs `true` in `sandbox`: bwrap needs unprivileged user namespaces,
// which a host or a container's seccomp profile may refuse.
absl::Status TrySandbox(const Sandbox& sandbox) {
  if (!sandbox.enabled()) return absl::OkStatus();
  SubprocessOptions command;
  command.argv = sandbox.Wrap(SandboxPolicy{}, {"/bin/true"});
  command.stdout_mode = SubprocessOptions::Output::kNull;
  command.stderr_mode = SubprocessOptions::Output::kNull;
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> child, Subprocess::Start(command));
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

}  // namespace

std::string DefaultWorkerCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/tunefleet-worker");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/tunefleet-worker");
  }
  return absl::StrCat("/tmp/tunefleet-worker-", getuid());
}

int CompileThreads(const WorkerHostOptions& options, const v1::Device* device) {
  if (options.compile_threads > 0) return options.compile_threads;
  if (device != nullptr) {
    for (const v1::DeviceLimit& limit : device->limits()) {
      if (limit.name() == "cores") return std::max(1, static_cast<int>(limit.value()));
    }
  }
  int threads = UsableCpus();
  if (options.backend == v1::BACKEND_PYTHON) {
    if (std::optional<int64_t> memory = UsableMemoryBytes(); memory.has_value()) {
      threads = std::min<int64_t>(threads, std::max<int64_t>(1, *memory / kPythonServerBytes));
    }
  }
  return threads;
}

int RunPreflight(const WorkerHostOptions& options, std::ostream& out) {
  bool all_ok = true;
  const auto report = [&all_ok, &out](absl::string_view step, const absl::Status& status,
                                      absl::string_view detail) {
    all_ok = all_ok && status.ok();
    out << step << ": "
        << (status.ok() ? absl::StrCat("ok", detail.empty() ? "" : " (", detail,
                                       detail.empty() ? "" : ")")
                        : absl::StrCat("FAILED: ", status.message()))
        << std::endl;
  };
  out << "backend: " << BackendName(options.backend) << std::endl;
  absl::StatusOr<Sandbox> sandbox = MakeSandbox(options);
  report("sandbox", sandbox.ok() ? TrySandbox(*sandbox) : sandbox.status(),
         sandbox.ok() && sandbox->enabled() ? "bwrap" : "none");
  if (!sandbox.ok()) return 1;
  if (const MemoryCgroup* memory = sandbox->memory_cgroup(); memory != nullptr) {
    out << "sandbox memory: " << (memory->limit_bytes() >> 20) << " MiB for all job code, cgroup "
        << memory->dir() << " (v" << memory->version() << ")" << std::endl;
  } else if (sandbox->enabled()) {
    out << "sandbox memory: no cgroup (the log says why): job code is bounded by its rlimits "
           "only" << std::endl;
  }
  if (options.backend == v1::BACKEND_PYTHON) {
    absl::StatusOr<const python::PythonInfo*> info = ConfigurePython(options);
    report("python", info.ok() ? absl::OkStatus() : info.status(),
           info.ok() ? absl::StrCat((*info)->python, ", package in ", (*info)->package_dir) : "");
  }
  if (options.compile_only) {
    out << "devices: skipped (--compile-only compiles for --target, runs nothing)" << std::endl;
  } else {
    absl::StatusOr<std::vector<v1::Device>> devices = DiscoverDevices(options.backend);
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
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = MakeCompiler(options, *sandbox);
  report("compiler", compiler.ok() ? absl::OkStatus() : compiler.status(),
         compiler.ok() ? (*compiler)->toolkit() : "");
  return all_ok ? 0 : 1;
}

int RunWorker(const WorkerHostOptions& options) {
  sigset_t stop_signals;
  BlockStopSignals(&stop_signals);
  absl::StatusOr<Sandbox> sandbox = MakeSandbox(options);
  if (!sandbox.ok()) {
    spdlog::critical("{}", std::string(sandbox.status().message()));
    return 1;
  }
  if (options.compile_only) return RunCompileOnly(options, *sandbox, stop_signals);

  const v1::Backend backend = options.backend;
  if (backend == v1::BACKEND_PYTHON) {
    absl::StatusOr<const python::PythonInfo*> info = ConfigurePython(options);
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
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = MakeCompiler(options, *sandbox);
  if (!compiler.ok()) {
    spdlog::critical("no compiler: {}", compiler.status().ToString());
    return 1;
  }
  const int threads = CompileThreads(options, &devices->front());
  const WorkerPools pools{UsableCpus(), threads,
                          backend == v1::BACKEND_PYTHON ? python::Info().compile_servers : 0};
  spdlog::info("{} usable CPUs: {} compile threads{}", pools.usable_cpus, threads,
               pools.compile_servers > 0
                   ? absl::StrCat(", ", pools.compile_servers, " python compile servers")
                   : "");
  absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> metrics =
      StartMetrics(options, *devices, pools);
  if (!metrics.ok()) {
    spdlog::critical("{}", std::string(metrics.status().message()));
    return 1;
  }
  WorkerMetrics* const sink = metrics->get();
  absl::StatusOr<std::unique_ptr<Coordinator>> link =
      CreateGrpcCoordinator(options.coordinator, options.link);
  if (!link.ok()) {
    spdlog::critical("{}", std::string(link.status().message()));
    return 2;
  }
  std::unique_ptr<Coordinator> coordinator = *std::move(link);
  // Each config compiled once for the principal's workers, unless turned off.
  ArtifactSharing sharing(compiler->get(), coordinator.get());
  Compiler* const pool_compiler =
      options.share_artifacts ? static_cast<Compiler*>(&sharing) : compiler->get();
  IdleMeter pool_meter(threads);
  CompilePool pool(pool_compiler, threads, &pool_meter);

  ExecutorOptions executor_options;
  executor_options.measure.set_budget_seconds(options.measure_budget);
  executor_options.measure.set_cut_factor(options.cut_factor);
  executor_options.measure.set_precision(options.precision);
  executor_options.measure.set_calibration_interval_seconds(options.calibration_interval);
  executor_options.trial_deadline = absl::Seconds(options.trial_deadline);
  executor_options.min_trial_deadline = MinTrialDeadline(backend);
  executor_options.prepare_deadline = absl::Seconds(options.prepare_deadline);
  executor_options.failed_prepares = std::make_shared<FailedPrepares>();
  std::vector<std::unique_ptr<TrialExecutor>> executors;
  absl::flat_hash_map<std::string, std::unique_ptr<Profiler>> profilers;
  NcuProfilerOptions profiler_options;
  std::tie(profiler_options.ncu, profiler_options.ncu_version) = FindNcu(options.ncu, backend);
  profiler_options.scratch_dir = absl::StrCat(options.cache_dir, "/profiles");
  std::error_code ignored_error;  // a missing directory fails each profile with ncu's reason
  std::filesystem::create_directories(profiler_options.scratch_dir, ignored_error);
  profiler_options.executor.prepare_deadline = absl::Seconds(options.prepare_deadline);
  std::vector<IdleMeter*> device_meters;
  TrialPhaseTotals phase_totals;
  const std::string self = SelfExecutable().empty() ? "tunefleet-worker" : SelfExecutable();
  for (const v1::Device& device : *devices) {
    executor_options.device_meter = std::make_shared<IdleMeter>(/*units=*/1);
    device_meters.push_back(executor_options.device_meter.get());
    const std::string inbox = absl::StrCat(options.cache_dir, "/children/", executors.size());
    ChildOptions child{BenchChildCommand(self, backend, options.log_format),
                       ChildEnvironment(device), *sandbox,
                       ChildSandboxPolicy(backend, self, inbox), inbox};
    ExecutorOptions device_options = executor_options;
    device_options.on_measured = [sink, &phase_totals, id = device.id()](
                                     const v1::TrialResult& result, absl::Duration elapsed,
                                     const v1::TrialPhases& phases) {
      phase_totals.Add(phases, elapsed);
      if (sink != nullptr) sink->Measured(id, result, elapsed, phases);
    };
    profilers[device.id()] =
        std::make_unique<NcuProfiler>(&pool, device, child, profiler_options);
    executors.push_back(
        std::make_unique<TrialExecutor>(&pool, device, std::move(child), device_options));
    spdlog::info("device {}: {}", device.id(), device.model());
  }

  SourceCache sources(options.cache_dir + "/blobs", [&](const std::string& digest) {
    return coordinator->GetBlob(digest);
  });
  WorkerOptions daemon_options;
  daemon_options.host = options.name.empty() ? HostName() : options.name;
  daemon_options.toolkit = (*compiler)->toolkit();
  daemon_options.max_trials = options.max_trials;
  daemon_options.lookahead_trials =
      options.lookahead_trials >= 0
          ? options.lookahead_trials
          : DefaultLookaheadTrials(threads, static_cast<int>(devices->size()));
  daemon_options.pool_meter = &pool_meter;
  daemon_options.drain_time = absl::Seconds(options.drain_time);
  daemon_options.on_unshared_artifacts = [&sharing](std::vector<std::string> keys) {
    sharing.SetUnshared(std::move(keys));
  };
  WorkerDaemon daemon(daemon_options, coordinator.get(), &sources, std::move(executors), sink,
                      std::move(profilers));

  StopOnSignal(stop_signals, [&daemon] { daemon.Stop(); });

  spdlog::info("tunefleet-worker {} serving {} for {}", daemon_options.host,
               daemon_options.toolkit, options.coordinator);
  IdleStatsWriter stats(options.stats_dir, &pool_meter, device_meters, &phase_totals);
  daemon.Run();
  stats.Stop();
  double devices_idle = 0;
  for (IdleMeter* meter : device_meters) devices_idle += meter->idle_seconds();
  spdlog::info("stopped: compile pool idle {:.2f} thread-s, devices idle {:.2f} s, while "
               "holding work for {:.2f} s",
               pool_meter.idle_seconds(), devices_idle, pool_meter.held_seconds());
  return 0;
}

}  // namespace tunefleet::worker
