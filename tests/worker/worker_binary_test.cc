// The tunefleet-worker binary as a process: alive while the coordinator is
// unreachable, and a clean exit 0 on SIGTERM.
#include <signal.h>

#include "common/file_util.h"
#include "common/subprocess.h"
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

}  // namespace
}  // namespace tunefleet::worker
