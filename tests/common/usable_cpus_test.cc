// How many CPUs and bytes a process may use: its affinity, the quotas of its
// cgroups (v2, v1, hybrid, in a container), read from files a test writes.
#include "common/usable_cpus.h"

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::TempDir;

// A fake /proc/self and cgroup mounts under a temporary directory.
class CgroupFixture {
 public:
  CgroupFixture() {
    files_.self_cgroup = dir_.path() + "/cgroup";
    files_.mountinfo = dir_.path() + "/mountinfo";
    files_.meminfo = dir_.path() + "/meminfo";
  }

  const ProcFiles& files() const { return files_; }

  // A /proc/self/cgroup line.
  void Member(const std::string& line) { Append(files_.self_cgroup, line); }
  // A mountinfo line for a hierarchy mounted at <dir>/<point> with mount
  // root `root`; `fs` is "cgroup2" or "cgroup" with `options` its controllers.
  void Mount(const std::string& point, const std::string& root, const std::string& fs,
             const std::string& options) {
    std::filesystem::create_directories(dir_.path() + "/" + point);
    Append(files_.mountinfo, "35 31 0:31 " + root + " " + dir_.path() + "/" + point +
                                 " rw,relatime - " + fs + " " + fs + " " + options);
  }
  // Writes `text` to <dir>/<path>, making its directories.
  void File(const std::string& path, const std::string& text) {
    const std::filesystem::path full = dir_.path() + "/" + path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full) << text << "\n";
  }

 private:
  static void Append(const std::string& path, const std::string& line) {
    std::ofstream(path, std::ios::app) << line << "\n";
  }

  TempDir dir_;
  ProcFiles files_;
};

TEST(CgroupCpuQuotaTest, ReadsTheV2QuotaOfTheProcessCgroup) {
  CgroupFixture cgroup;
  cgroup.Member("0::/workers/gpu0");
  cgroup.Mount("v2", "/", "cgroup2", "rw");
  cgroup.File("v2/workers/gpu0/cpu.max", "200000 100000");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), 2.0);
}

TEST(CgroupCpuQuotaTest, MaxMeansNoQuota) {
  CgroupFixture cgroup;
  cgroup.Member("0::/workers");
  cgroup.Mount("v2", "/", "cgroup2", "rw");
  cgroup.File("v2/workers/cpu.max", "max 100000");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), std::nullopt);
}

TEST(CgroupCpuQuotaTest, AnAncestorsTighterQuotaBinds) {
  CgroupFixture cgroup;
  cgroup.Member("0::/pod/worker");
  cgroup.Mount("v2", "/", "cgroup2", "rw");
  cgroup.File("v2/pod/worker/cpu.max", "400000 100000");
  cgroup.File("v2/pod/cpu.max", "150000 100000");
  cgroup.File("v2/cpu.max", "max 100000");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), 1.5);
}

TEST(CgroupCpuQuotaTest, ReadsV1CfsQuotaOfTheCpuController) {
  CgroupFixture cgroup;
  cgroup.Member("4:memory:/other");
  cgroup.Member("3:cpu,cpuacct:/batch");
  cgroup.Mount("memory", "/", "cgroup", "rw,memory");
  cgroup.Mount("cpu", "/", "cgroup", "rw,cpu,cpuacct");
  cgroup.File("cpu/batch/cpu.cfs_quota_us", "50000");
  cgroup.File("cpu/batch/cpu.cfs_period_us", "100000");
  cgroup.File("cpu/cpu.cfs_quota_us", "-1");
  cgroup.File("cpu/cpu.cfs_period_us", "100000");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), 0.5);
}

TEST(CgroupCpuQuotaTest, AHybridHostTakesTheTightestOfBothTrees) {
  CgroupFixture cgroup;
  cgroup.Member("1:cpu:/a");
  cgroup.Member("0::/a");
  cgroup.Mount("cpu", "/", "cgroup", "rw,cpu");
  cgroup.Mount("unified", "/", "cgroup2", "rw");
  cgroup.File("cpu/a/cpu.cfs_quota_us", "300000");
  cgroup.File("cpu/a/cpu.cfs_period_us", "100000");
  cgroup.File("unified/a/cpu.max", "max 100000");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), 3.0);
}

// The worker's memory cgroup is made where this finds its cgroup: the v1
// memory hierarchy on a hybrid host, the v2 tree otherwise.
TEST(FindCgroupHierarchyTest, FindsTheMemoryHierarchyOfAHybridHostAndTheV2Tree) {
  CgroupFixture cgroup;
  cgroup.Member("9:memory,foo:/system.slice/w.service");
  cgroup.Member("0::/system.slice/w.service");
  cgroup.Mount("memory", "/", "cgroup", "rw,memory");
  cgroup.Mount("unified", "/", "cgroup2", "rw");
  std::optional<CgroupHierarchy> memory = FindCgroupHierarchy("memory", cgroup.files());
  ASSERT_TRUE(memory.has_value());
  EXPECT_TRUE(memory->leaf.ends_with("/memory/system.slice/w.service")) << memory->leaf;
  EXPECT_TRUE(memory->top.ends_with("/memory")) << memory->top;
  std::optional<CgroupHierarchy> v2 = FindCgroupHierarchy("", cgroup.files());
  ASSERT_TRUE(v2.has_value());
  EXPECT_TRUE(v2->leaf.ends_with("/unified/system.slice/w.service")) << v2->leaf;
  EXPECT_FALSE(FindCgroupHierarchy("pids", cgroup.files()).has_value());
}

TEST(CgroupCpuQuotaTest, AContainerSeesItsOwnCgroupAsTheMountRoot) {
  CgroupFixture cgroup;
  // No cgroup namespace: the path names the container's cgroup, which is
  // also the root of what is mounted inside it.
  cgroup.Member("0::/kubepods/pod7/ctr");
  cgroup.Mount("sys", "/kubepods/pod7/ctr", "cgroup2", "rw");
  cgroup.File("sys/cpu.max", "1600000 100000");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), 16.0);
}

TEST(CgroupCpuQuotaTest, NothingReadableIsNoQuota) {
  CgroupFixture cgroup;
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), std::nullopt);
  cgroup.Member("0::/gone");
  cgroup.Mount("v2", "/", "cgroup2", "rw");
  EXPECT_EQ(CgroupCpuQuota(cgroup.files()), std::nullopt);
}

TEST(CpuBudgetTest, UsableIsTheSmallerOfAffinityAndTheQuotaRoundedUp) {
  EXPECT_EQ((CpuBudget{64, std::nullopt}).usable(), 64);
  EXPECT_EQ((CpuBudget{64, 2.0}).usable(), 2);
  EXPECT_EQ((CpuBudget{64, 1.5}).usable(), 2);
  EXPECT_EQ((CpuBudget{16, 32.0}).usable(), 16);
  EXPECT_EQ((CpuBudget{4, 0.25}).usable(), 1);
  EXPECT_EQ((CpuBudget{0, std::nullopt}).usable(), 1);
}

TEST(CpuBudgetTest, AffinityIsThisProcessesMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  CgroupFixture cgroup;
  const CpuBudget budget = ReadCpuBudget(cgroup.files());
  EXPECT_EQ(budget.affinity, CPU_COUNT(&set));
  EXPECT_EQ(budget.quota, std::nullopt);
  EXPECT_EQ(budget.usable(), CPU_COUNT(&set));
}

TEST(UsableMemoryBytesTest, TheCgroupLimitLessUsageBoundsMemAvailable) {
  CgroupFixture cgroup;
  cgroup.File("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 4194304 kB\n");
  EXPECT_EQ(UsableMemoryBytes(cgroup.files()), int64_t{4} << 30);
  cgroup.Member("0::/w");
  cgroup.Mount("v2", "/", "cgroup2", "rw");
  cgroup.File("v2/w/memory.max", std::to_string(int64_t{1} << 30));
  cgroup.File("v2/w/memory.current", std::to_string(int64_t{256} << 20));
  EXPECT_EQ(UsableMemoryBytes(cgroup.files()), int64_t{768} << 20);
}

TEST(UsableMemoryBytesTest, V1UnlimitedIsNoLimit) {
  CgroupFixture cgroup;
  cgroup.File("meminfo", "MemAvailable: 1048576 kB\n");
  cgroup.Member("5:memory:/");
  cgroup.Mount("memory", "/", "cgroup", "rw,memory");
  cgroup.File("memory/memory.limit_in_bytes", "9223372036854771712");
  cgroup.File("memory/memory.usage_in_bytes", "1000");
  EXPECT_EQ(UsableMemoryBytes(cgroup.files()), int64_t{1} << 30);
}

}  // namespace
}  // namespace tunefleet
