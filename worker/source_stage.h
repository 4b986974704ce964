// A compile job's sources as files on disk, for compilers that run a program
// over a directory (the CPU backend's g++, the python backend's compile
// servers).
#ifndef TUNEFLEET_WORKER_SOURCE_STAGE_H_
#define TUNEFLEET_WORKER_SOURCE_STAGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/artifact_cache.h"

namespace tunefleet::worker {

// Writes `sources` once into <cache_dir>/sources/<digest of their paths and
// digests>/ and returns that directory; a later call with the same sources
// returns it at once. Written into a temporary directory of `cache` and
// renamed, so concurrent callers never see a partial tree. InvalidArgument
// for a source path that is empty, absolute or contains "..".
absl::StatusOr<std::string> StageSources(const std::string& cache_dir,
                                         const ArtifactCache& cache,
                                         const std::vector<v1::SourceFile>& sources);

// Removes a directory tree when it goes out of scope (nothing for "").
struct ScopedRemove {
  std::string dir;
  ~ScopedRemove();
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_SOURCE_STAGE_H_
