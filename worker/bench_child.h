// The benchmark child's side of the pipe protocol: a loop that serves
// ChildRequests with one KernelRunner until the daemon closes the pipe.
//
// Command line: `tunefleet-worker --child --backend=cpu|cuda`, stdin and
// stdout being the protocol pipes (the daemon pins a GPU child with
// CUDA_VISIBLE_DEVICES). Kernel code that prints to stdout cannot corrupt the
// protocol: the child moves the protocol to a private descriptor and points
// fd 1 at stderr.
#ifndef TUNEFLEET_WORKER_BENCH_CHILD_H_
#define TUNEFLEET_WORKER_BENCH_CHILD_H_

#include <string>
#include <vector>

#include "worker/backend.h"

namespace tunefleet::worker {

// Exit codes of a benchmark child.
inline constexpr int kChildExitOk = 0;         // the daemon closed the pipe
inline constexpr int kChildExitPoisoned = 3;   // a runner reported CRASHED/TIMEOUT
inline constexpr int kChildExitProtocol = 4;   // unreadable request
inline constexpr int kChildExitNoBackend = 5;  // no runner for the backend

// Serves requests read from `in_fd` with `runner`, answering on `out_fd`,
// until EOF. A Run whose result is CRASHED or TIMEOUT (the runner's process
// is poisoned) is answered with `exiting` set and ends the loop. Returns the
// exit code.
int ServeBenchChild(KernelRunner* runner, int in_fd, int out_fd);

// The child mode's main: dies with its parent, redirects stdout as above,
// creates the backend's runner and serves stdin/stdout. Returns the exit code.
int BenchChildMain(v1::Backend backend);

// The command that starts a benchmark child of `backend`: the worker binary
// `worker_binary` in child mode (`--child`), which runs BenchChildMain (the
// python backend: execs the interpreter), logging in `log_format` as the
// daemon does.
std::vector<std::string> BenchChildCommand(const std::string& worker_binary,
                                           v1::Backend backend,
                                           const std::string& log_format);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_BENCH_CHILD_H_
