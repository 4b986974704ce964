// MemoryCgroup: one memory cgroup that every sandboxed process of a worker
// joins (the compiler, the NVRTC helper, the benchmark children), so that
// job code together never takes more than its limit of the host's memory.
// The worker daemon stays outside it: when job code passes the limit, the
// kernel's OOM killer picks a process inside (the largest), never the
// daemon, another service or the host's.
//
// It is made under the worker's own cgroup, where the host lets the worker
// write there:
//   - cgroup v2 with the memory controller delegated to the worker's cgroup
//     (systemd's Delegate=memory, as deploy/systemd's unit sets): the
//     worker moves itself into a leaf `tunefleet-worker` (a cgroup with
//     processes may not enable controllers for its children), enables
//     `memory` for the children and makes
//     `tunefleet-sandbox-<pidns>-<pid>-<n>` with memory.max and
//     memory.swap.max 0;
//   - cgroup v1 with a writable memory hierarchy (a root worker):
//     `tunefleet-sandbox-<pidns>-<pid>-<n>` with memory.limit_in_bytes (and
//     memory.memsw.limit_in_bytes where swap is accounted).
// Elsewhere (a container whose cgroup files are read-only, an unprivileged
// worker without delegation) Create says why, and the rlimits of the
// sandbox are the only bound.
//
// A process joins by writing its pid to procs_file() before it execs job
// code (Sandbox::Wrap does so with /bin/sh). Directories of workers of this
// PID namespace that died are removed at the next Create under the same
// parent.
//
// The OOM killer picks the process of the cgroup with the largest memory
// (the job code that grew, most often, but not always): one job's code
// past the limit can cost another job's trial, which then reads as killed
// by SIGKILL. The limit is the host's protection, not a per-job one.
//
// Thread-safety: immutable after Create.
#ifndef TUNEFLEET_WORKER_MEMORY_CGROUP_H_
#define TUNEFLEET_WORKER_MEMORY_CGROUP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tunefleet::worker {

class MemoryCgroup {
 public:
  // Makes the cgroup, limited to `limit_bytes`. FailedPrecondition (v2
  // without the memory controller delegated, files that may not be
  // written) or NotFound (no cgroup file system) with why.
  static absl::StatusOr<std::unique_ptr<MemoryCgroup>> Create(uint64_t limit_bytes);
  // Removes the directory; a process still inside keeps it (logged).
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  const std::string& dir() const { return dir_; }
  std::string procs_file() const { return dir_ + "/cgroup.procs"; }
  uint64_t limit_bytes() const { return limit_bytes_; }
  int version() const { return version_; }  // 1 or 2
  // Times job code met the limit (memory.events "oom_kill" on v2,
  // memory.oom_control "oom_kill" on v1 kernels that count it); 0 when
  // unreadable.
  int64_t oom_kills() const;

 private:
  MemoryCgroup(std::string dir, uint64_t limit_bytes, int version)
      : dir_(std::move(dir)), limit_bytes_(limit_bytes), version_(version) {}

  const std::string dir_;
  const uint64_t limit_bytes_;
  const int version_;
};

// This host's physical memory; 0 where the system does not say.
uint64_t PhysicalMemoryBytes();

// Three quarters of this host's memory: what job code together may use by
// default (0 where unknown).
uint64_t DefaultSandboxMemoryBytes();

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_MEMORY_CGROUP_H_
