#include "common/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace tunefleet {
namespace {

// v1 reports "no limit" as a huge number (LONG_MAX rounded to a page); any
// limit at or above this is none.
constexpr int64_t kUnlimitedBytes = int64_t{1} << 60;

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

std::optional<int64_t> ReadInt(const std::string& path) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(FirstLine(path), &value)) return std::nullopt;
  return value;
}

// Whether the comma-separated `list` holds `item`.
bool ListHas(absl::string_view list, absl::string_view item) {
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    if (entry == item) return true;
  }
  return false;
}

// The process's path in the hierarchy of `controller` ("": the v2 tree,
// "0::PATH"; else the v1 line whose controller list holds it).
std::optional<std::string> CgroupPath(const ProcFiles& files, absl::string_view controller) {
  std::ifstream in(files.self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    const bool v2 = fields[0] == "0" && fields[1].empty();
    if (controller.empty() ? v2 : !v2 && ListHas(fields[1], controller)) return fields[2];
  }
  return std::nullopt;
}

}  // namespace

std::optional<CgroupHierarchy> FindCgroupHierarchy(absl::string_view controller,
                                                   const ProcFiles& files) {
  std::optional<std::string> path = CgroupPath(files, controller);
  if (!path.has_value()) return std::nullopt;
  std::ifstream in(files.mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::vector<std::string> mount = absl::StrSplit(line.substr(0, dash), ' ');
    std::vector<std::string> fs = absl::StrSplit(line.substr(dash + 3), ' ');
    if (mount.size() < 5 || fs.size() < 3) continue;
    const bool match = controller.empty() ? fs[0] == "cgroup2"
                                          : fs[0] == "cgroup" && ListHas(fs[2], controller);
    if (!match) continue;
    const std::string& root = mount[3];
    const std::string& point = mount[4];
    // Inside a container without a cgroup namespace the mount's root is the
    // container's own cgroup: the part of the path below it is what remains.
    std::string below = *path;
    if (root != "/" && below.rfind(root, 0) == 0) below = below.substr(root.size());
    if (below == "/") below.clear();
    return CgroupHierarchy{point + below, point};
  }
  return std::nullopt;
}

namespace {


// Calls `visit(dir)` for the process's cgroup and each ancestor up to the
// mount point.
void WalkUp(const CgroupHierarchy& hierarchy,
            const std::function<void(const std::string&)>& visit) {
  std::string dir = hierarchy.leaf;
  while (true) {
    visit(dir);
    if (dir.size() <= hierarchy.top.size()) return;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash < hierarchy.top.size()) return;
    dir.resize(std::max(slash, hierarchy.top.size()));
  }
}

void KeepSmaller(std::optional<double>& tightest, double value) {
  tightest = tightest.has_value() ? std::min(*tightest, value) : value;
}

// A per-directory limit reader: the limit a cgroup directory sets, or none.
using LimitOf = std::function<std::optional<double>(const std::string& dir)>;

// The smallest of `tightest` and the limits `v2` reads in the process's v2
// cgroup and its ancestors and `v1` reads in its v1 `controller` cgroup and
// its ancestors.
std::optional<double> Tightest(const ProcFiles& files, std::optional<double> tightest,
                               const LimitOf& v2, absl::string_view controller,
                               const LimitOf& v1) {
  const std::pair<absl::string_view, const LimitOf*> trees[] = {{"", &v2}, {controller, &v1}};
  for (const auto& [name, limit_of] : trees) {
    std::optional<CgroupHierarchy> hierarchy = FindCgroupHierarchy(name, files);
    if (!hierarchy.has_value()) continue;
    WalkUp(*hierarchy, [&](const std::string& dir) {
      if (std::optional<double> limit = (*limit_of)(dir)) KeepSmaller(tightest, *limit);
    });
  }
  return tightest;
}

// cpu.max: "max 100000" or "200000 100000".
std::optional<double> V2Quota(const std::string& dir) {
  std::vector<std::string> fields = absl::StrSplit(FirstLine(dir + "/cpu.max"), ' ');
  double quota = 0;
  double period = 0;
  if (fields.size() != 2 || !absl::SimpleAtod(fields[0], &quota) ||
      !absl::SimpleAtod(fields[1], &period) || quota <= 0 || period <= 0) {
    return std::nullopt;
  }
  return quota / period;
}

std::optional<double> V1Quota(const std::string& dir) {
  std::optional<int64_t> quota = ReadInt(dir + "/cpu.cfs_quota_us");
  std::optional<int64_t> period = ReadInt(dir + "/cpu.cfs_period_us");
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

// The bytes left under one cgroup's limit; nullopt when it has none.
std::optional<double> MemoryLeft(const std::string& limit_file, const std::string& usage_file) {
  std::optional<int64_t> limit = ReadInt(limit_file);  // "max" reads as none
  if (!limit.has_value() || *limit >= kUnlimitedBytes) return std::nullopt;
  const int64_t used = ReadInt(usage_file).value_or(0);
  return static_cast<double>(std::max<int64_t>(0, *limit - used));
}

std::optional<int64_t> MemAvailable(const std::string& meminfo) {
  std::ifstream in(meminfo);
  std::string name;
  int64_t kib = 0;
  std::string unit;
  while (in >> name >> kib >> unit) {
    if (name == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

int CpuBudget::usable() const {
  int cpus = std::max(1, affinity);
  if (quota.has_value()) cpus = std::min(cpus, static_cast<int>(std::ceil(*quota - 1e-9)));
  return std::max(1, cpus);
}

std::optional<double> CgroupCpuQuota(const ProcFiles& files) {
  return Tightest(files, std::nullopt, &V2Quota, "cpu", &V1Quota);
}

CpuBudget ReadCpuBudget(const ProcFiles& files) {
  CpuBudget budget;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) budget.affinity = std::max(1, CPU_COUNT(&set));
  budget.quota = CgroupCpuQuota(files);
  return budget;
}

int UsableCpus() { return ReadCpuBudget().usable(); }

std::optional<int64_t> UsableMemoryBytes(const ProcFiles& files) {
  std::optional<double> tightest;
  if (std::optional<int64_t> available = MemAvailable(files.meminfo)) {
    tightest = static_cast<double>(*available);
  }
  tightest = Tightest(
      files, tightest,
      [](const std::string& dir) {
        return MemoryLeft(dir + "/memory.max", dir + "/memory.current");
      },
      "memory",
      [](const std::string& dir) {
        return MemoryLeft(dir + "/memory.limit_in_bytes", dir + "/memory.usage_in_bytes");
      });
  if (!tightest.has_value()) return std::nullopt;
  return static_cast<int64_t>(*tightest);
}

}  // namespace tunefleet
