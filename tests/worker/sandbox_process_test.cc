// The sandbox with real bwrap processes: who the command is, what it sees,
// where it may write.
#include <csignal>
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

TEST_F(SandboxProcessTest, ReportsASignalDeathAsTheSignal) {
  CommandResult killed = Shell("kill -SEGV $$");
  EXPECT_EQ(killed.exit.code, 128 + SIGSEGV);
  const ExitInfo exit = sandbox_.CommandExit(killed.exit);
  EXPECT_TRUE(exit.signaled);
  EXPECT_EQ(exit.signal, SIGSEGV);
}

}  // namespace
}  // namespace tunefleet::worker
