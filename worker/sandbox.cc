#include "worker/sandbox.h"

#include <glob.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {
namespace {

namespace fs = std::filesystem;

constexpr char kSystemPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

void Append(const std::vector<std::string>& more, std::vector<std::string>* list) {
  list->insert(list->end(), more.begin(), more.end());
}

void AddPair(const char* flag, const std::string& a, const std::string& b,
             std::vector<std::string>* argv) {
  argv->insert(argv->end(), {flag, a, b});
}

// One host path of the system view: a symlink stays one, a directory or a
// file is bound read-only, a missing path is left out.
void AddSystemPath(const std::string& path, SandboxPolicy* policy) {
  std::error_code error;
  const fs::file_status status = fs::symlink_status(path, error);
  if (error || !fs::exists(status)) return;
  if (fs::is_symlink(status)) {
    policy->symlinks.emplace_back(fs::read_symlink(path, error).string(), path);
  } else {
    policy->read_only.push_back(path);
  }
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t result{};
  if (glob(pattern.c_str(), 0, nullptr, &result) == 0) {
    for (size_t i = 0; i < result.gl_pathc; ++i) paths.emplace_back(result.gl_pathv[i]);
  }
  globfree(&result);
  return paths;
}

// `wanted` (0: not limited), but no more than this process's hard limit.
uint64_t Capped(int resource, uint64_t wanted) {
  rlimit current{};
  if (getrlimit(resource, &current) != 0 || current.rlim_max == RLIM_INFINITY) return wanted;
  const uint64_t hard = current.rlim_max;
  return wanted == 0 ? hard : std::min(wanted, hard);
}

}  // namespace

uint64_t DefaultAddressSpaceBytes() {
  return std::max<uint64_t>(PhysicalMemoryBytes() / 2, uint64_t{4} << 30);
}

void MergePolicy(const SandboxPolicy& more, SandboxPolicy* policy) {
  Append(more.read_only, &policy->read_only);
  Append(more.writable, &policy->writable);
  Append(more.devices, &policy->devices);
  policy->symlinks.insert(policy->symlinks.end(), more.symlinks.begin(), more.symlinks.end());
  policy->env.insert(policy->env.end(), more.env.begin(), more.env.end());
  if (!more.working_dir.empty()) policy->working_dir = more.working_dir;
  policy->uid = more.uid;
  policy->gid = more.gid;
  policy->unlimited_address_space |= more.unlimited_address_space;
}

std::vector<std::string> BwrapArgv(const std::string& bwrap, const SandboxPolicy& policy,
                                   const std::vector<std::string>& command) {
  std::vector<std::string> argv = {
      bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
      "--unshare-uts", "--unshare-cgroup-try", "--uid", absl::StrCat(policy.uid),
      "--gid", absl::StrCat(policy.gid), "--hostname", "sandbox", "--cap-drop", "ALL",
      "--die-with-parent", "--new-session", "--clearenv",
      // Mounted first: the binds below may lie under /tmp.
      "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"};
  for (const auto& [target, link] : policy.symlinks) AddPair("--symlink", target, link, &argv);
  for (const std::string& path : policy.read_only) AddPair("--ro-bind", path, path, &argv);
  for (const std::string& path : policy.writable) AddPair("--bind", path, path, &argv);
  for (const std::string& path : policy.devices) AddPair("--dev-bind", path, path, &argv);
  for (const auto& [name, value] : policy.env) AddPair("--setenv", name, value, &argv);
  argv.insert(argv.end(), {"--chdir", policy.working_dir.empty() ? "/" : policy.working_dir});
  argv.push_back("--");
  Append(command, &argv);
  return argv;
}

void AddCudaDevices(const std::vector<std::string>& device_nodes, SandboxPolicy* policy) {
  Append(device_nodes, &policy->devices);
  policy->read_only.push_back("/proc/driver/nvidia");
  policy->unlimited_address_space = true;
}

std::vector<std::string> HostNvidiaDeviceNodes() {
  std::vector<std::string> nodes = Glob("/dev/nvidia*");  // nvidiactl, nvidia0, -uvm...
  std::erase(nodes, "/dev/nvidia-caps");                  // a directory: its nodes below
  Append(Glob("/dev/nvidia-caps/*"), &nodes);
  return nodes;
}

SandboxPolicy HostSystemPolicy() {
  SandboxPolicy policy;
  for (const char* path : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                           "/etc/ld.so.cache", "/etc/alternatives"}) {
    AddSystemPath(path, &policy);
  }
  policy.env = {{"PATH", kSystemPath}, {"HOME", "/tmp"}, {"TMPDIR", "/tmp"},
                {"LANG", "C.UTF-8"}};
  const char* libraries = std::getenv("LD_LIBRARY_PATH");
  if (libraries == nullptr || *libraries == '\0') return policy;
  policy.env.emplace_back("LD_LIBRARY_PATH", libraries);
  for (absl::string_view dir : absl::StrSplit(libraries, ':', absl::SkipEmpty())) {
    std::error_code error;
    if (dir[0] == '/' && fs::is_directory(std::string(dir), error)) {
      policy.read_only.emplace_back(dir);
    }
  }
  return policy;
}

absl::StatusOr<Sandbox> Sandbox::Create(SandboxOptions options) {
  Sandbox sandbox;
  if (options.mode == SandboxMode::kNone) return sandbox;
  const std::string fix =
      "install bubblewrap and util-linux (apt-get install bubblewrap util-linux) or start "
      "the worker with --sandbox=none to run job code unsandboxed";
  for (auto [program, path] : {std::pair{options.bwrap, &sandbox.bwrap_},
                               std::pair{std::string("prlimit"), &sandbox.prlimit_},
                               std::pair{std::string("env"), &sandbox.env_}}) {
    absl::StatusOr<std::string> found = FindProgram(program);
    if (!found.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("sandbox: ", program, " not found; ", fix));
    }
    *path = *found;
  }
  sandbox.mode_ = SandboxMode::kBwrap;
  sandbox.system_ = HostSystemPolicy();
  Append(options.extra_read_only, &sandbox.system_.read_only);
  const SandboxLimits& wanted = options.limits;
  sandbox.limits_ = SandboxLimits{
      .address_space_bytes = Capped(RLIMIT_AS, wanted.address_space_bytes != 0
                                                   ? wanted.address_space_bytes
                                                   : DefaultAddressSpaceBytes()),
      .processes = Capped(RLIMIT_NPROC, wanted.processes),
      .open_files = Capped(RLIMIT_NOFILE, wanted.open_files),
      .file_size_bytes = Capped(RLIMIT_FSIZE, wanted.file_size_bytes)};
  ASSIGN_OR_RETURN(CommandResult probe,
                   RunCommand(sandbox.Wrap({}, {"/usr/bin/true"}), absl::Seconds(30)));
  if (!probe.exit.success()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sandbox: ", sandbox.bwrap_, " cannot create its namespaces here (", probe.exit.ToString(),
        ": ", probe.output, "); ", fix));
  }
  if (options.memory_bytes >= 0) sandbox.JoinMemoryCgroup(options);
  return sandbox;
}

void Sandbox::JoinMemoryCgroup(const SandboxOptions& options) {
  const uint64_t limit = options.memory_bytes > 0 ? static_cast<uint64_t>(options.memory_bytes)
                                                  : DefaultSandboxMemoryBytes();
  absl::StatusOr<std::string> shell = FindProgram("sh");
  absl::StatusOr<std::unique_ptr<MemoryCgroup>> cgroup =
      !shell.ok()  ? shell.status()
      : limit == 0 ? absl::FailedPreconditionError("this host's memory is unknown")
                   : MemoryCgroup::Create(limit);
  if (!cgroup.ok()) {
    spdlog::warn("sandbox: no memory cgroup ({}); job code is bounded by its rlimits only",
                 std::string(cgroup.status().message()));
    return;
  }
  shell_ = *shell;
  memory_ = *std::move(cgroup);
  // The join itself, once: a host that lets the worker make the cgroup but
  // not move processes into it gets no cgroup.
  absl::StatusOr<CommandResult> joined = RunCommand(
      {shell_, "-c", "echo $$ > \"$0\"", memory_->procs_file()}, absl::Seconds(30));
  if (!joined.ok() || !joined->exit.success()) {
    spdlog::warn("sandbox: cannot join the memory cgroup {} ({}); job code is bounded by its "
                 "rlimits only",
                 memory_->dir(), joined.ok() ? joined->output : joined.status().ToString());
    memory_.reset();
    return;
  }
  spdlog::info("sandbox: job code shares the memory cgroup {} (v{}), {} MiB at most",
               memory_->dir(), memory_->version(), memory_->limit_bytes() >> 20);
}

ExitInfo Sandbox::CommandExit(ExitInfo bwrap_exit) const {
  if (enabled() && !bwrap_exit.signaled && bwrap_exit.code > 128 && bwrap_exit.code < 128 + 65) {
    return ExitInfo{/*signaled=*/true, /*code=*/0, /*signal=*/bwrap_exit.code - 128};
  }
  return bwrap_exit;
}

bool Sandbox::InSystem(const std::string& path) const {
  for (const std::string& dir : system_.read_only) {
    if (path == dir || absl::StartsWith(path, absl::StrCat(dir, "/"))) return true;
  }
  return false;
}

std::vector<std::string> Sandbox::LimitFlags(const SandboxPolicy& policy) const {
  std::vector<std::string> flags;
  auto add = [&flags](const char* name, uint64_t limit) {
    if (limit != 0) flags.push_back(absl::StrCat("--", name, "=", limit));
  };
  add("nproc", limits_.processes);
  add("nofile", limits_.open_files);
  add("fsize", limits_.file_size_bytes);
  if (!policy.unlimited_address_space) add("as", limits_.address_space_bytes);
  return flags;
}

std::vector<std::string> Sandbox::Wrap(const SandboxPolicy& policy,
                                       const std::vector<std::string>& command) const {
  if (!enabled()) return command;
  SandboxPolicy extra = policy;
  // bwrap cannot make a mount point inside the read-only system; the path
  // is visible there already.
  std::erase_if(extra.read_only, [this](const std::string& path) { return InSystem(path); });
  SandboxPolicy full = system_;
  MergePolicy(extra, &full);
  // prlimit sets the limits and execs env, which execs bwrap with nothing in
  // its environment: one process, whose exit status is bwrap's.
  std::vector<std::string> argv;
  if (memory_ != nullptr) {
    // The shell joins the cgroup and execs prlimit: one process still. A
    // join that fails (the cgroup removed by hand since) is said on stderr
    // and the command runs without it, rather than failing as job code.
    argv = {shell_, "-c",
            "{ echo $$ > \"$0\"; } 2>/dev/null || echo \"tunefleet sandbox: cannot join the "
            "memory cgroup $0\" >&2; exec \"$@\"",
            memory_->procs_file()};
  }
  argv.push_back(prlimit_);
  Append(LimitFlags(full), &argv);
  argv.insert(argv.end(), {"--", env_, "-i", "--"});
  Append(BwrapArgv(bwrap_, full, command), &argv);
  return argv;
}

void Sandbox::Apply(const SandboxPolicy& policy, SubprocessOptions* options) const {
  if (!enabled()) {
    if (!policy.working_dir.empty()) options->working_dir = policy.working_dir;
    options->env.insert(options->env.end(), policy.env.begin(), policy.env.end());
    return;
  }
  SandboxPolicy with_caller = policy;
  with_caller.env.insert(with_caller.env.end(), options->env.begin(), options->env.end());
  if (with_caller.working_dir.empty()) with_caller.working_dir = options->working_dir;
  options->argv = Wrap(with_caller, options->argv);
  options->working_dir.clear();
  options->env.clear();
}

}  // namespace tunefleet::worker
