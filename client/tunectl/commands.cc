#include "client/tunectl/commands.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/tunectl/connection.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/sweep.h"
#include "client/tunectl/validate.h"
#include "common/config_text.h"

namespace tunefleet::tunectl {
namespace {

int PrintJob(const Console& console, const Job& job) {
  *console.out << (WantsJson(console) ? JobJson(job) : JobDetails(job));
  return kExitOk;
}

}  // namespace

std::ostream& Notes(const Console& console) {
  static std::ostream* const kNowhere = new std::ostream(nullptr);
  return console.quiet ? *kNowhere : *console.err;
}

std::string ResolveServer(const std::string& flag, const char* env) {
  if (!flag.empty()) return flag;
  if (env != nullptr && *env != '\0') return env;
  return kDefaultServer;
}

bool ColorAllowed(bool terminal, const char* no_color_env, const char* term_env) {
  const bool no_color = no_color_env != nullptr && *no_color_env != '\0';
  const bool dumb = term_env != nullptr && absl::string_view(term_env) == "dumb";
  return terminal && !no_color && !dumb;
}

absl::Status CheckOutputFormat(const std::string& verb, const std::string& format) {
  static const auto* only = new std::map<std::string, std::set<std::string>>{
      {"csv", {"trials", "profile"}},
      {"wide", {"jobs", "trials", "profile"}},
      {"json", {}},  // every verb but those that print no data (below)
      {"yaml", {}}};
  static const auto* no_data = new std::set<std::string>{"report", "completion", "help"};
  if (format == "table") return absl::OkStatus();
  auto it = only->find(format);
  const bool allowed = it != only->end() && (it->second.empty() ? !no_data->count(verb)
                                                                : it->second.count(verb) > 0);
  if (allowed) return absl::OkStatus();
  std::vector<std::string> formats = {"table"};
  for (const auto& [name, verbs] : *only) {
    if (verbs.empty() ? !no_data->count(verb) : verbs.count(verb) > 0) formats.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "-o ", format, " is not an output of '", verb, "' (it has: ", absl::StrJoin(formats, ", "),
      ")", verb == "report" ? "; the page goes to --out FILE" : ""));
}

absl::StatusOr<ClientOptions> MakeClientOptions(const std::string& server,
                                                double timeout_seconds) {
  if (!(timeout_seconds > 0) || !std::isfinite(timeout_seconds)) {
    return absl::InvalidArgumentError(
        "--timeout must be a positive number of seconds");
  }
  ClientOptions options;
  options.target = server;
  options.deadline = std::chrono::milliseconds(
      static_cast<int64_t>(std::ceil(timeout_seconds * 1000)));
  return options;
}

bool WantsJson(const Console& console) { return console.format == OutputFormat::kJson; }

absl::StatusOr<std::vector<Job>> ListAllJobs(Client& client, JobFilter filter) {
  std::vector<Job> jobs;
  do {
    absl::StatusOr<JobPage> page = client.ListJobs(filter);
    if (!page.ok()) return page.status();
    jobs.insert(jobs.end(), page->jobs.begin(), page->jobs.end());
    filter.page_token = page->next_page_token;
  } while (!filter.page_token.empty());
  return jobs;
}

int ReportError(const Console& console, const absl::Status& status) {
  *console.err << "tunectl: " << Printable(status.message()) << "\n";
  if (const std::string hint = TlsMismatchHint(status); !hint.empty()) {
    *console.err << "tunectl: " << hint << ".\n";
  } else if (status.code() == absl::StatusCode::kUnavailable) {
    *console.err << "tunectl: is the coordinator running? Set the address with "
                    "--server or TUNEFLEET_SERVER.\n";
  }
  return ExitCodeForStatus(status);
}

int RunSubmit(Client& client, const SubmitRequest& request, bool wait,
              const Console& console) {
  absl::StatusOr<Job> job = client.Submit(request);
  if (!job.ok()) return ReportError(console, job.status());
  Notes(console) << "submitted job " << Printable(job->id) << ": " << Printable(job->kernel)
               << " " << Printable(job->shape) << ", " << job->trials_total << " trials\n";
  if (wait) return RunWatch(client, job->id, console);
  if (WantsJson(console)) return PrintJob(console, *job);
  *console.out << Printable(job->id) << "\n";
  return kExitOk;
}

int RunWatch(Client& client, const std::string& job_id,
             const Console& console) {
  ProgressReporter progress(&Notes(console), console.progress);
  absl::StatusOr<Job> job = client.Watch(job_id, [&](const Job& update) {
    progress.Update(update, console.now());
  });
  progress.Finish();
  if (job.status().code() == absl::StatusCode::kCancelled) {
    *console.err << "tunectl: interrupted; job " << Printable(job_id)
                 << " keeps running (stop it with: tunectl cancel " << Printable(job_id)
                 << ")\n";
    return kExitInterrupted;
  }
  if (!job.ok()) return ReportError(console, job.status());
  PrintJob(console, *job);
  for (const JobTarget& target : job->targets) {
    if (target.retune != "regressed") continue;
    Notes(console) << "tunectl: job " << Printable(job->id) << " on "
                   << Printable(target.device_model) << ": " << Printable(RetuneText(target))
                   << "\n";
  }
  return ExitCodeForJob(*job);
}

int RunStatus(Client& client, const std::string& job_id,
              const Console& console) {
  absl::StatusOr<Job> job = client.GetJob(job_id);
  if (absl::IsNotFound(job.status())) {  // a sweep's id, shown as `sweep ID` shows it
    absl::StatusOr<std::vector<Job>> sweep = SweepJobs(client, job_id);
    if (sweep.ok()) return PrintSweep(job_id, *sweep, console);
  }
  if (!job.ok()) return ReportError(console, job.status());
  return PrintJob(console, *job);
}

int RunCancel(Client& client, const std::string& job_id,
              const Console& console) {
  absl::StatusOr<Job> job = client.CancelJob(job_id);
  if (!job.ok()) return ReportError(console, job.status());
  if (WantsJson(console)) return PrintJob(console, *job);
  *console.out << Printable(job->id) << " " << JobStateName(job->state) << "\n";
  return kExitOk;
}

int RunBest(Client& client, const std::string& kernel, const std::string& shape,
            const std::string& device_model, const std::string& toolkit,
            const Console& console) {
  absl::StatusOr<BestConfig> best =
      client.GetBestConfig(kernel, shape, device_model, toolkit);
  if (!best.ok()) return ReportError(console, best.status());
  *console.out << (WantsJson(console) ? BestConfigJson(*best)
                                 : BestConfigDetails(*best));
  return kExitOk;
}

int RunWorkers(Client& client, const Console& console) {
  absl::StatusOr<std::vector<WorkerInfo>> workers = client.ListWorkers();
  if (!workers.ok()) return ReportError(console, workers.status());
  *console.out << (WantsJson(console) ? WorkersJson(*workers)
                                 : WorkersTable(*workers, console.now()));
  return kExitOk;
}

int RunValidate(const std::string& kernel_dir, const std::string& shape,
                const Console& console) {
  if (absl::StatusOr<v1::Shape> parsed = ParseShape(shape); !parsed.ok()) {
    *console.err << "tunectl: --shape: " << Printable(parsed.status().message()) << "\n";
    return kExitUsage;
  }
  absl::StatusOr<ValidateReport> report =
      ValidateKernelDirectory(kernel_dir, shape);
  if (!report.ok()) {
    *console.err << "tunectl: " << Printable(report.status().message()) << "\n";
    return ExitCodeForStatus(report.status());
  }
  *console.out << (WantsJson(console) ? ValidateReportJson(*report)
                                 : ValidateReportText(*report));
  return kExitOk;
}

}  // namespace tunefleet::tunectl
