#include "client/tunectl/report.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/sweep.h"
#include "common/config_text.h"
#include "common/file_util.h"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

// Seconds as JSON: null for unknown (0) or non-finite values.
Json Seconds(double seconds) {
  return seconds > 0 && seconds < 1e300 ? Json(seconds) : Json(nullptr);
}

std::string Date(int64_t unix_ms) {
  return unix_ms == 0 ? "" : absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::FromUnixMillis(unix_ms),
                                              absl::UTCTimeZone());
}

// "A=1,B=2" -> {"A": 1, "B": 2}; values that are not integers stay text.
// A config's values by name; none when its text does not parse.
Json ConfigValues(const std::string& config) {
  Json values = Json::object();
  absl::StatusOr<NameValues> items = ParseNameValues(config);
  if (!items.ok()) return values;
  for (const auto& [name, value] : *items) values[name] = value;
  return values;
}

// The search round's trial wins over the finalists' and verify rounds'.
bool Replaces(const Trial& candidate, const Trial& kept) {
  return candidate.round == "search" && kept.round != "search";
}

// One trial per (device model, config), in the order first seen.
std::vector<Trial> OnePerConfig(const std::vector<Trial>& trials, const std::string& device_model,
                                int64_t* excluded) {
  std::vector<Trial> kept;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const Trial& trial : trials) {
    if (!device_model.empty() && trial.device_model != device_model) continue;
    if (trial.excluded) {
      ++*excluded;
      continue;
    }
    auto [it, inserted] = index.try_emplace({trial.device_model, trial.config}, kept.size());
    if (inserted) {
      kept.push_back(trial);
    } else if (Replaces(trial, kept[it->second])) {
      kept[it->second] = trial;
    }
  }
  return kept;
}

Json TrialJson(const Trial& trial) {
  return {{"config", trial.config},
          {"values", ConfigValues(trial.config)},
          {"status", trial.status},
          {"error", trial.error},
          {"median_seconds", trial.status == "OK" ? Seconds(trial.median_seconds) : Json()},
          {"p20_seconds", Seconds(trial.p20_seconds)},
          {"p80_seconds", Seconds(trial.p80_seconds)},
          {"samples", trial.samples},
          {"device_model", trial.device_model},
          {"round", trial.round}};
}

// A profile's metrics are null where ncu read none; `note` says why.
Json ProfileJson(const KernelProfile& p) {
  const bool read = !p.pending && p.unavailable.empty();
  auto metric = [read](double value) { return read ? Json(value) : Json(nullptr); };
  return {{"config", p.config},
          {"device_model", p.device_model},
          {"rank", p.rank},
          {"duration_seconds", metric(p.duration_seconds)},
          {"cycles", metric(p.cycles)},
          {"registers_per_thread", metric(p.registers_per_thread)},
          {"shared_memory_bytes", metric(static_cast<double>(p.shared_memory_bytes))},
          {"achieved_occupancy_pct", metric(p.achieved_occupancy_pct)},
          {"l2_hit_rate_pct", metric(p.l2_hit_rate_pct)},
          {"dram_bytes_per_second", metric(p.dram_bytes_per_second)},
          {"dram_throughput_pct", metric(p.dram_throughput_pct)},
          {"tflops", read && p.tflops > 0 ? Json(p.tflops) : Json(nullptr)},
          {"note", p.pending ? std::string("pending") : p.unavailable}};
}

Json TargetJson(const JobTarget& target) {
  return {{"device_model", target.device_model},
          {"toolkit", target.toolkit},
          {"cached", target.cached},
          {"trials_total", target.trials_total},
          {"trials_done", target.trials_done},
          {"best_config", target.best_config},
          {"best_seconds", Seconds(target.best_seconds)},
          {"default_seconds", Seconds(target.default_seconds)},
          {"retune", target.retune},
          {"retune_text", RetuneText(target)}};
}

absl::Status WriteReport(const std::string& path, const std::string& html, std::ostream& out) {
  if (path == "-") {
    out << html;
    return absl::OkStatus();
  }
  return WriteFileAtomic(path, html);
}

absl::StatusOr<std::string> ReadChartJs(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read Chart.js at ", path, " (install libjs-chart.js): ",
                     text.status().message()));
  }
  if (absl::StrContains(absl::AsciiStrToLower(*text), "</script")) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " holds \"</script\" and cannot be inlined"));
  }
  return text;
}

// The page's title and data: the job's, else the kernel's of that name.
absl::StatusOr<std::pair<std::string, Json>> Subject(Client& client, const ReportFlags& flags) {
  absl::StatusOr<Job> job = client.GetJob(flags.subject);
  if (job.ok()) {
    absl::StatusOr<std::vector<Trial>> trials = client.ListAllTrials(job->id);
    if (!trials.ok()) return trials.status();
    // A coordinator without profiles (an older one) leaves the section out.
    absl::StatusOr<std::vector<KernelProfile>> profiles = client.ListProfiles(job->id);
    if (!profiles.ok() && !absl::IsUnimplemented(profiles.status())) return profiles.status();
    return std::make_pair(
        absl::StrCat(job->kernel, " ", job->shape, " (job ", job->id, ")"),
        JobReportData(*job, *trials, flags.device_model,
                      profiles.ok() ? *profiles : std::vector<KernelProfile>()));
  }
  if (!absl::IsNotFound(job.status()) && !absl::IsInvalidArgument(job.status())) {
    return job.status();
  }
  absl::StatusOr<std::vector<Job>> sweep = SweepJobs(client, flags.subject);
  if (sweep.ok()) {
    return std::make_pair(absl::StrCat(sweep->front().kernel, ": sweep ", flags.subject, " over ",
                                       sweep->size(), " shapes"),
                          SweepReportData(flags.subject, *sweep, flags.device_model));
  }
  if (!absl::IsNotFound(sweep.status()) && !absl::IsInvalidArgument(sweep.status())) {
    return sweep.status();
  }
  absl::StatusOr<std::vector<Job>> jobs =
      SucceededJobs(client, flags.subject, flags.device_model);
  if (absl::IsNotFound(jobs.status())) {
    return absl::NotFoundError(
        absl::StrCat("no job ", flags.subject, ", and ", jobs.status().message()));
  }
  if (!jobs.ok()) return jobs.status();
  std::vector<HistoryPoint> points = HistoryOf(*jobs, flags.device_model);
  if (points.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no job ", flags.subject, ", and no kernel of that name with a succeeded job",
        flags.device_model.empty() ? "" : " on ", flags.device_model));
  }
  return std::make_pair(absl::StrCat(flags.subject, " across shapes and devices"),
                        KernelReportData(flags.subject, points));
}

}  // namespace

Json JobReportData(const Job& job, const std::vector<Trial>& trials,
                   const std::string& device_model, const std::vector<KernelProfile>& profiles) {
  Json profile_list = Json::array();
  for (const KernelProfile& profile : profiles) {
    if (device_model.empty() || profile.device_model == device_model) {
      profile_list.push_back(ProfileJson(profile));
    }
  }
  int64_t excluded = 0;
  Json trial_list = Json::array();
  for (const Trial& trial : OnePerConfig(trials, device_model, &excluded)) {
    trial_list.push_back(TrialJson(trial));
  }
  Json targets = Json::array();
  for (const JobTarget& target : job.targets) {
    if (device_model.empty() || target.device_model == device_model) {
      targets.push_back(TargetJson(target));
    }
  }
  Json outcomes = Json::object();
  for (const auto& [status, count] : job.outcomes) outcomes[status] = count;
  return {{"kind", "job"},
          {"job", {{"id", job.id},
                   {"kernel", job.kernel},
                   {"shape", job.shape},
                   {"state", JobStateName(job.state)},
                   {"reason", job.reason},
                   {"strategy", job.strategy},
                   {"owner", job.owner},
                   {"created", Date(job.created_unix_ms)},
                   {"updated", Date(job.updated_unix_ms)},
                   {"outcomes", outcomes}}},
          {"targets", targets},
          {"trials", trial_list},
          {"excluded_trials", excluded},
          {"profiles", profile_list}};
}

Json SweepReportData(const std::string& sweep_id, const std::vector<Job>& jobs,
                     const std::string& device_model) {
  std::map<std::string, int64_t> states;
  int64_t done = 0, total = 0, created = 0, updated = 0;
  Json rows = Json::array();
  for (const Job& job : jobs) {
    ++states[absl::AsciiStrToLower(JobStateName(job.state))];
    done += job.trials_done;
    total += job.trials_total;
    if (created == 0 || job.created_unix_ms < created) created = job.created_unix_ms;
    updated = std::max(updated, job.updated_unix_ms);
    Json row = {{"shape", job.shape},
                {"job_id", job.id},
                {"state", JobStateName(job.state)},
                {"reason", job.reason},
                {"trials_done", job.trials_done},
                {"trials_total", job.trials_total}};
    if (job.targets.empty() && device_model.empty()) {
      rows.push_back(row);
      continue;
    }
    for (const JobTarget& target : job.targets) {
      if (!device_model.empty() && target.device_model != device_model) continue;
      Json per_target = row;
      per_target.update(TargetJson(target));
      rows.push_back(std::move(per_target));
    }
  }
  Json state_counts = Json::object();
  for (const auto& [state, count] : states) state_counts[state] = count;
  return {{"kind", "sweep"},
          {"sweep", {{"id", sweep_id},
                     {"kernel", jobs.empty() ? std::string() : jobs.front().kernel},
                     {"strategy", jobs.empty() ? std::string() : jobs.front().strategy},
                     {"owner", jobs.empty() ? std::string() : jobs.front().owner},
                     {"shapes", jobs.size()},
                     {"states", state_counts},
                     {"trials_done", done},
                     {"trials_total", total},
                     {"created", Date(created)},
                     {"updated", Date(updated)}}},
          {"rows", rows}};
}

Json KernelReportData(const std::string& kernel, const std::vector<HistoryPoint>& points) {
  Json list = Json::array();
  for (const HistoryPoint& point : points) {
    list.push_back({{"unix_ms", point.unix_ms},
                    {"when", Date(point.unix_ms)},
                    {"shape", point.shape},
                    {"device_model", point.device_model},
                    {"job_id", point.job_id},
                    {"best_config", point.best_config},
                    {"best_seconds", Seconds(point.best_seconds)},
                    {"default_seconds", Seconds(point.default_seconds)},
                    {"cached", point.cached},
                    {"retune", point.retune}});
  }
  return {{"kind", "kernel"}, {"kernel", kernel}, {"history", list}};
}

std::string ScriptSafeJson(const Json& json) {
  const std::string text = json.dump(-1, ' ', /*ensure_ascii=*/false,
                                     Json::error_handler_t::replace);
  // '<' only ever appears inside JSON strings, where \u003c means the same.
  return absl::StrReplaceAll(text, {{"<", "\\u003c"}});
}

int RunReport(Client& client, const ReportFlags& flags, const Console& console) {
  absl::StatusOr<std::string> chart_js = ReadChartJs(flags.chart_js);
  if (!chart_js.ok()) return ReportError(console, chart_js.status());
  absl::StatusOr<std::pair<std::string, Json>> subject = Subject(client, flags);
  if (!subject.ok()) return ReportError(console, subject.status());
  const std::string path =
      flags.path.empty() ? absl::StrCat("report-", flags.subject, ".html") : flags.path;
  const std::string html = ReportHtml(subject->first, subject->second, *chart_js);
  if (absl::Status written = WriteReport(path, html, *console.out); !written.ok()) {
    return ReportError(console, written);
  }
  if (path != "-") Notes(console) << "wrote " << path << "\n";
  return kExitOk;
}

}  // namespace tunefleet::tunectl
