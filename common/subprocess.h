// A child process started from an argv vector, owned by one object: the
// process is killed and reaped when the object goes away, so it never leaves
// a zombie or an orphan behind.
//
//   SubprocessOptions options;
//   options.argv = {"c++", "--version"};
//   options.stdout_mode = SubprocessOptions::Output::kPipe;
//   ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> proc, Subprocess::Start(options));
//   ASSIGN_OR_RETURN(std::string text, ReadAll(proc->stdout_fd()));
//   ASSIGN_OR_RETURN(ExitInfo exit, proc->Wait());
#ifndef TUNEFLEET_COMMON_SUBPROCESS_H_
#define TUNEFLEET_COMMON_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tunefleet {

struct SubprocessOptions {
  // Where a standard stream of the child goes.
  enum class Output {
    kInherit,  // the parent's stream (the default)
    kPipe,     // a pipe the parent reads from (stdout only: stdout_fd())
    kFile,     // the file at *_path, created or truncated
    kNull,     // /dev/null
    kStdout,   // stderr only: the same place as the child's stdout
  };

  // The program and its arguments; argv[0] is searched in PATH when it
  // contains no '/'. REQUIRES: non-empty.
  std::vector<std::string> argv;
  // Variables added to (or replacing those of) the parent's environment.
  std::vector<std::pair<std::string, std::string>> env;
  // Working directory of the child; empty = the parent's.
  std::string working_dir;
  // true: the parent writes the child's stdin through stdin_fd(); false
  // (the default): the child's stdin is /dev/null.
  bool pipe_stdin = false;
  Output stdout_mode = Output::kInherit;
  std::string stdout_path;  // for Output::kFile
  Output stderr_mode = Output::kInherit;
  std::string stderr_path;  // for Output::kFile
  // true: the child leads a new process group; Kill() then signals the whole
  // group (a compiler driver and the cc1plus/as/ld it started), and a
  // terminal's Ctrl-C does not reach it. Default false.
  bool new_process_group = false;
};

// How a process ended.
struct ExitInfo {
  bool signaled = false;  // killed by `signal`; otherwise exited with `code`
  int code = 0;
  int signal = 0;

  bool success() const { return !signaled && code == 0; }
  // "exit code 3" or "killed by SIGSEGV".
  std::string ToString() const;
};

// "SIGSEGV" for SIGSEGV; "signal 42" for a number without a name.
std::string SignalName(int signal);

// Thread-safety: not thread-safe; one thread owns a Subprocess. The pipe
// file descriptors are close-on-exec in the parent, so other children never
// inherit them.
class Subprocess {
 public:
  // Starts the child. NotFound when the program does not exist or cannot be
  // executed, InvalidArgument for empty argv, Internal for other failures.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const SubprocessOptions& options);

  // Kills (SIGKILL, the group when new_process_group) and reaps a child that
  // is still running.
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // The writable end of the child's stdin, or -1 (no pipe, or closed).
  int stdin_fd() const { return stdin_fd_; }
  // The readable end of the child's stdout, or -1.
  int stdout_fd() const { return stdout_fd_; }
  // Closes the parent's end of the stdin pipe: the child reads EOF.
  void CloseStdin();

  // Waits for the child to end, at most `timeout` (infinite by default).
  // DeadlineExceeded when it is still running at the deadline (the child is
  // left running). Once the child has ended, every call returns its ExitInfo.
  absl::StatusOr<ExitInfo> Wait(absl::Duration timeout = absl::InfiniteDuration());
  // The ExitInfo if the child has ended, without blocking.
  std::optional<ExitInfo> Poll();
  // Sends `signal` to the child (its group when new_process_group). Does
  // nothing once the child has been reaped.
  void Kill(int signal);
  // Kill(SIGKILL) and Wait(): the child is gone when this returns.
  ExitInfo KillAndWait();

 private:
  Subprocess() = default;

  pid_t pid_ = -1;
  bool group_ = false;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::optional<ExitInfo> exit_;
};

// Reads `fd` until EOF. Internal on a read error.
absl::StatusOr<std::string> ReadAll(int fd);

// Runs `options` to completion, killing it (SIGKILL) after `timeout`, with
// stdout and stderr captured together. For tools (`c++ --version`).
struct CommandResult {
  ExitInfo exit;
  std::string output;  // stdout and stderr interleaved
  bool timed_out = false;
};
absl::StatusOr<CommandResult> RunCommand(std::vector<std::string> argv,
                                         absl::Duration timeout);

// The absolute path of `program` (searched in PATH when it has no '/'), or
// NotFound.
absl::StatusOr<std::string> FindProgram(const std::string& program);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_SUBPROCESS_H_
