#include "client/tunectl/sweep.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/format.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

// Every job of the sweep, in submission order (oldest first).
absl::StatusOr<std::vector<Job>> SweepJobs(Client& client, const std::string& sweep_id) {
  JobFilter filter;
  filter.sweep_id = sweep_id;
  filter.limit = 1000;
  absl::StatusOr<std::vector<Job>> listed = ListAllJobs(client, filter);
  if (!listed.ok()) return listed.status();
  std::vector<Job> jobs = *std::move(listed);
  if (jobs.empty()) return absl::NotFoundError(absl::StrCat("no sweep ", sweep_id));
  std::reverse(jobs.begin(), jobs.end());
  return jobs;
}

bool AllFinal(const std::vector<Job>& jobs) {
  return std::all_of(jobs.begin(), jobs.end(), [](const Job& job) { return IsFinal(job.state); });
}

std::string Progress(const std::string& sweep_id, const std::vector<Job>& jobs) {
  int64_t finished = 0, done = 0, total = 0;
  for (const Job& job : jobs) {
    finished += IsFinal(job.state) ? 1 : 0;
    done += job.trials_done;
    total += job.trials_total;
  }
  return absl::StrFormat("sweep %s: %d of %d shapes finished, %d of %d trials\n",
                         Printable(sweep_id), finished, jobs.size(), done, total);
}

int ExitCodeForSweep(const std::vector<Job>& jobs) {
  for (const Job& job : jobs) {
    if (int code = ExitCodeForJob(job); code != kExitOk) return code;
  }
  return kExitOk;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadShapesFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the shapes file ", path));
  std::vector<std::string> shapes;
  std::string line;
  while (std::getline(in, line)) {
    const std::string text(absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
    if (!text.empty()) shapes.push_back(text);
  }
  if (shapes.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " holds no shape"));
  return shapes;
}

std::string SweepTable(const std::string& sweep_id, const std::vector<Job>& jobs) {
  std::vector<Row> rows;
  int64_t succeeded = 0;
  for (const Job& job : jobs) {
    const JobTarget* target = FastestTarget(job);
    const bool best = target != nullptr && !target->best_config.empty();
    rows.push_back({Printable(job.shape), Printable(job.id), JobStateName(job.state),
                    absl::StrCat(job.trials_done, "/", job.trials_total),
                    best ? Printable(target->best_config) : "-",
                    best ? FormatSeconds(target->best_seconds) : "-"});
    succeeded += job.state == JobState::kSucceeded ? 1 : 0;
  }
  return absl::StrCat(RenderTable({"SHAPE", "JOB", "STATE", "TRIALS", "BEST CONFIG", "BEST"}, rows),
                      "sweep ", Printable(sweep_id), ": ", jobs.size(), " shapes, ", succeeded,
                      " succeeded\n");
}

std::string SweepJson(const std::string& sweep_id, const std::vector<Job>& jobs) {
  nlohmann::ordered_json json;
  json["sweep_id"] = sweep_id;
  json["jobs"] = nlohmann::ordered_json::array();
  for (const Job& job : jobs) json["jobs"].push_back(nlohmann::ordered_json::parse(JobJson(job)));
  return JsonDocument(json);
}

int RunSubmitSweep(Client& client, const SubmitRequest& request,
                   const std::vector<std::string>& shapes, bool wait, const Console& console) {
  absl::StatusOr<Sweep> sweep = client.SubmitSweep(request, shapes);
  if (!sweep.ok()) return ReportError(console, sweep.status());
  Notes(console) << "submitted sweep " << Printable(sweep->id) << ": " << sweep->jobs.size()
                 << " shapes of "
                 << (sweep->jobs.empty() ? "" : Printable(sweep->jobs.front().kernel)) << "\n";
  if (wait) return RunSweep(client, sweep->id, /*wait=*/true, console);
  if (WantsJson(console)) {
    *console.out << SweepJson(sweep->id, sweep->jobs);
  } else {
    *console.out << Printable(sweep->id) << "\n";
  }
  return kExitOk;
}

int RunSweep(Client& client, const std::string& sweep_id, bool wait, const Console& console,
             absl::Duration poll) {
  absl::StatusOr<std::vector<Job>> jobs = SweepJobs(client, sweep_id);
  std::string shown;
  while (jobs.ok() && wait && !AllFinal(*jobs)) {
    if (std::string line = Progress(sweep_id, *jobs); line != shown) {
      Notes(console) << line;
      shown = line;
    }
    absl::SleepFor(poll);
    jobs = SweepJobs(client, sweep_id);
  }
  if (!jobs.ok()) return ReportError(console, jobs.status());
  *console.out << (WantsJson(console) ? SweepJson(sweep_id, *jobs) : SweepTable(sweep_id, *jobs));
  return ExitCodeForSweep(*jobs);
}

}  // namespace tunefleet::tunectl
