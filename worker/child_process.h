// The daemon's handle on one benchmark child process: starts it on demand,
// sends one request at a time and tells an answer from a death or a hang.
#ifndef TUNEFLEET_WORKER_CHILD_PROCESS_H_
#define TUNEFLEET_WORKER_CHILD_PROCESS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "worker/child_protocol.h"
#include "worker/sandbox.h"

namespace tunefleet::worker {

struct ChildOptions {
  // The child's command line: `<worker binary> --child --backend=<name>`.
  // REQUIRES: non-empty.
  std::vector<std::string> argv;
  // Added to the child's environment (ChildEnvironment(device)).
  std::vector<std::pair<std::string, std::string>> env;
  // Where the child runs: default unsandboxed; the worker's --sandbox makes
  // it bwrap, with `policy` (ChildSandboxPolicy: the worker binary and the
  // inbox read-only, the GPUs for CUDA).
  Sandbox sandbox;
  SandboxPolicy policy;
  // When set, the only artifacts the child can see: each artifact a request
  // names is hard-linked (or copied) into this directory and the request
  // rewritten to point there; it is emptied whenever a child starts.
  // Default empty: artifact paths are passed as they are.
  std::string inbox;
};

// How one request ended.
struct ChildReply {
  enum class Kind {
    kAnswered,  // `response` holds the child's answer
    kDied,      // the child ended before answering: `exit` says how
    kTimedOut,  // no answer by the deadline: the child was SIGKILLed
  };
  Kind kind = Kind::kAnswered;
  v1::ChildResponse response;
  ExitInfo exit;
  std::string detail;  // for kDied: "killed by SIGSEGV", a protocol error...
};

// Thread-safety: not thread-safe; one executor thread owns it. The child
// leads its own process group (a terminal's Ctrl-C reaches only the daemon,
// which then finishes its trial) and is killed (PDEATHSIG) when the thread
// that started it ends: the device's lease loop, which lives as long as the
// daemon serves that device.
class BenchChildProcess {
 public:
  explicit BenchChildProcess(ChildOptions options);
  // Stop().
  ~BenchChildProcess();

  // Sends `request`, starting the child first when none runs, and waits for
  // the answer until `deadline`. After kDied or kTimedOut, or an answer
  // with `exiting`, the child is gone and the next Call starts a fresh one.
  // Non-OK when the child cannot be started at all, and Cancelled once
  // Interrupt was called (a call in progress kills the child first).
  absl::StatusOr<ChildReply> Call(const v1::ChildRequest& request, absl::Duration deadline);

  // Starts the child now when none runs, so that its start-up (seconds for
  // a Python child importing torch and initializing CUDA) overlaps with what
  // the daemon does before its first Call. Errors as Call's.
  absl::Status StartIfStopped();

  // Makes the Call in progress, and every later one, end at once with
  // Cancelled, killing the child. For a daemon that must stop while a child
  // spins. Thread-safe, async-signal-safe; irreversible.
  void Interrupt();

  // Closes the child's stdin (it exits at EOF), waits up to `grace`, then
  // kills it.
  void Stop(absl::Duration grace = absl::Seconds(2));

  bool running() const { return process_ != nullptr; }
  // How many children were started so far.
  int starts() const { return starts_; }

 private:
  absl::Status Start();
  bool interrupted() const;
  // Puts the artifacts `request` names into the inbox and points it there.
  absl::Status Deliver(v1::ChildRequest* request) const;
  // Reaps the child after it closed its pipe (or failed a write).
  ChildReply Died(std::string detail);

  const ChildOptions options_;
  const int wake_fd_;  // an eventfd, readable once interrupted
  std::unique_ptr<Subprocess> process_;
  std::unique_ptr<MessageReader> reader_;
  int starts_ = 0;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_CHILD_PROCESS_H_
