#include "worker/python/compile_server.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "spdlog/spdlog.h"
#include "worker/child_protocol.h"

namespace tunefleet::worker::python {
namespace {

namespace fs = std::filesystem;

// The part of `path` after byte `from`, at most its last 8 KiB.
std::string ReadTail(const std::string& path, std::uintmax_t from) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > 8 * 1024) text = absl::StrCat("[...]\n", text.substr(text.size() - 8 * 1024));
  return text;
}

std::uintmax_t SizeOf(const std::string& path) {
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  return error ? 0 : size;
}

}  // namespace

struct CompileServerPool::Server {
  std::unique_ptr<Subprocess> proc;
  std::unique_ptr<MessageReader> reader;
  std::string scratch;  // its own, writable; removed with the server
  std::string log_path;
  std::string bound;  // the source dir of its first request; empty before
  bool ready = false;  // its ready frame was read
  int served = 0;

  ~Server() {
    if (proc != nullptr) proc->KillAndWait();
    std::error_code ignored;
    if (!scratch.empty()) fs::remove_all(scratch, ignored);
  }
};

CompileServerPool::CompileServerPool(CompileServerOptions options)
    : options_(std::move(options)) {}

CompileServerPool::~CompileServerPool() {
  absl::MutexLock lock(&mu_);
  idle_.clear();
}

int CompileServerPool::started() const {
  absl::MutexLock lock(&mu_);
  return started_;
}

absl::StatusOr<std::unique_ptr<CompileServerPool::Server>> CompileServerPool::Start() {
  auto server = std::make_unique<Server>();
  std::error_code error;
  fs::create_directories(options_.scratch_root, error);
  std::string pattern = (fs::path(options_.scratch_root) / "server-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  }
  server->scratch = pattern;
  server->log_path = server->scratch + "/server.log";

  SubprocessOptions options;
  options.argv = {options_.info.python, "-m", "tunefleet.backend.compile", "--serve"};
  options.pipe_stdin = true;
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = server->log_path;
  options.new_process_group = true;  // a kill takes Triton's ptxas too
  SandboxPolicy policy = ProcessSandboxPolicy(options_.info);
  policy.writable.push_back(server->scratch);
  policy.working_dir = server->scratch;
  options_.sandbox.Apply(policy, &options);
  ASSIGN_OR_RETURN(server->proc, Subprocess::Start(options));
  server->reader = std::make_unique<MessageReader>(server->proc->stdout_fd());
  absl::MutexLock lock(&mu_);
  ++started_;
  return server;
}

absl::Status CompileServerPool::AwaitReady(Server& server, absl::Time deadline) {
  if (server.ready) return absl::OkStatus();
  v1::PythonCompileResult hello;
  RETURN_IF_ERROR(server.reader->Read(&hello, deadline));
  if (!hello.ready()) {
    return absl::DataLossError("compile server: its first frame is not the ready frame");
  }
  server.ready = true;
  return absl::OkStatus();
}

void CompileServerPool::Prestart(int count, absl::Duration wait) {
  std::vector<std::unique_ptr<Server>> started;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<std::unique_ptr<Server>> server = Start();
    if (!server.ok()) {
      spdlog::warn("python compile server: {}", server.status().ToString());
      break;
    }
    started.push_back(std::move(*server));
  }
  const absl::Time deadline = absl::Now() + wait;
  for (std::unique_ptr<Server>& server : started) {
    if (wait > absl::ZeroDuration()) {
      if (absl::Status ready = AwaitReady(*server, deadline); !ready.ok()) {
        spdlog::warn("python compile server pid {} not ready: {}: {}", server->proc->pid(),
                     ready.ToString(), ReadTail(server->log_path, 0));
        server.reset();
        continue;
      }
    }
    absl::MutexLock lock(&mu_);
    idle_.push_back(std::move(server));
  }
}

absl::StatusOr<std::unique_ptr<CompileServerPool::Server>> CompileServerPool::Acquire(
    const std::string& source_dir) {
  std::unique_ptr<Server> retired;
  {
    absl::MutexLock lock(&mu_);
    auto take = [&](auto predicate) -> std::unique_ptr<Server> {
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (predicate(**it)) {
          std::unique_ptr<Server> server = std::move(*it);
          idle_.erase(it);
          return server;
        }
      }
      return nullptr;
    };
    if (auto server = take([&](const Server& s) { return s.bound == source_dir; })) {
      return server;
    }
    if (auto server = take([](const Server& s) { return s.bound.empty(); })) {
      return server;
    }
    // Every idle server has run another kernel's code: retire one, so that
    // the pool does not grow past the number of requests at once.
    if (!idle_.empty()) {
      retired = std::move(idle_.front());
      idle_.erase(idle_.begin());
    }
  }
  retired.reset();  // killed outside the lock
  return Start();
}

void CompileServerPool::Release(std::unique_ptr<Server> server) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(server));
}

void CompileServerPool::Replace(std::unique_ptr<Server> server) {
  server.reset();
  Prestart(1, absl::ZeroDuration());
}

absl::StatusOr<ServedCompile> CompileServerPool::Compile(v1::PythonCompileRequest request) {
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Acquire(request.source_dir()));
  if (server->bound.empty()) {
    // The server sees its own copy of the sources, never the staging root
    // (other kernels' sources).
    std::error_code error;
    fs::copy(request.source_dir(), server->scratch + "/src", fs::copy_options::recursive, error);
    if (error) {
      Release(std::move(server));
      return absl::InternalError(absl::StrCat("cannot copy ", request.source_dir(),
                                              " for a compile server: ", error.message()));
    }
    server->bound = request.source_dir();
  }
  request.set_source_dir(server->scratch + "/src");
  request.set_output(absl::StrCat(server->scratch, "/out-", server->served++, ".zip"));
  ServedCompile served;
  served.output = request.output();
  const std::uintmax_t log_start = SizeOf(server->log_path);

  // A server started on demand is still importing: its deadline counts.
  absl::Status status = AwaitReady(*server, start + options_.timeout);
  if (status.ok()) status = WriteMessage(server->proc->stdin_fd(), request);
  v1::PythonCompileResult result;
  if (status.ok()) status = server->reader->Read(&result, start + options_.timeout);
  served.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (status.ok()) {
    served.answered = true;
    served.code = result.code();
    served.log = result.log();
    if (served.code == 0) {
      // Out of the server's scratch, which goes when the server is retired.
      std::error_code error;
      const std::string moved = absl::StrCat(served.output, ".", getpid(), ".", outputs_++);
      const std::string target =
          (fs::path(options_.scratch_root) / fs::path(moved).filename()).string();
      fs::rename(served.output, target, error);
      if (error) {
        served.code = 1;
        served.log = absl::StrCat("compile server: no artifact at ", served.output, ": ",
                                  error.message(), "\n", served.log);
      }
      served.output = target;
    }
    Release(std::move(server));
    return served;
  }
  // The server is gone or must go: say why, from its own stderr.
  std::string why;
  if (absl::IsDeadlineExceeded(status)) {
    served.timed_out = true;
    server->proc->KillAndWait();
    why = absl::StrCat("compile timed out after ", absl::FormatDuration(options_.timeout),
                       " (the compile server was killed)");
  } else {
    absl::StatusOr<ExitInfo> exit = server->proc->Wait(absl::Seconds(5));
    if (!exit.ok()) {
      server->proc->KillAndWait();
      why = absl::StrCat("compile server: ", status.message());
    } else {
      why = absl::StrCat("compile server ", options_.sandbox.CommandExit(*exit).ToString());
    }
  }
  const std::string tail = ReadTail(server->log_path, log_start);
  served.log = tail.empty() ? why : absl::StrCat(why, "\n", tail);
  spdlog::info("python compile server pid {}: {}", server->proc->pid(), why);
  Replace(std::move(server));
  return served;
}

}  // namespace tunefleet::worker::python
