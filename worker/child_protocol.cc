#include "worker/child_protocol.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tunefleet::worker {
namespace {

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Blocks SIGPIPE on this thread while alive, and drops a SIGPIPE raised in the
// meantime, so a write to a dead child's pipe returns EPIPE instead of
// killing the daemon.
class ScopedNoSigpipe {
 public:
  ScopedNoSigpipe() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_);
  }
  ~ScopedNoSigpipe() {
    if (!was_pending_) {
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace

absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message) {
  std::string frame;
  AppendVarint(message.ByteSizeLong(), &frame);
  if (!message.AppendToString(&frame)) {
    return absl::InternalError("cannot serialize message");
  }
  ScopedNoSigpipe no_sigpipe;
  size_t written = 0;
  while (written < frame.size()) {
    ssize_t n = write(fd, frame.data() + written, frame.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) return absl::UnavailableError("pipe reader is gone");
    if (n < 0) return absl::InternalError(absl::StrCat("write: ", strerror(errno)));
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> MessageReader::TakeFrame(google::protobuf::MessageLite* message) {
  uint64_t length = 0;
  size_t pos = 0;
  for (int shift = 0;; shift += 7, ++pos) {
    if (pos >= buffer_.size()) return false;
    if (shift > 63) return absl::DataLossError("malformed frame length");
    const auto byte = static_cast<uint8_t>(buffer_[pos]);
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  ++pos;
  if (length > kMaxFrameBytes) {
    return absl::DataLossError(absl::StrCat("frame of ", length, " bytes is too large"));
  }
  if (buffer_.size() - pos < length) return false;
  const bool parsed = message->ParseFromArray(buffer_.data() + pos, static_cast<int>(length));
  buffer_.erase(0, pos + length);
  if (!parsed) return absl::DataLossError("frame does not parse");
  return true;
}

absl::Status MessageReader::Read(google::protobuf::MessageLite* message,
                                  absl::Time deadline, int wake_fd) {
  char chunk[65536];
  while (true) {
    absl::StatusOr<bool> taken = TakeFrame(message);
    if (!taken.ok()) return taken.status();
    if (*taken) return absl::OkStatus();
    int timeout_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError("no message before the deadline");
      }
      timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    }
    pollfd pfds[2] = {{.fd = fd_, .events = POLLIN, .revents = 0},
                      {.fd = wake_fd, .events = POLLIN, .revents = 0}};
    int ready = poll(pfds, wake_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    }
    if (ready > 0 && wake_fd >= 0 && pfds[1].revents != 0) {
      return absl::CancelledError("interrupted");
    }
    if (ready <= 0) continue;
    ssize_t n = read(fd_, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("read: ", strerror(errno)));
    if (n == 0) return absl::UnavailableError("pipe writer is gone (EOF)");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace tunefleet::worker
