#include "worker/trial_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/file_util.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"
#include "spdlog/spdlog.h"
#include "worker/measurement.h"

namespace tunefleet::worker {
namespace {

v1::TrialResult Outcome(v1::TrialStatus status, std::string error) {
  v1::TrialResult result;
  result.set_status(status);
  result.set_error(std::move(error));
  return result;
}

// The smaller of two best medians where 0 (or less) means none known.
double FasterOf(double a, double b) {
  if (a <= 0) return std::max(b, 0.0);
  if (b <= 0) return a;
  return std::min(a, b);
}

}  // namespace

struct TrialExecutor::PendingTrial {
  v1::Trial trial;  // config normalized when it could be
  std::optional<v1::TrialResult> early;  // known without compiling
  std::shared_future<CompilePool::Result> compile;
};

struct TrialExecutor::Batch {
  const JobContext* job = nullptr;
  v1::Shape shape;         // normalized
  std::string code;        // the kernel's digest (KernelDigest): what a child serves
  std::string kernel_key;  // kernel digest and shape: what a config runs as
  v1::MeasureOptions measure;  // what the child is prepared with
  std::optional<v1::TrialResult> job_failure;  // fails every trial
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  std::shared_future<CompilePool::Result> reference;
  std::vector<PendingTrial> pending;
};

TrialExecutor::TrialExecutor(CompilePool* pool, v1::Device device, ChildOptions child,
                             ExecutorOptions options)
    : pool_(pool),
      device_(std::move(device)),
      options_(std::move(options)),
      child_(std::move(child)),
      failed_prepares_(options_.failed_prepares != nullptr
                           ? options_.failed_prepares
                           : std::make_shared<FailedPrepares>()) {}

absl::Duration MinTrialDeadline(v1::Backend backend) {
  return backend == v1::BACKEND_CUDA || backend == v1::BACKEND_PYTHON ? absl::Seconds(30)
                                                                      : absl::Seconds(10);
}

absl::Duration TrialExecutor::TrialDeadline() const {
  if (options_.trial_deadline > absl::ZeroDuration()) return options_.trial_deadline;
  const double budget = WithMeasureDefaults(options_.measure).budget_seconds();
  return std::max(options_.min_trial_deadline, absl::Seconds(20 * budget));
}

void TrialExecutor::PlanTrials(Batch* batch, const std::vector<v1::Trial>& trials) {
  const JobContext& job = *batch->job;
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
      batch->job_failure.has_value()
          ? absl::FailedPreconditionError("job failed")
          : ConfigSpace::Create(job.spec, batch->shape, LimitsFromDevice(device_));
  for (const v1::Trial& trial : trials) {
    PendingTrial& p = batch->pending.emplace_back();
    p.trial = trial;
    if (!space.ok()) {
      if (!batch->job_failure.has_value()) {
        batch->job_failure = Outcome(v1::TRIAL_STATUS_INVALID_CONFIG,
                                     std::string(space.status().message()));
      }
      continue;
    }
    absl::StatusOr<v1::Config> config = NormalizeConfig(job.spec, trial.config());
    absl::Status valid = config.ok() ? (*space)->Bind(*config) : config.status();
    if (valid.ok()) valid = (*space)->CheckConstraints();
    if (!valid.ok()) {
      p.early = Outcome(v1::TRIAL_STATUS_INVALID_CONFIG, std::string(valid.message()));
      continue;
    }
    *p.trial.mutable_config() = *config;
    int kills = 0;
    {
      absl::MutexLock lock(&kills_mu_);
      auto it = kills_.find(ConfigKey(*batch, *config));
      if (it != kills_.end()) kills = it->second;
    }
    if (kills >= options_.kills_to_quarantine) {
      p.early = Outcome(v1::TRIAL_STATUS_QUARANTINED,
                        absl::StrCat("quarantined: killed the benchmark child ", kills,
                                     " times before"));
      continue;
    }
    CompileJob compile{&job.spec,    &job.sources, *config,     device_, /*reference=*/false,
                       batch->shape, job.job_id,  job.own_build};
    p.compile = pool_->Submit(std::move(compile), batch->cancel);
  }
}

absl::Status TrialExecutor::EnsurePrepared(Batch* batch, v1::TrialResult* failure) {
  CompileOutcome reference;
  reference.ok = true;  // a library reference (e.g. cuBLAS) has nothing to compile
  if (batch->reference.valid()) {
    ASSIGN_OR_RETURN(reference, batch->reference.get());
  }
  if (!reference.ok) {
    *failure = Outcome(v1::TRIAL_STATUS_COMPILE_ERROR,
                       absl::StrCat("the reference does not compile:\n", reference.log));
    return absl::OkStatus();
  }
  // The reference file's version too: one built again (an own build) is
  // prepared again.
  const std::string job_key =
      absl::StrCat(JobPrepareKey(*batch), "|", reference.artifact, "|",
                   reference.artifact.empty() ? "" : FileVersion(reference.artifact).value_or(""));
  if (std::optional<v1::TrialResult> failed = failed_prepares_->Find(job_key)) {
    *failure = *std::move(failed);
    return absl::OkStatus();
  }
  ServeCode(batch->code);
  // The same job with the same measure options in the same child process
  // needs no second Prepare; with other measure options (a finalists round
  // measures with a smaller budget than the leases before it) the child
  // keeps the job and takes the options (ServeBenchChild, Remeasure).
  const std::string key = absl::StrCat(job_key, "|", batch->measure.ShortDebugString());
  if (child_.running() && prepared_for_ == key && prepared_in_ == child_.starts()) {
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Prepare(*batch, reference.artifact, failure));
  if (failure->status() != v1::TRIAL_STATUS_UNSPECIFIED) {
    failed_prepares_->Add(job_key, *failure);
    failed_prepares_->Add(JobPrepareKey(*batch), *failure);  // for StartChildFor
  } else {
    prepared_for_ = key;
    prepared_in_ = child_.starts();
  }
  return absl::OkStatus();
}

void TrialExecutor::ServeCode(const std::string& code) {
  if (child_.running() && !served_code_.empty() && served_code_ != code) child_.Stop();
  served_code_ = code;
}

void TrialExecutor::StartSpareChild() {
  if (!served_code_.empty()) return;
  absl::Status started = child_.StartIfStopped();
  if (!started.ok()) spdlog::warn("benchmark child did not start ahead: {}", started.ToString());
}

std::string TrialExecutor::JobPrepareKey(const Batch& batch) {
  return absl::StrCat(batch.job->job_id, "|", batch.kernel_key, "|", batch.job->seed);
}

void TrialExecutor::StartChildFor(const Batch& batch) {
  if (batch.job_failure.has_value()) return;
  if (failed_prepares_->Find(JobPrepareKey(batch)).has_value()) return;  // no Prepare follows
  if (std::none_of(batch.pending.begin(), batch.pending.end(),
                   [](const PendingTrial& p) { return !p.early.has_value(); })) {
    return;
  }
  ServeCode(batch.code);
  absl::Status started = child_.StartIfStopped();
  if (!started.ok()) spdlog::warn("benchmark child did not start early: {}", started.ToString());
}

absl::Status TrialExecutor::Prepare(const Batch& batch, const std::string& reference_artifact,
                                    v1::TrialResult* failure) {
  const JobContext& job = *batch.job;
  v1::ChildRequest request;
  v1::PrepareRequest* prepare = request.mutable_prepare();
  *prepare->mutable_kernel() = job.spec;
  *prepare->mutable_shape() = batch.shape;
  prepare->set_seed(job.seed);
  *prepare->mutable_limits() = device_.limits();
  prepare->set_reference_artifact(reference_artifact);
  *prepare->mutable_measure() = batch.measure;
  prepare->mutable_measure()->set_run_seconds_limit(absl::ToDoubleSeconds(TrialDeadline()));
  // A child that died may have been unlucky once; one that spun until the
  // deadline would spin again.
  for (int attempt = 1;; ++attempt) {
    const absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(ChildReply reply, child_.Call(request, options_.prepare_deadline));
    if (reply.kind == ChildReply::Kind::kAnswered) {
      spdlog::info("prepared {} at {} on {} in {:.3f} s (child started {} time(s))",
                   job.spec.name(), ShapeToString(batch.shape), device_.id(),
                   absl::ToDoubleSeconds(absl::Now() - start), child_.starts());
      if (!reply.response.error().empty()) {
        *failure = Outcome(v1::TRIAL_STATUS_LAUNCH_ERROR,
                           absl::StrCat("prepare failed: ", reply.response.error()));
      }
      return absl::OkStatus();
    }
    spdlog::warn("benchmark child failed to prepare {}: {}", job.spec.name(), reply.detail);
    const bool timed_out = reply.kind == ChildReply::Kind::kTimedOut;
    if (timed_out || attempt >= 2) {
      *failure = Outcome(timed_out ? v1::TRIAL_STATUS_TIMEOUT : v1::TRIAL_STATUS_CRASHED,
                         absl::StrCat("the reference run failed: ", reply.detail));
      return absl::OkStatus();
    }
  }
}

std::string TrialExecutor::ConfigKey(const Batch& batch, const v1::Config& config) {
  return absl::StrCat(batch.kernel_key, "|", ConfigToString(config));
}

bool TrialExecutor::CountKill(const std::string& config_key) {
  absl::MutexLock lock(&kills_mu_);
  return ++kills_[config_key] >= options_.kills_to_quarantine;
}

absl::StatusOr<v1::TrialResult> TrialExecutor::Measure(Batch* batch, const v1::Trial& trial,
                                                       const std::string& artifact,
                                                       double best_seconds) {
  v1::ChildRequest request;
  request.mutable_run()->set_index(trial.index());
  *request.mutable_run()->mutable_config() = trial.config();
  request.mutable_run()->set_artifact(artifact);
  request.mutable_run()->set_best_seconds(best_seconds);
  const absl::Time start = absl::Now();
  absl::StatusOr<ChildReply> answered;
  {
    BusyScope busy(options_.device_meter.get());
    answered = child_.Call(request, TrialDeadline());
  }
  ASSIGN_OR_RETURN(ChildReply reply, std::move(answered));
  const absl::Duration elapsed = absl::Now() - start;
  v1::TrialResult result;
  switch (reply.kind) {
    case ChildReply::Kind::kAnswered:
      result = reply.response.result();
      if (reply.response.has_phases()) {  // where the child's time went
        const v1::TrialPhases& p = reply.response.phases();
        spdlog::debug("trial {}: ms: load {:.2f}, check {:.2f}, warm-up {:.2f}, samples {:.2f}, "
                      "outside the child {:.2f}",
                      trial.index(), p.load_seconds() * 1e3, p.check_seconds() * 1e3,
                      p.warmup_seconds() * 1e3, p.sampling_seconds() * 1e3,
                      OutsideSeconds(p, absl::ToDoubleSeconds(elapsed)) * 1e3);
      }
      break;
    case ChildReply::Kind::kDied:
      result = Outcome(v1::TRIAL_STATUS_CRASHED,
                       absl::StrCat("benchmark child ", reply.detail));
      break;
    case ChildReply::Kind::kTimedOut:
      result = Outcome(v1::TRIAL_STATUS_TIMEOUT, reply.detail);
      break;
  }
  if (options_.on_measured) options_.on_measured(result, elapsed, reply.response.phases());
  const bool killed = result.status() == v1::TRIAL_STATUS_CRASHED ||
                      result.status() == v1::TRIAL_STATUS_TIMEOUT;
  if (killed && CountKill(ConfigKey(*batch, trial.config()))) {
    result.set_status(v1::TRIAL_STATUS_QUARANTINED);
    result.set_error(absl::StrCat("quarantined: killed the benchmark child ",
                                  options_.kills_to_quarantine, " times; last: ",
                                  result.error()));
  }
  return result;
}

absl::StatusOr<v1::TrialResult> TrialExecutor::RunOne(Batch* batch, const PendingTrial& p,
                                                      double best_seconds) {
  if (p.early.has_value()) return *p.early;
  if (batch->job_failure.has_value()) return *batch->job_failure;
  ASSIGN_OR_RETURN(CompileOutcome compiled, p.compile.get());
  v1::TrialResult result;
  if (!compiled.ok) {
    result = Outcome(v1::TRIAL_STATUS_COMPILE_ERROR, compiled.log);
  } else {
    v1::TrialResult failure;
    RETURN_IF_ERROR(EnsurePrepared(batch, &failure));
    if (failure.status() != v1::TRIAL_STATUS_UNSPECIFIED) {
      batch->job_failure = failure;  // the same for every later trial
      result = failure;
    } else {
      ASSIGN_OR_RETURN(result, Measure(batch, p.trial, compiled.artifact, best_seconds));
    }
  }
  result.set_compile_seconds(compiled.seconds);
  return result;
}

void TrialExecutor::StartBatch(const JobContext& job, const v1::MeasureOptions& measure,
                               Batch* batch) {
  batch->job = &job;
  batch->measure = measure;
  absl::StatusOr<v1::Shape> shape = NormalizeShape(job.spec, job.shape);
  absl::StatusOr<v1::Config> reference_config =
      shape.ok() ? DefaultConfig(job.spec) : shape.status();
  if (!reference_config.ok()) {
    batch->job_failure = Outcome(v1::TRIAL_STATUS_INVALID_CONFIG,
                                 std::string(reference_config.status().message()));
    return;
  }
  batch->shape = *shape;
  batch->code = KernelDigest(job.spec, job.sources);
  batch->kernel_key = absl::StrCat(batch->code, "|", ShapeToString(batch->shape));
  if (job.spec.reference().entry().empty()) return;  // a library routine: nothing to compile
  batch->reference = pool_->Submit(
      CompileJob{&job.spec, &job.sources, *reference_config, device_, /*reference=*/true,
                 batch->shape, job.job_id, job.own_build},
      batch->cancel);
}

TrialExecutor::Planned::Planned(JobContext job) : job_(std::move(job)) {}

TrialExecutor::Planned::~Planned() {
  if (batch_ != nullptr) FinishBatch(batch_.get());
}

std::unique_ptr<TrialExecutor::Planned> TrialExecutor::Plan(JobContext job,
                                                            const std::vector<v1::Trial>& trials) {
  std::unique_ptr<Planned> planned(new Planned(std::move(job)));
  planned->batch_ = std::make_unique<Batch>();
  StartBatch(planned->job_, options_.measure, planned->batch_.get());  // the reference first
  PlanTrials(planned->batch_.get(), trials);
  return planned;
}

absl::Status TrialExecutor::Run(const JobContext& job, const std::vector<v1::Trial>& trials,
                                const ResultCallback& on_result,
                                const StopPredicate& should_stop, const BestSeconds& best) {
  std::unique_ptr<Planned> planned = Plan(job, trials);
  return Run(planned.get(), on_result, should_stop, best);
}

size_t TrialExecutor::NextReady(const Batch& batch, const std::vector<bool>& ran) {
  constexpr auto kPoll = std::chrono::milliseconds(2);
  for (;;) {
    std::optional<size_t> first;  // the first not run, in lease order
    for (size_t i = 0; i < batch.pending.size(); ++i) {
      if (ran[i]) continue;
      if (!first.has_value()) first = i;
      const PendingTrial& p = batch.pending[i];
      if (p.early.has_value() || batch.job_failure.has_value() || !p.compile.valid() ||
          p.compile.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        return i;
      }
    }
    if (batch.pending[*first].compile.wait_for(kPoll) == std::future_status::ready) {
      return *first;
    }
  }
}

absl::Status TrialExecutor::PrepareAhead(Batch* batch) {
  if (batch->job_failure.has_value() ||
      std::all_of(batch->pending.begin(), batch->pending.end(),
                  [](const PendingTrial& p) { return p.early.has_value(); })) {
    return absl::OkStatus();
  }
  v1::TrialResult failure;
  RETURN_IF_ERROR(EnsurePrepared(batch, &failure));
  if (failure.status() != v1::TRIAL_STATUS_UNSPECIFIED) batch->job_failure = failure;
  return absl::OkStatus();
}

absl::Status TrialExecutor::Run(Planned* planned, const ResultCallback& on_result,
                                const StopPredicate& should_stop, const BestSeconds& best) {
  Batch& batch = *planned->batch_;
  StartChildFor(batch);
  // The child prepares the job (inputs, reference outputs) while the pool
  // compiles, instead of after the first compile.
  absl::Status status = PrepareAhead(&batch);
  double own_best = 0;  // the fastest uncut OK median of this call
  std::vector<bool> ran(batch.pending.size(), false);
  for (size_t n = 0; status.ok() && n < batch.pending.size(); ++n) {
    if (should_stop && should_stop()) break;
    const size_t next = NextReady(batch, ran);
    ran[next] = true;
    const PendingTrial& p = batch.pending[next];
    absl::StatusOr<v1::TrialResult> result =
        RunOne(&batch, p, FasterOf(best ? best() : 0, own_best));
    if (!result.ok()) {
      status = result.status();
      break;
    }
    if (result->status() == v1::TRIAL_STATUS_OK && !result->cut_early()) {
      own_best = FasterOf(own_best, result->measurement().median_seconds());
    }
    *result->mutable_config() = p.trial.config();
    result->set_device_id(device_.id());
    on_result(p.trial.index(), *result);
  }
  FinishBatch(&batch);
  return status;
}

void TrialExecutor::FinishBatch(Batch* batch) {
  // Queued compiles still point into the job: cancel them and wait.
  batch->cancel->store(true);
  for (const PendingTrial& p : batch->pending) {
    if (p.compile.valid()) p.compile.wait();
  }
  if (batch->reference.valid()) batch->reference.wait();
}

absl::Status TrialExecutor::RunFinalists(const JobContext& job,
                                         const std::vector<v1::Trial>& trials,
                                         const ResultCallback& on_result,
                                         const StopPredicate& should_stop) {
  const int rounds = std::max(1, options_.finalist_rounds);
  Batch batch;
  StartBatch(job, PerRoundOptions(options_.measure, rounds), &batch);
  PlanTrials(&batch, trials);  // artifact cache hits: every finalist was measured once
  struct Finalist {
    std::optional<v1::TrialResult> failure;  // the first failed round's result
    std::optional<v1::TrialResult> last_ok;
    std::vector<v1::Measurement> rounds;
    double compile_seconds = 0;
    // Calibrated (common/calibration.h): the rounds ran on one device, but
    // its clocks may move between them.
    std::vector<double> RoundMedians() const {
      std::vector<double> medians;
      for (const v1::Measurement& m : rounds) medians.push_back(CalibratedTime(m));
      return medians;
    }
  };
  std::vector<Finalist> finalists(batch.pending.size());
  // The finalists the next round runs: all of them in the first `rounds`
  // rounds, then the winner and those not separated from it.
  auto next_round = [&](int round) {
    std::vector<size_t> runs;
    if (round < rounds) {
      for (size_t i = 0; i < finalists.size(); ++i) runs.push_back(i);
      return runs;
    }
    if (round >= std::max(rounds, options_.finalist_max_rounds)) return runs;
    std::vector<std::vector<double>> medians(finalists.size());
    for (size_t i = 0; i < finalists.size(); ++i) {
      if (!finalists[i].failure.has_value()) medians[i] = finalists[i].RoundMedians();
    }
    runs = Unseparated(medians);
    std::sort(runs.begin(), runs.end());  // lease order, as in the first rounds
    return runs;
  };
  absl::Status status;
  bool stopped = false;
  int round = 0;
  for (; status.ok() && !stopped; ++round) {
    const std::vector<size_t> runs = next_round(round);
    if (runs.empty()) break;
    if (round == rounds) {
      spdlog::info("finalists: {} not separated from the winner after {} rounds; measuring on",
                   runs.size() - 1, rounds);
    }
    for (size_t i : runs) {
      Finalist& f = finalists[i];
      if (f.failure.has_value()) continue;  // a failed finalist is out of the round
      if (should_stop && should_stop()) {
        stopped = true;
        break;
      }
      const PendingTrial& p = batch.pending[i];
      // Prepares the child on the first step, and again only after a kill.
      absl::StatusOr<v1::TrialResult> result = RunOne(&batch, p);
      if (!result.ok()) {
        status = result.status();
        break;
      }
      *result->mutable_config() = p.trial.config();
      result->set_device_id(device_.id());
      if (round == 0) f.compile_seconds = result->compile_seconds();
      if (options_.on_finalist_step) options_.on_finalist_step(round, p.trial.index(), *result);
      if (result->status() == v1::TRIAL_STATUS_OK) {
        f.rounds.push_back(result->measurement());
        f.last_ok = *std::move(result);
      } else {
        spdlog::info("finalist {} failed in round {}: {}", p.trial.index(), round + 1,
                     v1::TrialStatus_Name(result->status()));
        f.failure = *std::move(result);
      }
    }
  }
  FinishBatch(&batch);
  if (!status.ok() || stopped) return status;  // an unfinished round reports nothing
  if (round > rounds) spdlog::info("finalists: {} rounds in all", round);
  for (size_t i = 0; i < batch.pending.size(); ++i) {
    Finalist& f = finalists[i];
    v1::TrialResult result;
    if (f.failure.has_value()) {
      result = *std::move(f.failure);
    } else {
      result = *std::move(f.last_ok);
      *result.mutable_measurement() = CombineRounds(f.rounds);
      result.mutable_measurement()->set_rounds(static_cast<int32_t>(f.rounds.size()));
      result.mutable_measurement()->set_rounds_cv(CoefficientOfVariation(f.RoundMedians()));
    }
    result.set_compile_seconds(f.compile_seconds);
    on_result(batch.pending[i].trial.index(), result);
  }
  return status;
}

}  // namespace tunefleet::worker
