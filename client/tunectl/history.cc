#include "client/tunectl/history.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/tunectl/exit_codes.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

std::string Date(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string Ratio(double first, double second) {
  return first > 0 && second > 0 ? absl::StrFormat("%.2fx", second / first) : "-";
}

// Config -> median of the OK search trials of `job_id` on `model`.
using Times = std::map<std::string, double>;
absl::StatusOr<std::map<std::string, Times>> TimesByModel(Client& client,
                                                          const std::string& job_id) {
  absl::StatusOr<std::vector<Trial>> trials = client.ListAllTrials(job_id, "OK");
  if (!trials.ok()) return trials.status();
  std::map<std::string, Times> by_model;
  for (const Trial& trial : *trials) {
    if (trial.round == "search") by_model[trial.device_model][trial.config] = trial.median_seconds;
  }
  return by_model;
}

}  // namespace

absl::StatusOr<std::vector<Job>> SucceededJobs(Client& client, const std::string& kernel,
                                               const std::string& device_model) {
  JobFilter filter;
  filter.kernel = kernel;
  filter.device_model = device_model;
  filter.state = JobState::kSucceeded;
  filter.limit = 1000;
  return ListAllJobs(client, filter);
}

std::vector<HistoryPoint> HistoryOf(const std::vector<Job>& jobs,
                                    const std::string& device_model) {
  std::vector<HistoryPoint> points;
  for (const Job& job : jobs) {
    if (job.state != JobState::kSucceeded) continue;
    for (const JobTarget& target : job.targets) {
      if (target.best_config.empty()) continue;
      if (!device_model.empty() && target.device_model != device_model) continue;
      points.push_back({job.updated_unix_ms, job.shape, target.device_model, job.id,
                        target.best_config, target.best_seconds, target.default_seconds,
                        target.cached, target.retune});
    }
  }
  std::sort(points.begin(), points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
    return std::tie(a.shape, a.device_model, a.unix_ms, a.job_id) <
           std::tie(b.shape, b.device_model, b.unix_ms, b.job_id);
  });
  return points;
}

int RunHistory(Client& client, const std::string& kernel, const std::string& device_model,
               const Console& console) {
  absl::StatusOr<std::vector<Job>> jobs = SucceededJobs(client, kernel, device_model);
  if (!jobs.ok()) return ReportError(console, jobs.status());
  std::vector<HistoryPoint> points = HistoryOf(*jobs, device_model);
  if (console.format == OutputFormat::kJson) {
    Json list = Json::array();
    for (const HistoryPoint& point : points) {
      list.push_back({{"unix_ms", point.unix_ms},         {"shape", point.shape},
                      {"device_model", point.device_model}, {"job_id", point.job_id},
                      {"best_config", point.best_config},   {"best_seconds", point.best_seconds},
                      {"default_seconds", point.default_seconds}, {"cached", point.cached},
                      {"retune", point.retune}});
    }
    *console.out << JsonDocument({{"kernel", kernel}, {"history", std::move(list)}});
    return kExitOk;
  }
  std::vector<Row> rows;
  for (const HistoryPoint& point : points) {
    rows.push_back({point.shape, point.device_model, Date(point.unix_ms), point.job_id,
                    FormatSeconds(point.best_seconds),
                    Ratio(point.best_seconds, point.default_seconds),
                    point.cached ? "cached" : "measured",
                    point.retune.empty() ? "-" : point.retune, point.best_config});
  }
  *console.out << RenderTable({"SHAPE", "DEVICE", "WHEN (UTC)", "JOB", "BEST", "VS DEFAULT",
                               "FROM", "OUTCOME", "CONFIG"},
                              rows);
  return kExitOk;
}

int RunCompare(Client& client, const std::string& first, const std::string& second,
               const Console& console) {
  absl::StatusOr<Job> a = client.GetJob(first);
  if (!a.ok()) return ReportError(console, a.status());
  absl::StatusOr<Job> b = client.GetJob(second);
  if (!b.ok()) return ReportError(console, b.status());
  absl::StatusOr<std::map<std::string, Times>> times_a = TimesByModel(client, first);
  if (!times_a.ok()) return ReportError(console, times_a.status());
  absl::StatusOr<std::map<std::string, Times>> times_b = TimesByModel(client, second);
  if (!times_b.ok()) return ReportError(console, times_b.status());
  Json configs = Json::array();
  std::vector<Row> rows;
  for (const auto& [model, configs_a] : *times_a) {
    auto other = times_b->find(model);
    if (other == times_b->end()) continue;
    for (const auto& [config, seconds] : configs_a) {
      auto match = other->second.find(config);
      if (match == other->second.end()) continue;
      configs.push_back({{"device_model", model}, {"config", config},
                         {"first_seconds", seconds}, {"second_seconds", match->second}});
      rows.push_back({model, config, FormatSeconds(seconds), FormatSeconds(match->second),
                      Ratio(seconds, match->second)});
    }
  }
  if (console.format == OutputFormat::kJson) {
    Json jobs = Json::array();
    for (const Job* job : {&*a, &*b}) {
      Json targets = Json::array();
      for (const JobTarget& target : job->targets) {
        targets.push_back({{"device_model", target.device_model},
                           {"best_config", target.best_config},
                           {"best_seconds", target.best_seconds}});
      }
      jobs.push_back({{"id", job->id}, {"shape", job->shape}, {"targets", targets}});
    }
    *console.out << JsonDocument({{"jobs", jobs}, {"common_configs", configs}});
    return kExitOk;
  }
  std::vector<Row> bests;
  for (const Job* job : {&*a, &*b}) {
    for (const JobTarget& target : job->targets) {
      bests.push_back({job->id, job->shape, target.device_model,
                       FormatSeconds(target.best_seconds),
                       target.best_config.empty() ? "-" : target.best_config});
    }
  }
  *console.out << RenderTable({"JOB", "SHAPE", "DEVICE", "BEST", "CONFIG"}, bests) << "\n"
               << RenderTable({"DEVICE", "CONFIG", first, second, "RATIO"}, rows);
  return kExitOk;
}

}  // namespace tunefleet::tunectl
