// The on-disk artifact cache: compiled configs (shared objects, cubins) named
// by the SHA-256 of everything that decides their bytes, so a re-run of the
// same config never recompiles.
#ifndef TUNEFLEET_WORKER_ARTIFACT_CACHE_H_
#define TUNEFLEET_WORKER_ARTIFACT_CACHE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunefleet::worker {

// What decides an artifact's bytes. Every field takes part in the key.
struct ArtifactKeyInputs {
  std::string backend;   // "cpu", "cuda"
  std::string toolkit;   // compiler name and version: "g++ 12.2.0"
  std::string target;    // what the code is built for: CPU model, "sm_90"
  // (path, SHA-256) of every source that may take part (headers included).
  std::vector<std::pair<std::string, std::string>> sources;
  std::vector<std::string> compile_files;  // the sources passed to the compiler
  std::string entry;
  std::vector<std::string> options;  // compiler flags, in order
  std::vector<std::pair<std::string, int64_t>> macros;  // -D NAME=value, in order
  bool reference = false;
};

// Lowercase hex SHA-256 of a canonical text of `inputs`. Stable across runs
// and machines (the version prefix changes only with this format).
std::string ArtifactKey(const ArtifactKeyInputs& inputs);

// Thread-safety: thread-safe; writers publish with an atomic rename, so a
// reader never sees a partial artifact.
class ArtifactCache {
 public:
  // REQUIRES: `dir` is writable (created when missing).
  explicit ArtifactCache(std::string dir) : dir_(std::move(dir)) {}

  // The path an artifact of `key` with file `suffix` (".so") has.
  std::string PathFor(const std::string& key, const std::string& suffix) const;
  // True when the artifact exists.
  bool Contains(const std::string& path) const;
  // A fresh temporary path in the same directory as `final_path` (same file
  // system, so Publish can rename it). Creates the directory.
  absl::StatusOr<std::string> TempPathFor(const std::string& final_path) const;
  // Moves `temp_path` to `final_path` atomically.
  absl::Status Publish(const std::string& temp_path, const std::string& final_path) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_ARTIFACT_CACHE_H_
