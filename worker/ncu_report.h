// Nsight Compute's side of a profile, as pure functions: the ncu command
// line that profiles one launch of a kernel in a benchmark child, the
// reading of ncu's raw CSV page, and the reasons ncu gives for reading no
// counters (docs/profiling.md).
#ifndef TUNEFLEET_WORKER_NCU_REPORT_H_
#define TUNEFLEET_WORKER_NCU_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// The metrics a profile asks ncu for, in the order they are asked.
const std::vector<std::string>& NcuMetricNames();

// `ncu` with the flags of a profile (--csv --page raw --print-units base
// --clock-control none --target-processes all --launch-count 1, the
// metrics, --kernel-name regex:^<entry>$ and --log-file `log_file`) followed
// by `child_argv`. REQUIRES: `ncu`, `entry` and `child_argv` non-empty.
std::vector<std::string> NcuArgv(const std::string& ncu, const std::string& entry,
                                 const std::string& log_file,
                                 const std::vector<std::string>& child_argv);

// One profiled launch: each metric's value in base units (seconds, bytes,
// bytes per second, cycles, percent, registers), by metric name.
using NcuMetrics = absl::flat_hash_map<std::string, double>;

// Reads ncu's raw CSV page (`--csv --page raw`): a header row of quoted
// column names, a units row, then one row per profiled launch; other lines
// (==PROF== messages, the application's own output) are skipped. Returns
// the last launch's numeric metrics, scaled to base units ("nsecond" ->
// seconds, "Kbyte" -> bytes, "Gbyte/second" -> bytes per second, "%" stays
// percent). InvalidArgument when the text holds no header or no launch.
absl::StatusOr<NcuMetrics> ParseNcuCsv(absl::string_view text);

// Why ncu read no counters, from its output: a line naming
// ERR_NVGPUCTRPERM, a profiler that failed to initialize, or a device ncu
// does not support; nullopt when it says none of these.
std::optional<std::string> NcuRefusal(absl::string_view text);

// Why a profile cannot be taken at all on a device of `backend` with the
// ncu at `ncu` ("" when none was found), where ncu profiles `profiled`
// backends; nullopt when it can be tried.
std::optional<std::string> CannotProfile(v1::Backend backend, const std::string& ncu,
                                         const std::vector<v1::Backend>& profiled = {
                                             v1::BACKEND_CUDA});

// The version ncu prints for --version ("Version 2025.3.1.0 (build ...)"):
// its last line that starts with "Version", without the word; "" if none.
std::string NcuVersion(absl::string_view version_output);

// Fills the metric fields of `profile` from `metrics` (those ncu gave).
void FillProfile(const NcuMetrics& metrics, v1::KernelProfile* profile);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_NCU_REPORT_H_
