// tunectl's `trials` and `jobs` verbs: every stored trial of a job with the
// reason of each failure, and the job list filtered and paged.
#ifndef TUNEFLEET_CLIENT_TUNECTL_TRIALS_H_
#define TUNEFLEET_CLIENT_TUNECTL_TRIALS_H_

#include <string>
#include <vector>

#include "client/tunectl/commands.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// `field` quoted for CSV (RFC 4180) when it holds a comma, quote, CR or LF.
std::string CsvField(const std::string& field);

// A failure's reason on one line for table cells: its first line, and the
// first later line that mentions an error (a compiler's diagnostic); at most
// `width` characters; "..." marks that the full text says more.
std::string ReasonSummary(const std::string& error, size_t width);

// The shortest text that reads back as exactly `value` (CSV cells).
std::string ExactNumber(double value);

// `wide` adds the spread, samples, compile time, clock, principal and key.
std::string TrialsTable(const std::vector<Trial>& trials, bool wide = false);
std::string TrialsJson(const std::string& job_id, const std::vector<Trial>& trials);
// A header line, then one line per trial; the full error text is the last column.
std::string TrialsCsv(const std::vector<Trial>& trials);

// Every trial of the job (every page), those with `status` only when it is
// not empty, printed as a table, JSON or CSV.
int RunTrials(Client& client, const std::string& job_id, const std::string& status,
              const Console& console);

// Which jobs `tunectl jobs` lists.
struct JobsFlags {
  std::string state;  // a job state name, any case; "": any
  std::string kernel;
  std::string owner;
  int32_t limit = 0;  // jobs per page; 0: the server's default
  std::string page_token;
};

// One page of jobs; when more follow, the flag that shows the next page is
// printed on stderr (and is `next_page_token` in JSON). Exit 1 for an
// unknown state name.
int RunJobs(Client& client, const JobsFlags& flags, const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_TRIALS_H_
