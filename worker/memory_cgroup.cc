#include "worker/memory_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "common/usable_cpus.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {
namespace {

constexpr char kPrefix[] = "tunefleet-sandbox-";
constexpr char kWorkerLeaf[] = "tunefleet-worker";

// Writes `text` to the control file `path` (one write, as the kernel wants).
absl::Status WriteControl(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot open ", path, ": ",
                                                      std::strerror(errno)));
  }
  const ssize_t written = write(fd, text.data(), text.size());
  const int error = errno;
  close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    return absl::FailedPreconditionError(absl::StrCat("cannot write '", text, "' to ", path, ": ",
                                                      std::strerror(error)));
  }
  return absl::OkStatus();
}

bool HasToken(const std::string& text, absl::string_view token) {
  for (absl::string_view word : absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    if (word == token) return true;
  }
  return false;
}

absl::Status MakeDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat("cannot make ", dir, ": ",
                                                      std::strerror(errno)));
  }
  return absl::OkStatus();
}

// This process's PID namespace (the inode of /proc/self/ns/pid): pids in a
// cgroup's name mean something only within it.
std::string PidNamespace() {
  struct stat info;
  if (stat("/proc/self/ns/pid", &info) != 0) return "0";
  return absl::StrCat(info.st_ino);
}

// Removes the sandbox cgroups under `base` of worker processes of this PID
// namespace that are gone (an empty cgroup is removed with rmdir; one with
// processes stays). Names of other namespaces (workers in other containers
// sharing a v1 hierarchy) are left alone.
void RemoveStale(const std::string& base) {
  const std::string ns = PidNamespace();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, kPrefix)) continue;
    const std::vector<std::string> parts = absl::StrSplit(name.substr(strlen(kPrefix)), '-');
    int pid = 0;
    if (parts.size() != 3 || parts[0] != ns || !absl::SimpleAtoi(parts[1], &pid) ||
        pid == getpid()) {
      continue;
    }
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (rmdir(entry.path().c_str()) == 0) spdlog::info("removed the stale cgroup {}", name);
  }
}

// tunefleet-sandbox-<pid namespace>-<pid>-<n>.
std::string NextName() {
  static std::atomic<int> made{0};
  return absl::StrCat(kPrefix, PidNamespace(), "-", getpid(), "-", made.fetch_add(1));
}

// A new sandbox cgroup under `base` (the stale ones removed first) whose
// `limit_file` holds `limit_bytes`; none is left behind on failure.
absl::StatusOr<std::string> MakeLimited(const std::string& base, absl::string_view limit_file,
                                        uint64_t limit_bytes) {
  RemoveStale(base);
  const std::string dir = absl::StrCat(base, "/", NextName());
  RETURN_IF_ERROR(MakeDir(dir));
  absl::Status limited = WriteControl(absl::StrCat(dir, "/", limit_file), absl::StrCat(limit_bytes));
  if (!limited.ok()) {
    rmdir(dir.c_str());
    return limited;
  }
  return dir;
}

// cgroup v2 under `own`, the worker's own cgroup.
absl::StatusOr<std::string> MakeV2(const std::string& own, uint64_t limit_bytes) {
  // A worker that moved into its leaf before (an earlier sandbox of this
  // process) makes its cgroups beside the leaf, not under it.
  std::string base = own;
  if (std::filesystem::path(own).filename() == kWorkerLeaf) {
    base = std::filesystem::path(own).parent_path().string();
  }
  ASSIGN_OR_RETURN(std::string controllers, ReadFile(base + "/cgroup.controllers"));
  if (!HasToken(controllers, "memory")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cgroup v2: the memory controller is not delegated to ", base,
        " (systemd: Delegate=yes in the worker's unit)"));
  }
  ASSIGN_OR_RETURN(std::string subtree, ReadFile(base + "/cgroup.subtree_control"));
  if (!HasToken(subtree, "memory")) {
    // A cgroup with processes may not enable controllers for its children:
    // the worker moves into a leaf of its own first.
    ASSIGN_OR_RETURN(std::string procs, ReadFile(base + "/cgroup.procs"));
    const std::string leaf = absl::StrCat(base, "/", kWorkerLeaf);
    const bool moved = !procs.empty();
    if (moved) {
      RETURN_IF_ERROR(MakeDir(leaf));
      RETURN_IF_ERROR(WriteControl(leaf + "/cgroup.procs", absl::StrCat(getpid())));
    }
    absl::Status enabled = WriteControl(base + "/cgroup.subtree_control", "+memory");
    if (!enabled.ok()) {
      if (moved) {  // back where it was, as if it had never tried
        WriteControl(base + "/cgroup.procs", absl::StrCat(getpid())).IgnoreError();
        rmdir(leaf.c_str());
      }
      return absl::FailedPreconditionError(absl::StrCat(
          enabled.message(), " (other processes share the worker's cgroup: run it in one of "
                             "its own, as systemd's Delegate= does)"));
    }
  }
  ASSIGN_OR_RETURN(const std::string dir, MakeLimited(base, "memory.max", limit_bytes));
  WriteControl(dir + "/memory.swap.max", "0").IgnoreError();  // absent without swap accounting
  return dir;
}

// cgroup v1: the memory hierarchy's `base`.
absl::StatusOr<std::string> MakeV1(const std::string& base, uint64_t limit_bytes) {
  ASSIGN_OR_RETURN(const std::string dir,
                   MakeLimited(base, "memory.limit_in_bytes", limit_bytes));
  // Memory plus swap, where swap is accounted (swapaccount=1; absent else).
  WriteControl(dir + "/memory.memsw.limit_in_bytes", absl::StrCat(limit_bytes)).IgnoreError();
  return dir;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemoryCgroup>> MemoryCgroup::Create(uint64_t limit_bytes) {
  // A hybrid host mounts v2 too, without the memory controller: v1 first.
  if (std::optional<CgroupHierarchy> v1 = FindCgroupHierarchy("memory")) {
    ASSIGN_OR_RETURN(std::string dir, MakeV1(v1->leaf, limit_bytes));
    return std::unique_ptr<MemoryCgroup>(new MemoryCgroup(std::move(dir), limit_bytes, 1));
  }
  if (std::optional<CgroupHierarchy> v2 = FindCgroupHierarchy("")) {
    ASSIGN_OR_RETURN(std::string dir, MakeV2(v2->leaf, limit_bytes));
    return std::unique_ptr<MemoryCgroup>(new MemoryCgroup(std::move(dir), limit_bytes, 2));
  }
  return absl::NotFoundError("no cgroup file system with a memory controller");
}

MemoryCgroup::~MemoryCgroup() {
  // A sandbox's last processes may still be exiting (bwrap's namespace is
  // torn down after bwrap itself): EBUSY for a moment.
  for (int attempt = 0;; ++attempt) {
    if (rmdir(dir_.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY || attempt == 100) break;
    usleep(10'000);
  }
  spdlog::warn("cannot remove the sandbox cgroup {}: {}", dir_, std::strerror(errno));
}

int64_t MemoryCgroup::oom_kills() const {
  const std::string file = dir_ + (version_ == 2 ? "/memory.events" : "/memory.oom_control");
  absl::StatusOr<std::string> text = ReadFile(file);
  if (!text.ok()) return 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    int64_t count = 0;
    if (absl::ConsumePrefix(&line, "oom_kill ") && absl::SimpleAtoi(line, &count)) return count;
  }
  return 0;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

uint64_t DefaultSandboxMemoryBytes() { return PhysicalMemoryBytes() / 4 * 3; }

}  // namespace tunefleet::worker
