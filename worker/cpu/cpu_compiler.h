// The CPU backend's Compiler: the system C++ compiler, run as a subprocess
// with a time limit, turns one config into a shared object:
//   <c++> -O3 -march=native -fPIC -shared -std=c++17 <spec compile_options>
//         -D NAME=value... -I <staged sources> -o <artifact> <sources>
// Artifacts are cached on disk by ArtifactKey, so a re-run never recompiles.
#ifndef TUNEFLEET_WORKER_CPU_CPU_COMPILER_H_
#define TUNEFLEET_WORKER_CPU_CPU_COMPILER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/artifact_cache.h"
#include "worker/backend.h"

namespace tunefleet::worker {

// Compiler output kept in a CompileOutcome log; longer logs keep their head
// and tail.
inline constexpr size_t kMaxCompileLogBytes = 8192;

// Trims `log` to at most about `max_bytes`, keeping the head (the first
// errors) and the tail, with a marker saying how much was cut.
std::string TrimLog(const std::string& log, size_t max_bytes = kMaxCompileLogBytes);

// Thread-safety: thread-safe (Compile may run on several threads at once).
class CpuCompiler : public Compiler {
 public:
  // Finds the compiler and reads its version. NotFound when no compiler is
  // installed; InvalidArgument when options.cache_dir is empty.
  static absl::StatusOr<std::unique_ptr<CpuCompiler>> Create(
      const CompilerOptions& options);

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  std::string toolkit() const override { return toolkit_; }

 private:
  CpuCompiler(CompilerOptions options, std::string program, std::string toolkit);
  // Writes the job's sources under the cache dir once per set of digests;
  // returns the directory.
  absl::StatusOr<std::string> StageSources(const CompileJob& job) const;

  const CompilerOptions options_;
  const std::string program_;  // absolute path
  const std::string toolkit_;  // "g++ 12.2.0"
  ArtifactCache cache_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_CPU_CPU_COMPILER_H_
