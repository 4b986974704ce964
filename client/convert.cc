#include "client/convert.h"

#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/config_text.h"
#include "common/status_macros.h"

namespace tunefleet::client_internal {
namespace {

JobState JobStateFromProto(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED:
      return JobState::kQueued;
    case v1::JOB_STATE_RUNNING:
      return JobState::kRunning;
    case v1::JOB_STATE_SUCCEEDED:
      return JobState::kSucceeded;
    case v1::JOB_STATE_FAILED:
      return JobState::kFailed;
    case v1::JOB_STATE_CANCELLED:
      return JobState::kCancelled;
    default:
      return JobState::kUnspecified;
  }
}

BestConfig::Source SourceFromProto(v1::GetBestConfigResponse::Source source) {
  switch (source) {
    case v1::GetBestConfigResponse::SOURCE_EXACT:
      return BestConfig::Source::kExact;
    case v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE:
      return BestConfig::Source::kNearestShape;
    case v1::GetBestConfigResponse::SOURCE_DEFAULT:
      return BestConfig::Source::kDefault;
    default:
      return BestConfig::Source::kUnspecified;
  }
}

std::string BackendName(v1::Backend backend) {
  return std::string(absl::StripPrefix(v1::Backend_Name(backend), "BACKEND_"));
}

// "time_budget" for STOP_REASON_TIME_BUDGET; "" for UNSPECIFIED.
std::string StopReasonName(v1::StopReason reason) {
  if (reason == v1::STOP_REASON_UNSPECIFIED) return "";
  std::string name = v1::StopReason_Name(reason);
  if (name.empty()) return absl::StrCat("stop_reason_", static_cast<int>(reason));
  name = name.substr(sizeof("STOP_REASON_") - 1);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

// "regressed" for RETUNE_OUTCOME_REGRESSED; "" for UNSPECIFIED.
std::string RetuneName(v1::RetuneOutcome outcome) {
  if (outcome == v1::RETUNE_OUTCOME_UNSPECIFIED) return "";
  std::string name = v1::RetuneOutcome_Name(outcome);
  if (name.empty()) return absl::StrCat("retune_outcome_", static_cast<int>(outcome));
  name = name.substr(sizeof("RETUNE_OUTCOME_") - 1);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

JobTarget TargetFromProto(const v1::Target& target) {
  JobTarget out;
  out.device_model = target.device_model();
  out.toolkit = target.toolkit();
  out.tuning_key = target.tuning_key();
  out.cached = target.cached();
  out.trials_total = target.trials_total();
  out.trials_done = target.trials_done();
  if (target.has_best()) {
    out.best_config = target.best().config_text().empty()
                          ? ConfigToString(target.best().config())
                          : target.best().config_text();
    out.best_seconds = target.best().median_seconds();
  }
  out.default_seconds = target.default_seconds();
  out.stop_reason = StopReasonName(target.stop_reason());
  out.retune = RetuneName(target.retune().outcome());
  out.served_job_id = target.retune().served_job_id();
  out.served_seconds = target.retune().served_seconds();
  out.previous_job_id = target.retune().previous_job_id();
  out.previous_seconds = target.retune().previous_seconds();
  out.replace_reason = target.retune().replace_reason();
  return out;
}

TrialSummary TrialFromProto(const v1::TrialSummary& trial) {
  return TrialSummary{.config = trial.config_text(),
                      .median_seconds = trial.median_seconds(),
                      .status = TrialStatusName(trial.status()),
                      .device_model = trial.device_model()};
}

absl::Status CheckConfigSet(const v1::KernelSpec& spec,
                            const std::string& name) {
  if (name.empty()) return absl::OkStatus();
  for (const v1::ConfigSet& set : spec.config_sets()) {
    if (set.name() == name) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "kernel ", spec.name(), " has no config set \"", name, "\""));
}

}  // namespace

std::string TrialStatusName(v1::TrialStatus status) {
  std::string name = v1::TrialStatus_Name(status);
  if (name.empty()) return absl::StrCat("STATUS_", static_cast<int>(status));
  return std::string(absl::StripPrefix(name, "TRIAL_STATUS_"));
}

absl::StatusOr<v1::TrialStatus> TrialStatusFromName(const std::string& name) {
  v1::TrialStatus status;
  if (name.empty() || name == "UNSPECIFIED" ||
      !v1::TrialStatus_Parse(absl::StrCat("TRIAL_STATUS_", name), &status)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown trial status \"", name,
        "\" (OK, COMPILE_ERROR, INVALID_CONFIG, LAUNCH_ERROR, CRASHED, TIMEOUT, "
        "WRONG_RESULT, QUARANTINED, WORKER_LOST)"));
  }
  return status;
}

v1::JobState JobStateToProto(JobState state) {
  switch (state) {
    case JobState::kQueued: return v1::JOB_STATE_QUEUED;
    case JobState::kRunning: return v1::JOB_STATE_RUNNING;
    case JobState::kSucceeded: return v1::JOB_STATE_SUCCEEDED;
    case JobState::kFailed: return v1::JOB_STATE_FAILED;
    case JobState::kCancelled: return v1::JOB_STATE_CANCELLED;
    case JobState::kUnspecified: break;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

KernelProfile ProfileFromProto(const v1::KernelProfile& profile) {
  KernelProfile out;
  out.config = profile.config_text();
  out.device_model = profile.device_model();
  out.tuning_key = profile.tuning_key();
  out.rank = profile.rank();
  out.median_seconds = profile.median_seconds();
  out.pending = profile.pending();
  out.unavailable = profile.unavailable();
  out.duration_seconds = profile.duration_seconds();
  out.cycles = profile.cycles();
  out.registers_per_thread = profile.registers_per_thread();
  out.shared_memory_bytes = profile.shared_memory_bytes();
  out.achieved_occupancy_pct = profile.achieved_occupancy_pct();
  out.l2_hit_rate_pct = profile.l2_hit_rate_pct();
  out.dram_bytes_per_second = profile.dram_bytes_per_second();
  out.dram_throughput_pct = profile.dram_throughput_pct();
  out.tflops = profile.tflops();
  out.worker_id = profile.worker_id();
  out.device_id = profile.device_id();
  out.ncu_version = profile.ncu_version();
  out.profiled_unix_ms = profile.profiled_unix_ms();
  return out;
}

Trial TrialFromProto(const v1::TrialRecord& trial) {
  Trial out;
  out.config = trial.config_text();
  out.status = TrialStatusName(trial.status());
  out.error = trial.error();
  out.median_seconds = trial.median_seconds();
  out.p20_seconds = trial.p20_seconds();
  out.p80_seconds = trial.p80_seconds();
  out.samples = trial.samples();
  out.compile_seconds = trial.compile_seconds();
  out.tuning_key = trial.tuning_key();
  out.device_model = trial.device_model();
  out.worker_id = trial.worker_id();
  out.device_id = trial.device_id();
  out.principal = trial.principal();
  out.clock_mhz = trial.clock_mhz();
  out.round = trial.round();
  out.excluded = trial.excluded();
  out.finished_unix_ms = trial.finished_unix_ms();
  out.cut_early = trial.cut_early();
  out.rounds = trial.rounds();
  out.rounds_cv = trial.rounds_cv();
  out.retaken_samples = trial.retaken_samples();
  out.low_clock_samples = trial.low_clock_samples();
  out.calibration_seconds = trial.calibration_seconds();
  return out;
}

Job JobFromProto(const v1::Job& job) {
  Job out;
  out.id = job.id();
  out.kernel = job.kernel_name();
  out.shape = ShapeToString(job.shape());
  out.state = JobStateFromProto(job.state());
  out.reason = job.reason();
  out.strategy = job.strategy();
  out.trials_total = job.trials_total();
  out.trials_done = job.trials_done();
  for (const v1::StatusCount& count : job.outcomes()) {
    out.outcomes[TrialStatusName(count.status())] += count.count();
  }
  for (const v1::Target& target : job.targets()) {
    out.targets.push_back(TargetFromProto(target));
  }
  for (const v1::TrialSummary& trial : job.top_trials()) {
    out.top_trials.push_back(TrialFromProto(trial));
  }
  out.created_unix_ms = job.created_unix_ms();
  out.owner = job.owner();
  out.updated_unix_ms = job.updated_unix_ms();
  out.stop_reason = StopReasonName(job.stop_reason());
  out.trials_budget = job.trials_budget();
  out.time_budget_seconds = job.time_budget_seconds();
  out.plateau_batches = job.plateau_batches();
  out.started_unix_ms = job.started_unix_ms();
  out.sweep_id = job.sweep_id();
  return out;
}

BestConfig BestConfigFromProto(const v1::GetBestConfigResponse& response) {
  BestConfig out;
  out.source = SourceFromProto(response.source());
  out.config = response.config_text().empty()
                   ? ConfigToString(response.config())
                   : response.config_text();
  for (const v1::ParamValue& value : response.config().values()) {
    out.values[value.name()] = value.value();
  }
  out.median_seconds = response.median_seconds();
  out.tuning_key = response.tuning_key();
  out.job_id = response.job_id();
  out.tuned_shape = ShapeToString(response.tuned_shape());
  out.device_model = response.device_model();
  out.toolkit = response.toolkit();
  SetEvidence(response.evidence(), &out);
  return out;
}

void SetEvidence(const v1::BestEvidence& evidence, BestConfig* best) {
  best->tie_set.clear();
  for (const v1::BestEvidence::TieMember& member : evidence.tie_set()) {
    best->tie_set.push_back(
        BestConfig::TieMember{member.config_text(), member.median_seconds(), member.gap()});
  }
  best->configs_in_round = evidence.configs_in_round();
  best->rounds = evidence.rounds();
  best->rounds_cv = evidence.rounds_cv();
  best->measurements = evidence.measurements();
  best->devices = evidence.devices();
  best->calibration_seconds = evidence.calibration_seconds();
}

WorkerInfo WorkerFromProto(const v1::WorkerInfo& worker) {
  WorkerInfo out;
  out.id = worker.worker_id();
  out.host = worker.host();
  out.toolkit = worker.toolkit();
  for (const v1::Device& device : worker.devices()) {
    out.devices.push_back(DeviceInfo{.id = device.id(),
                                     .model = device.model(),
                                     .backend = BackendName(device.backend())});
  }
  out.last_seen_unix_ms = worker.last_seen_unix_ms();
  out.active_leases = worker.active_leases();
  out.alive = worker.alive();
  return out;
}

absl::StatusOr<v1::Shape> ShapeFromRequest(const SubmitRequest& request) {
  if (!request.shape.empty()) return ParseShape(request.shape);
  if (request.shape_dims.empty()) {
    return absl::InvalidArgumentError("no shape given (e.g. M=1024,N=1024)");
  }
  v1::Shape shape;
  for (const auto& [name, value] : request.shape_dims) {
    v1::DimValue* dim = shape.add_dims();
    dim->set_name(name);
    dim->set_value(value);
  }
  return shape;
}

absl::StatusOr<v1::JobSpec> JobSpecFromRequest(const SubmitRequest& request,
                                               KernelBundle bundle) {
  ASSIGN_OR_RETURN(v1::Shape shape, ShapeFromRequest(request));
  ASSIGN_OR_RETURN(v1::Shape normalized, NormalizeShape(bundle.spec, shape));
  RETURN_IF_ERROR(CheckConfigSet(bundle.spec, request.config_set));
  v1::JobSpec spec;
  *spec.mutable_kernel() = std::move(bundle.spec);
  for (v1::SourceFile& file : bundle.sources) {
    *spec.add_sources() = std::move(file);
  }
  *spec.mutable_shape() = std::move(normalized);
  spec.set_strategy(request.strategy);
  spec.set_budget(request.budget);
  spec.set_time_budget_seconds(request.time_budget_seconds);
  spec.set_plateau_batches(request.plateau_batches);
  spec.set_force_retune(request.force_retune);
  spec.set_replace_best(request.replace_best);
  spec.set_replace_reason(request.replace_reason);
  spec.set_config_set(request.config_set);
  spec.set_seed(request.seed);
  spec.set_device_model(request.device_model);
  return spec;
}

}  // namespace tunefleet::client_internal
