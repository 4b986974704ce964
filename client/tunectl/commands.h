// tunectl's verbs. main.cc parses the flags into the structs below and calls
// one Run* function, whose return value is the process exit code (see
// exit_codes.h). Data goes to Console::out, messages and progress to
// Console::err.
#ifndef TUNEFLEET_CLIENT_TUNECTL_COMMANDS_H_
#define TUNEFLEET_CLIENT_TUNECTL_COMMANDS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/tunectl/format.h"
#include "client/tunectl/progress.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

inline constexpr char kDefaultServer[] = "localhost:7070";

// Where and how tunectl writes.
struct Console {
  std::ostream* out = nullptr;  // data: tables and JSON documents
  std::ostream* err = nullptr;  // errors; and messages and progress unless `quiet`
  // --quiet: only data on `out` and errors on `err`. Default false.
  bool quiet = false;
  // Default: tables.
  OutputFormat format = OutputFormat::kTable;
  // How progress is drawn on `err`. Default: plain lines, no color.
  ProgressStyle progress;
  // The clock for progress and ages. Default: absl::Now.
  std::function<absl::Time()> now = absl::Now;
};

// The server address: `flag` when set (a context of the config file sets
// it too), else `env` (TUNEFLEET_SERVER; may be null), else kDefaultServer.
std::string ResolveServer(const std::string& flag, const char* env);
// Colors only on a terminal, when NO_COLOR is unset or empty and TERM is
// not "dumb".
bool ColorAllowed(bool terminal, const char* no_color_env, const char* term_env);
// Whether `tunectl VERB -o FORMAT` has a meaning: table for every verb; csv
// for trials and profile; wide for jobs, trials and profile; json and yaml
// for every verb that prints data (not report, which writes a page, nor
// completion or help). INVALID_ARGUMENT naming the formats VERB has.
absl::Status CheckOutputFormat(const std::string& verb, const std::string& format);
// INVALID_ARGUMENT unless `seconds` is positive and finite.
absl::StatusOr<ClientOptions> MakeClientOptions(const std::string& server,
                                                double timeout_seconds);

// Where informational messages and progress go: `err`, or nowhere when quiet.
std::ostream& Notes(const Console& console);

// Whether `console` prints JSON (-o json).
bool WantsJson(const Console& console);

// Every job `filter` selects, newest first, page after page (its limit is
// the page size; its page_token where to start).
absl::StatusOr<std::vector<Job>> ListAllJobs(Client& client, JobFilter filter);

// Prints "tunectl: <message>" (and a hint for an unreachable server) on
// `err` and returns the status's exit code.
int ReportError(const Console& console, const absl::Status& status);

// Submits a job; prints its id (table) or the job (json). With `wait`,
// watches it to the end like RunWatch.
int RunSubmit(Client& client, const SubmitRequest& request, bool wait,
              const Console& console);
// Shows progress until the job is final, then its summary; the exit code
// reflects the job (ExitCodeForJob), or 130 when the watch was cancelled.
int RunWatch(Client& client, const std::string& job_id, const Console& console);
int RunStatus(Client& client, const std::string& job_id,
              const Console& console);
int RunCancel(Client& client, const std::string& job_id,
              const Console& console);
int RunBest(Client& client, const std::string& kernel, const std::string& shape,
            const std::string& device_model, const std::string& toolkit,
            const Console& console);
int RunWorkers(Client& client, const Console& console);

// Admin: creates a token and prints it (alone on stdout, or in JSON); lists
// the tokens (never their secrets); revokes one by id.
int RunTokenCreate(Client& client, const std::string& name, const std::string& role,
                   const Console& console);
int RunTokenList(Client& client, const Console& console);
int RunTokenRevoke(Client& client, const std::string& id, const Console& console);
// Offline: exits 1 on a spec problem, 5 on a missing file, 2 on a shape
// that does not parse.
int RunValidate(const std::string& kernel_dir, const std::string& shape,
                const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_COMMANDS_H_
