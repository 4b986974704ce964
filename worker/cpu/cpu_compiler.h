// The CPU backend's Compiler: the system C++ compiler, run as a subprocess
// with a time limit (in the options' sandbox, in the job's staged sources
// directory), turns one config into a shared object:
//   <c++> -O3 -march=native -fPIC -shared -std=c++17 <spec compile_options>
//         -D NAME=value... -I . -o <scratch>/out.so <sources, relative>
// compile_options must pass CheckCompileOptions (else a failed compile
// saying which option is refused).
// Artifacts are cached on disk by ArtifactKey, so a re-run never recompiles.
#ifndef TUNEFLEET_WORKER_CPU_CPU_COMPILER_H_
#define TUNEFLEET_WORKER_CPU_CPU_COMPILER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/artifact_cache.h"
#include "worker/backend.h"
#include "worker/compile_log.h"

namespace tunefleet::worker {

// Thread-safety: thread-safe (Compile may run on several threads at once).
class CpuCompiler : public Compiler {
 public:
  // Finds the compiler and reads its version. NotFound when no compiler is
  // installed; InvalidArgument when options.cache_dir is empty.
  static absl::StatusOr<std::unique_ptr<CpuCompiler>> Create(
      const CompilerOptions& options);

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  // Built with -march=native, a shared object is shared only with workers
  // whose CPU reports the same features (the key's target says which).
  std::optional<ArtifactLocation> Locate(const CompileJob& job) const override;
  std::string toolkit() const override { return toolkit_; }

 private:
  CpuCompiler(CompilerOptions options, std::string program, std::string toolkit);
  // A fresh directory for one compile's output, the only place the
  // (sandboxed) compiler may write.
  absl::StatusOr<std::string> MakeScratchDir() const;

  const CompilerOptions options_;
  const std::string program_;  // absolute path
  const std::string toolkit_;  // "g++ 12.2.0"
  ArtifactCache cache_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_CPU_CPU_COMPILER_H_
