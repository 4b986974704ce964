// ArtifactSharing: a Compiler that compiles each config once for the fleet.
// Before compiling, it asks the coordinator for the artifact the worker's
// principal may already have shared under the config's key
// (server/shared_artifacts.h); after compiling, it shares what it made.
//
// | the config's artifact                      | Compile                                     |
// |--------------------------------------------|---------------------------------------------|
// | in this worker's cache                     | the backend's cache hit (cached)            |
// | shared by the principal                    | written to the cache, then a hit (fetched)  |
// | nowhere                                    | compiled, then shared (Put)                 |
// | backend not shareable (Locate: nullopt)    | the backend's Compile, nothing shared       |
// | own build (CompileJob.own_build)           | compiled here unless compiled here before   |
// |                                            | (a fetched copy is built again in place:    |
// |                                            | CompileJob.rebuild), then published         |
// | unshared by the coordinator (SetUnshared)  | a fetched copy built again; nothing fetched |
// |                                            | or published                                |
//
// An own build is how a poisoned artifact is caught: the leases whose
// measurements decide the served best, and audit builds drawn among the
// others, compile from the sources, and the coordinator compares what they
// publish with what it shares under the key (a conflict: the key is shared
// no more). A fetched artifact is marked (`<artifact>.fetched`) so that an
// own build knows it from one compiled here; one whose sources do not
// compile here is removed. Compiles of one key take turns (fetch, build,
// publish), so none fetches over what another builds.
//
// Sharing never fails a compile: when the coordinator cannot be reached or
// refuses, the config is compiled (or the artifact kept) here, and the
// failure is logged once per kind.
#ifndef TUNEFLEET_WORKER_ARTIFACT_SHARING_H_
#define TUNEFLEET_WORKER_ARTIFACT_SHARING_H_

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/key_locks.h"

#include "absl/status/statusor.h"
#include "worker/backend.h"
#include "worker/coordinator.h"

namespace tunefleet::worker {

// Thread-safety: as the wrapped Compiler (Compile from many threads).
class ArtifactSharing final : public Compiler {
 public:
  // REQUIRES: `compiler` and `coordinator` outlive this.
  ArtifactSharing(Compiler* compiler, Coordinator* coordinator)
      : compiler_(compiler), coordinator_(coordinator) {}

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  std::optional<ArtifactLocation> Locate(const CompileJob& job) const override {
    return compiler_->Locate(job);
  }
  std::string toolkit() const override { return compiler_->toolkit(); }

  // The keys the coordinator shares no more for this principal (its
  // heartbeat's answer): a fetched copy of one is built again before it is
  // used, and nothing of them is fetched or published.
  void SetUnshared(std::vector<std::string> keys);

  // Artifacts fetched from and shared with the coordinator so far.
  int64_t fetched() const { return fetched_.load(); }
  int64_t shared() const { return shared_.load(); }

 private:
  // Writes the principal's artifact of `where` into this worker's cache;
  // false when there is none to fetch.
  bool Fetch(const ArtifactLocation& where);
  // Publishes the artifact `job` compiled at `where`.
  void Share(const CompileJob& job, const ArtifactLocation& where);

  Compiler* const compiler_;
  Coordinator* const coordinator_;
  std::atomic<int64_t> fetched_{0};
  std::atomic<int64_t> shared_{0};
  std::atomic<bool> warned_fetch_{false};
  std::atomic<bool> warned_share_{false};
  KeyLocks building_;  // one Compile of a key at a time: fetch, build, publish
  mutable absl::Mutex unshared_mu_;
  absl::flat_hash_set<std::string> unshared_ ABSL_GUARDED_BY(unshared_mu_);
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_ARTIFACT_SHARING_H_
