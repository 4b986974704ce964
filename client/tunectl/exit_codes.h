// tunectl's exit codes, shared by every verb and documented in --help.
#ifndef TUNEFLEET_CLIENT_TUNECTL_EXIT_CODES_H_
#define TUNEFLEET_CLIENT_TUNECTL_EXIT_CODES_H_

#include <string>

#include "absl/status/status.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitJobFailed = 3,  // job FAILED or CANCELLED, or some trials not OK
  kExitAuth = 4,
  kExitNotFound = 5,  // NOT_FOUND: an unknown job, file, kernel or device model
  kExitUnavailable = 6,  // unavailable or deadline exceeded: retry
  kExitTls = 7,  // TLS against plaintext, plaintext against TLS, an untrusted certificate
  kExitInterrupted = 130,
};

// The --help footer listing the codes above.
extern const char kExitCodeHelp[];

// What to change when `status` is a connection that never came up because
// of TLS settings rather than an absent coordinator (TLS to a plaintext
// port, plaintext to a TLS port, a certificate the CA file does not trust);
// "" for any other status. Each but the plaintext-to-TLS case (a socket
// closed at once, which a restarting coordinator also gives) exits
// kExitTls.
std::string TlsMismatchHint(const absl::Status& status);

// The exit code for a failed call (kExitOk for OK). CANCELLED reads as
// interrupted: tunectl cancels calls only on SIGINT.
int ExitCodeForStatus(const absl::Status& status);

// kExitOk for a job that SUCCEEDED with every trial OK, else kExitJobFailed.
// REQUIRES: IsFinal(job.state).
int ExitCodeForJob(const Job& job);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_EXIT_CODES_H_
