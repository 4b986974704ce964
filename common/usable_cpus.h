// The CPUs and memory a process may use, as opposed to what its host has.
//
// A worker pinned to 16 of a host's 64 cores (taskset, a Kubernetes CPU
// limit, one worker per GPU) must size its pools by 16: the host's count
// (std::thread::hardware_concurrency, nproc) is the wrong number, and pools
// sized by it thrash. What a process may use is the smaller of
//   - its affinity mask (sched_getaffinity), and
//   - the tightest CPU quota of its cgroup and of every ancestor of it:
//     cgroup v2's cpu.max ("QUOTA PERIOD", or "max"), or cgroup v1's
//     cpu.cfs_quota_us / cpu.cfs_period_us (-1: none), rounded up
//     (a quota of 1.5 CPUs lets two threads run half the time each).
// Memory likewise: the smaller of MemAvailable and the tightest cgroup limit
// (v2 memory.max less memory.current, v1 memory.limit_in_bytes less
// memory.usage_in_bytes).
//
// The cgroup files are found through /proc/self/cgroup and
// /proc/self/mountinfo, so hybrid hosts (v1 controllers beside a v2 tree) and
// containers with a cgroup namespace read the right files. Files that cannot
// be read count as "no limit": a process is never sized below what its
// affinity allows because of a missing file.
//
// Thread-safety: every function is safe to call from any thread; each reads
// the files anew.
#ifndef TUNEFLEET_COMMON_USABLE_CPUS_H_
#define TUNEFLEET_COMMON_USABLE_CPUS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tunefleet {

// Where the process's cgroup membership and mounts are read. Tests point
// them at files of their own, whose mount points lie in a test directory.
struct ProcFiles {
  std::string self_cgroup = "/proc/self/cgroup";
  std::string mountinfo = "/proc/self/mountinfo";
  std::string meminfo = "/proc/meminfo";
};

// One cgroup hierarchy the process belongs to: the directory of its own
// cgroup and the hierarchy's mount point (the top of a walk upwards).
struct CgroupHierarchy {
  std::string leaf;
  std::string top;
};

// The process's cgroup in the hierarchy of `controller` ("" for the v2 tree;
// else the v1 hierarchy whose controllers hold it), found through
// /proc/self/cgroup and mountinfo as `files` name them; nullopt when the
// process is in none or none is mounted. A container without a cgroup
// namespace sees its own cgroup as the mount's root.
std::optional<CgroupHierarchy> FindCgroupHierarchy(absl::string_view controller,
                                                   const ProcFiles& files = {});

// What bounds the CPUs of this process.
struct CpuBudget {
  int affinity = 1;             // CPUs in the affinity mask, at least 1
  std::optional<double> quota;  // the tightest cgroup quota in CPUs; none: unlimited
  // min(affinity, ceil(quota)), at least 1.
  int usable() const;
};

// The tightest CPU quota (quota / period, in CPUs) of the process's cgroups
// described by `files`; nullopt when none is set or none can be read.
std::optional<double> CgroupCpuQuota(const ProcFiles& files = {});

// The affinity mask of this process, bounded by CgroupCpuQuota(files).
CpuBudget ReadCpuBudget(const ProcFiles& files = {});

// ReadCpuBudget().usable(): the number every pool is sized by.
int UsableCpus();

// Bytes this process may still allocate: MemAvailable, bounded by the
// tightest cgroup memory limit less its usage; nullopt when nothing can be
// read.
std::optional<int64_t> UsableMemoryBytes(const ProcFiles& files = {});

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_USABLE_CPUS_H_
