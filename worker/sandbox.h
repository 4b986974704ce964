// The sandbox every process that runs job code starts in: the C++ compiler,
// the NVRTC helper and the benchmark child. It is bubblewrap (`bwrap`):
//   - new user namespace, as uid/gid 65534 (nobody) with no capabilities;
//   - new PID, network (loopback only, down to the outside world), IPC, UTS
//     and cgroup namespaces; a new session (no terminal to inject into);
//   - a read-only system: /usr, /bin, /sbin, /lib* as on the host (symlinks
//     stay symlinks), /etc/ld.so.cache and /etc/alternatives; nothing else
//     of /etc, no /home, /root, /var, /work...: the worker's keys, config and
//     caches are not there;
//   - a fresh /proc, a minimal /dev (null, zero, random, urandom, tty...),
//     a private tmpfs on /tmp;
//   - only the paths a SandboxPolicy names, at the same path as on the host:
//     read-only (a job's staged sources, the artifact cache, the worker
//     binary) or writable (the one scratch directory of this process);
//   - device nodes only where named (the CUDA child: /dev/nvidia*);
//   - the environment cleared, then set from the policy; bwrap itself starts
//     with an empty environment (`env -i`), so its init process, pid 1 of the
//     sandbox, shows nothing of the worker's environment in /proc/1/environ;
//   - resource limits (SandboxLimits, set with prlimit before bwrap starts and
//     inherited by everything inside): processes, open files, file size, and
//     address space for processes that start no GPU runtime;
//   - where the host lets the worker make one, a memory cgroup that every
//     sandboxed process joins before it execs (MemoryCgroup): job code
//     together uses at most its limit of the host's memory, GPU runtimes
//     included, and the OOM killer picks inside it, never the daemon;
//   - killed when the thread that started it ends (--die-with-parent), and
//     with its whole PID namespace when bwrap is killed.
// When the worker runs as root, uid 65534 inside maps to root outside: the
// mount view above, with no capabilities, is then the boundary. Run the
// worker as a dedicated user where that matters.
//
// Thread-safety: BwrapArgv and AddCudaDevices are pure; a Sandbox is
// immutable after Create and safe to share between threads.
#ifndef TUNEFLEET_WORKER_SANDBOX_H_
#define TUNEFLEET_WORKER_SANDBOX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/subprocess.h"
#include "worker/memory_cgroup.h"

namespace tunefleet::worker {

// What one sandboxed process may see, beyond the fixed parts above.
struct SandboxPolicy {
  // Host files or directories bound read-only at the same path. Default none.
  std::vector<std::string> read_only;
  // Host directories bound read-write at the same path (scratch). Default none.
  std::vector<std::string> writable;
  // Host device nodes bound at the same path (--dev-bind). Default none.
  std::vector<std::string> devices;
  // Symlinks made inside: {target, link}, e.g. {"usr/bin", "/bin"}.
  std::vector<std::pair<std::string, std::string>> symlinks;
  // The process's whole environment. Default empty.
  std::vector<std::pair<std::string, std::string>> env;
  // Working directory inside; empty (the default) = "/".
  std::string working_dir;
  // Identity inside the user namespace. Default 65534/65534 (nobody).
  int uid = 65534;
  int gid = 65534;
  // The process starts a GPU runtime (CUDA, torch), which reserves far more
  // virtual address space than it uses: SandboxLimits::address_space_bytes
  // is not applied. Default false.
  bool unlimited_address_space = false;
};

// The rlimits of every sandboxed process; 0 = not limited. Each is capped
// at the worker's own hard limit (an unprivileged worker cannot raise it).
struct SandboxLimits {
  // RLIMIT_AS, but for policies with unlimited_address_space.
  // Default 0: DefaultAddressSpaceBytes().
  uint64_t address_space_bytes = 0;
  // RLIMIT_NPROC: the kernel counts every task (process, thread) of the
  // worker's user against it, and exempts a root worker. Default 4096: a
  // compiler's jobs or a kernel's threads fit; under a dedicated worker user
  // a fork bomb stops there.
  uint64_t processes = 4096;
  // RLIMIT_NOFILE. Default 4096.
  uint64_t open_files = 4096;
  // RLIMIT_FSIZE: the largest file a process may write. Default 8 GiB.
  uint64_t file_size_bytes = uint64_t{8} << 30;
};

// Half of this host's memory, at least 4 GiB: what a compiler or a CPU
// kernel's child may map by default.
uint64_t DefaultAddressSpaceBytes();

// Appends `more` to `policy`: lists concatenated; uid and gid of `more`
// win, and its working_dir when set; unlimited_address_space when either is.
void MergePolicy(const SandboxPolicy& more, SandboxPolicy* policy);

// The bwrap command line that runs `command` under `policy` (see the file
// comment for the fixed parts). REQUIRES: `command` non-empty, its first
// element an absolute path visible under `policy`.
std::vector<std::string> BwrapArgv(const std::string& bwrap, const SandboxPolicy& policy,
                                   const std::vector<std::string>& command);

// Gives a CUDA process its GPUs: `device_nodes` (/dev/nvidiactl,
// /dev/nvidia0, /dev/nvidia-uvm, /dev/nvidia-caps/...) bound as devices and
// /proc/driver/nvidia read-only, with unlimited_address_space. The driver
// libraries live under /usr.
void AddCudaDevices(const std::vector<std::string>& device_nodes, SandboxPolicy* policy);

// /dev/nvidia* and /dev/nvidia-caps/* on this host (empty without a GPU).
std::vector<std::string> HostNvidiaDeviceNodes();

// The read-only system of the host: /usr, /bin, /sbin, /lib* (symlinks as
// symlinks), /etc/ld.so.cache, /etc/alternatives, every absolute directory
// of LD_LIBRARY_PATH, and PATH/HOME/TMPDIR/LANG (+ LD_LIBRARY_PATH) set.
SandboxPolicy HostSystemPolicy();

enum class SandboxMode { kNone, kBwrap };

struct SandboxOptions {
  // Default kNone: a library user opts in; the worker's --sandbox defaults
  // to bwrap.
  SandboxMode mode = SandboxMode::kNone;
  // The bwrap program (searched in PATH). Default "bwrap".
  std::string bwrap = "bwrap";
  // More host paths every sandboxed process sees read-only (a toolchain
  // outside /usr). Default none.
  std::vector<std::string> extra_read_only;
  // Default: SandboxLimits' defaults.
  SandboxLimits limits;
  // What every sandboxed process together may use of the host's memory
  // (MemoryCgroup), where the host lets the worker make a cgroup; without
  // one the worker says why at start and runs on. Default 0:
  // DefaultSandboxMemoryBytes(); negative: no cgroup.
  int64_t memory_bytes = 0;
};

// How the worker starts job code. Copyable; a default Sandbox runs commands
// as they are (mode kNone).
class Sandbox {
 public:
  Sandbox() = default;

  // For kBwrap: finds bwrap, prlimit and env, and runs `true` in a sandbox
  // once. FailedPrecondition, saying to install bubblewrap (or util-linux)
  // or pass --sandbox=none, when one is missing or bwrap cannot create its
  // namespaces here.
  static absl::StatusOr<Sandbox> Create(SandboxOptions options);

  bool enabled() const { return mode_ == SandboxMode::kBwrap; }

  // Makes `options` run its command under `policy`; options->env and
  // options->working_dir move into the sandbox (the policy's working_dir
  // wins). Disabled: only policy.working_dir (when set) and policy.env
  // (added to the worker's environment) apply.
  void Apply(const SandboxPolicy& policy, SubprocessOptions* options) const;
  // How the sandboxed command ended, from how bwrap did: bwrap exits with
  // 128 + N when its command was killed by signal N. Unchanged when
  // disabled (a command exiting with 128 + N itself reads as killed by N).
  ExitInfo CommandExit(ExitInfo bwrap_exit) const;
  // The memory cgroup sandboxed processes join; null without one.
  const MemoryCgroup* memory_cgroup() const { return memory_.get(); }
  // The argv that runs `command` under `policy`: /bin/sh joining the memory
  // cgroup (when there is one), prlimit, then `env -i`, then bwrap;
  // `command` when disabled. Read-only paths already inside the
  // system view are left out.
  std::vector<std::string> Wrap(const SandboxPolicy& policy,
                                const std::vector<std::string>& command) const;

 private:
  // True when `path` lies in a read-only directory of the system view.
  bool InSystem(const std::string& path) const;

  // Makes the memory cgroup of `options` and checks that a sandboxed
  // process joins it; without, logs why and leaves memory_ null.
  void JoinMemoryCgroup(const SandboxOptions& options);
  // The prlimit options for `policy`.
  std::vector<std::string> LimitFlags(const SandboxPolicy& policy) const;

  SandboxMode mode_ = SandboxMode::kNone;
  std::string bwrap_;     // absolute paths
  std::string prlimit_;
  std::string env_;
  SandboxPolicy system_;  // HostSystemPolicy() + extra_read_only
  SandboxLimits limits_;  // capped at the worker's hard limits
  std::string shell_;     // /bin/sh, which joins memory_ and execs prlimit
  // Shared by the copies; removed with the last.
  std::shared_ptr<const MemoryCgroup> memory_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_SANDBOX_H_
