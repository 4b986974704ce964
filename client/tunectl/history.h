// tunectl's `history` and `compare` verbs: a kernel's best per shape and
// device model over time (from its finished jobs), and two jobs side by side.
#ifndef TUNEFLEET_CLIENT_TUNECTL_HISTORY_H_
#define TUNEFLEET_CLIENT_TUNECTL_HISTORY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/tunectl/commands.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// One job target's result, a point of a kernel's history.
struct HistoryPoint {
  int64_t unix_ms = 0;  // when the job last changed (it finished then)
  std::string shape;
  std::string device_model;
  std::string job_id;
  std::string best_config;
  double best_seconds = 0;
  double default_seconds = 0;
  bool cached = false;
  std::string retune;  // JobTarget::retune: what the job did to the served best
};

// The points of `jobs` (succeeded ones, targets with a best), on
// `device_model` only when it is not empty, by shape, device, then time.
std::vector<HistoryPoint> HistoryOf(const std::vector<Job>& jobs,
                                    const std::string& device_model);

// Every succeeded job of `kernel` (with a target on `device_model`, unless
// empty), every page of them. NotFound, from the server, for a kernel or
// device model it does not know.
absl::StatusOr<std::vector<Job>> SucceededJobs(Client& client, const std::string& kernel,
                                               const std::string& device_model = "");

// Every succeeded job of `kernel` (every page), as table or JSON.
int RunHistory(Client& client, const std::string& kernel, const std::string& device_model,
               const Console& console);

// Two jobs' targets and, for the configs both measured on a device model,
// each config's time in both and their ratio (second over first).
int RunCompare(Client& client, const std::string& first, const std::string& second,
               const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_HISTORY_H_
