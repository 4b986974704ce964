// The python backend's compile servers: long-lived
// `python -m tunefleet.backend.compile --serve` processes that import torch
// and triton once and then compile one config after another, each a
// PythonCompileRequest frame on the server's stdin answered by a
// PythonCompileResult frame on its stdout (the framing of
// worker/child_protocol.h). Starting an interpreter, importing torch and
// initializing CUDA costs seconds; Triton compiles a matmul config in a
// fraction of that, so the worker pays the start once per server instead of
// once per config.
//
// Policy, enforced here:
//   - A server is bound to the staged source directory of its first request
//     and serves only requests of that directory afterwards: one kernel's
//     code never runs in a process that compiles another kernel. A request
//     for another directory retires an idle server bound elsewhere (killed,
//     a fresh one started in its place) or starts a new one.
//   - A server that does not answer by the request's deadline is killed
//     (its process group) and the request is timed_out; a server that dies
//     (a signal, an exit, an unreadable answer) fails its request with the
//     exit and the tail of the server's stderr (faulthandler's traceback).
//     Either way the server is gone and a fresh one is started in its place.
//   - Every server runs under the pool's sandbox with ProcessSandboxPolicy
//     and a scratch directory of its own, writable: its working directory,
//     where its requests' artifacts are written, and where the pool copies
//     the staged sources it is bound to (it never sees other kernels'
//     sources).
//   - Servers are started with the compiler (Prestart), which waits for
//     their imports, so that the worker registers with the coordinator
//     only once it can compile at full speed; more are started on demand
//     when every server is busy (there are as many as requests run at once,
//     the daemon's compile pool size), and one in place of every server
//     that died, timed out or was retired.
#ifndef TUNEFLEET_WORKER_PYTHON_COMPILE_SERVER_H_
#define TUNEFLEET_WORKER_PYTHON_COMPILE_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "worker/python/python_backend.h"
#include "worker/sandbox.h"

namespace tunefleet::worker::python {

struct CompileServerOptions {
  PythonInfo info;
  Sandbox sandbox;
  // Each server's scratch directory is made under it.
  std::string scratch_root;
  // A request not answered in time kills its server.
  absl::Duration timeout = absl::Seconds(60);
};

struct ServedCompile {
  int code = 0;            // PythonCompileResult.code; meaningless when !answered
  bool answered = false;   // false: the server timed out or died
  bool timed_out = false;  // killed at the deadline
  std::string log;         // the compile's log, or why the server is gone
  std::string output;      // the artifact (code 0), under scratch_root: the caller's
  double seconds = 0;      // wall time, the wait for a server included
};

// Thread-safety: thread-safe; Compile runs on several threads at once.
class CompileServerPool {
 public:
  explicit CompileServerPool(CompileServerOptions options);
  // Kills every server.
  ~CompileServerPool();
  CompileServerPool(const CompileServerPool&) = delete;
  CompileServerPool& operator=(const CompileServerPool&) = delete;

  // Starts `count` idle, unbound servers now and waits until each has
  // imported torch and triton (its ready frame), `wait` at most; one that is
  // not ready by then is killed. With a zero `wait` it does not wait (the
  // first request does). Errors are logged; Compile starts servers on demand
  // anyway.
  void Prestart(int count, absl::Duration wait);

  // Runs `request` on a server bound to its source_dir (the staged
  // sources, copied into the server's scratch when it binds; its output is
  // set here). Non-OK only when no server could be started or the sources
  // could not be copied.
  absl::StatusOr<ServedCompile> Compile(v1::PythonCompileRequest request);

  // How many servers were started so far (for tests and the log).
  int started() const;

 private:
  struct Server;

  absl::StatusOr<std::unique_ptr<Server>> Start();
  // Reads the server's ready frame once. DeadlineExceeded, Unavailable (it
  // died) or DataLoss.
  static absl::Status AwaitReady(Server& server, absl::Time deadline);
  // An idle server for `source_dir`, or a new one.
  absl::StatusOr<std::unique_ptr<Server>> Acquire(const std::string& source_dir);
  void Release(std::unique_ptr<Server> server);
  // Ends `server` and starts an unbound one in its place.
  void Replace(std::unique_ptr<Server> server);

  const CompileServerOptions options_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Server>> idle_ ABSL_GUARDED_BY(mu_);
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> outputs_{0};
};

}  // namespace tunefleet::worker::python

#endif  // TUNEFLEET_WORKER_PYTHON_COMPILE_SERVER_H_
