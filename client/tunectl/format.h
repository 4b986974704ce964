// How tunectl presents jobs, configs and workers: aligned tables for people
// and stable JSON documents (`-o json`) for scripts.
#ifndef TUNEFLEET_CLIENT_TUNECTL_FORMAT_H_
#define TUNEFLEET_CLIENT_TUNECTL_FORMAT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json_fwd.hpp"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// kCsv only where a verb says so (`trials`); others print a table. kWide:
// a table with more columns where a verb has them (`jobs`, `trials`), else
// the table.
enum class OutputFormat { kTable, kJson, kCsv, kWide };

// `text` safe to print on a terminal: control characters (C0, DEL, C1) and
// bytes that are not valid UTF-8 become visible escapes ("\n", "\t",
// "\x1b", "\u009b"); everything else, valid multi-byte UTF-8 included,
// is kept. Every string tunectl prints that came from the server goes
// through it (tables and details cell by cell, messages, errors); JSON
// output escapes by itself.
std::string Printable(absl::string_view text);

using Row = std::vector<std::string>;

// "1.23 ms", "456 us", "2.50 s"; "-" for 0, which means unknown.
std::string FormatSeconds(double seconds);
// "45s", "3m07s", "2h05m".
std::string HumanDuration(absl::Duration duration);
// "5s ago", "3m ago"; "-" for 0.
std::string FormatAge(int64_t unix_ms, absl::Time now);
// "OK 120, COMPILE_ERROR 8", in name order; "none" when empty.
std::string FormatOutcomes(const std::map<std::string, int64_t>& outcomes);

// The default config's time over the best; 0 when either is unknown.
double SpeedUp(const JobTarget& target);
// The fastest best of any target, or nullptr when no trial succeeded yet.
const JobTarget* FastestTarget(const Job& job);
// The job's top trials measured on `target`'s device, at most five.
std::vector<TrialSummary> TopTrials(const Job& job, const JobTarget& target);

// What a finished target did to the served best, for people: "REGRESSED:
// its best 8.4 ms is not faster than 5 ms of job j-1, which is still
// served"; "" when target.retune is.
std::string RetuneText(const JobTarget& target);

// Columns padded to their widest cell, two spaces apart, `header` first (no
// header line when empty). Each line ends with '\n'. Cells are printed
// through Printable.
std::string RenderTable(const Row& header, const std::vector<Row>& rows);

// Tables and key-value blocks for the verbs.
std::string JobDetails(const Job& job);  // `status`, and the end of `watch`
std::string JobsTable(const std::vector<Job>& jobs, absl::Time now, bool wide = false);
std::string BestConfigDetails(const BestConfig& best);
std::string WorkersTable(const std::vector<WorkerInfo>& workers,
                         absl::Time now);

// `json` as tunectl prints a document: indented by two spaces, keys in the
// order added, a trailing newline. Invalid UTF-8 becomes U+FFFD; it never
// throws.
std::string JsonDocument(const nlohmann::ordered_json& json);

// One JSON document each, field names in snake_case; seconds as numbers, 0
// for unknown (non-finite seconds print as null).
std::string JobJson(const Job& job);
// `next_page_token` is a member only when not empty.
std::string JobsJson(const std::vector<Job>& jobs, const std::string& next_page_token = "");
std::string BestConfigJson(const BestConfig& best);
std::string WorkersJson(const std::vector<WorkerInfo>& workers);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_FORMAT_H_
