// The narrow seams between the worker daemon and a compute backend (CPU,
// CUDA): a Compiler that turns one config into an artifact on disk, and a
// KernelRunner that, inside a benchmark child, checks and times artifacts.
#ifndef TUNEFLEET_WORKER_BACKEND_H_
#define TUNEFLEET_WORKER_BACKEND_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/sandbox.h"

namespace tunefleet::worker {

// One compilation: a config of a spec for a device, or the spec's reference.
struct CompileJob {
  const v1::KernelSpec* spec = nullptr;
  // Every file the spec names, with content.
  const std::vector<v1::SourceFile>* sources = nullptr;
  v1::Config config;  // normalized; for the reference, the default config
  v1::Device device;  // the target; its limits give e.g. the CUDA arch
  bool reference = false;  // compile reference.sources/reference.entry
  // The job's normalized shape. Only a backend that specializes on it at
  // compile time reads it (python: a Triton kernel is compiled for the
  // argument values it is launched with).
  v1::Shape shape;
  // The job it compiles for: an artifact is published for that job's work.
  std::string job_id = {};
  // Compile here whatever was shared (v1::Lease.own_build): ArtifactSharing
  // fetches nothing, builds again an artifact fetched before (`rebuild`),
  // and publishes what it has, for the coordinator to compare.
  bool own_build = false;
  // Compile even when the artifact is in the cache, replacing it by an
  // atomic rename (readers see the old file or the new one, never none).
  bool rebuild = false;
};

// Settings every Compiler takes.
struct CompilerOptions {
  // Root of the on-disk caches (artifacts, staged sources). REQUIRES: set.
  std::string cache_dir;
  // A compile running longer is killed: outcome.timed_out.
  absl::Duration timeout = absl::Seconds(60);
  // The compiler program; empty = the backend's default (CPU: the first of
  // c++, g++, clang++ found in PATH).
  std::string program;
  // Where the compiler process runs; default: unsandboxed (the worker's
  // --sandbox makes it bwrap). It sees the job's staged sources read-only
  // and one scratch directory of its own read-write.
  Sandbox sandbox;
};

struct CompileOutcome {
  bool ok = false;
  std::string artifact;  // path of the shared object / cubin when ok
  std::string log;       // compiler output; the whole story when !ok
  double seconds = 0;    // wall time spent compiling (0 on a cache hit)
  bool cached = false;   // served from the on-disk artifact cache
  bool fetched = false;  // fetched from the coordinator's shared artifacts
  bool timed_out = false;
};

// Where a compile leaves its artifact, for a backend whose artifacts run on
// any worker with the same key (worker/artifact_sharing.h shares them).
struct ArtifactLocation {
  std::string key;            // ArtifactKey: what decides the bytes
  std::string artifact_path;  // where Compile leaves (or finds) the artifact
  std::string log_path;       // its compiler log beside it; "" when none is kept
};

// Compiles configs of one backend. Thread-safe: the daemon's compile pool
// calls Compile from several threads at once. A config that does not compile
// is an OK status with outcome.ok == false; so is a spec whose
// compile_options are not on the allowlist (common/compile_options.h); a
// non-OK status means the compiler itself could not be run. outcome.log is
// JobCompilerLog (worker/compile_log.h): only the diagnostics about the
// job's own files.
class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) = 0;
  // Where Compile(job) leaves its artifact, computed without compiling; a
  // Compile that finds the artifact there is a cache hit. nullopt for a
  // backend whose artifacts are not shared (the default), and for a job
  // Compile would refuse.
  virtual std::optional<ArtifactLocation> Locate(const CompileJob& job) const {
    (void)job;
    return std::nullopt;
  }
  // Name and version, part of the tuning key: "g++ 12.2.0", "nvrtc 13.0".
  virtual std::string toolkit() const = 0;
};

// Lives in a benchmark child, one per device. Not thread-safe.
class KernelRunner {
 public:
  virtual ~KernelRunner() = default;
  // Generates the inputs (seeded) and the expected output of a job. Non-OK
  // when the job cannot be served at all (bad reference, out of memory).
  virtual absl::Status Prepare(const v1::PrepareRequest& request) = 0;
  // Takes `measure` as the prepared job's measure options, keeping its inputs
  // and expected outputs: the benchmark child calls it for a Prepare that
  // differs from the last successful one in its measure options only (a
  // finalists round or a verification measures with its own budget). False
  // where the runner cannot (no job prepared, or it keeps nothing derived
  // from the options apart): the child then prepares again.
  virtual bool Remeasure(const v1::MeasureOptions& measure) {
    (void)measure;
    return false;
  }
  // Checks one artifact against the expected output, then times it. Every
  // outcome, good or bad, is a TrialResult status (never a crash of the
  // runner for a bad kernel that the backend can detect). CRASHED or TIMEOUT
  // means this process is poisoned (a sticky CUDA error, a kernel still
  // spinning): the benchmark child answers, then exits, and the daemon
  // respawns it. A child killed by a signal or by the daemon's deadline is
  // classified by the daemon itself. `request.config` is normalized.
  virtual v1::TrialResult Run(const v1::RunRequest& request) = 0;
  // Where the last Run's wall time went, phase by phase: what a trial costs
  // beyond its kernel. Empty where a runner keeps none.
  virtual const v1::TrialPhases& last_phases() const {
    return v1::TrialPhases::default_instance();
  }
  // True when this process can no longer serve any request (a CUDA context
  // broken by a sticky error, in Prepare as well as in Run): the child then
  // exits after its answer.
  virtual bool poisoned() const { return false; }
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_BACKEND_H_
