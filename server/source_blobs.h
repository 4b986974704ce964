// SourceBlobs: the source files of submitted jobs, by content digest. The
// store keeps every blob; memory keeps a blob only while a live job holds it,
// and loads any other on demand.
#ifndef TUNEFLEET_SERVER_SOURCE_BLOBS_H_
#define TUNEFLEET_SERVER_SOURCE_BLOBS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/store.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// `spec` without its sources' contents (names and digests stay), as live
// jobs keep it: SourceBlobs holds the contents.
std::shared_ptr<const v1::JobSpec> WithoutContents(v1::JobSpec spec);

// Thread-safety: safe for concurrent use. Save and Get may block on the
// store; no lock is held across a store call.
class SourceBlobs {
 public:
  explicit SourceBlobs(Store* store);

  // Stores the sources of `spec` (contents present) in one transaction.
  absl::Status Save(const v1::JobSpec& spec);
  // Keeps the contents of `spec`'s sources in memory until the matching
  // Release (a live job holds them). Sources without content are loaded
  // from the store on first Get.
  void Hold(const v1::JobSpec& spec);
  // Drops one hold on each source of `spec`.
  void Release(const v1::JobSpec& spec);
  // The content of `digest`: from memory when held, else from the store.
  // NotFound when no job ever sent it.
  absl::StatusOr<std::string> Get(const std::string& digest);
  // Blobs held in memory.
  size_t held() const;

 private:
  struct Entry {
    std::string content;  // empty until loaded, for a spec without contents
    bool loaded = false;
    int64_t holds = 0;
  };

  Store* const store_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SOURCE_BLOBS_H_
