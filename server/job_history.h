// The JobHistory: what clients read of past and present jobs, a page at a
// time: jobs by state, kernel and owner, and every stored trial of a job with
// its failure reason.
#ifndef TUNEFLEET_SERVER_JOB_HISTORY_H_
#define TUNEFLEET_SERVER_JOB_HISTORY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/job_manager.h"
#include "server/store/store.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// Which jobs to list. Page tokens are opaque to clients.
struct JobListRequest {
  int state = 0;  // v1::JobState number; 0: any
  std::string kernel_name;
  std::string owner;
  std::string sweep_id;    // "": any; else the jobs of this sweep
  // "": any; else only jobs with a target on this device model. The filter
  // applies to the page read, which may then hold fewer than page_size jobs.
  std::string device_model;
  int page_size = 100;     // REQUIRES: 1..kMaxJobPageSize
  std::string page_token;  // "": the newest
};

struct JobListPage {
  std::vector<v1::Job> jobs;
  std::string next_page_token;  // "" on the last page
};

// Which trials of a job to list, in the order they were stored.
struct TrialListRequest {
  std::string job_id;
  int status = 0;  // v1::TrialStatus number; 0: any
  int page_size = 1000;  // REQUIRES: 1..kMaxTrialPageSize
  std::string page_token;
};

struct TrialListPage {
  std::vector<v1::TrialRecord> trials;
  std::string next_page_token;  // "" on the last page
};

inline constexpr int kMaxJobPageSize = 1000;
inline constexpr int kMaxTrialPageSize = 10000;

// Thread-safety: safe for concurrent use; holds no state of its own.
class JobHistory {
 public:
  // Both must outlive the history.
  JobHistory(Store* store, JobManager* jobs);

  // InvalidArgument for a page token this coordinator did not issue.
  absl::StatusOr<JobListPage> ListJobs(const JobListRequest& request);
  // NotFound for an unknown job; InvalidArgument for a bad page token.
  absl::StatusOr<TrialListPage> ListTrials(const TrialListRequest& request);

 private:
  Store* const store_;
  JobManager* const jobs_;
};

// The name of a trial round as clients see it: "search", "finalists", "verify".
const char* RoundName(TrialRound round);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_JOB_HISTORY_H_
