#include "server/job_history.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace tunefleet::server {
namespace {

// Tokens name the last row of a page, so that rows stored meanwhile neither
// repeat nor shift the next page: "j1:<created_unix_ms>:<id>" for jobs,
// "t1:<seq>" for trials.
constexpr absl::string_view kJobTokenPrefix = "j1:";
constexpr absl::string_view kTrialTokenPrefix = "t1:";

absl::Status BadToken() {
  return absl::InvalidArgumentError("page_token was not issued by this coordinator");
}

absl::Status ApplyJobToken(absl::string_view token, JobQuery* query) {
  if (token.empty()) return absl::OkStatus();
  if (!absl::ConsumePrefix(&token, kJobTokenPrefix)) return BadToken();
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(token, absl::MaxSplits(':', 1));
  if (!absl::SimpleAtoi(parts.first, &query->after_created_unix_ms) || parts.second.empty()) {
    return BadToken();
  }
  query->after_id = std::string(parts.second);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> TrialTokenSeq(absl::string_view token) {
  if (token.empty()) return 0;
  int64_t seq = 0;
  if (!absl::ConsumePrefix(&token, kTrialTokenPrefix) || !absl::SimpleAtoi(token, &seq) ||
      seq <= 0) {
    return BadToken();
  }
  return seq;
}

v1::TrialRecord TrialView(TrialRecord record, const std::string& device_model) {
  v1::TrialRecord trial;
  trial.set_config_text(std::move(record.config));
  trial.set_status(static_cast<v1::TrialStatus>(record.status));
  trial.set_error(std::move(record.error));
  trial.set_median_seconds(record.median_seconds);
  trial.set_p20_seconds(record.p20_seconds);
  trial.set_p80_seconds(record.p80_seconds);
  trial.set_samples(record.samples);
  trial.set_compile_seconds(record.compile_seconds);
  trial.set_tuning_key(std::move(record.tuning_key));
  trial.set_device_model(device_model);
  trial.set_worker_id(std::move(record.worker_id));
  trial.set_device_id(std::move(record.device_id));
  trial.set_principal(std::move(record.principal));
  trial.set_clock_mhz(record.clock_mhz);
  trial.set_round(RoundName(record.round));
  trial.set_excluded(record.excluded);
  trial.set_finished_unix_ms(record.finished_unix_ms);
  trial.set_cut_early(record.cut_early);
  trial.set_rounds(record.rounds);
  trial.set_rounds_cv(record.rounds_cv);
  trial.set_retaken_samples(record.retaken_samples);
  trial.set_low_clock_samples(record.low_clock_samples);
  trial.set_calibration_seconds(record.calibration_seconds);
  return trial;
}

bool HasTargetOn(const v1::Job& job, const std::string& device_model) {
  return std::any_of(
      job.targets().begin(), job.targets().end(),
      [&](const v1::Target& target) { return target.device_model() == device_model; });
}

}  // namespace

const char* RoundName(TrialRound round) {
  switch (round) {
    case TrialRound::kSearch: return "search";
    case TrialRound::kFinalists: return "finalists";
    case TrialRound::kVerify: return "verify";
    case TrialRound::kReferee: return "referee";
    case TrialRound::kSpotCheck: return "spot";
    case TrialRound::kSpotReferee: return "spot-referee";
  }
  return "unknown";
}

JobHistory::JobHistory(Store* store, JobManager* jobs) : store_(store), jobs_(jobs) {}

absl::StatusOr<JobListPage> JobHistory::ListJobs(const JobListRequest& request) {
  JobQuery query;
  query.state = request.state;
  query.kernel_name = request.kernel_name;
  query.owner = request.owner;
  query.sweep_id = request.sweep_id;
  query.limit = request.page_size + 1;  // one more tells whether a page follows
  RETURN_IF_ERROR(ApplyJobToken(request.page_token, &query));
  JobListPage page;
  ASSIGN_OR_RETURN(page.jobs, jobs_->List(query));
  if (static_cast<int>(page.jobs.size()) > request.page_size) {
    page.jobs.resize(request.page_size);
    const v1::Job& last = page.jobs.back();
    page.next_page_token =
        absl::StrCat(kJobTokenPrefix, last.created_unix_ms(), ":", last.id());
  }
  if (!request.device_model.empty()) {
    std::erase_if(page.jobs, [&](const v1::Job& job) {
      return !HasTargetOn(job, request.device_model);
    });
  }
  return page;
}

absl::StatusOr<TrialListPage> JobHistory::ListTrials(const TrialListRequest& request) {
  ASSIGN_OR_RETURN(int64_t after_seq, TrialTokenSeq(request.page_token));
  ASSIGN_OR_RETURN(v1::Job job, jobs_->Get(request.job_id));
  absl::flat_hash_map<std::string, std::string> model_of_key;
  for (const v1::Target& target : job.targets()) {
    model_of_key[target.tuning_key()] = target.device_model();
  }
  TrialQuery query;
  query.job_id = request.job_id;
  query.status = request.status;
  query.after_seq = after_seq;
  query.limit = request.page_size;
  ASSIGN_OR_RETURN(TrialPage stored, store_->QueryTrials(query));
  TrialListPage page;
  page.trials.reserve(stored.trials.size());
  for (TrialRecord& record : stored.trials) {
    auto model = model_of_key.find(record.tuning_key);
    page.trials.push_back(TrialView(
        std::move(record), model == model_of_key.end() ? std::string() : model->second));
  }
  if (stored.next_seq != 0) page.next_page_token = absl::StrCat(kTrialTokenPrefix, stored.next_seq);
  return page;
}

}  // namespace tunefleet::server
