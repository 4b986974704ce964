// The python backend (BACKEND_PYTHON, docs/python-backend.md): kernels
// written in a Python DSL (Triton, or any torch code). Its work is done by
// the tunefleet.backend Python package (python/tunefleet/backend), run by
// one interpreter that has torch and triton installed:
//   - devices and the toolkit come from `python -m tunefleet.backend.probe`
//     (the GPUs torch sees; "python 3.12.3 triton 3.4.0 torch 2.8.0");
//   - the Compiler (python_compiler.h) runs one
//     `python -m tunefleet.backend.compile` process per config in the
//     worker's compile pool, which warms the worker's Triton cache;
//   - the benchmark child is `python -m tunefleet.backend.bench_child`,
//     speaking the same bench_child.proto pipe protocol as the C++ child:
//     the daemon starts `tunefleet-worker --child --backend python` as for
//     every backend, and that process execs the interpreter (ExecBenchChild),
//     so supervision, deadlines, crash classification and respawn are the
//     daemon's, unchanged.
// Every such process gets the same environment (ProcessEnvironment) and,
// under --sandbox=bwrap, the same view (ProcessSandboxPolicy).
#ifndef TUNEFLEET_WORKER_PYTHON_PYTHON_BACKEND_H_
#define TUNEFLEET_WORKER_PYTHON_PYTHON_BACKEND_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/backend.h"
#include "worker/sandbox.h"

namespace tunefleet::worker::python {

struct PythonOptions {
  // The interpreter; searched in PATH when it has no '/'. Default: the
  // environment's TUNEFLEET_PYTHON, else "python3".
  std::string python;
  // The directory holding the tunefleet package with its generated stubs
  // (the build's `python/`), put first on PYTHONPATH. Default: the
  // environment's TUNEFLEET_PYTHON_PACKAGE, else <worker binary dir>/../python
  // (build/bin/tunefleet-worker -> build/python).
  std::string package_dir;
  // The worker's state for Python processes (the Triton cache, TRITON_HOME).
  // REQUIRES: set (the daemon passes <cache-dir>/python).
  std::string state_dir;
  // Compile servers (compile_server.h) started with the compiler; the daemon
  // passes its compile pool size. REQUIRES: >= 1.
  int compile_servers = 1;
};

// What the probe found out about the interpreter.
struct PythonInfo {
  std::string python;       // absolute path of the interpreter
  std::string package_dir;  // absolute
  std::string state_dir;    // absolute
  // "python 3.12.3 triton 3.4.0 torch 2.8.0": part of the tuning key.
  std::string toolkit;
  // Directories the interpreter reads (prefix, stdlib, site-packages),
  // bound read-only in the sandbox.
  std::vector<std::string> paths;
  // The GPUs torch sees (backend BACKEND_PYTHON; id = GPU UUID, model
  // "<name> sm_<cc>", the same limits as the cuda backend's devices).
  std::vector<v1::Device> devices;
  std::vector<std::string> notes;  // why something is missing
  int compile_servers = 1;         // PythonOptions::compile_servers
};

// Runs the probe once and keeps its answer for the process (the daemon calls
// it first, from main, before any other function here). With `devices`
// false the GPUs are not asked for (no CUDA initialized). Thread-safe after
// the first call. InvalidArgument for options that break a REQUIRES above;
// FailedPrecondition when the interpreter or the package is
// missing or the probe fails, with its output.
absl::StatusOr<const PythonInfo*> Configure(const PythonOptions& options, bool devices);
// The configured info, or null before Configure succeeded.
const PythonInfo* Configured();
// The configured info. REQUIRES: Configure succeeded.
const PythonInfo& Info();
// The configured info's devices: FailedPrecondition before Configure,
// NotFound when torch sees no GPU (with the probe's notes).
absl::StatusOr<std::vector<v1::Device>> Devices();

// Parses the probe's output (see python/tunefleet/backend/probe.py). For
// tests. InvalidArgument for a line it cannot read or no toolkit line.
absl::StatusOr<PythonInfo> ParseProbeOutput(const std::string& output);

// PYTHONPATH, TRITON_CACHE_DIR (<state>/triton), TRITON_HOME,
// TILELANG_CACHE_DIR (<state>/tilelang) and TILELANG_TMP_DIR (its tmp/) for
// build functions that compile with TileLang, PYTHONDONTWRITEBYTECODE,
// PYTHONUNBUFFERED, TUNEFLEET_PYTHON (the interpreter, for ExecBenchChild).
std::vector<std::pair<std::string, std::string>> ProcessEnvironment(const PythonInfo& info);

// What a sandboxed Python process sees beyond the system: the interpreter's
// paths and the package read-only, the state dir (the Triton cache)
// writable, the GPUs (/dev/nvidia*, /proc/driver/nvidia, /sys read-only),
// and ProcessEnvironment.
SandboxPolicy ProcessSandboxPolicy(const PythonInfo& info);

// The Compiler (python_compiler.h). FailedPrecondition before Configure.
absl::StatusOr<std::unique_ptr<Compiler>> CreatePythonCompiler(const CompilerOptions& options);

// The benchmark child mode of `tunefleet-worker --child --backend python`:
// replaces this process with `$TUNEFLEET_PYTHON -m
// tunefleet.backend.bench_child` (stdin/stdout, the protocol pipes, stay),
// after asking the kernel to kill it with its parent; `log_format` (the
// daemon's --log-format) goes on in TUNEFLEET_LOG_FORMAT, so that the
// interpreter's output reaches the daemon's log in its format
// (tunefleet/backend/child_log.py). Returns only when the exec failed
// (kChildExitNoBackend).
int ExecBenchChild(const std::string& log_format);

}  // namespace tunefleet::worker::python

#endif  // TUNEFLEET_WORKER_PYTHON_PYTHON_BACKEND_H_
