// CompileOnlyWorker: the loop of `tunefleet-worker --compile-only --target
// sm_90` (docs/architecture.md, "Compile once for the fleet"). A host with
// CPU cores and no GPU registers with no devices and the CUDA arch it
// compiles for, asks the coordinator for configs that running jobs' targets
// of that arch (and of its NVRTC version) will lease next (GetCompileWork),
// and compiles them on its pool, whose ArtifactSharing shares every cubin.
// GPU workers then fetch instead of compiling, when the coordinator names
// this worker's principal a builder (`--artifact-builders`) or they share
// its principal.
//
// | the coordinator answers    | the loop                                       |
// |----------------------------|------------------------------------------------|
// | work                       | compiles it (and each job's reference once)    |
// | no work                    | asks again after `idle_poll`                   |
// | NotFound (forgot this id)  | registers again                                |
// | any other error            | logs it once, asks again after `retry`         |
//
// Nothing is reported: a config that fails to compile is the GPU worker's to
// find (it compiles the config itself and reports COMPILE_ERROR).
#ifndef TUNEFLEET_WORKER_COMPILE_ONLY_H_
#define TUNEFLEET_WORKER_COMPILE_ONLY_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/compile_pool.h"
#include "worker/coordinator.h"

namespace tunefleet::worker {

struct CompileOnlyOptions {
  std::string host;     // the registration's host (the principal without TLS)
  std::string toolkit;  // the compiler's, part of what the coordinator matches
  std::string target;   // the CUDA arch: "sm_90"
  std::string version;  // tunefleet's
  int max_configs = 0;  // per GetCompileWork; 0: the coordinator's batch size
  absl::Duration idle_poll = absl::Milliseconds(500);
  absl::Duration retry = absl::Seconds(1);
};

// Thread-safety: Run on one thread; Stop and compiled from any.
class CompileOnlyWorker {
 public:
  // REQUIRES: `coordinator` and `pool` outlive this.
  CompileOnlyWorker(CompileOnlyOptions options, Coordinator* coordinator, CompilePool* pool)
      : options_(std::move(options)), coordinator_(coordinator), pool_(pool) {}

  // Loops until Stop: registers, asks for work, compiles it. A batch being
  // compiled when Stop comes is finished first.
  void Run();
  void Stop();
  // Configs compiled (or fetched, or found in the cache) so far.
  int64_t compiled() const { return compiled_.load(); }

 private:
  absl::Status Register();
  // Registers when needed, then asks for work.
  absl::StatusOr<v1::GetCompileWorkResponse> Ask();
  // Compiles every config of `response`, waiting for all of them.
  void Compile(const v1::GetCompileWorkResponse& response);
  // Sleeps `wait`, or less when Stop comes.
  void Pause(absl::Duration wait);

  const CompileOnlyOptions options_;
  Coordinator* const coordinator_;
  CompilePool* const pool_;
  std::string worker_id_;  // Run's thread only
  absl::flat_hash_set<std::string> references_;  // jobs whose reference compiled
  std::atomic<int64_t> compiled_{0};
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_COMPILE_ONLY_H_
