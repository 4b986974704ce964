#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace tunefleet {
namespace {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(err)));
}

ExitInfo FromWaitStatus(int status) {
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
  } else {
    info.code = WEXITSTATUS(status);
  }
  return info;
}

// The parent's environment with `extra` added or replacing same-named entries.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    absl::string_view item(*entry);
    absl::string_view name = item.substr(0, item.find('='));
    bool replaced = std::any_of(extra.begin(), extra.end(),
                                [&](const auto& kv) { return kv.first == name; });
    if (!replaced) env.emplace_back(item);
  }
  for (const auto& [name, value] : extra) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Owns the posix_spawn attribute objects for one Start call.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attr_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attr() { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

// Adds the file action that connects `target_fd` as `mode` says. `pipe_end`
// is the child's end of a pipe for kPipe.
absl::Status AddOutputAction(posix_spawn_file_actions_t* actions, int target_fd,
                             SubprocessOptions::Output mode,
                             const std::string& path, int pipe_end) {
  using Output = SubprocessOptions::Output;
  switch (mode) {
    case Output::kInherit:
      return absl::OkStatus();
    case Output::kPipe:
      if (pipe_end < 0) return absl::InvalidArgumentError("kPipe is for stdout only");
      posix_spawn_file_actions_adddup2(actions, pipe_end, target_fd);
      return absl::OkStatus();
    case Output::kFile:
      if (path.empty()) return absl::InvalidArgumentError("kFile needs a path");
      posix_spawn_file_actions_addopen(actions, target_fd, path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
      return absl::OkStatus();
    case Output::kNull:
      posix_spawn_file_actions_addopen(actions, target_fd, "/dev/null", O_WRONLY, 0);
      return absl::OkStatus();
    case Output::kStdout:
      if (target_fd != STDERR_FILENO) {
        return absl::InvalidArgumentError("kStdout is for stderr only");
      }
      posix_spawn_file_actions_adddup2(actions, STDOUT_FILENO, STDERR_FILENO);
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown output mode");
}

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

}  // namespace

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return absl::StrCat("signal ", signal);
  return absl::StrCat("SIG", abbrev);
}

std::string ExitInfo::ToString() const {
  if (signaled) return absl::StrCat("killed by ", SignalName(signal));
  return absl::StrCat("exit code ", code);
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const SubprocessOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("Subprocess: empty argv");
  }
  SpawnSetup setup;
  int stdin_pipe[2] = {-1, -1};
  int stdout_pipe[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int* fd : {&stdin_pipe[0], &stdin_pipe[1], &stdout_pipe[0], &stdout_pipe[1]}) {
      CloseFd(fd);
    }
  };
  if (options.pipe_stdin) {
    if (pipe2(stdin_pipe, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2");
    posix_spawn_file_actions_adddup2(setup.actions(), stdin_pipe[0], STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(setup.actions(), STDIN_FILENO, "/dev/null",
                                     O_RDONLY, 0);
  }
  if (options.stdout_mode == SubprocessOptions::Output::kPipe &&
      pipe2(stdout_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    close_pipes();
    return ErrnoStatus(err, "pipe2");
  }
  absl::Status status = AddOutputAction(setup.actions(), STDOUT_FILENO,
                                        options.stdout_mode, options.stdout_path,
                                        stdout_pipe[1]);
  if (status.ok()) {
    status = AddOutputAction(setup.actions(), STDERR_FILENO, options.stderr_mode,
                             options.stderr_path, /*pipe_end=*/-1);
  }
  if (!status.ok()) {
    close_pipes();
    return status;
  }
  if (!options.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(setup.actions(), options.working_dir.c_str());
  }
  // The child starts with default dispositions and an empty signal mask, even
  // when the parent blocks SIGTERM for a sigwait thread or ignores SIGPIPE.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  posix_spawnattr_setsigmask(setup.attr(), &none);
  posix_spawnattr_setsigdefault(setup.attr(), &all);
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(setup.attr(), 0);
  }
  posix_spawnattr_setflags(setup.attr(), flags);

  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = MergedEnvironment(options.env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);
  pid_t pid = -1;
  int err = posix_spawnp(&pid, argv[0], setup.actions(), setup.attr(), argv.data(),
                         envp.data());
  CloseFd(&stdin_pipe[0]);
  CloseFd(&stdout_pipe[1]);
  if (err != 0) {
    close_pipes();
    if (err == ENOENT || err == EACCES || err == ENOEXEC) {
      return absl::NotFoundError(
          absl::StrCat("cannot execute ", options.argv[0], ": ", strerror(err)));
    }
    return ErrnoStatus(err, absl::StrCat("posix_spawn ", options.argv[0]));
  }
  std::unique_ptr<Subprocess> proc(new Subprocess());
  proc->pid_ = pid;
  proc->group_ = options.new_process_group;
  proc->stdin_fd_ = stdin_pipe[1];
  proc->stdout_fd_ = stdout_pipe[0];
  return proc;
}

Subprocess::~Subprocess() {
  CloseStdin();
  CloseFd(&stdout_fd_);
  if (!exit_.has_value()) KillAndWait();
}

void Subprocess::CloseStdin() { CloseFd(&stdin_fd_); }

std::optional<ExitInfo> Subprocess::Poll() {
  if (exit_.has_value()) return exit_;
  int status = 0;
  pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    exit_ = FromWaitStatus(status);
    // A group leader that died may leave grandchildren behind (a compiler
    // driver's cc1plus): take them down with it.
    if (group_) kill(-pid_, SIGKILL);
  } else if (done < 0 && errno == ECHILD) {
    exit_ = ExitInfo{.signaled = false, .code = -1};  // reaped elsewhere
  }
  return exit_;
}

absl::StatusOr<ExitInfo> Subprocess::Wait(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) {
    while (!exit_.has_value()) {
      int status = 0;
      pid_t done = waitpid(pid_, &status, 0);
      if (done == pid_) {
        exit_ = FromWaitStatus(status);
        if (group_) kill(-pid_, SIGKILL);
      } else if (done < 0 && errno != EINTR) {
        if (errno == ECHILD) exit_ = ExitInfo{.signaled = false, .code = -1};
        else return ErrnoStatus(errno, "waitpid");
      }
    }
    return *exit_;
  }
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration nap = absl::Milliseconds(1);
  while (!Poll().has_value()) {
    absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " still running after ",
                       absl::FormatDuration(timeout)));
    }
    absl::SleepFor(std::min(nap, deadline - now));
    nap = std::min(nap * 2, absl::Milliseconds(20));
  }
  return *exit_;
}

void Subprocess::Kill(int signal) {
  if (exit_.has_value() || pid_ <= 0) return;
  if (group_) {
    kill(-pid_, signal);
  } else {
    kill(pid_, signal);
  }
}

ExitInfo Subprocess::KillAndWait() {
  Kill(SIGKILL);
  absl::StatusOr<ExitInfo> info = Wait();
  return info.ok() ? *info : ExitInfo{.signaled = true, .signal = SIGKILL};
}

absl::StatusOr<std::string> ReadAll(int fd) {
  std::string out;
  char buffer[65536];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) return out;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read");
    }
    out.append(buffer, static_cast<size_t>(n));
  }
}

absl::StatusOr<CommandResult> RunCommand(std::vector<std::string> argv,
                                         absl::Duration timeout) {
  SubprocessOptions options;
  options.argv = std::move(argv);
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  options.stderr_mode = SubprocessOptions::Output::kStdout;
  options.new_process_group = true;
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(options);
  if (!started.ok()) return started.status();
  Subprocess& proc = **started;
  CommandResult result;
  const absl::Time deadline = absl::Now() + timeout;
  char buffer[65536];
  while (true) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{.fd = proc.stdout_fd(), .events = POLLIN, .revents = 0};
    int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) return ErrnoStatus(errno, "poll");
    if (ready <= 0) continue;
    ssize_t n = read(proc.stdout_fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: every writer is gone
    result.output.append(buffer, static_cast<size_t>(n));
  }
  if (result.timed_out) {
    result.exit = proc.KillAndWait();
    return result;
  }
  absl::StatusOr<ExitInfo> exit = proc.Wait(std::max(deadline - absl::Now(),
                                                     absl::Milliseconds(100)));
  if (!exit.ok()) {
    result.timed_out = true;
    result.exit = proc.KillAndWait();
  } else {
    result.exit = *exit;
  }
  return result;
}

absl::StatusOr<std::string> FindProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), X_OK) == 0) return program;
    return absl::NotFoundError(absl::StrCat(program, " is not executable"));
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string candidate = absl::StrCat(dir, "/", program);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return absl::NotFoundError(absl::StrCat(program, " not found in PATH"));
}

}  // namespace tunefleet
