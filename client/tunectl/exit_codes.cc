#include "client/tunectl/exit_codes.h"

#include "absl/strings/ascii.h"
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

namespace {

enum class TlsProblem { kNone, kPlaintextServer, kUntrusted, kClosedAtOnce, kHandshake };

TlsProblem ClassifyTls(const absl::Status& status) {
  // Only a connection that never came up: a call cut later is not about TLS.
  if (status.code() != absl::StatusCode::kUnavailable) return TlsProblem::kNone;
  const std::string message = absl::AsciiStrToLower(status.message());
  // pick_first's words, and round_robin's (a channel balancing over the
  // coordinators by health: common/coordinator_channel.h).
  if (!absl::StrContains(message, "failed to connect to all addresses") &&
      !absl::StrContains(message, "connections to all backends failing")) {
    return TlsProblem::kNone;
  }
  const auto has = [&message](absl::string_view a, absl::string_view b) {
    return absl::StrContains(message, a) || absl::StrContains(message, b);
  };
  if (has("wrong version number", "wrong_version_number")) return TlsProblem::kPlaintextServer;
  if (has("certificate verify failed", "certificate_verify_failed")) return TlsProblem::kUntrusted;
  if (absl::StrContains(message, "socket closed")) return TlsProblem::kClosedAtOnce;
  if (absl::StrContains(message, "handshake failed")) return TlsProblem::kHandshake;
  return TlsProblem::kNone;
}

}  // namespace

std::string TlsMismatchHint(const absl::Status& status) {
  switch (ClassifyTls(status)) {
    case TlsProblem::kPlaintextServer:
      return "the coordinator answers in plaintext: give --insecure (or TUNEFLEET_INSECURE=1) "
             "if it was started with --insecure";
    case TlsProblem::kUntrusted:
      return "the coordinator's certificate was not accepted (not signed by the CA of "
             "--ca-file, TUNEFLEET_CA_FILE or the context's ca_file, else the system's roots; "
             "or expired)";
    case TlsProblem::kClosedAtOnce:
      return "the coordinator closed the connection at once: if it expects TLS, drop "
             "--insecure (TUNEFLEET_INSECURE) and give its CA with --ca-file";
    case TlsProblem::kHandshake:
      return "the TLS handshake with the coordinator failed: check --ca-file and --insecure";
    case TlsProblem::kNone:
      break;
  }
  return "";
}

int ExitCodeForStatus(const absl::Status& status) {
  // A socket closed at once may also be a coordinator restarting: "retry".
  const TlsProblem tls = ClassifyTls(status);
  if (tls != TlsProblem::kNone && tls != TlsProblem::kClosedAtOnce) return kExitTls;
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
