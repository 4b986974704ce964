#include "client/tunectl/exit_codes.h"

#include "absl/strings/match.h"

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
    "  7    TLS settings do not match the coordinator's (--insecure, --ca-file)\n"
    "  130  interrupted";

std::string TlsMismatchHint(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable) return "";
  const absl::string_view message = status.message();
  if (absl::StrContains(message, "wrong version number")) {
    return "the coordinator answers in plaintext: give --insecure (or TUNEFLEET_INSECURE=1) "
           "if it was started with --insecure";
  }
  if (absl::StrContains(message, "certificate verify failed")) {
    return "the coordinator's certificate is not signed by the CA of --ca-file "
           "(TUNEFLEET_CA_FILE, the context's ca_file; else the system's roots)";
  }
  if (absl::StrContains(message, "failed to connect to all addresses") &&
      absl::StrContains(message, "Socket closed")) {
    return "the coordinator closed the connection at once: it expects TLS; drop --insecure "
           "(TUNEFLEET_INSECURE) and give its CA with --ca-file";
  }
  if (absl::StrContains(message, "andshake failed")) {
    return "the TLS handshake with the coordinator failed: check --ca-file and --insecure";
  }
  return "";
}

int ExitCodeForStatus(const absl::Status& status) {
  if (!TlsMismatchHint(status).empty()) return kExitTls;
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
