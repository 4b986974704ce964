#include "client/tunectl/trials.h"

#include <charconv>
#include <optional>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/tunectl/exit_codes.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kReasonWidth = 100;

Json TrialToJson(const Trial& trial) {
  return {{"config", trial.config},
          {"status", trial.status},
          {"error", trial.error},
          {"median_seconds", trial.median_seconds},
          {"p20_seconds", trial.p20_seconds},
          {"p80_seconds", trial.p80_seconds},
          {"samples", trial.samples},
          {"compile_seconds", trial.compile_seconds},
          {"device_model", trial.device_model},
          {"tuning_key", trial.tuning_key},
          {"round", trial.round},
          {"worker_id", trial.worker_id},
          {"device_id", trial.device_id},
          {"principal", trial.principal},
          {"clock_mhz", trial.clock_mhz},
          {"excluded", trial.excluded},
          {"finished_unix_ms", trial.finished_unix_ms},
          {"cut_early", trial.cut_early},
          {"rounds", trial.rounds},
          {"rounds_cv", trial.rounds_cv},
          {"retaken_samples", trial.retaken_samples},
          {"low_clock_samples", trial.low_clock_samples},
          {"calibration_seconds", trial.calibration_seconds}};
}

// What a measurement's row says beyond its times (docs/measurement.md), e.g.
// "cal 0.5312", "cut early", "5 rounds CV 0.41%", "3 retaken, 1 low clock";
// "-" when none.
std::string MeasurementNotes(const Trial& trial) {
  std::vector<std::string> notes;
  if (trial.calibration_seconds > 0) {
    notes.push_back(
        absl::StrFormat("cal %.4f", trial.median_seconds / trial.calibration_seconds));
  }
  if (trial.cut_early) notes.push_back("cut early");
  if (trial.rounds > 0) {
    notes.push_back(absl::StrFormat("%d rounds CV %.2f%%", trial.rounds, 100 * trial.rounds_cv));
  }
  if (trial.retaken_samples > 0) notes.push_back(absl::StrCat(trial.retaken_samples, " retaken"));
  if (trial.low_clock_samples > 0) {
    notes.push_back(absl::StrCat(trial.low_clock_samples, " low clock"));
  }
  return notes.empty() ? "-" : absl::StrJoin(notes, ", ");
}

std::optional<JobState> ParseJobState(const std::string& name) {
  const std::string upper = absl::AsciiStrToUpper(name);
  for (JobState state : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                         JobState::kFailed, JobState::kCancelled}) {
    if (upper == JobStateName(state)) return state;
  }
  return std::nullopt;
}

}  // namespace

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char c : field) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string ReasonSummary(const std::string& error, size_t width) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(error, absl::ByAnyChar("\r\n"), absl::SkipWhitespace());
  if (lines.empty()) return "";
  std::string summary(absl::StripAsciiWhitespace(lines[0]));
  // A compiler's log starts with its exit code; its first diagnostic says why.
  for (size_t i = 1; i < lines.size(); ++i) {
    if (absl::StrContains(lines[i], "error")) {
      absl::StrAppend(&summary, ": ", absl::StripAsciiWhitespace(lines[i]));
      break;
    }
  }
  bool cut = lines.size() > 1;
  if (summary.size() > width) summary.resize(width);
  return cut || summary.size() == width ? absl::StrCat(summary, "...") : summary;
}

std::string TrialsTable(const std::vector<Trial>& trials, bool wide) {
  std::vector<Row> rows;
  rows.reserve(trials.size());
  for (const Trial& trial : trials) {
    Row row = {trial.config, trial.device_model.empty() ? "-" : trial.device_model,
               trial.status, FormatSeconds(trial.median_seconds), trial.round,
               trial.worker_id.empty() ? "-" : trial.worker_id};
    if (wide) {
      row.insert(row.end(),
                 {FormatSeconds(trial.p20_seconds), FormatSeconds(trial.p80_seconds),
                  absl::StrCat(trial.samples), FormatSeconds(trial.compile_seconds),
                  trial.clock_mhz > 0 ? absl::StrCat(trial.clock_mhz, " MHz") : "-",
                  MeasurementNotes(trial),
                  trial.principal.empty() ? "-" : trial.principal,
                  trial.excluded ? "yes" : "no", trial.tuning_key});
    }
    row.push_back(trial.error.empty() ? "-" : ReasonSummary(trial.error, kReasonWidth));
    rows.push_back(std::move(row));
  }
  Row header = {"CONFIG", "DEVICE", "STATUS", "MEDIAN", "ROUND", "WORKER"};
  if (wide) {
    header.insert(header.end(), {"P20", "P80", "SAMPLES", "COMPILE", "CLOCK", "NOTES", "PRINCIPAL",
                                 "EXCLUDED", "KEY"});
  }
  header.push_back("REASON");
  return RenderTable(header, rows);
}

std::string TrialsJson(const std::string& job_id, const std::vector<Trial>& trials) {
  Json list = Json::array();
  for (const Trial& trial : trials) list.push_back(TrialToJson(trial));
  return JsonDocument({{"job_id", job_id}, {"trials", std::move(list)}});
}

// The shortest text that reads back as exactly `value`: a CSV replayed by
// bench/search_bench finds the very times the job measured.
std::string ExactNumber(double value) {
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return error == std::errc() ? std::string(buffer, end) : absl::StrCat(value);
}

std::string TrialsCsv(const std::vector<Trial>& trials) {
  std::string csv =
      "config,device_model,status,median_seconds,p20_seconds,p80_seconds,samples,"
      "compile_seconds,round,worker_id,device_id,principal,clock_mhz,excluded,tuning_key,"
      "finished_unix_ms,error\r\n";
  for (const Trial& trial : trials) {
    std::vector<std::string> fields = {
        trial.config, trial.device_model, trial.status,
        ExactNumber(trial.median_seconds), ExactNumber(trial.p20_seconds),
        ExactNumber(trial.p80_seconds), absl::StrCat(trial.samples),
        absl::StrCat(trial.compile_seconds), trial.round, trial.worker_id,
        trial.device_id, trial.principal, absl::StrCat(trial.clock_mhz),
        trial.excluded ? "true" : "false", trial.tuning_key,
        absl::StrCat(trial.finished_unix_ms), trial.error};
    for (std::string& field : fields) field = CsvField(field);
    absl::StrAppend(&csv, absl::StrJoin(fields, ","), "\r\n");
  }
  return csv;
}

int RunTrials(Client& client, const std::string& job_id, const std::string& status,
              const Console& console) {
  absl::StatusOr<std::vector<Trial>> trials =
      client.ListAllTrials(job_id, absl::AsciiStrToUpper(status));
  if (!trials.ok()) return ReportError(console, trials.status());
  switch (console.format) {
    case OutputFormat::kJson:
      *console.out << TrialsJson(job_id, *trials);
      break;
    case OutputFormat::kCsv:
      *console.out << TrialsCsv(*trials);
      break;
    default:
      *console.out << TrialsTable(*trials, console.format == OutputFormat::kWide);
  }
  return kExitOk;
}

int RunJobs(Client& client, const JobsFlags& flags, const Console& console) {
  JobFilter filter;
  if (!flags.state.empty()) {
    std::optional<JobState> state = ParseJobState(flags.state);
    if (!state.has_value()) {
      return ReportError(console, absl::InvalidArgumentError(absl::StrCat(
                                      "unknown job state \"", flags.state,
                                      "\" (queued, running, succeeded, failed, cancelled)")));
    }
    filter.state = *state;
  }
  filter.kernel = flags.kernel;
  filter.owner = flags.owner;
  filter.limit = flags.limit;
  filter.page_token = flags.page_token;
  absl::StatusOr<JobPage> page = client.ListJobs(filter);
  if (!page.ok()) return ReportError(console, page.status());
  if (console.format == OutputFormat::kJson) {
    *console.out << JobsJson(page->jobs, page->next_page_token);
  } else {
    *console.out << JobsTable(page->jobs, console.now(),
                              console.format == OutputFormat::kWide);
  }
  if (!page->next_page_token.empty()) {
    Notes(console) << "more jobs: add --page-token " << page->next_page_token << "\n";
  }
  return kExitOk;
}

}  // namespace tunefleet::tunectl
