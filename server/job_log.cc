#include "server/job_log.h"

#include <cctype>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_text.h"
#include "common/logging.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server::job_log {
namespace {

// "OK 10, COMPILE_ERROR 2".
std::string Outcomes(const v1::Job& job) {
  std::vector<std::string> parts;
  for (const v1::StatusCount& count : job.outcomes()) {
    parts.push_back(absl::StrCat(v1::TrialStatus_Name(count.status()).substr(13), " ",
                                 count.count()));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

}  // namespace

std::string StopReasonLabel(v1::StopReason reason) {
  if (reason == v1::STOP_REASON_UNSPECIFIED) return "-";
  std::string label = v1::StopReason_Name(reason).substr(12);  // "STOP_REASON_"
  for (char& c : label) c = c == '_' ? ' ' : static_cast<char>(std::tolower(c));
  return label;
}

void Submitted(const v1::Job& job, const v1::JobSpec& spec, bool cached) {
  const LogFields fields{{"job_id", job.id()}, {"kernel", spec.kernel().name()}};
  spdlog::info("job {} submitted by {}: kernel {}, shape {}, {} target(s){}", job.id(),
               job.owner().empty() ? "(anonymous)" : job.owner(), spec.kernel().name(),
               ShapeToString(spec.shape()), job.targets_size(),
               cached ? "; every target cached: answered from the store" : "");
}

void Refused(const v1::JobSpec& spec, const absl::Status& status) {
  const LogFields fields{{"kernel", spec.kernel().name()}};
  spdlog::info("submission of kernel {} refused: {}", spec.kernel().name(), status.ToString());
}

void Started(const v1::Job& job, const Lease& lease) {
  const LogFields fields{{"job_id", job.id()},
                         {"kernel", job.kernel_name()},
                         {"lease", lease.id},
                         {"worker", lease.worker_id}};
  spdlog::info("job {} started: first lease {} to worker {} ({})", job.id(), lease.id,
               lease.worker_id, lease.principal);
}

void LeaseExpired(const Lease& lease) {
  const LogFields fields{{"job_id", lease.job_id}, {"lease", lease.id}, {"worker", lease.worker_id}};
  spdlog::warn("lease {} (epoch {}) of job {} expired: worker {} ({}) lost {} trial(s), "
               "queued again",
               lease.id, lease.epoch, lease.job_id, lease.worker_id, lease.principal,
               lease.ordinals.size());
}

void Stalled(const std::string& job_id, const std::string& reason) {
  const LogFields fields{{"job_id", job_id}};
  if (reason.empty()) {
    spdlog::info("job {}: a live worker can take its work again", job_id);
  } else {
    spdlog::warn("job {}: {}", job_id, reason);
  }
}

void Finished(const v1::Job& job) {
  const LogFields fields{{"job_id", job.id()}, {"kernel", job.kernel_name()}};
  const std::string state = v1::JobState_Name(job.state()).substr(10);
  const std::string summary = absl::StrCat(
      "job ", job.id(), " ", state, ": strategy ", job.strategy(), ", ", job.trials_done(),
      " trial(s)", job.trials_budget() > 0 ? absl::StrCat(" of a budget of ", job.trials_budget())
                                           : "",
      " (", Outcomes(job), "), search stopped: ", StopReasonLabel(job.stop_reason()),
      job.reason().empty() ? "" : "; ", job.reason());
  if (job.state() == v1::JOB_STATE_FAILED) {
    spdlog::warn("{}", summary);
  } else {
    spdlog::info("{}", summary);
  }
}

void Retuned(const v1::Job& job, const v1::Target& target) {
  const LogFields fields{{"job_id", job.id()}, {"kernel", job.kernel_name()}};
  const v1::Retune& retune = target.retune();
  const std::string where = absl::StrCat("job ", job.id(), " on ", target.device_model(),
                                         " (key ", target.tuning_key(), ")");
  switch (retune.outcome()) {
    case v1::RETUNE_OUTCOME_REGRESSED:
      spdlog::warn("{}: REGRESSED: its best {:.4g} ms is not faster than {:.4g} ms of job {}, "
                   "which is still served",
                   where, retune.job_seconds() * 1e3, retune.served_seconds() * 1e3,
                   retune.served_job_id());
      break;
    case v1::RETUNE_OUTCOME_FORCED:
      spdlog::info("{}: replaced the served best by request ({}): {:.4g} ms of job {} "
                   "instead of {:.4g} ms of job {}",
                   where, retune.replace_reason().empty() ? "no reason given"
                                                           : retune.replace_reason(),
                   retune.served_seconds() * 1e3, retune.served_job_id(),
                   retune.previous_seconds() * 1e3, retune.previous_job_id());
      break;
    case v1::RETUNE_OUTCOME_REPLACED:
      spdlog::info("{}: replaced the served best: {:.4g} ms instead of {:.4g} ms of job {}",
                   where, retune.served_seconds() * 1e3, retune.previous_seconds() * 1e3,
                   retune.previous_job_id());
      break;
    case v1::RETUNE_OUTCOME_CONFIRMED:
      spdlog::info("{}: confirmed the served best {}: {:.4g} ms now (was {:.4g} ms of job {})",
                   where, retune.served_config_text(), retune.served_seconds() * 1e3,
                   retune.previous_seconds() * 1e3, retune.previous_job_id());
      break;
    default:
      break;  // a first best: Finished says enough
  }
}

void WorkersForgotten(int count) {
  spdlog::info("forgot {} worker(s) silent past their expiry", count);
}

}  // namespace tunefleet::server::job_log
