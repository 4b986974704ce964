#include "client/tunectl/exit_codes.h"

namespace tunefleet::tunectl {

const char kExitCodeHelp[] =
    "Exit codes:\n"
    "  0    ok\n"
    "  1    failure\n"
    "  2    usage error\n"
    "  3    job finished with failed trials, or FAILED or CANCELLED\n"
    "  4    not authorized\n"
    "  5    not found: a job, file, kernel or device model (the error lists the known names)\n"
    "  6    server unavailable or deadline exceeded (retry)\n"
    "  130  interrupted";

int ExitCodeForStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return kExitAuth;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    case absl::StatusCode::kCancelled:
      return kExitInterrupted;
    default:
      return kExitFailure;
  }
}

int ExitCodeForJob(const Job& job) {
  if (job.state != JobState::kSucceeded) return kExitJobFailed;
  for (const auto& [status, count] : job.outcomes) {
    if (status != "OK" && count > 0) return kExitJobFailed;
  }
  return kExitOk;
}

}  // namespace tunefleet::tunectl
