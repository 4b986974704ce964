// tunectl's `profile` verb: Nsight Compute profiles of a finished job's
// fastest configs (docs/profiling.md), asked for and waited on, or shown
// as stored; as a table, JSON (and YAML) or CSV.
#ifndef TUNEFLEET_CLIENT_TUNECTL_PROFILE_H_
#define TUNEFLEET_CLIENT_TUNECTL_PROFILE_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/tunectl/commands.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

struct ProfileFlags {
  std::string job_id;
  // Configs per target, fastest first (the coordinator allows 1..16).
  // Default 3.
  int top = 3;
  // Only print what is stored and pending; ask for nothing. Default false.
  bool show = false;
  // Ask and print what was queued, without waiting. Default false.
  bool no_wait = false;
  // How long to wait for the profiles; then what is there is printed and
  // the exit code is 6. Default 10 minutes.
  absl::Duration wait = absl::Minutes(10);
  // How often the profiles are polled while waiting. Default 0.5 s.
  absl::Duration poll = absl::Milliseconds(500);
};

// Columns: config, duration µs, cycles, regs/thread, smem KiB, occupancy %,
// L2 hit %, DRAM GB/s, DRAM %, TFLOP/s, note (why no metrics, or
// "pending"); `wide` adds the device model, rank, tuned median, worker,
// device and ncu's version.
std::string ProfilesTable(const std::vector<KernelProfile>& profiles, bool wide = false);
std::string ProfilesJson(const std::string& job_id, const std::vector<KernelProfile>& profiles);
// A header line, then one line per profile, in base units.
std::string ProfilesCsv(const std::vector<KernelProfile>& profiles);

// The verb. Exit codes as ExitCodeForStatus; 6 when the wait ran out with
// profiles still pending.
int RunProfile(Client& client, const ProfileFlags& flags, const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_PROFILE_H_
