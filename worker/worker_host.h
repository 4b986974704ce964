// The worker process's composition root, as server/coordinator.h is the
// coordinator's. WorkerHostOptions holds everything tunefleet-worker's
// command line sets (worker/main.cc only parses flags into it), and each mode
// builds what it needs in dependency order:
//
//   RunWorker       the sandbox; the backend (the Python interpreter, the
//                   devices, the compiler); /metrics; the coordinator link;
//                   the compile pool; a TrialExecutor and a profiler per
//                   device; the WorkerDaemon, until SIGINT or SIGTERM;
//   RunCompileOnly  (options.compile_only) the sandbox, the compiler, the
//                   link, the pool and a CompileOnlyWorker;
//   RunPreflight    the sandbox (tried), the interpreter, the devices and the
//                   compiler, each reported on one line, and nothing else.
//
// Policy lives with the classes that own it: the trial deadline in
// TrialExecutor (MinTrialDeadline), the look-ahead in WorkerDaemon
// (DefaultLookaheadTrials), the child's command line in bench_child.h
// (BenchChildCommand).
#ifndef TUNEFLEET_WORKER_WORKER_HOST_H_
#define TUNEFLEET_WORKER_WORKER_HOST_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tunefleet/v1/types.pb.h"
#include "worker/coordinator_link.h"

namespace tunefleet::worker {

struct WorkerHostOptions {
  v1::Backend backend = v1::BACKEND_CPU;
  // The coordinator's host:port and how to reach it (TLS with the worker's
  // certificate, or --insecure).
  std::string coordinator;
  CoordinatorLinkOptions link;
  // Artifacts, sources, the Python backend's state, profiles, the children's
  // inboxes. REQUIRES: non-empty (DefaultWorkerCacheDir).
  std::string cache_dir;
  std::string name;  // reported to the coordinator; "" = the host name
  std::string python;          // --backend python: the interpreter ("" = default)
  std::string python_package;  // and the tunefleet package's directory
  std::string log_format = "text";  // the benchmark children log as the daemon does
  int metrics_port = -1;  // -1: no /metrics; 0: a free port
  std::string metrics_host = "0.0.0.0";
  std::string metrics_address_file;
  std::string sandbox = "bwrap";  // or "none"
  std::vector<std::string> sandbox_read_only;
  uint64_t sandbox_memory_mb = 0;  // 0 = DefaultAddressSpaceBytes()
  // The memory cgroup of all job code: 0 = DefaultSandboxMemoryBytes(), -1 = none.
  int64_t sandbox_cgroup_memory_mb = 0;
  int max_trials = 0;              // per lease; 0 = the coordinator's
  int lookahead_trials = -1;       // per device; 0 = off, -1 = DefaultLookaheadTrials
  std::string stats_dir;           // where worker-<pid>.stats is kept up to date
  int compile_threads = 0;         // 0 = CompileThreads's rule
  double measure_budget = 0.2;
  double cut_factor = 1.5;
  double precision = 0.005;
  double calibration_interval = 0.5;  // seconds (CPU backend); negative: not calibrated
  double compile_timeout = 60;
  double trial_deadline = 0;  // 0 = the executor's rule (MinTrialDeadline)
  double prepare_deadline = 180;
  double drain_time = 10;
  std::string ncu;  // "": `ncu` from PATH, else /usr/local/cuda/bin/ncu; "none"
  bool share_artifacts = true;
  bool compile_only = false;
  std::string target;  // --compile-only: the CUDA arch, "sm_90"
};

// $XDG_CACHE_HOME/tunefleet-worker, else ~/.cache/tunefleet-worker, else
// /tmp/tunefleet-worker-<uid>.
std::string DefaultWorkerCacheDir();

// The compile pool's size: options.compile_threads, else the device's
// "cores" limit (a CPU device's usable cores), else the CPUs this process
// may use (UsableCpus: its affinity and cgroup quota, never the host's
// count); for the python backend, whose threads each drive a compile
// server, also no more than usable memory holds at 1 GiB a server. Null
// `device`: a device without a "cores" limit, as every GPU is.
int CompileThreads(const WorkerHostOptions& options, const v1::Device* device);

// The daemon (or, with options.compile_only, the compile-only builder) until
// SIGINT or SIGTERM. Returns the process's exit status: 0 after a stop, 1
// when the backend cannot be set up, 2 when the coordinator link cannot.
int RunWorker(const WorkerHostOptions& options);

// The preflight check: one line per step on `out` ("sandbox: ok (bwrap)",
// "devices: FAILED: ..."); 0 when every step is ok, else 1. Needs no
// coordinator; no devices with options.compile_only.
int RunPreflight(const WorkerHostOptions& options, std::ostream& out);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_WORKER_HOST_H_
