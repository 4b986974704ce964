#include "client/tunectl/sweep.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/format.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {

absl::StatusOr<std::vector<Job>> SweepJobs(Client& client, const std::string& sweep_id) {
  JobFilter filter;
  filter.sweep_id = sweep_id;
  filter.limit = 1000;
  absl::StatusOr<std::vector<Job>> listed = ListAllJobs(client, filter);
  if (!listed.ok()) return listed.status();
  // A coordinator that knows no sweeps ignores the filter: only the jobs
  // that say they are the sweep's are.
  std::vector<Job> jobs;
  for (Job& job : *listed) {
    if (job.sweep_id == sweep_id) jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return absl::NotFoundError(absl::StrCat("no sweep ", sweep_id));
  std::reverse(jobs.begin(), jobs.end());
  return jobs;
}

namespace {

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

namespace {

// The values of one dim's terms ("1", "2", "4", "...", "4096"), at most
// `max_values` of them.
absl::StatusOr<std::vector<int64_t>> DimValues(const std::string& dim,
                                               const std::vector<std::string>& terms,
                                               size_t max_values) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("shape dim ", dim, "=",
                                                   absl::StrJoin(terms, ","), ": ", why));
  };
  std::vector<int64_t> values;
  size_t dots = terms.size();
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i] == "...") {
      if (dots != terms.size()) return bad("one \"...\" at most");
      dots = i;
      continue;
    }
    int64_t value = 0;
    if (!absl::SimpleAtoi(terms[i], &value)) {
      return bad(absl::StrCat("'", terms[i], "' is not a number"));
    }
    values.push_back(value);
  }
  if (dots == terms.size()) return values;
  if (dots < 2 || dots != terms.size() - 2) {
    return bad("a range is two or more terms, \"...\", then the last term");
  }
  if (std::any_of(values.begin(), values.end(), [](int64_t v) { return v < 0; })) {
    return bad("a range's terms are not negative");
  }
  const int64_t last = values.back();
  values.pop_back();
  // Terms are in [0, INT64_MAX]: differences cannot overflow; products and
  // sums past INT64_MAX are past `last` too.
  const int64_t step = values[1] - values[0];
  bool arithmetic = step != 0;
  bool geometric = values[0] > 0 && values[1] % values[0] == 0 && values[1] / values[0] > 1;
  const int64_t ratio = geometric ? values[1] / values[0] : 0;
  for (size_t i = 2; i < values.size(); ++i) {
    int64_t product = 0;
    arithmetic &= values[i] - values[i - 1] == step;
    geometric &= !__builtin_mul_overflow(values[i - 1], ratio, &product) && values[i] == product;
  }
  if (!arithmetic && !geometric) {
    return bad("the terms before \"...\" have neither one difference nor one integer ratio");
  }
  int64_t next = values.back();
  while (next != last) {
    const bool overflow = arithmetic ? __builtin_add_overflow(next, step, &next)
                                     : __builtin_mul_overflow(next, ratio, &next);
    const bool growing = !arithmetic || step > 0;
    if (overflow || (growing ? next > last : next < last)) {
      return bad(absl::StrCat(last, " is not a term of the range"));
    }
    if (values.size() >= max_values) return bad(absl::StrCat("more than ", max_values, " terms"));
    values.push_back(next);
  }
  return values;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandShapes(const std::string& text,
                                                      size_t max_shapes) {
  if (absl::StripAsciiWhitespace(text).empty()) return std::vector<std::string>{text};
  std::vector<std::pair<std::string, std::vector<std::string>>> dims;  // name, terms
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::string term(absl::StripAsciiWhitespace(part));
    const size_t equals = term.find('=');
    if (equals != std::string::npos) {
      dims.push_back({std::string(absl::StripAsciiWhitespace(term.substr(0, equals))),
                      {std::string(absl::StripAsciiWhitespace(term.substr(equals + 1)))}});
    } else if (!dims.empty()) {
      dims.back().second.push_back(term);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("shape '", text, "': it starts with NAME=VALUE"));
    }
  }
  bool lists = false;
  for (const auto& [name, terms] : dims) lists |= terms.size() > 1;
  if (!lists) return std::vector<std::string>{text};
  std::vector<std::string> shapes = {""};
  for (const auto& [name, terms] : dims) {
    ASSIGN_OR_RETURN(std::vector<int64_t> values, DimValues(name, terms, max_shapes));
    if (shapes.size() * values.size() > max_shapes) {
      return absl::InvalidArgumentError(absl::StrCat("shape '", text, "' names more than ",
                                                     max_shapes, " shapes"));
    }
    std::vector<std::string> longer;
    for (const std::string& shape : shapes) {
      for (int64_t value : values) {
        longer.push_back(absl::StrCat(shape, shape.empty() ? "" : ",", name, "=", value));
      }
    }
    shapes = std::move(longer);
  }
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
  return PrintSweep(sweep_id, *jobs, console);
}

int PrintSweep(const std::string& sweep_id, const std::vector<Job>& jobs,
               const Console& console) {
  *console.out << (WantsJson(console) ? SweepJson(sweep_id, jobs) : SweepTable(sweep_id, jobs));
  return ExitCodeForSweep(jobs);
}

}  // namespace tunefleet::tunectl
