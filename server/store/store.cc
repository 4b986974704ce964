#include "server/store/store.h"

#include "common/status_macros.h"

namespace tunefleet::server {

absl::StatusOr<bool> Store::InsertTrial(const TrialRecord& trial) {
  ASSIGN_OR_RETURN(std::vector<bool> inserted, InsertTrials({trial}));
  return inserted.at(0);
}

}  // namespace tunefleet::server
