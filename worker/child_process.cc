#include "worker/child_process.h"

#include <signal.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {

namespace {

namespace fs = std::filesystem;

// `artifact` in `inbox`, hard-linked when the file systems allow, copied
// otherwise; returns the new path. The name carries the artifact file's
// version (FileVersion): a file compiled again under the same name (an own
// build replacing a fetched artifact) gets a new name, which the child
// loads afresh (dlopen would return a library still loaded under the old
// name).
absl::StatusOr<std::string> IntoInbox(const std::string& inbox, const std::string& artifact) {
  absl::StatusOr<std::string> version = FileVersion(artifact);
  if (!version.ok()) return absl::InternalError(version.status().message());
  const fs::path source(artifact);
  const fs::path target =
      fs::path(inbox) / absl::StrCat(source.stem().string(), "-", *version,
                                     source.extension().string());
  std::error_code error;
  if (fs::exists(target, error)) return target.string();
  fs::create_hard_link(artifact, target, error);
  if (error) fs::copy_file(artifact, target, fs::copy_options::overwrite_existing, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot put ", artifact, " into the child's inbox ",
                                            inbox, ": ", error.message()));
  }
  return target.string();
}

}  // namespace


BenchChildProcess::BenchChildProcess(ChildOptions options)
    : options_(std::move(options)), wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

BenchChildProcess::~BenchChildProcess() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void BenchChildProcess::Interrupt() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

bool BenchChildProcess::interrupted() const {
  pollfd pfd{.fd = wake_fd_, .events = POLLIN, .revents = 0};
  return poll(&pfd, 1, 0) > 0;
}

absl::Status BenchChildProcess::Deliver(v1::ChildRequest* request) const {
  if (options_.inbox.empty()) return absl::OkStatus();
  if (request->has_prepare() && !request->prepare().reference_artifact().empty()) {
    ASSIGN_OR_RETURN(std::string path,
                     IntoInbox(options_.inbox, request->prepare().reference_artifact()));
    request->mutable_prepare()->set_reference_artifact(path);
  }
  if (request->has_run() && !request->run().artifact().empty()) {
    ASSIGN_OR_RETURN(std::string path, IntoInbox(options_.inbox, request->run().artifact()));
    request->mutable_run()->set_artifact(path);
  }
  return absl::OkStatus();
}

absl::Status BenchChildProcess::Start() {
  if (!options_.inbox.empty()) {  // a new child sees nothing of the last one's jobs
    std::error_code error;
    fs::remove_all(options_.inbox, error);
    fs::create_directories(options_.inbox, error);
    if (error) {
      return absl::InternalError(
          absl::StrCat("cannot create the child's inbox ", options_.inbox, ": ", error.message()));
    }
  }
  SubprocessOptions options;
  options.argv = options_.argv;
  options.env = options_.env;
  options.pipe_stdin = true;
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  options.new_process_group = true;
  options_.sandbox.Apply(options_.policy, &options);
  ASSIGN_OR_RETURN(process_, Subprocess::Start(options));
  reader_ = std::make_unique<MessageReader>(process_->stdout_fd());
  ++starts_;
  spdlog::debug("benchmark child started, pid {}", process_->pid());
  return absl::OkStatus();
}

ChildReply BenchChildProcess::Died(std::string detail) {
  ChildReply reply;
  reply.kind = ChildReply::Kind::kDied;
  // The pipe closed: the process is on its way out; give it a moment.
  absl::StatusOr<ExitInfo> exit = process_->Wait(absl::Seconds(2));
  reply.exit = exit.ok() ? options_.sandbox.CommandExit(*exit) : process_->KillAndWait();
  reply.detail = detail.empty() ? reply.exit.ToString()
                                : absl::StrCat(detail, " (", reply.exit.ToString(), ")");
  process_.reset();
  reader_.reset();
  return reply;
}

absl::Status BenchChildProcess::StartIfStopped() {
  if (interrupted()) return absl::CancelledError("interrupted: the worker is stopping");
  return process_ == nullptr ? Start() : absl::OkStatus();
}

absl::StatusOr<ChildReply> BenchChildProcess::Call(const v1::ChildRequest& request,
                                                   absl::Duration deadline) {
  if (interrupted()) return absl::CancelledError("interrupted: the worker is stopping");
  if (process_ == nullptr) RETURN_IF_ERROR(Start());
  v1::ChildRequest delivered = request;
  RETURN_IF_ERROR(Deliver(&delivered));
  absl::Status written = WriteMessage(process_->stdin_fd(), delivered);
  if (!written.ok()) {
    return Died(absl::IsUnavailable(written) ? "" : std::string(written.message()));
  }
  ChildReply reply;
  absl::Status read = reader_->Read(&reply.response, absl::Now() + deadline, wake_fd_);
  if (absl::IsCancelled(read)) {
    process_->KillAndWait();
    process_.reset();
    reader_.reset();
    return absl::CancelledError("interrupted: the worker is stopping; child killed");
  }
  if (absl::IsDeadlineExceeded(read)) {
    reply.kind = ChildReply::Kind::kTimedOut;
    reply.exit = process_->KillAndWait();
    reply.detail = absl::StrCat("no answer within ", absl::FormatDuration(deadline),
                                "; child killed");
    process_.reset();
    reader_.reset();
    return reply;
  }
  if (absl::IsUnavailable(read)) return Died("");
  if (!read.ok()) {
    process_->Kill(SIGKILL);
    return Died(absl::StrCat("protocol error: ", read.message()));
  }
  if (reply.response.exiting()) Stop();
  return reply;
}

void BenchChildProcess::Stop(absl::Duration grace) {
  if (process_ == nullptr) return;
  process_->CloseStdin();
  if (!process_->Wait(grace).ok()) process_->KillAndWait();
  process_.reset();
  reader_.reset();
}

}  // namespace tunefleet::worker
