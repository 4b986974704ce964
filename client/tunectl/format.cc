#include "client/tunectl/format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kTopTrials = 5;

// A key-value block: keys padded to the widest.
std::string Details(const std::vector<Row>& rows) {
  return RenderTable(/*header=*/{}, rows);
}

std::string TrialsText(const Job& job) {
  std::string text = absl::StrCat(job.trials_done, "/", job.trials_total);
  if (!job.outcomes.empty()) {
    absl::StrAppend(&text, "  (", FormatOutcomes(job.outcomes), ")");
  }
  return text;
}

// "time budget" for "time_budget"; "-" for none.
std::string StopText(const std::string& reason) {
  if (reason.empty()) return "-";
  std::string text = reason;
  std::replace(text.begin(), text.end(), '_', ' ');
  return text;
}

// "random, budget 64; time budget 600 s, plateau 5 batches".
std::string StrategyText(const Job& job) {
  std::string text = job.strategy;
  if (job.trials_budget > 0) absl::StrAppend(&text, ", budget ", job.trials_budget, " trials");
  std::vector<std::string> rules;
  if (job.time_budget_seconds > 0) {
    rules.push_back(absl::StrCat("time budget ", job.time_budget_seconds, " s"));
  }
  if (job.plateau_batches > 0) {
    rules.push_back(absl::StrCat("plateau ", job.plateau_batches, " batches"));
  }
  if (!rules.empty()) absl::StrAppend(&text, "; ", absl::StrJoin(rules, ", "));
  return text;
}

std::string TargetDetails(const Job& job, const JobTarget& target) {
  std::vector<Row> rows = {
      {"  key", target.tuning_key},
      {"  trials", absl::StrCat(target.trials_done, "/", target.trials_total)}};
  if (!target.stop_reason.empty() && job.targets.size() > 1) {
    rows.push_back({"  stopped", StopText(target.stop_reason)});
  }
  if (target.cached)
    rows.push_back({"  cached", "yes (answered from the store)"});
  rows.push_back(
      {"  best", target.best_config.empty()
                     ? "-"
                     : absl::StrCat(FormatSeconds(target.best_seconds), "  ",
                                    target.best_config)});
  std::string def = FormatSeconds(target.default_seconds);
  if (double speed_up = SpeedUp(target); speed_up > 0) {
    absl::StrAppend(&def,
                    absl::StrFormat("  (best is %.2fx faster)", speed_up));
  }
  rows.push_back({"  default", def});
  if (!target.retune.empty()) rows.push_back({"  outcome", RetuneText(target)});
  std::string text = absl::StrCat("target ", Printable(target.device_model), " / ",
                                  target.toolkit.empty() ? "-" : Printable(target.toolkit),
                                  "\n", Details(rows));
  std::vector<TrialSummary> top = TopTrials(job, target);
  if (top.empty()) return text;
  std::vector<Row> top_rows;
  for (size_t i = 0; i < top.size(); ++i) {
    top_rows.push_back({absl::StrCat("    ", i + 1),
                        FormatSeconds(top[i].median_seconds), top[i].config});
  }
  return absl::StrCat(text, "  fastest configs:\n", RenderTable({}, top_rows));
}

Json JobToJson(const Job& job) {
  Json outcomes = Json::object();
  for (const auto& [status, count] : job.outcomes) outcomes[status] = count;
  Json targets = Json::array();
  for (const JobTarget& target : job.targets) {
    targets.push_back({{"device_model", target.device_model},
                       {"toolkit", target.toolkit},
                       {"tuning_key", target.tuning_key},
                       {"cached", target.cached},
                       {"trials_total", target.trials_total},
                       {"trials_done", target.trials_done},
                       {"best_config", target.best_config},
                       {"best_seconds", target.best_seconds},
                       {"default_seconds", target.default_seconds},
                       {"stop_reason", target.stop_reason},
                       {"speed_up", SpeedUp(target)},
                       {"retune", {{"outcome", target.retune},
                                   {"served_job_id", target.served_job_id},
                                   {"served_seconds", target.served_seconds},
                                   {"previous_job_id", target.previous_job_id},
                                   {"previous_seconds", target.previous_seconds},
                                   {"replace_reason", target.replace_reason}}}});
  }
  Json top_trials = Json::array();
  for (const TrialSummary& trial : job.top_trials) {
    top_trials.push_back({{"config", trial.config},
                          {"median_seconds", trial.median_seconds},
                          {"status", trial.status},
                          {"device_model", trial.device_model}});
  }
  return {{"id", job.id},
          {"kernel", job.kernel},
          {"shape", job.shape},
          {"state", JobStateName(job.state)},
          {"reason", job.reason},
          {"strategy", job.strategy},
          {"owner", job.owner},
          {"trials_total", job.trials_total},
          {"trials_done", job.trials_done},
          {"outcomes", std::move(outcomes)},
          {"targets", std::move(targets)},
          {"top_trials", std::move(top_trials)},
          {"created_unix_ms", job.created_unix_ms},
          {"updated_unix_ms", job.updated_unix_ms},
          {"stop_reason", job.stop_reason},
          {"trials_budget", job.trials_budget},
          {"time_budget_seconds", job.time_budget_seconds},
          {"plateau_batches", job.plateau_batches},
          {"started_unix_ms", job.started_unix_ms},
          {"sweep_id", job.sweep_id}};
}

std::string DevicesText(const std::vector<DeviceInfo>& devices) {
  std::map<std::string, int> by_model;
  for (const DeviceInfo& device : devices) ++by_model[device.model];
  std::vector<std::string> parts;
  for (const auto& [model, count] : by_model) {
    parts.push_back(count > 1 ? absl::StrCat(count, "x ", model) : model);
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

// Length of the valid UTF-8 sequence at the start of `text` (1 to 4), or 0
// when it is not one (overlong forms and surrogates included).
size_t Utf8SequenceLength(absl::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t length = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2
                  : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  if (length == 0 || text.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
  }
  if (length == 3 && ((lead == 0xe0 && byte(1) < 0xa0) || (lead == 0xed && byte(1) > 0x9f))) {
    return 0;
  }
  if (length == 4 && ((lead == 0xf0 && byte(1) < 0x90) || (lead == 0xf4 && byte(1) > 0x8f))) {
    return 0;
  }
  return length;
}

void AppendEscaped(unsigned char c, std::string* out) {
  switch (c) {
    case '\n': out->append("\\n"); return;
    case '\r': out->append("\\r"); return;
    case '\t': out->append("\\t"); return;
    default: absl::StrAppend(out, absl::StrFormat("\\x%02x", c));
  }
}

}  // namespace

std::string RetuneText(const JobTarget& target) {
  const std::string before =
      absl::StrCat(FormatSeconds(target.previous_seconds), " of job ", target.previous_job_id);
  if (target.retune == "regressed") {
    return absl::StrCat("REGRESSED: its best ", FormatSeconds(target.best_seconds),
                        " is not faster than ", FormatSeconds(target.served_seconds), " of job ",
                        target.served_job_id, ", which is still served");
  }
  if (target.retune == "forced") {
    return absl::StrCat("FORCED: served instead of ", before, " (",
                        target.replace_reason.empty() ? "no reason given" : target.replace_reason,
                        ")");
  }
  if (target.retune == "replaced") return absl::StrCat("REPLACED: faster than ", before);
  if (target.retune == "confirmed") {
    return absl::StrCat("CONFIRMED: re-measured the served config, tied with the job's fastest: ",
                        FormatSeconds(target.served_seconds), " now (was ", before, ")");
  }
  if (target.retune == "first") return "FIRST: the key's first best";
  return target.retune;
}

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto lead = static_cast<unsigned char>(text[0]);
    const size_t length = Utf8SequenceLength(text);
    if (length == 0 || (length == 1 && (lead < 0x20 || lead == 0x7f))) {
      AppendEscaped(lead, &out);
      text.remove_prefix(1);
      continue;
    }
    const auto second = length == 2 ? static_cast<unsigned char>(text[1]) : 0;
    if (lead == 0xc2 && second <= 0x9f) {  // C1 controls, U+0080..U+009F
      absl::StrAppend(&out, absl::StrFormat("\\u%04x", second));
    } else {
      out.append(text.data(), length);
    }
    text.remove_prefix(length);
  }
  return out;
}

std::string FormatSeconds(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "-";
  if (seconds >= 1) return absl::StrFormat("%.2f s", seconds);
  if (seconds >= 1e-3) return absl::StrFormat("%.3g ms", seconds * 1e3);
  if (seconds >= 1e-6) return absl::StrFormat("%.3g us", seconds * 1e6);
  return absl::StrFormat("%.3g ns", seconds * 1e9);
}

std::string HumanDuration(absl::Duration duration) {
  int64_t s = absl::ToInt64Seconds(duration);
  if (s < 0) s = 0;
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
}

std::string FormatAge(int64_t unix_ms, absl::Time now) {
  if (unix_ms <= 0) return "-";
  absl::Duration age = now - absl::FromUnixMillis(unix_ms);
  return absl::StrCat(HumanDuration(std::max(age, absl::ZeroDuration())),
                      " ago");
}

std::string FormatOutcomes(const std::map<std::string, int64_t>& outcomes) {
  if (outcomes.empty()) return "none";
  return absl::StrJoin(outcomes, ", ", [](std::string* out, const auto& item) {
    absl::StrAppend(out, item.first, " ", item.second);
  });
}

double SpeedUp(const JobTarget& target) {
  if (!(target.best_seconds > 0) || !(target.default_seconds > 0)) return 0;
  return target.default_seconds / target.best_seconds;
}

const JobTarget* FastestTarget(const Job& job) {
  const JobTarget* fastest = nullptr;
  for (const JobTarget& target : job.targets) {
    if (target.best_config.empty() || !(target.best_seconds > 0)) continue;
    if (fastest == nullptr || target.best_seconds < fastest->best_seconds) {
      fastest = &target;
    }
  }
  return fastest;
}

std::vector<TrialSummary> TopTrials(const Job& job, const JobTarget& target) {
  std::vector<TrialSummary> top;
  for (const TrialSummary& trial : job.top_trials) {
    bool mine = trial.device_model == target.device_model ||
                (trial.device_model.empty() && job.targets.size() == 1);
    if (mine && top.size() < kTopTrials) top.push_back(trial);
  }
  return top;
}

std::string RenderTable(const Row& header, const std::vector<Row>& raw_rows) {
  std::vector<Row> rows = raw_rows;
  for (Row& row : rows) {
    for (std::string& cell : row) cell = Printable(cell);
  }
  std::vector<size_t> widths(header.size(), 0);
  auto measure = [&widths](const Row& row) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(header);
  for (const Row& row : rows) measure(row);
  std::string out;
  auto append = [&](const Row& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  };
  if (!header.empty()) append(header);
  for (const Row& row : rows) append(row);
  return out;
}

std::string JobDetails(const Job& job) {
  std::vector<Row> rows = {
      {"job", job.id},
      {"kernel", absl::StrCat(job.kernel, "  ", job.shape)},
      {"state", JobStateName(job.state)}};
  if (!job.reason.empty()) rows.push_back({"reason", job.reason});
  if (!job.strategy.empty()) rows.push_back({"strategy", StrategyText(job)});
  if (!job.owner.empty()) rows.push_back({"owner", job.owner});
  if (!job.sweep_id.empty()) rows.push_back({"sweep", job.sweep_id});
  rows.push_back({"trials", TrialsText(job)});
  if (!job.stop_reason.empty()) rows.push_back({"stopped", StopText(job.stop_reason)});
  std::string text = Details(rows);
  for (const JobTarget& target : job.targets) {
    absl::StrAppend(&text, "\n", TargetDetails(job, target));
  }
  return text;
}

std::string JobsTable(const std::vector<Job>& jobs, absl::Time now, bool wide) {
  std::vector<Row> rows;
  for (const Job& job : jobs) {
    const JobTarget* fastest = FastestTarget(job);
    Row row = {job.id, job.kernel, job.shape, JobStateName(job.state),
               absl::StrCat(job.trials_done, "/", job.trials_total),
               fastest ? FormatSeconds(fastest->best_seconds) : "-",
               FormatAge(job.updated_unix_ms, now)};
    if (wide) {
      row.insert(row.end(), {job.owner.empty() ? "-" : job.owner,
                             job.strategy.empty() ? "-" : job.strategy,
                             StopText(job.stop_reason), FormatOutcomes(job.outcomes),
                             job.reason.empty() ? "-" : job.reason});
    }
    rows.push_back(std::move(row));
  }
  Row header = {"ID", "KERNEL", "SHAPE", "STATE", "TRIALS", "BEST", "UPDATED"};
  if (wide) {
    header.insert(header.end(), {"OWNER", "STRATEGY", "STOPPED", "OUTCOMES", "REASON"});
  }
  return RenderTable(header, rows);
}

std::string BestConfigDetails(const BestConfig& best) {
  std::vector<Row> rows = {{"config", best.config},
                           {"source", BestConfigSourceName(best.source)},
                           {"time", FormatSeconds(best.median_seconds)}};
  if (!best.tuned_shape.empty())
    rows.push_back({"tuned shape", best.tuned_shape});
  if (!best.device_model.empty()) rows.push_back({"device", best.device_model});
  if (!best.toolkit.empty()) rows.push_back({"toolkit", best.toolkit});
  if (!best.tuning_key.empty()) rows.push_back({"key", best.tuning_key});
  if (!best.job_id.empty()) rows.push_back({"job", best.job_id});
  if (!best.tie_set.empty()) {
    const double widest = best.tie_set.back().gap;
    rows.push_back({"tie set", best.configs_in_round <= 1
                                   ? std::string("none: its round measured it alone")
                               : best.tie_set.size() == 1
                                   ? absl::StrCat("none: ahead of the other ",
                                                  best.configs_in_round - 1,
                                                  " config(s) of its round beyond the noise")
                                   : absl::StrFormat("%d configs within %.2f%% of the fastest "
                                                     "(of %d in its round)",
                                                     best.tie_set.size(), 100 * widest,
                                                     best.configs_in_round)});
    for (const BestConfig::TieMember& member : best.tie_set) {
      if (member.config == best.config) continue;
      rows.push_back({"  tied", absl::StrFormat("%s  %s (%+.2f%%)", member.config,
                                                FormatSeconds(member.median_seconds),
                                                100 * member.gap)});
    }
  }
  if (best.measurements > 0) {
    rows.push_back({"noise", best.rounds >= 2
                                 ? absl::StrFormat("CV %.2f%% over %d finalist rounds",
                                                   100 * best.rounds_cv, best.rounds)
                                 : "measured once (no finalist rounds)"});
    rows.push_back({"measured", absl::StrCat(best.measurements, " time(s) on ", best.devices,
                                             " device(s)")});
  }
  if (best.calibration_seconds > 0) {
    rows.push_back({"calibrated",
                    absl::StrFormat("%.4f (the median over its calibration, %s)",
                                    best.median_seconds / best.calibration_seconds,
                                    FormatSeconds(best.calibration_seconds))});
  }
  return Details(rows);
}

std::string WorkersTable(const std::vector<WorkerInfo>& workers,
                         absl::Time now) {
  std::vector<Row> rows;
  for (const WorkerInfo& worker : workers) {
    rows.push_back(
        {worker.id, worker.host, worker.toolkit.empty() ? "-" : worker.toolkit,
         DevicesText(worker.devices), absl::StrCat(worker.active_leases),
         worker.alive ? "yes" : "no",
         FormatAge(worker.last_seen_unix_ms, now)});
  }
  return RenderTable(
      {"ID", "HOST", "TOOLKIT", "DEVICES", "LEASES", "ALIVE", "LAST SEEN"},
      rows);
}

std::string JsonDocument(const Json& json) {
  return json.dump(2, ' ', /*ensure_ascii=*/false,
                   Json::error_handler_t::replace) +
         "\n";
}

std::string JobJson(const Job& job) { return JsonDocument(JobToJson(job)); }

std::string JobsJson(const std::vector<Job>& jobs, const std::string& next_page_token) {
  Json list = Json::array();
  for (const Job& job : jobs) list.push_back(JobToJson(job));
  Json document = {{"jobs", std::move(list)}};
  if (!next_page_token.empty()) document["next_page_token"] = next_page_token;
  return JsonDocument(document);
}

namespace {

Json TieSetJson(const std::vector<BestConfig::TieMember>& members) {
  Json list = Json::array();
  for (const BestConfig::TieMember& member : members) {
    list.push_back({{"config", member.config},
                    {"median_seconds", member.median_seconds},
                    {"gap", member.gap}});
  }
  return list;
}

}  // namespace

std::string BestConfigJson(const BestConfig& best) {
  Json values = Json::object();
  for (const auto& [name, value] : best.values) values[name] = value;
  return JsonDocument({{"source", BestConfigSourceName(best.source)},
                       {"config", best.config},
                       {"values", std::move(values)},
                       {"median_seconds", best.median_seconds},
                       {"tuning_key", best.tuning_key},
                       {"job_id", best.job_id},
                       {"tuned_shape", best.tuned_shape},
                       {"device_model", best.device_model},
                       {"toolkit", best.toolkit},
                       {"tie_set", TieSetJson(best.tie_set)},
                       {"configs_in_round", best.configs_in_round},
                       {"rounds", best.rounds},
                       {"rounds_cv", best.rounds_cv},
                       {"measurements", best.measurements},
                       {"devices", best.devices},
                       {"calibration_seconds", best.calibration_seconds}});
}

std::string WorkersJson(const std::vector<WorkerInfo>& workers) {
  Json list = Json::array();
  for (const WorkerInfo& worker : workers) {
    Json devices = Json::array();
    for (const DeviceInfo& device : worker.devices) {
      devices.push_back({{"id", device.id},
                         {"model", device.model},
                         {"backend", device.backend}});
    }
    list.push_back({{"id", worker.id},
                    {"host", worker.host},
                    {"toolkit", worker.toolkit},
                    {"devices", std::move(devices)},
                    {"active_leases", worker.active_leases},
                    {"alive", worker.alive},
                    {"last_seen_unix_ms", worker.last_seen_unix_ms}});
  }
  return JsonDocument({{"workers", std::move(list)}});
}

}  // namespace tunefleet::tunectl
