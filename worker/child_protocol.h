// Framing of the daemon <-> benchmark child pipe protocol
// (proto/tunefleet/v1/bench_child.proto): each message is its byte length as
// a base-128 varint followed by the serialized bytes, the same framing as
// protobuf's SerializeDelimitedToFileDescriptor.
#ifndef TUNEFLEET_WORKER_CHILD_PROTOCOL_H_
#define TUNEFLEET_WORKER_CHILD_PROTOCOL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace tunefleet::worker {

// Frames larger than this are refused as DataLoss.
inline constexpr uint64_t kMaxFrameBytes = 256ull << 20;

// Writes one framed message to `fd`. Unavailable when the reader is gone
// (EPIPE; SIGPIPE is suppressed for the calling thread), Internal otherwise.
absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message);

// Reads framed messages from one file descriptor. Thread-compatible.
class MessageReader {
 public:
  explicit MessageReader(int fd) : fd_(fd) {}

  // Reads the next message, waiting until `deadline` at most.
  // DeadlineExceeded when no whole frame arrived in time (bytes read so far
  // are kept for the next call), Unavailable at EOF (the writer is gone),
  // DataLoss for a frame that is too large or does not parse, Cancelled as
  // soon as `wake_fd` (when >= 0) is readable.
  absl::Status Read(google::protobuf::MessageLite* message,
                    absl::Time deadline = absl::InfiniteFuture(), int wake_fd = -1);

 private:
  // Parses a whole frame at the start of buffer_ into `message`; false when
  // the buffer holds less than one frame.
  absl::StatusOr<bool> TakeFrame(google::protobuf::MessageLite* message);

  int fd_;
  std::string buffer_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_CHILD_PROTOCOL_H_
