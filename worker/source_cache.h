// Kernel sources by SHA-256 digest, fetched from the coordinator once: kept
// in memory and under a directory on disk, so neither a second lease nor a
// restarted worker fetches them again.
#ifndef TUNEFLEET_WORKER_SOURCE_CACHE_H_
#define TUNEFLEET_WORKER_SOURCE_CACHE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// Thread-safety: thread-safe.
class SourceCache {
 public:
  // Fetches a blob's content by digest (Coordinator::GetBlob).
  using Fetch = std::function<absl::StatusOr<std::string>(const std::string& digest)>;

  // `dir`: where blobs are kept on disk (created on first write); empty =
  // memory only.
  SourceCache(std::string dir, Fetch fetch) : dir_(std::move(dir)), fetch_(std::move(fetch)) {}

  // The content of `digest`. DataLoss when the fetched bytes do not hash to
  // the digest; InvalidArgument for a malformed digest; else Fetch's error.
  absl::StatusOr<std::string> Get(const std::string& digest);
  // `files` with their content filled in (content already present is
  // checked against the digest and kept).
  absl::StatusOr<std::vector<v1::SourceFile>> Resolve(
      const google::protobuf::RepeatedPtrField<v1::SourceFile>& files);

  // Calls to Fetch so far.
  int fetches() const;

 private:
  std::string DiskPath(const std::string& digest) const;

  const std::string dir_;
  const Fetch fetch_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> memory_ ABSL_GUARDED_BY(mu_);
  int fetches_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_SOURCE_CACHE_H_
