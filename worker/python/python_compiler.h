// The python backend's Compiler: each config is compiled by one of the
// worker's long-lived compile servers (compile_server.h: in the options'
// sandbox, with the options' time limit, started when the compiler is
// created, as many as PythonInfo::compile_servers), called from the
// daemon's compile pool, so that as many configs compile at once as the
// pool has threads (Triton compiles one kernel on one thread). The server
// packs the kernel's sources into the artifact, a zip the benchmark child
// imports from, calls the spec's build(config, shape) and warms the worker's
// Triton cache (TRITON_CACHE_DIR) with what that launches, compile-only. A
// config whose build raises or whose Triton kernel does not compile is a
// failed compile (COMPILE_ERROR) with the traceback and Triton's message as
// its log. Artifacts are cached on disk by ArtifactKey (the toolkit, device
// model, sources, entry, config and shape), so a re-run never recompiles.
#ifndef TUNEFLEET_WORKER_PYTHON_PYTHON_COMPILER_H_
#define TUNEFLEET_WORKER_PYTHON_PYTHON_COMPILER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/artifact_cache.h"
#include "worker/backend.h"
#include "worker/python/compile_server.h"
#include "worker/python/python_backend.h"

namespace tunefleet::worker::python {

// Thread-safety: thread-safe (Compile runs on several threads at once).
class PythonCompiler : public Compiler {
 public:
  // InvalidArgument when options.cache_dir is empty.
  static absl::StatusOr<std::unique_ptr<PythonCompiler>> Create(const CompilerOptions& options,
                                                                const PythonInfo& info);

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  // "python 3.12.3 triton 3.4.0 torch 2.8.0"
  std::string toolkit() const override { return info_.toolkit; }

 private:
  PythonCompiler(CompilerOptions options, PythonInfo info);

  const CompilerOptions options_;
  const PythonInfo info_;
  ArtifactCache cache_;
  const std::unique_ptr<CompileServerPool> servers_;
};

}  // namespace tunefleet::worker::python

#endif  // TUNEFLEET_WORKER_PYTHON_PYTHON_COMPILER_H_
