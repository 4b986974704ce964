// What every Store shares: the single-trial convenience over InsertTrials.
#include "server/store/store.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunefleet::server {

absl::StatusOr<bool> Store::InsertTrial(const TrialRecord& trial) {
  ASSIGN_OR_RETURN(std::vector<bool> inserted, InsertTrials({trial}));
  if (inserted.size() != 1) {
    return absl::InternalError(absl::StrCat(
        "InsertTrials answered ", inserted.size(), " results for one trial"));
  }
  return inserted.front();
}

absl::Status CheckFilter(const TrialFilter& filter) {
  if (filter.worker.empty() && filter.tuning_key.empty() && filter.job_id.empty()) {
    return absl::InvalidArgumentError("a trial filter needs a worker, a tuning key or a job");
  }
  return absl::OkStatus();
}

}  // namespace tunefleet::server
