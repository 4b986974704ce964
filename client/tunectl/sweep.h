// tunectl's sweeps: one submission over many shapes (`submit --shape A
// --shape B ...` or `--shapes-file`), followed and shown as a whole and per
// shape (`sweep SWEEP_ID`).
#ifndef TUNEFLEET_CLIENT_TUNECTL_SWEEP_H_
#define TUNEFLEET_CLIENT_TUNECTL_SWEEP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/tunectl/commands.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// The shapes of a shapes file: one a line ("M=1,N=4096,K=4096"); blank lines
// and text after '#' are skipped. NotFound when it cannot be read,
// InvalidArgument when it holds no shape.
absl::StatusOr<std::vector<std::string>> ReadShapesFile(const std::string& path);

// The shapes one `--shape` (or shapes-file line) names. A dim takes one
// value, a list ("M=16,32,64") or a range ending "...,LAST": the terms
// before "..." are arithmetic when their differences are equal
// ("M=64,128,...,512": 64, 128, ..., 512), else geometric when their ratios
// are one integer ("M=1,2,4,...,4096"); a range's terms are not negative
// and LAST must be one. The shapes are
// every combination, the first dim varying slowest: "M=1,2,N=8,16" is
// M=1,N=8 / M=1,N=16 / M=2,N=8 / M=2,N=16. A shape without lists is
// returned as written. InvalidArgument naming what does not parse, and
// for more than `max_shapes` shapes.
absl::StatusOr<std::vector<std::string>> ExpandShapes(const std::string& text,
                                                      size_t max_shapes = 1024);

// The jobs of sweep `sweep_id`, in the order they were submitted (the
// sweep's order of shapes); only jobs that carry that sweep id, whatever
// the coordinator answers. NotFound when it has none.
absl::StatusOr<std::vector<Job>> SweepJobs(Client& client, const std::string& sweep_id);

// One row per job of a sweep, in the order given: shape, job, state, trials,
// best config, best time, and a last line with the totals.
std::string SweepTable(const std::string& sweep_id, const std::vector<Job>& jobs);
// {"sweep_id": ..., "jobs": [JobJson...]}.
std::string SweepJson(const std::string& sweep_id, const std::vector<Job>& jobs);

// Submits `request` over `shapes` as one sweep; prints the sweep id (table)
// or the sweep (json). With `wait`, follows it to its end as RunSweep does.
int RunSubmitSweep(Client& client, const SubmitRequest& request,
                   const std::vector<std::string>& shapes, bool wait, const Console& console);
// Prints `jobs` (SweepJobs) as `sweep` does, table or json; the exit code
// as RunSweep's.
int PrintSweep(const std::string& sweep_id, const std::vector<Job>& jobs, const Console& console);

// Prints the jobs of sweep `sweep_id`; with `wait`, first follows them until
// every one finished (progress on `err` every `poll`). Exit codes as a
// job's: 3 when any shape failed or has failed trials, 5 for an unknown id.
int RunSweep(Client& client, const std::string& sweep_id, bool wait, const Console& console,
             absl::Duration poll = absl::Seconds(1));

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_SWEEP_H_
