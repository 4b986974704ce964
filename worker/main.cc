// tunefleet-worker: parses the command line into WorkerHostOptions and runs
// the mode it asks for (worker/worker_host.h builds everything).
//
//   tunefleet-worker --coordinator HOST:PORT [--cache-dir DIR] [--max-trials N]
//                    [--name NAME] [--measure-budget SECONDS] [--cut-factor K]
//                    [--precision FRACTION] [--calibration-interval SECONDS]
//                    [--backend cpu|cuda|python] [--python PATH]
//                    [--python-package DIR]
//                    [--sandbox bwrap|none] [--sandbox-ro PATH]...
//                    [--sandbox-memory-mb MB] [--sandbox-cgroup-memory-mb MB]
//   tunefleet-worker --preflight [--backend ...]   checks, then exits
//
// Child mode (started by the daemon itself, one per device):
//   tunefleet-worker --child --backend cpu|cuda|python
// speaks the bench_child.proto pipe protocol on stdin/stdout (python: by
// exec'ing the interpreter's tunefleet.backend.bench_child).
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "common/grpc_logging.h"
#include "common/logging.h"
#include "spdlog/spdlog.h"
#include "worker/backends.h"
#include "worker/bench_child.h"
#include "worker/python/python_backend.h"
#include "worker/worker_host.h"

int main(int argc, char** argv) {
  tunefleet::worker::WorkerHostOptions flags;  // what the command line sets
  std::string backend_name = "cpu";
  std::string log_level = "info";
  bool child = false;
  bool preflight = false;
  tunefleet::ChannelSecurity& tls = flags.link.security;
  CLI::App app{"tunefleet worker daemon: compiles and benchmarks kernel configs "
               "leased from a tunefleet coordinator"};
  app.add_option("--coordinator", flags.coordinator,
                 "coordinator address HOST:PORT, or IP:PORT,IP:PORT for a leader and its "
                 "standbys (calls go to the one that leads)");
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
  app.add_option("--calibration-interval", flags.calibration_interval,
                 "calibration (CPU backend): time the calibration kernel again once its last "
                 "timing is this many seconds old; every measurement carries it (negative: "
                 "never; GPU backends calibrate every sample by its clock)")
      ->capture_default_str();
  app.add_option("--cut-factor", flags.cut_factor,
                 "early-cut rule: stop sampling a config once its p20 over the first "
                 "samples exceeds this many times the best median (negative = never cut)")
      ->check(CLI::NonNegativeNumber | CLI::Range(-1e9, 0.0))->capture_default_str();
  app.add_option("--backend", backend_name, "cpu, cuda or python")->capture_default_str();
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
  app.add_option("--sandbox-cgroup-memory-mb", flags.sandbox_cgroup_memory_mb,
                 "the memory all sandboxed processes together may use, GPU children included, "
                 "in MiB: a memory cgroup, where the host lets the worker make one (cgroup v2 "
                 "delegated to it, or a writable v1 hierarchy); 0 = three quarters of this "
                 "host's memory, -1 = no cgroup")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  app.add_option("--prepare-deadline", flags.prepare_deadline,
                 "seconds a job's input generation and reference run may take; a job that "
                 "overruns it is not prepared again by this worker")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--drain-time", flags.drain_time,
                 "seconds after SIGTERM for the trial in progress to finish; then the "
                 "benchmark children are killed and the trial handed back")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
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
  app.add_option("--tls-ca", tls.ca_file,
                 "PEM CA that signed the coordinator's certificate (default: the system's)");
  app.add_option("--tls-cert", tls.cert_file,
                 "PEM certificate of this worker, signed by the fleet's CA; its common name "
                 "is the worker's identity");
  app.add_option("--tls-key", tls.key_file, "PEM private key of --tls-cert");
  app.add_flag("--insecure", tls.insecure,
               "plaintext, no certificate: for a coordinator started with --insecure");
  app.add_flag("--preflight", preflight,
               "check what the daemon needs (sandbox, python, devices, compiler), print one "
               "line per step and exit: 0 when all are ok, 1 otherwise; needs no coordinator");
  app.add_flag("--child", child, "internal: run as a benchmark child")->group("");
  CLI11_PARSE(app, argc, argv);

  const absl::Status logging = tunefleet::ConfigureLogging(
      child ? "bench-child" : "worker",
      flags.log_format == "json" ? tunefleet::LogFormat::kJson : tunefleet::LogFormat::kText,
      log_level);
  if (!logging.ok()) {
    std::cerr << "tunefleet-worker: " << logging.message() << "\n";
    return 2;
  }
  tunefleet::RouteGrpcLogging();

  absl::StatusOr<tunefleet::v1::Backend> backend =
      tunefleet::worker::ParseBackendName(backend_name);
  if (!backend.ok()) {
    spdlog::critical("{}", backend.status().ToString());
    return 2;
  }
  flags.backend = *backend;
  if (child && *backend == tunefleet::v1::BACKEND_PYTHON) {
    return tunefleet::worker::python::ExecBenchChild(flags.log_format);
  }
  if (child) return tunefleet::worker::BenchChildMain(*backend);
  if (flags.cache_dir.empty()) flags.cache_dir = tunefleet::worker::DefaultWorkerCacheDir();
  if (preflight) return tunefleet::worker::RunPreflight(flags, std::cout);
  if (flags.coordinator.empty()) {
    spdlog::critical("--coordinator HOST:PORT is required");
    return 2;
  }
  if (tls.insecure && !(tls.cert_file.empty() && tls.key_file.empty())) {
    spdlog::critical("--insecure and --tls-cert/--tls-key exclude each other");
    return 2;
  }
  if (!tls.insecure && (tls.cert_file.empty() || tls.key_file.empty())) {
    spdlog::critical("give --tls-cert and --tls-key (the worker's certificate from the fleet's "
                     "CA; scripts/dev-ca.sh makes a development one), or --insecure");
    return 2;
  }
  if (tls.insecure) spdlog::warn("--insecure: plaintext connection, no worker identity");
  return tunefleet::worker::RunWorker(flags);
}
