// The JobRepository: jobs written to and read back from the store, in the
// coordinator's own persisted model (a spec without source contents and a
// v1::StoredJob), not in the shape clients see.
#ifndef TUNEFLEET_SERVER_JOB_REPOSITORY_H_
#define TUNEFLEET_SERVER_JOB_REPOSITORY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/store.h"
#include "tunefleet/v1/job_record.pb.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// One version of a job as persisted.
struct JobSnapshot {
  v1::JobSpec spec;  // sources carry digests; contents are SourceBlobs'
  v1::StoredJob stored;
  // Versions of one job only grow; an older snapshot never overwrites a
  // newer one.
  int64_t version = 0;

  const std::string& id() const { return stored.last_view().id(); }
  v1::JobState state() const { return stored.last_view().state(); }
};

// True for SUCCEEDED, FAILED and CANCELLED: the job will not change again.
bool IsFinal(v1::JobState state);

// The stop reason a job's state decides: CANCELLED and FAILED for those
// states, else UNSPECIFIED (its targets' stop reasons decide).
v1::StopReason StopReasonOfState(v1::JobState state);

// Makes `snapshot` its job's next version, a final one: `state` (REQUIRES:
// IsFinal) for `reason`, updated at `now`, with the stop reason
// StopReasonOfState decides where it decides one.
void MarkFinal(JobSnapshot* snapshot, v1::JobState state, std::string reason, absl::Time now);

// Thread-safety: safe for concurrent use. Writes of one repository are
// serialized by a lock of its own, held across the store call; no other
// component waits on it.
class JobRepository {
 public:
  explicit JobRepository(Store* store);

  // Writes `snapshot`, unless a newer version of the job was written, or
  // `still_current` (called under this repository's lock, so no other write
  // of the repository comes between it and this one) says it is outdated.
  // Errors are the store's (Unavailable: retry later).
  absl::Status Save(const JobSnapshot& snapshot,
                    const std::function<bool()>& still_current = nullptr);
  // NotFound for an unknown id.
  absl::StatusOr<JobSnapshot> Load(const std::string& id);
  // Every QUEUED or RUNNING job, oldest first; a row that cannot be parsed
  // goes to `failures` with the reason.
  struct Unfinished {
    std::vector<JobSnapshot> jobs;
    std::vector<std::pair<JobRecord, std::string>> failures;
  };
  absl::StatusOr<Unfinished> LoadUnfinished();
  // The client view of the jobs `query` selects, as last persisted.
  absl::StatusOr<std::vector<v1::Job>> ListViews(const JobQuery& query);

  // The persisted model of a record; DataLoss when it cannot be parsed.
  // Records written by older coordinators (a v1::Job in `targets`, sources
  // with contents) are converted.
  static absl::StatusOr<JobSnapshot> FromRecord(const JobRecord& record);

 private:
  Store* const store_;
  absl::Mutex mu_;
  // Last version written of each job that is not final.
  absl::flat_hash_map<std::string, int64_t> written_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_JOB_REPOSITORY_H_
