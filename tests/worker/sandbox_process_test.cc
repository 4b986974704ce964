// The sandbox with real bwrap processes: who the command is, what it sees,
// where it may write.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "worker/sandbox.h"

namespace tunefleet::worker {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::TempDir;

class SandboxProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(outside_.path() + "/secret") << "worker key";
    SandboxOptions options;
    options.mode = SandboxMode::kBwrap;
    options.extra_read_only = {extra_.path()};
    absl::StatusOr<Sandbox> sandbox = Sandbox::Create(options);
    ASSERT_OK(sandbox);
    sandbox_ = *sandbox;
    std::ofstream(extra_.path() + "/tool") << "toolchain file";
  }

  // Runs `script` with /bin/sh in the sandbox under `policy`.
  CommandResult Shell(const std::string& script, const SandboxPolicy& policy = {}) {
    absl::StatusOr<CommandResult> result =
        RunCommand(sandbox_.Wrap(policy, {"/bin/sh", "-c", script}), absl::Seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult();
  }

  TempDir outside_;
  TempDir extra_;
  TempDir scratch_;
  Sandbox sandbox_;
};

TEST_F(SandboxProcessTest, RunsAsNobodyWithoutCapabilitiesOrNetwork) {
  CommandResult who = Shell("id -u; id -g; grep CapEff /proc/self/status");
  EXPECT_TRUE(who.exit.success()) << who.output;
  EXPECT_THAT(who.output, HasSubstr("65534\n65534\n"));
  EXPECT_THAT(who.output, HasSubstr("CapEff:\t0000000000000000"));
  // Only a loopback device, and no route out of it.
  CommandResult net = Shell("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '");
  EXPECT_EQ(net.output, "lo\n");
}

TEST_F(SandboxProcessTest, SeesOnlyTheSystemAndWhatThePolicyNames) {
  const std::string secret = outside_.path() + "/secret";
  EXPECT_FALSE(Shell("cat " + secret).exit.success());
  EXPECT_FALSE(Shell("cat /etc/passwd").exit.success());
  EXPECT_FALSE(Shell("ls /root /home /work").exit.success());
  CommandResult tool = Shell("cat " + extra_.path() + "/tool");  // --sandbox-ro
  EXPECT_EQ(tool.output, "toolchain file");
  SandboxPolicy policy;
  policy.read_only = {outside_.path()};
  CommandResult named = Shell("cat " + secret, policy);
  EXPECT_EQ(named.output, "worker key");
}

TEST_F(SandboxProcessTest, WritesOnlyToItsScratchAndAPrivateTmp) {
  SandboxPolicy policy;
  policy.read_only = {outside_.path()};
  policy.writable = {scratch_.path()};
  policy.working_dir = scratch_.path();
  CommandResult run = Shell(absl::StrCat("echo out > ", scratch_.path(), "/result && ",
                                         "echo tmp > /tmp/private && ",
                                         "(echo x > ", outside_.path(), "/planted; ",
                                         "echo x > /usr/planted; true)"),
                            policy);
  EXPECT_TRUE(run.exit.success()) << run.output;
  EXPECT_TRUE(std::filesystem::exists(scratch_.path() + "/result"));
  EXPECT_FALSE(std::filesystem::exists(outside_.path() + "/planted"));
  EXPECT_FALSE(std::filesystem::exists("/usr/planted"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/private"));
}

TEST_F(SandboxProcessTest, ShowsNothingOfTheWorkersEnvironmentAnywhere) {
  // The worker's environment (tokens, passwords) must not reach job code:
  // not in its own environment, and not through bwrap's init process, which
  // is pid 1 of the sandbox and readable by the same user.
  ASSERT_EQ(setenv("TUNEFLEET_TEST_SECRET", "s3cr3t-value", 1), 0);
  SandboxPolicy policy;
  policy.env = {{"ASKED_FOR", "yes"}};
  CommandResult run = Shell(
      "cat /proc/1/environ > /dev/null && "  // readable: the check below means something
      "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; env",
      policy);
  unsetenv("TUNEFLEET_TEST_SECRET");
  EXPECT_TRUE(run.exit.success()) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ASKED_FOR=yes"));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("s3cr3t-value")));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("TUNEFLEET_TEST_SECRET")));
}

TEST_F(SandboxProcessTest, RunsUnderItsResourceLimits) {
  SandboxOptions options;
  options.mode = SandboxMode::kBwrap;
  options.limits = SandboxLimits{.address_space_bytes = uint64_t{512} << 20,
                                 .processes = 300,
                                 .open_files = 64,
                                 .file_size_bytes = uint64_t{1} << 20};
  absl::StatusOr<Sandbox> limited = Sandbox::Create(options);
  ASSERT_OK(limited);
  auto run = [&](const std::string& script, const SandboxPolicy& policy = {}) {
    absl::StatusOr<CommandResult> result =
        RunCommand(limited->Wrap(policy, {"/bin/sh", "-c", script}), absl::Seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult();
  };
  CommandResult limits = run("grep -E '^Max (processes|open files|file size|address space)' "
                             "/proc/self/limits | tr -s ' '");
  EXPECT_THAT(limits.output, HasSubstr("Max file size 1048576 1048576 bytes"));
  EXPECT_THAT(limits.output, HasSubstr("Max processes 300 300 processes"));
  EXPECT_THAT(limits.output, HasSubstr("Max open files 64 64 files"));
  EXPECT_THAT(limits.output, HasSubstr("Max address space 536870912 536870912 bytes"));
  // A 2 MiB file stops at 1 MiB (SIGXFSZ); a 1 GiB buffer cannot be mapped.
  CommandResult big = run("head -c 2097152 /dev/zero > /tmp/big; wc -c < /tmp/big");
  EXPECT_THAT(big.output, HasSubstr("1048576"));
  CommandResult mapped = run("dd if=/dev/zero of=/dev/null bs=1G count=1");
  EXPECT_FALSE(mapped.exit.success()) << mapped.output;
  EXPECT_THAT(mapped.output, HasSubstr("memory exhausted"));
  // A GPU runtime's process keeps its address space; the rest still apply.
  SandboxPolicy gpu;
  gpu.unlimited_address_space = true;
  CommandResult unlimited = run("grep '^Max address space' /proc/self/limits | tr -s ' '", gpu);
  EXPECT_THAT(unlimited.output, HasSubstr("unlimited unlimited"));
}

// Where the host lets the worker make a memory cgroup (cgroup v2 delegated
// to it, or a writable v1 hierarchy), job code uses at most its limit, GPU
// runtimes' processes (no address-space rlimit) too: a buffer over it is
// killed by the OOM killer inside the cgroup, one within it runs, and the
// cgroup goes with the last copy of the sandbox.
TEST(SandboxMemoryTest, JobCodeOverTheCgroupsLimitIsKilledAndWithinItRuns) {
  SandboxOptions options;
  options.mode = SandboxMode::kBwrap;
  options.memory_bytes = int64_t{64} << 20;
  absl::StatusOr<Sandbox> sandbox = Sandbox::Create(options);
  ASSERT_OK(sandbox);
  if (sandbox->memory_cgroup() == nullptr) {
    GTEST_SKIP() << "this host lets the worker make no memory cgroup (see the log line)";
  }
  const std::string dir = sandbox->memory_cgroup()->dir();
  EXPECT_TRUE(std::filesystem::exists(dir + "/cgroup.procs"));
  SandboxPolicy gpu;
  gpu.unlimited_address_space = true;  // only the cgroup bounds it
  auto run = [&](const std::string& script) {
    absl::StatusOr<CommandResult> result =
        RunCommand(sandbox->Wrap(gpu, {"/bin/sh", "-c", script}), absl::Seconds(60));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult();
  };
  CommandResult within = run("dd if=/dev/zero of=/dev/null bs=16M count=4 2>&1");
  EXPECT_TRUE(within.exit.success()) << within.output;
  const int64_t kills_before = sandbox->memory_cgroup()->oom_kills();
  CommandResult over = run("exec dd if=/dev/zero of=/dev/null bs=256M count=1");
  const ExitInfo exit = sandbox->CommandExit(over.exit);
  EXPECT_TRUE(exit.signaled && exit.signal == SIGKILL) << exit.ToString() << ": " << over.output;
  EXPECT_GT(sandbox->memory_cgroup()->oom_kills(), kills_before);
  // The worker, outside, runs on; the next process inside too.
  EXPECT_TRUE(run("true").exit.success());
  *sandbox = Sandbox();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST_F(SandboxProcessTest, ReportsASignalDeathAsTheSignal) {
  CommandResult killed = Shell("kill -SEGV $$");
  EXPECT_EQ(killed.exit.code, 128 + SIGSEGV);
  const ExitInfo exit = sandbox_.CommandExit(killed.exit);
  EXPECT_TRUE(exit.signaled);
  EXPECT_EQ(exit.signal, SIGSEGV);
}

}  // namespace
}  // namespace tunefleet::worker
