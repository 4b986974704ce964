// SharedArtifacts: the coordinator's shelf of compiled configs (cubins,
// shared objects) that workers publish so that other workers fetch instead of
// compiling (docs/architecture.md, "Compile once").
//
// The rules, enforced here and nowhere else:
// - An artifact is named by the worker's artifact key (worker/artifact_cache.h:
//   the SHA-256 of the sources, options, target arch and compiler version),
//   64 lowercase hex digits; anything else is InvalidArgument.
// - Artifacts belong to the principal that published them and are served only
//   to workers of that principal. A principal is the unit of trust (one host,
//   or every host holding one certificate identity): code compiled by one
//   principal never runs on another's devices, so a best verified by another
//   principal is measured from that principal's own compile.
// - The one exception is a builder: a principal the operator names
//   (`--artifact-builders`, typically compile-only workers on CPU hosts)
//   whose artifacts every principal is served when it has none of its own.
//   The operator trusts a builder as it trusts the compiler.
// - The shelf is a cache, not a record: at most `capacity_bytes` on disk; a
//   publish beyond it evicts the least recently used artifacts of the
//   principals that hold more than their fair share (capacity / the
//   principals on the shelf), so that one principal's publishes never evict
//   the artifacts of another that holds no more than its share. A lost
//   artifact costs a compile, nothing else. An artifact over
//   `max_artifact_bytes` is refused (InvalidArgument).
// - The key names the bytes: compiles are deterministic, so every publish of
//   a key must carry the content already shared under it (the publisher's
//   own, else the builder's it would be served). One that does is
//   acknowledged (kept as the publisher's own copy where it had none). One
//   that does not is a **conflict**: one side published bytes the key's
//   sources do not compile to (a poisoned artifact), or built them with
//   another toolchain. The publisher's principal shares the key no more:
//   its copy is dropped, it is not served the key (not even a builder's
//   copy, which the other principals keep), a later publish of it is
//   FailedPrecondition, and the conflict is logged and counted
//   (tunefleet_coordinator_artifact_conflicts_total), kept across restarts
//   until Purge. The compare and the write of a key are one step (no other
//   publish of that key in between). A principal with 1024 conflicts is
//   refused further publishes (ResourceExhausted) until Purge.
//   Which publishes the shelf takes at all (only for leased work) is the
//   worker service's rule.
//
// On disk: <dir>/<SHA-256 of the principal, 16 hex digits>/<key>, each file a
// serialized v1::Artifact written with an atomic rename; a conflicted name
// is an empty file <dir>/conflicts/<principal digest>/<key>, written before
// the copy is removed. Open() indexes
// what an earlier run left.
#ifndef TUNEFLEET_SERVER_SHARED_ARTIFACTS_H_
#define TUNEFLEET_SERVER_SHARED_ARTIFACTS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/key_locks.h"
#include "server/metrics.h"
#include "tunefleet/v1/worker_service.pb.h"

namespace tunefleet::server {

// Who publishes an artifact: its principal owns it; the worker and the job
// it compiled for are named when its key turns out to conflict.
struct ArtifactPublisher {
  std::string principal;
  std::string worker_id;
  std::string job_id;
};

struct SharedArtifactsOptions {
  std::string dir;  // created when missing
  // 0 turns sharing off: Get is FailedPrecondition, Put drops the artifact.
  int64_t capacity_bytes = int64_t{4} << 30;
  int64_t max_artifact_bytes = int64_t{16} << 20;  // under the gRPC message limit
  // Principals whose artifacts serve every principal (in this order, after
  // the asker's own).
  std::vector<std::string> builders;
};

// Thread-safety: safe for concurrent use. One lock guards the index; file
// reads and writes happen outside it.
class SharedArtifacts {
 public:
  // Indexes the artifacts an earlier run left under options.dir.
  // Unavailable when the directory cannot be made or read. `metrics` (may be
  // null; must outlive the shelf) hears of its size and of each Get.
  static absl::StatusOr<std::unique_ptr<SharedArtifacts>> Open(
      SharedArtifactsOptions options, CoordinatorMetrics* metrics = nullptr);

  // Shelves `artifact` as `publisher.principal`'s `key`, or compares it
  // with the copy already shared under the key (see the rules above).
  // InvalidArgument for a bad key or an oversized artifact; FailedPrecondition
  // for a conflict, now or before; Unavailable when the disk refuses it.
  absl::Status Put(const ArtifactPublisher& publisher, const std::string& key,
                   const v1::Artifact& artifact) ABSL_LOCKS_EXCLUDED(publish_mu_, mu_);
  // `principal`'s artifact `key`, else a builder's. NotFound when neither
  // published one (or it was evicted); InvalidArgument for a bad key;
  // FailedPrecondition when sharing is off.
  absl::StatusOr<v1::Artifact> Get(const std::string& principal, const std::string& key);

  // Drops every artifact `principal` published, and forgets its conflicts
  // (tunectl admin invalidate --worker: what a host measured wrong, it may
  // have compiled wrong; once repaired it shares again); the count dropped.
  int64_t Purge(const std::string& principal) ABSL_LOCKS_EXCLUDED(publish_mu_, mu_);

  // The keys `principal` shares no more (its conflicts), at most 1024,
  // sorted: its workers build their fetched copies of them again.
  std::vector<std::string> Unshared(const std::string& principal) const;
  // How many names conflicted, all principals (cheap: no lock).
  int64_t conflicts() const { return conflicts_.load(std::memory_order_relaxed); }

  bool enabled() const { return options_.capacity_bytes > 0; }
  // What the shelf holds now.
  int64_t bytes() const;
  int64_t count() const;

 private:
  struct Entry {
    int64_t bytes = 0;
    uint64_t last_used = 0;  // a use counter: larger is more recent
    // Who published it, for a conflict's log; unknown for what an earlier
    // run left.
    std::string worker_id;
    std::string job_id;
  };

  SharedArtifacts(SharedArtifactsOptions options, CoordinatorMetrics* metrics);
  // Tells the metrics what the shelf holds. REQUIRES: mu_ held.
  void ReportSizeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Index();
  // The file of the artifact named `name` (NameOf).
  std::string PathOf(const std::string& name) const;
  // `principal`'s own artifact `key`: NotFound when it has none.
  absl::StatusOr<v1::Artifact> GetOwn(const std::string& principal, const std::string& key);
  // The name of the copy of `key` that `principal` is served (its own, else
  // a builder's); nullopt when none. REQUIRES: mu_ held.
  std::optional<std::string> ServedNameLocked(const std::string& principal,
                                              const std::string& key) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a conflict between `publisher`'s content for `own` (its name)
  // and the copy `served` (its own, or a builder's): marks `own` conflicted
  // (on disk first), drops it, logs and counts it. A builder's copy stays
  // for the other principals.
  void Conflict(const ArtifactPublisher& publisher, const std::string& key,
                const std::string& own, const std::string& served)
      ABSL_SHARED_LOCKS_REQUIRED(publish_mu_);
  // Sets conflicts_ and conflicts_by_owner_ from conflicted_. REQUIRES: mu_
  // held.
  void CountConflictsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets `name` (the caller deletes its file). REQUIRES: mu_ held.
  void ForgetLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the least recently used entries of the principals over their
  // fair share until the shelf fits `capacity_bytes`; returns their paths,
  // for the caller to delete.
  std::vector<std::string> EvictLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SharedArtifactsOptions options_;
  CoordinatorMetrics* const metrics_;
  // A publish holds it shared, and its key's lock across the compare and
  // the write, so publishes of different keys go on together; a purge
  // holds it exclusive. Taken before mu_.
  absl::Mutex publish_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  KeyLocks publishing_;
  mutable absl::Mutex mu_;
  // By path relative to dir: "<principal digest>/<key>".
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Names ("<principal digest>/<key>") whose publishes conflicted, and how
  // many (kept with it, read without the lock).
  absl::flat_hash_set<std::string> conflicted_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> conflicts_{0};
  // Conflicted names per principal digest: past 1024 its publishes are
  // refused.
  absl::flat_hash_map<std::string, int> conflicts_by_owner_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t uses_ ABSL_GUARDED_BY(mu_) = 0;
};

// OK when `key` is 64 lowercase hex digits.
absl::Status CheckArtifactKey(const std::string& key);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SHARED_ARTIFACTS_H_
