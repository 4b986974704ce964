// Sweeps: one kernel, strategy and budget tuned over many shapes from one
// submission, as serving engines tune a kernel for every batch size they
// run. A sweep is one job per shape, each with its own tuning key and best,
// all carrying the sweep's id (JobSpec.sweep_id, Job.sweep_id, ListJobs by
// sweep). No scheduling of its own is needed: the JobManager leases the
// trials of every unfinished job to whichever device asks, so a sweep's
// shapes are one pool of work over the fleet, and a benchmark child serves
// the kernel's code across them (TrialExecutor::ServeCode).
#ifndef TUNEFLEET_SERVER_SWEEPS_H_
#define TUNEFLEET_SERVER_SWEEPS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/job_manager.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// What a sweep submission made.
struct SweepGrant {
  std::string sweep_id;
  std::vector<v1::Job> jobs;  // one per shape, in the order given
};

// Submits sweeps through the JobManager. Thread-safety: safe for concurrent
// use (it holds no state of its own).
class SweepSubmitter {
 public:
  static constexpr int kMaxShapes = 1024;

  // REQUIRES: `jobs` outlives the submitter.
  explicit SweepSubmitter(JobManager* jobs) : jobs_(jobs) {}

  // Submits `spec` once per shape of `shapes`, owned by `owner`, all or none:
  // every shape is normalized against the spec before any job is made, and
  // when a job cannot be made (a quota, the store) the jobs made before it
  // are cancelled and its error returned. InvalidArgument for no shape, a
  // spec with a shape of its own, a shape the spec refuses (named with its
  // position) or a shape given twice; ResourceExhausted over kMaxShapes;
  // otherwise as JobManager::Submit.
  absl::StatusOr<SweepGrant> Submit(const v1::JobSpec& spec,
                                    const std::vector<v1::Shape>& shapes,
                                    const std::string& owner);

 private:
  // The shapes normalized (NormalizeShape), each once; errors as Submit's.
  static absl::StatusOr<std::vector<v1::Shape>> CheckShapes(
      const v1::JobSpec& spec, const std::vector<v1::Shape>& shapes);

  JobManager* const jobs_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SWEEPS_H_
