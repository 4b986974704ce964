// The tunefleet-worker binary as a process: alive while the coordinator is
// unreachable, a clean exit 0 on SIGTERM, and pools sized by the CPUs it may
// use (its affinity, its cgroup's quota), not by the host's.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "common/usable_cpus.h"
#include "tests/support/scrape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"

namespace tunefleet::worker {
namespace {

TEST(WorkerBinaryTest, SurvivesAnUnreachableCoordinatorAndExitsZeroOnSigterm) {
  ::tunefleet::testing::TempDir dir;
  SubprocessOptions options;
  // Port 1 on loopback: connection refused, every call Unavailable.
  options.argv = {testing::WorkerBinary(), "--insecure", "--coordinator", "127.0.0.1:1", "--cache-dir",
                  dir.path(), "--name", "binary-test"};
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir.path() + "/worker.log";
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  absl::SleepFor(absl::Seconds(1.5));
  EXPECT_FALSE((*proc)->Poll().has_value()) << "the worker died while retrying";
  (*proc)->Kill(SIGTERM);
  absl::StatusOr<ExitInfo> exit = (*proc)->Wait(absl::Seconds(10));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->ToString();
}

TEST(WorkerBinaryTest, RefusesToStartWithoutBwrapAndSaysWhatToDo) {
  ::tunefleet::testing::TempDir dir;
  SubprocessOptions options;
  options.argv = {testing::WorkerBinary(), "--insecure", "--coordinator", "127.0.0.1:1", "--cache-dir",
                  dir.path()};
  options.env = {{"PATH", dir.path()}};  // no bwrap in it
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir.path() + "/worker.log";
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  absl::StatusOr<ExitInfo> exit = (*proc)->Wait(absl::Seconds(10));
  ASSERT_OK(exit);
  EXPECT_EQ(exit->code, 1) << exit->ToString();
  absl::StatusOr<std::string> log = ReadFile(options.stderr_path);
  ASSERT_OK(log);
  EXPECT_THAT(*log, ::testing::HasSubstr("install bubblewrap"));
  EXPECT_THAT(*log, ::testing::HasSubstr("--sandbox=none"));
}

TEST(WorkerBinaryTest, ChildModeExitsCleanlyWhenThePipeCloses) {
  SubprocessOptions options;
  options.argv = {testing::WorkerBinary(), "--child", "--backend", "cpu"};
  options.pipe_stdin = true;
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  (*proc)->CloseStdin();
  absl::StatusOr<ExitInfo> exit = (*proc)->Wait(absl::Seconds(10));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->ToString();
}

// Starts `prefix` + a worker (unreachable coordinator, /metrics on a free
// port) and returns its pool gauges once /metrics answers; kills it after.
std::map<std::string, double> PoolGauges(const std::vector<std::string>& prefix) {
  ::tunefleet::testing::TempDir dir;
  SubprocessOptions options;
  options.argv = prefix;
  for (const std::string& arg :
       {testing::WorkerBinary(), std::string("--insecure"), std::string("--coordinator"),
        std::string("127.0.0.1:1"), std::string("--cache-dir"), dir.path(),
        std::string("--metrics-port"), std::string("0"), std::string("--metrics-host"),
        std::string("127.0.0.1"), std::string("--metrics-address-file"),
        dir.path() + "/metrics"}) {
    options.argv.push_back(arg);
  }
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir.path() + "/worker.log";
  auto proc = Subprocess::Start(options);
  EXPECT_OK(proc);
  if (!proc.ok()) return {};
  std::map<std::string, double> gauges;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (gauges.empty() && absl::Now() < deadline && !(*proc)->Poll().has_value()) {
    absl::StatusOr<std::string> address = ReadFile(dir.path() + "/metrics");
    absl::StatusOr<std::string> text =
        address.ok() ? ::tunefleet::testing::HttpGet(
                           std::string(absl::StripAsciiWhitespace(*address)), "/metrics")
                     : address.status();
    if (text.ok()) {
      for (const auto& [series, value] : ::tunefleet::testing::ParseSamples(*text)) {
        if (series == "tunefleet_worker_compile_threads" ||
            series == "tunefleet_worker_usable_cpus") {
          gauges[series] = value;
        }
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  (*proc)->Kill(SIGKILL);
  (void)(*proc)->Wait(absl::Seconds(10));
  EXPECT_FALSE(gauges.empty()) << ReadFile(options.stderr_path).value_or("no log");
  return gauges;
}

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

TEST(WorkerBinaryTest, SizesItsCompilePoolByItsAffinityNotTheHost) {
  std::map<std::string, double> one = PoolGauges({"taskset", "-c", "0"});
  EXPECT_EQ(one["tunefleet_worker_usable_cpus"], 1);
  EXPECT_EQ(one["tunefleet_worker_compile_threads"], 1);
  std::map<std::string, double> all = PoolGauges({});
  EXPECT_EQ(all["tunefleet_worker_compile_threads"], UsableCpus());
}

// A cgroup of the cpu controller made for one test, removed after it; where
// neither a v1 cpu hierarchy nor a v2 tree with the cpu controller can be
// written (no root, no delegation), none.
class CpuCgroup {
 public:
  static std::optional<CpuCgroup> Create(int quota_us, int period_us) {
    std::ifstream mounts("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mounts, line)) {
      const size_t dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      std::vector<std::string> mount = absl::StrSplit(line.substr(0, dash), ' ');
      std::vector<std::string> fs = absl::StrSplit(line.substr(dash + 3), ' ');
      if (mount.size() < 5 || fs.size() < 3) continue;
      const bool v1 = fs[0] == "cgroup" && absl::StrContains(absl::StrCat(",", fs[2], ","), ",cpu,");
      if (!v1 && fs[0] != "cgroup2") continue;
      CpuCgroup cgroup(absl::StrCat(mount[4], "/tunefleet-test-", getpid()), v1);
      if (cgroup.SetQuota(quota_us, period_us)) return cgroup;
    }
    return std::nullopt;
  }
  CpuCgroup(CpuCgroup&& other) noexcept : dir_(std::move(other.dir_)), v1_(other.v1_) {
    other.dir_.clear();
  }
  ~CpuCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  // Shell words that move the shell into this cgroup before it execs the
  // command after them.
  std::vector<std::string> Enter() const {
    return {"sh", "-c", absl::StrCat("echo $$ > ", dir_, "/cgroup.procs && exec \"$@\""), "sh"};
  }

 private:
  CpuCgroup(std::string dir, bool v1) : dir_(std::move(dir)), v1_(v1) {}

  bool SetQuota(int quota_us, int period_us) {
    if (mkdir(dir_.c_str(), 0755) != 0) {
      dir_.clear();
      return false;
    }
    if (v1_) {
      return Write("cpu.cfs_period_us", absl::StrCat(period_us)) &&
             Write("cpu.cfs_quota_us", absl::StrCat(quota_us));
    }
    return Write("cpu.max", absl::StrCat(quota_us, " ", period_us));
  }
  bool Write(const std::string& file, const std::string& text) {
    std::ofstream out(dir_ + "/" + file);
    out << text << "\n";
    out.flush();
    return out.good();
  }

  std::string dir_;
  bool v1_;
};

TEST(WorkerBinaryTest, SizesItsCompilePoolByItsCgroupQuota) {
  if (AffinityCpus() < 2) GTEST_SKIP() << "one CPU: a quota of one would change nothing";
  std::optional<CpuCgroup> cgroup = CpuCgroup::Create(/*quota_us=*/100000, /*period_us=*/100000);
  if (!cgroup.has_value()) GTEST_SKIP() << "no writable cgroup with the cpu controller here";
  std::map<std::string, double> gauges = PoolGauges(cgroup->Enter());
  EXPECT_EQ(gauges["tunefleet_worker_usable_cpus"], 1);
  EXPECT_EQ(gauges["tunefleet_worker_compile_threads"], 1);
}

}  // namespace
}  // namespace tunefleet::worker
