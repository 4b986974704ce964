#include "worker/sandbox.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backends.h"

namespace tunefleet::worker {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

// The position of the argument sequence `seq` in `argv`, or -1.
int Find(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  auto it = std::search(argv.begin(), argv.end(), seq.begin(), seq.end());
  return it == argv.end() ? -1 : static_cast<int>(it - argv.begin());
}

SandboxPolicy CompilePolicy() {
  SandboxPolicy policy;
  policy.symlinks = {{"usr/lib", "/lib"}};
  policy.read_only = {"/usr", "/cache/sources/abc"};
  policy.writable = {"/cache/scratch/cc-1"};
  policy.env = {{"PATH", "/usr/bin"}};
  policy.working_dir = "/cache/sources/abc";
  return policy;
}

TEST(SandboxTest, BwrapArgvIsolatesEverything) {
  const std::vector<std::string> argv =
      BwrapArgv("/usr/bin/bwrap", CompilePolicy(), {"/usr/bin/g++", "-c", "k.cc"});
  EXPECT_EQ(argv.front(), "/usr/bin/bwrap");
  for (const char* flag : {"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                           "--unshare-uts", "--die-with-parent", "--new-session", "--clearenv"}) {
    EXPECT_THAT(argv, Contains(flag));
  }
  EXPECT_GE(Find(argv, {"--uid", "65534", "--gid", "65534"}), 0);
  EXPECT_GE(Find(argv, {"--cap-drop", "ALL"}), 0);
  EXPECT_GE(Find(argv, {"--ro-bind", "/cache/sources/abc", "/cache/sources/abc"}), 0);
  EXPECT_GE(Find(argv, {"--bind", "/cache/scratch/cc-1", "/cache/scratch/cc-1"}), 0);
  EXPECT_GE(Find(argv, {"--symlink", "usr/lib", "/lib"}), 0);
  EXPECT_GE(Find(argv, {"--setenv", "PATH", "/usr/bin"}), 0);
  EXPECT_GE(Find(argv, {"--chdir", "/cache/sources/abc"}), 0);
  // A private /tmp is mounted before any bind that may lie under /tmp.
  EXPECT_LT(Find(argv, {"--tmpfs", "/tmp"}), Find(argv, {"--ro-bind"}));
  EXPECT_THAT(argv, Not(Contains("--dev-bind")));
  EXPECT_THAT(argv, Not(Contains("--share-net")));
  const int end = Find(argv, {"--"});
  ASSERT_GE(end, 0);
  EXPECT_THAT(std::vector<std::string>(argv.begin() + end + 1, argv.end()),
              ElementsAre("/usr/bin/g++", "-c", "k.cc"));
}

TEST(SandboxTest, CudaChildKeepsItsGpusAndTheDriverProcEntries) {
  SandboxPolicy policy;
  AddCudaDevices({"/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm",
                  "/dev/nvidia-uvm-tools", "/dev/nvidia-caps/nvidia-cap1"},
                 &policy);
  const std::vector<std::string> argv =
      BwrapArgv("bwrap", policy, {"/opt/tunefleet/bin/tunefleet-worker", "--child"});
  for (const char* node : {"/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm",
                           "/dev/nvidia-uvm-tools", "/dev/nvidia-caps/nvidia-cap1"}) {
    EXPECT_GE(Find(argv, {"--dev-bind", node, node}), 0) << node;
  }
  EXPECT_GE(Find(argv, {"--ro-bind", "/proc/driver/nvidia", "/proc/driver/nvidia"}), 0);
  // The driver entries go on top of the fresh /proc, the nodes on the fresh /dev.
  EXPECT_LT(Find(argv, {"--proc", "/proc"}), Find(argv, {"--ro-bind", "/proc/driver/nvidia"}));
  EXPECT_LT(Find(argv, {"--dev", "/dev"}), Find(argv, {"--dev-bind"}));
  EXPECT_THAT(argv, Contains("--unshare-net"));
}

TEST(SandboxTest, BenchChildSeesItsBinaryAndItsInboxOnly) {
  SandboxPolicy cpu = ChildSandboxPolicy(v1::BACKEND_CPU, "/opt/tf/tunefleet-worker",
                                         "/cache/children/0");
  EXPECT_THAT(cpu.read_only, ElementsAre("/opt/tf/tunefleet-worker", "/cache/children/0"));
  EXPECT_TRUE(cpu.writable.empty());
  EXPECT_TRUE(cpu.devices.empty());

  SandboxPolicy cuda = ChildSandboxPolicy(v1::BACKEND_CUDA, "/opt/tf/tunefleet-worker",
                                          "/cache/children/0");
  EXPECT_THAT(cuda.read_only, Contains("/cache/children/0"));
  EXPECT_THAT(cuda.read_only, Contains("/proc/driver/nvidia"));
  EXPECT_THAT(cuda.read_only, Not(Contains("/cache")));
  EXPECT_EQ(cuda.devices, HostNvidiaDeviceNodes());
  EXPECT_TRUE(cuda.writable.empty());
}

TEST(SandboxTest, MergeAppendsListsAndKeepsTheWorkingDir) {
  SandboxPolicy base = CompilePolicy();
  SandboxPolicy more;
  more.read_only = {"/opt/toolchain"};
  MergePolicy(more, &base);
  EXPECT_THAT(base.read_only, ElementsAre("/usr", "/cache/sources/abc", "/opt/toolchain"));
  EXPECT_EQ(base.working_dir, "/cache/sources/abc");
}

TEST(SandboxTest, DisabledSandboxRunsCommandsAsTheyAre) {
  Sandbox none;
  EXPECT_FALSE(none.enabled());
  EXPECT_THAT(none.Wrap(CompilePolicy(), {"/usr/bin/true"}), ElementsAre("/usr/bin/true"));
  SubprocessOptions options;
  options.argv = {"/usr/bin/true"};
  none.Apply(CompilePolicy(), &options);
  EXPECT_EQ(options.working_dir, "/cache/sources/abc");
  EXPECT_THAT(options.argv, ElementsAre("/usr/bin/true"));
  EXPECT_EQ(none.CommandExit(ExitInfo{false, 139, 0}).code, 139);
}

TEST(SandboxTest, MissingBwrapIsAFailedPreconditionThatSaysWhatToDo) {
  SandboxOptions options;
  options.mode = SandboxMode::kBwrap;
  options.bwrap = "/nonexistent/bwrap";
  absl::StatusOr<Sandbox> sandbox = Sandbox::Create(options);
  ASSERT_FALSE(sandbox.ok());
  EXPECT_EQ(sandbox.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(sandbox.status().message()), ::testing::HasSubstr("bubblewrap"));
  EXPECT_THAT(std::string(sandbox.status().message()), ::testing::HasSubstr("--sandbox=none"));
}

}  // namespace
}  // namespace tunefleet::worker
