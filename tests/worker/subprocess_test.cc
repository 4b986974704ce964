// common/subprocess (tested here, beside its main user, the worker).
#include "common/subprocess.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::StatusIs;

TEST(SubprocessTest, ReportsExitCodes) {
  SubprocessOptions options;
  options.argv = {"sh", "-c", "exit 3"};
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  absl::StatusOr<ExitInfo> exit = (*proc)->Wait();
  ASSERT_OK(exit);
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 3);
  EXPECT_EQ(exit->ToString(), "exit code 3");
}

TEST(SubprocessTest, ReportsTheKillingSignalByName) {
  SubprocessOptions options;
  options.argv = {"sh", "-c", "kill -SEGV $$"};
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  absl::StatusOr<ExitInfo> exit = (*proc)->Wait();
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->signaled);
  EXPECT_EQ(exit->ToString(), "killed by SIGSEGV");
  EXPECT_EQ(SignalName(SIGABRT), "SIGABRT");
}

TEST(SubprocessTest, PipesStdinToStdoutWithExtraEnvironment) {
  SubprocessOptions options;
  options.argv = {"sh", "-c", "cat; echo \"$GREETING\""};
  options.env = {{"GREETING", "hello"}};
  options.pipe_stdin = true;
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  ASSERT_EQ(write((*proc)->stdin_fd(), "ping\n", 5), 5);
  (*proc)->CloseStdin();
  absl::StatusOr<std::string> out = ReadAll((*proc)->stdout_fd());
  ASSERT_OK(out);
  EXPECT_EQ(*out, "ping\nhello\n");
  EXPECT_TRUE((*proc)->Wait()->success());
}

TEST(SubprocessTest, WaitTimesOutThenKillReaps) {
  SubprocessOptions options;
  options.argv = {"sleep", "30"};
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  EXPECT_THAT((*proc)->Wait(absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_FALSE((*proc)->Poll().has_value());
  ExitInfo exit = (*proc)->KillAndWait();
  EXPECT_TRUE(exit.signaled);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_TRUE((*proc)->Poll().has_value());
}

TEST(SubprocessTest, KillingAGroupTakesItsGrandchildren) {
  testing::TempDir dir;
  const std::string pid_file = dir.path() + "/grandchild.pid";
  SubprocessOptions options;
  options.argv = {"sh", "-c", "sleep 30 & echo $! > " + pid_file + "; wait"};
  options.new_process_group = true;
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  pid_t grandchild = 0;
  for (int i = 0; i < 200 && grandchild == 0; ++i) {
    std::ifstream(pid_file) >> grandchild;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(grandchild, 0);
  (*proc)->KillAndWait();
  // Dead means gone or a zombie (an orphan waits for its reaper, which in a
  // container may never come).
  auto running = [&] {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid, comm, state;
    return static_cast<bool>(stat >> pid >> comm >> state) && state != "Z";
  };
  for (int i = 0; i < 100 && running(); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_FALSE(running()) << "grandchild survived";
}

TEST(SubprocessTest, DestructorKillsAndReapsARunningChild) {
  pid_t pid = 0;
  {
    SubprocessOptions options;
    options.argv = {"sleep", "30"};
    auto proc = Subprocess::Start(options);
    ASSERT_OK(proc);
    pid = (*proc)->pid();
  }
  EXPECT_NE(kill(pid, 0), 0);  // no zombie left behind
}

TEST(SubprocessTest, MissingProgramIsNotFound) {
  SubprocessOptions options;
  options.argv = {"/nonexistent/tunefleet-no-such-program"};
  EXPECT_THAT(Subprocess::Start(options), StatusIs(absl::StatusCode::kNotFound));
  options.argv = {"tunefleet-no-such-program-in-path"};
  EXPECT_THAT(Subprocess::Start(options), StatusIs(absl::StatusCode::kNotFound));
}

TEST(SubprocessTest, WritesOutputToAFileInItsWorkingDir) {
  testing::TempDir dir;
  SubprocessOptions options;
  options.argv = {"sh", "-c", "pwd; echo oops >&2"};
  options.working_dir = dir.path();
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = dir.path() + "/log";
  options.stderr_mode = SubprocessOptions::Output::kStdout;
  auto proc = Subprocess::Start(options);
  ASSERT_OK(proc);
  ASSERT_TRUE((*proc)->Wait()->success());
  std::stringstream log;
  log << std::ifstream(dir.path() + "/log").rdbuf();
  EXPECT_THAT(log.str(), HasSubstr(dir.path()));
  EXPECT_THAT(log.str(), HasSubstr("oops"));
}

TEST(RunCommandTest, CapturesOutputAndKillsOnTimeout) {
  absl::StatusOr<CommandResult> ok = RunCommand({"sh", "-c", "echo out; echo err >&2"},
                                                absl::Seconds(10));
  ASSERT_OK(ok);
  EXPECT_TRUE(ok->exit.success());
  EXPECT_THAT(ok->output, HasSubstr("out"));
  EXPECT_THAT(ok->output, HasSubstr("err"));
  absl::StatusOr<CommandResult> slow = RunCommand({"sleep", "30"}, absl::Milliseconds(100));
  ASSERT_OK(slow);
  EXPECT_TRUE(slow->timed_out);
  EXPECT_TRUE(slow->exit.signaled);
}

TEST(FindProgramTest, SearchesPath) {
  absl::StatusOr<std::string> sh = FindProgram("sh");
  ASSERT_OK(sh);
  EXPECT_EQ((*sh)[0], '/');
  EXPECT_THAT(FindProgram("tunefleet-no-such-program"), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace tunefleet
