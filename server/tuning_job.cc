#include "server/tuning_job.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/calibration.h"
#include "common/config_text.h"
#include "common/status_macros.h"
#include "server/search_strategy.h"
#include "server/source_blobs.h"

namespace tunefleet::server {
namespace {

constexpr size_t kTopTrialsPerTarget = 5;

constexpr absl::string_view kStallReason = "no live worker can take its work: none with ";


v1::TrialSummary Summary(const v1::TrialResult& result, const std::string& model) {
  v1::TrialSummary summary;
  summary.set_config_text(ConfigToString(result.config()));
  summary.set_median_seconds(result.measurement().median_seconds());
  summary.set_status(result.status());
  summary.set_device_model(model);
  return summary;
}

v1::Target TargetView(const v1::StoredTarget& info) {
  v1::Target target;
  target.set_device_model(info.device_model());
  target.set_toolkit(info.toolkit());
  target.set_tuning_key(info.tuning_key());
  target.set_cached(info.cached());
  if (info.cached()) *target.mutable_best() = info.cached_best();
  *target.mutable_limits() = info.limits();
  return target;
}

// The job's stop reason from its targets' (see v1::Job.stop_reason):
// UNSPECIFIED while one still searches.
v1::StopReason CombinedStopReason(const std::vector<v1::StopReason>& reasons, bool any_cached) {
  if (reasons.empty()) return any_cached ? v1::STOP_REASON_CACHED : v1::STOP_REASON_UNSPECIFIED;
  for (v1::StopReason reason : reasons) {
    if (reason == v1::STOP_REASON_UNSPECIFIED) return v1::STOP_REASON_UNSPECIFIED;
  }
  for (v1::StopReason reason : {v1::STOP_REASON_TIME_BUDGET, v1::STOP_REASON_PLATEAU,
                                v1::STOP_REASON_TRIAL_BUDGET}) {
    if (std::find(reasons.begin(), reasons.end(), reason) != reasons.end()) return reason;
  }
  return reasons.front();
}

v1::RetuneOutcome RetuneOutcomeOf(RetuneOutcome outcome) {
  switch (outcome) {
    case RetuneOutcome::kNone:
      return v1::RETUNE_OUTCOME_UNSPECIFIED;
    case RetuneOutcome::kFirst:
      return v1::RETUNE_OUTCOME_FIRST;
    case RetuneOutcome::kReplaced:
      return v1::RETUNE_OUTCOME_REPLACED;
    case RetuneOutcome::kRegressed:
      return v1::RETUNE_OUTCOME_REGRESSED;
    case RetuneOutcome::kForced:
      return v1::RETUNE_OUTCOME_FORCED;
    case RetuneOutcome::kConfirmed:
      return v1::RETUNE_OUTCOME_CONFIRMED;
  }
  return v1::RETUNE_OUTCOME_UNSPECIFIED;
}

v1::Retune RetuneView(const RetuneVerdict& verdict, const v1::JobSpec& spec) {
  v1::Retune retune;
  retune.set_outcome(RetuneOutcomeOf(verdict.outcome));
  retune.set_job_seconds(verdict.job_best->median_seconds);
  retune.set_served_job_id(verdict.served->job_id);
  retune.set_served_seconds(verdict.served->median_seconds);
  retune.set_served_config_text(verdict.served->config);
  if (verdict.previous.has_value()) {
    retune.set_previous_job_id(verdict.previous->job_id);
    retune.set_previous_seconds(verdict.previous->median_seconds);
  }
  if (verdict.outcome == RetuneOutcome::kForced) {
    retune.set_replace_reason(spec.replace_reason());
  }
  return retune;
}

}  // namespace

std::unique_ptr<TuningJob> TuningJob::Submitted(const v1::JobSpec& spec, const std::string& id,
                                                const std::string& owner,
                                                std::vector<JobTarget> targets, absl::Time now) {
  auto job = std::make_unique<TuningJob>();
  job->spec = WithoutContents(spec);
  job->view.set_id(id);
  job->view.set_owner(owner);
  job->view.set_sweep_id(spec.sweep_id());
  job->view.set_state(v1::JOB_STATE_QUEUED);
  job->view.set_created_unix_ms(absl::ToUnixMillis(now));
  job->view.set_updated_unix_ms(absl::ToUnixMillis(now));
  if (targets.empty()) job->view.set_reason(WaitingReason(spec));
  const bool cached =
      !targets.empty() && std::all_of(targets.begin(), targets.end(), [](const JobTarget& t) {
        return t.trials == nullptr;
      });
  if (cached) job->view.set_state(v1::JOB_STATE_SUCCEEDED);
  job->targets = std::move(targets);
  return job;
}

std::unique_ptr<TuningJob> TuningJob::Resumed(const JobSnapshot& snapshot, absl::Time now) {
  auto job = std::make_unique<TuningJob>();
  job->spec = WithoutContents(snapshot.spec);
  v1::Job& view = job->view;
  view = snapshot.stored.last_view();
  if (view.state() == v1::JOB_STATE_RUNNING && view.started_unix_ms() == 0) {
    view.set_started_unix_ms(absl::ToUnixMillis(now));  // stored by an older coordinator
  }
  view.clear_targets();
  view.clear_outcomes();
  view.clear_top_trials();
  view.set_trials_total(0);
  view.set_trials_done(0);
  job->version = snapshot.version;
  return job;
}

std::string TuningJob::WaitingReason(const v1::JobSpec& spec) {
  return absl::StrCat("waiting for a worker with a ",
                      v1::Backend_Name(spec.kernel().backend()), " device",
                      spec.device_model().empty()
                          ? ""
                          : absl::StrCat(" of model ", spec.device_model()));
}

bool TuningJob::Live() const { return !IsFinal(view.state()) && !finishing; }

std::vector<v1::TrialStatus> JobTarget::Record(
    const std::vector<std::pair<uint64_t, v1::TrialResult>>& results, Lease* lease,
    std::vector<RecordedResult>* recorded_results) {
  std::vector<v1::TrialStatus> measured;
  for (const auto& [ordinal, result] : results) {
    auto pos = std::find(lease->ordinals.begin(), lease->ordinals.end(), ordinal);
    if (pos == lease->ordinals.end()) continue;  // reported twice
    if (lease->spot) {
      // Judged, ranked and vouched for by the spot checks (JobManager).
      if (trials->HoldsRecheck(ordinal, lease->id, lease->epoch)) {
        trials->EndRecheck(ordinal);
        if (recorded_results != nullptr) recorded_results->push_back({ordinal, &result, false});
      }
      lease->ordinals.erase(pos);
      continue;
    }
    const std::optional<double> best = trials->best_seconds();
    const bool new_best = result.status() == v1::TRIAL_STATUS_OK && !result.cut_early() &&
                          (!best.has_value() || result.measurement().median_seconds() < *best);
    const bool recorded = !lease->verify && trials->Complete(ordinal, lease->id, lease->epoch,
                                                             result, lease->principal);
    if (recorded && !lease->finalists && recorded_results != nullptr) {
      recorded_results->push_back({ordinal, &result, new_best});
    }
    if (recorded && !lease->finalists) measured.push_back(result.status());
    if (recorded && result.status() == v1::TRIAL_STATUS_OK) {
      measured_by[ordinal].push_back(
          Measurer{lease->principal, lease->worker_id, lease->device_id});
    }
    lease->ordinals.erase(pos);
  }
  return measured;
}

JobTarget::VerifyStart JobTarget::StartVerification(const VerifyOptions& options,
                                                    const std::optional<BestRecord>& served,
                                                    const std::vector<LiveDevice>& live,
                                                    absl::Time now) {
  std::vector<TrialOutcome> best = trials->Fastest(1);
  if (best.empty() || options.mode == VerifyMode::kOff) return VerifyStart::kNotNeeded;
  const TrialOutcome& candidate = best[0];
  const v1::Measurement& claimed = candidate.result.measurement();
  std::vector<Measurer> claimants = measured_by[candidate.ordinal];
  absl::flat_hash_set<std::string> principals;
  for (const Measurer& claimant : claimants) principals.insert(claimant.principal);
  // By calibrated times where both are (the served row's calibration is in
  // its evidence).
  double claimed_time = claimed.median_seconds();
  std::optional<double> served_time;
  if (served.has_value()) {
    served_time = served->median_seconds;
    v1::BestEvidence evidence;
    if (evidence.ParseFromString(served->evidence) && Calibrated(evidence.calibration_seconds()) &&
        Calibrated(claimed.calibration_seconds())) {
      claimed_time = CalibratedTime(claimed);
      served_time = CalibratedTime(served->median_seconds, evidence.calibration_seconds());
    }
  }
  if (!NeedsVerification(static_cast<int>(principals.size()), claimed_time, served_time,
                         options.margin)) {
    return VerifyStart::kNotNeeded;
  }
  std::optional<uint64_t> served_ordinal;
  if (served.has_value()) {
    absl::StatusOr<uint64_t> ordinal = OrdinalOfShortForm(*trials->space(), served->config);
    if (ordinal.ok()) served_ordinal = *ordinal;
  }
  const bool required = options.mode == VerifyMode::kRequired;
  auto started = std::make_unique<Verification>(
      candidate.ordinal, claimed, std::move(claimants), served_ordinal,
      required ? absl::InfiniteFuture() : now + options.wait);
  const bool other_principal = std::any_of(live.begin(), live.end(), [&](const LiveDevice& d) {
    return started->CanVerify({d.principal, d.worker_id, d.device_id}, true);
  });
  const bool any_verifier = std::any_of(live.begin(), live.end(), [&](const LiveDevice& d) {
    return started->CanVerify({d.principal, d.worker_id, d.device_id}, other_principal);
  });
  if (!any_verifier && !required) {
    served_unverified = true;
    return VerifyStart::kNoVerifier;
  }
  verification = std::move(started);
  return VerifyStart::kStarted;
}

bool JobTarget::Orphaned(bool anyone_active, absl::Time now, absl::Duration timeout) {
  if (anyone_active) {
    orphaned_since.reset();
    return false;
  }
  if (!orphaned_since.has_value()) orphaned_since = now;
  if (now - *orphaned_since < timeout) return false;
  abandoned = absl::StrCat("no live worker of ", info.device_model(), " (", info.toolkit(),
                           ") asked for work for ", absl::FormatDuration(timeout),
                           ": the target was given up");
  trials->Abandon(v1::STOP_REASON_NO_WORKERS);
  return true;
}

absl::Status JobTarget::RestoreSearch(const std::vector<TrialRecord>& rows) {
  for (const TrialRecord& row : rows) {
    if (row.tuning_key != info.tuning_key() || row.round != TrialRound::kSearch) continue;
    ASSIGN_OR_RETURN(v1::Config config, ParseConfig(row.config));
    ASSIGN_OR_RETURN(uint64_t ordinal, trials->space()->OrdinalOf(config));
    v1::TrialResult result;
    *result.mutable_config() = config;
    result.set_status(static_cast<v1::TrialStatus>(row.status));
    result.mutable_measurement()->set_median_seconds(row.median_seconds);
    result.mutable_measurement()->set_p20_seconds(row.p20_seconds);
    result.mutable_measurement()->set_p80_seconds(row.p80_seconds);
    result.mutable_measurement()->set_samples(row.samples);
    result.mutable_measurement()->set_calibration_seconds(row.calibration_seconds);
    result.set_error(row.error);
    result.set_cut_early(row.cut_early);
    trials->Restore(ordinal, result, row.principal);
    if (result.status() == v1::TRIAL_STATUS_OK) {
      measured_by[ordinal].push_back(Measurer{row.principal, row.worker_id, row.device_id});
    }
  }
  return absl::OkStatus();
}

bool TuningJob::SearchesFinished() const {
  if (targets.empty()) return false;
  return std::all_of(targets.begin(), targets.end(), [](const JobTarget& target) {
    return target.trials == nullptr || target.trials->Finished();
  });
}

TuningJob::Ending TuningJob::End(absl::Time now) const {
  Ending ending;
  std::vector<std::string> failed;
  int succeeded = 0;
  for (const JobTarget& target : targets) {
    if (target.trials == nullptr) {
      ++succeeded;  // answered from the store
      continue;
    }
    if (target.verification != nullptr &&
        target.verification->outcome() == Verification::Outcome::kDisputed) {
      const bool refereed = target.verification->verifiers().size() > 1;
      failed.push_back(absl::StrCat(
          "the best of ", target.info.tuning_key(), " is disputed (",
          target.VerificationReason(),
          refereed ? "; the referee settled nothing: it agreed with both sides or neither, or "
                     "its run failed"
                   : "; no referee came",
          "): each verified config counts at the upper median of its measurements"));
    }
    if (!target.abandoned.empty()) {  // a cut search, never verified: no best
      failed.push_back(target.abandoned);
      continue;
    }
    std::vector<TrialOutcome> best = target.trials->Fastest(1);
    if (best.empty()) {
      failed.push_back(absl::StrCat("no config passed on ", target.info.device_model(),
                                    " (first failure: ", target.trials->first_error(), ")"));
      continue;
    }
    ++succeeded;
    ending.best.push_back(BestRow(target, best[0], now));
    if (std::optional<double> def = target.trials->default_seconds()) {
      ending.speedups.push_back(*def / best[0].result.measurement().median_seconds());
    }
  }
  ending.snapshot = Snapshot();
  MarkFinal(&ending.snapshot, succeeded > 0 ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_FAILED,
            absl::StrJoin(failed, "; "), now);
  return ending;
}

bool TuningJob::HasTarget(const std::string& model, const std::string& toolkit) const {
  return std::any_of(targets.begin(), targets.end(), [&](const JobTarget& target) {
    return target.info.device_model() == model && target.info.toolkit() == toolkit;
  });
}

bool TuningJob::ApplyTimeBudget(absl::Time now) {
  const int64_t budget = spec->time_budget_seconds();
  const int64_t started = view.started_unix_ms();
  if (budget <= 0 || started == 0 || IsFinal(view.state()) ||
      now < absl::FromUnixMillis(started) + absl::Seconds(budget)) {
    return false;
  }
  bool stopped = false;
  for (JobTarget& target : targets) {
    if (target.trials == nullptr ||
        target.trials->stop_reason() != v1::STOP_REASON_UNSPECIFIED) {
      continue;
    }
    target.trials->StopSearch(v1::STOP_REASON_TIME_BUDGET);
    stopped = true;
  }
  return stopped;
}

double JobTarget::BestFor(const Lease& lease) const {
  if (lease.finalists || lease.verify || lease.spot || trials == nullptr) return 0;
  return trials->best_seconds().value_or(0);
}

v1::Verification JobTarget::VerificationView() const {
  v1::Verification view;
  if (served_unverified) view.set_state(v1::VERIFICATION_STATE_UNVERIFIED);
  if (verification == nullptr) return view;
  const Verification& verification = *this->verification;
  switch (verification.outcome()) {
    case Verification::Outcome::kPending:
      view.set_state(v1::VERIFICATION_STATE_PENDING);
      break;
    case Verification::Outcome::kAgreed:
      view.set_state(v1::VERIFICATION_STATE_AGREED);
      break;
    case Verification::Outcome::kDisagreed:
      view.set_state(v1::VERIFICATION_STATE_DISAGREED);
      break;
    case Verification::Outcome::kUnverified:
      view.set_state(v1::VERIFICATION_STATE_UNVERIFIED);
      break;
    case Verification::Outcome::kDisputed:
      view.set_state(v1::VERIFICATION_STATE_DISPUTED);
      break;
  }
  for (const std::string& principal : verification.verifiers()) view.add_verifiers(principal);
  view.set_candidate_config_text(
      ConfigToString(trials->space()->ConfigAt(verification.candidate())));
  view.set_claimed_seconds(verification.claimed_seconds());
  view.set_verified_seconds(verification.verified_seconds().value_or(0));
  return view;
}

std::string JobTarget::VerificationReason() const {
  const Verification& verification = *this->verification;
  std::vector<std::string> measured;
  const std::vector<std::string> verifiers = verification.verifiers();
  for (size_t i = 0; i < verifiers.size(); ++i) {
    measured.push_back(absl::StrCat(verifiers[i], i == 0 ? " (verifier)" : " (referee)"));
  }
  const std::string verified =
      verification.verified_seconds().has_value()
          ? absl::StrFormat("%.3g s", *verification.verified_seconds())
          : std::string("a failure");
  return absl::StrFormat(
      "claimed %.3g s for %s of %s; %s measured %s", verification.claimed_seconds(),
      ConfigToString(trials->space()->ConfigAt(verification.candidate())),
      info.tuning_key(), absl::StrJoin(measured, " then "), verified);
}

void TuningJob::AddQueued(std::map<std::string, int64_t>* by_model) const {
  for (const JobTarget& target : targets) {
    if (target.trials != nullptr) (*by_model)[target.info.device_model()] += target.trials->queued();
  }
}

std::string TuningJob::MissingWorkers(
    const std::function<bool(const v1::StoredTarget&)>& has_worker) const {
  std::vector<std::string> missing;
  for (const JobTarget& target : targets) {
    if (target.trials == nullptr || target.trials->Finished() || has_worker(target.info)) {
      continue;
    }
    missing.push_back(absl::StrCat(target.info.device_model(), " (", target.info.toolkit(), ")"));
  }
  return absl::StrJoin(missing, ", ");
}

bool TuningJob::ExplainStall(const std::string& missing) {
  // A stall reason may come back from the store with a resumed job.
  const std::string& current = view.reason();
  if (!current.empty() && !absl::StartsWith(current, kStallReason)) return false;
  const std::string reason =
      missing.empty() ? "" : absl::StrCat(kStallReason, missing, "; it waits for one");
  if (reason == current) return false;
  view.set_reason(reason);
  return true;
}

std::optional<int64_t> TuningJob::RepairStranded() {
  const bool has_work = std::any_of(targets.begin(), targets.end(), [](const JobTarget& t) {
    return t.trials != nullptr && t.trials->HasWork();
  });
  if (has_work) return std::nullopt;
  int64_t moved = 0;
  for (JobTarget& target : targets) {
    if (target.trials == nullptr) continue;
    moved += target.trials->ReclaimOrphans([](const std::string&) { return false; });
  }
  return moved;
}

std::vector<std::string> TuningJob::AbandonOrphans(
    const std::function<bool(const JobTarget&)>& anyone_active, absl::Time now,
    absl::Duration timeout) {
  std::vector<std::string> abandoned;
  for (JobTarget& target : targets) {
    if (target.trials == nullptr || target.trials->Finished()) continue;
    if (target.Orphaned(anyone_active(target), now, timeout)) {
      abandoned.push_back(target.abandoned);
    }
  }
  return abandoned;
}

v1::Job TuningJob::View() const {
  const TuningJob& job = *this;
  v1::Job view = job.view;
  view.set_kernel_name(job.spec->kernel().name());
  *view.mutable_shape() = job.spec->shape();
  view.set_strategy(job.spec->config_set().empty()
                        ? (job.spec->strategy().empty() ? "exhaustive" : job.spec->strategy())
                        : absl::StrCat("config_set:", job.spec->config_set()));
  const bool budgeted = job.spec->config_set().empty() && !job.spec->strategy().empty() &&
                        job.spec->strategy() != "exhaustive";
  // A coordinate search without a budget runs until it converges: none.
  const int64_t default_budget = job.spec->strategy() == "coordinate" ? 0 : kDefaultTrialBudget;
  view.set_trials_budget(
      budgeted ? (job.spec->budget() > 0 ? job.spec->budget() : default_budget) : 0);
  view.set_time_budget_seconds(job.spec->time_budget_seconds());
  view.set_plateau_batches(job.spec->plateau_batches());
  std::map<int, int64_t> outcomes;
  std::vector<v1::StopReason> stop_reasons;
  bool any_cached = false;
  for (const JobTarget& target : job.targets) {
    v1::Target* info = view.add_targets();
    *info = TargetView(target.info);
    if (target.trials == nullptr) {
      info->set_stop_reason(v1::STOP_REASON_CACHED);
      any_cached = true;
      continue;
    }
    const TargetTrials& trials = *target.trials;
    info->set_stop_reason(trials.stop_reason());
    info->set_batches_without_improvement(trials.batches_without_improvement());
    stop_reasons.push_back(trials.stop_reason());
    info->set_trials_total(trials.total());
    info->set_trials_done(trials.done());
    view.set_trials_total(view.trials_total() + trials.total());
    view.set_trials_done(view.trials_done() + trials.done());
    for (const auto& [status, count] : trials.outcome_counts()) outcomes[status] += count;
    if (trials.default_seconds()) info->set_default_seconds(*trials.default_seconds());
    std::vector<TrialOutcome> fastest = trials.Fastest(kTopTrialsPerTarget);
    if (!fastest.empty()) {
      v1::Best* best = info->mutable_best();
      *best->mutable_config() = fastest[0].result.config();
      best->set_config_text(ConfigToString(fastest[0].result.config()));
      best->set_median_seconds(fastest[0].result.measurement().median_seconds());
    }
    for (const TrialOutcome& outcome : fastest) {
      *view.add_top_trials() = Summary(outcome.result, target.info.device_model());
    }
    *info->mutable_verification() = target.VerificationView();
    if (target.verification != nullptr) {
      // The verifier's round decides the best (DeriveBest), as served.
      if (auto verified = target.verification->FastestVerified()) {
        v1::Best* best = info->mutable_best();
        *best->mutable_config() = target.trials->space()->ConfigAt(verified->first);
        best->set_config_text(ConfigToString(best->config()));
        best->set_median_seconds(verified->second);
      }
    }
  }
  const v1::StopReason by_state = StopReasonOfState(view.state());
  view.set_stop_reason(by_state != v1::STOP_REASON_UNSPECIFIED
                           ? by_state
                           : CombinedStopReason(stop_reasons, any_cached));
  for (const auto& [status, count] : outcomes) {
    v1::StatusCount* entry = view.add_outcomes();
    entry->set_status(static_cast<v1::TrialStatus>(status));
    entry->set_count(count);
  }
  std::stable_sort(view.mutable_top_trials()->begin(), view.mutable_top_trials()->end(),
                   [](const auto& a, const auto& b) {
                     return a.median_seconds() < b.median_seconds();
                   });
  return view;
}

JobSnapshot TuningJob::Snapshot() const {
  JobSnapshot snapshot;
  snapshot.spec = *spec;
  for (const JobTarget& target : targets) *snapshot.stored.add_targets() = target.info;
  *snapshot.stored.mutable_last_view() = View();
  snapshot.version = version;
  return snapshot;
}

TrialRecord TuningJob::TrialRow(const JobTarget& target, const Lease& lease,
                                const v1::TrialResult& result, absl::Time now) const {
  return TrialRow(view.id(), target.info.tuning_key(), lease, result, now);
}

TrialRecord TuningJob::TrialRow(const std::string& job_id, const std::string& tuning_key,
                                const Lease& lease, const v1::TrialResult& result,
                                absl::Time now) {
  TrialRecord record;
  record.job_id = job_id;
  record.tuning_key = tuning_key;
  record.config = ConfigToString(result.config());
  record.status = result.status();
  record.median_seconds = result.measurement().median_seconds();
  record.p20_seconds = result.measurement().p20_seconds();
  record.p80_seconds = result.measurement().p80_seconds();
  record.samples = result.measurement().samples();
  record.compile_seconds = result.compile_seconds();
  record.worker_id = lease.worker_id;
  // The leased device: a worker does not choose where its results count.
  record.device_id = lease.device_id.empty() ? result.device_id() : lease.device_id;
  record.error = result.error();
  record.finished_unix_ms = absl::ToUnixMillis(now);
  record.principal = lease.principal;
  record.clock_mhz = result.measurement().clock_mhz();
  record.cut_early = result.status() == v1::TRIAL_STATUS_OK && result.cut_early();
  record.rounds = result.measurement().rounds();
  record.rounds_cv = result.measurement().rounds_cv();
  record.retaken_samples = result.measurement().retaken_samples();
  record.low_clock_samples = result.measurement().low_clock_samples();
  record.calibration_seconds = result.measurement().calibration_seconds();
  if (lease.spot) {
    record.round = lease.referee ? TrialRound::kSpotReferee : TrialRound::kSpotCheck;
  } else {
    record.round = lease.referee     ? TrialRound::kReferee
                   : lease.verify    ? TrialRound::kVerify
                   : lease.finalists ? TrialRound::kFinalists
                                     : TrialRound::kSearch;
  }
  return record;
}

BestRecord TuningJob::BestRow(const JobTarget& target, const TrialOutcome& best,
                              absl::Time now) const {
  BestRecord record;
  record.tuning_key = target.info.tuning_key();
  record.kernel_name = spec->kernel().name();
  record.shape = ShapeToString(spec->shape());
  record.device_model = target.info.device_model();
  record.toolkit = target.info.toolkit();
  record.config = ConfigToString(best.result.config());
  record.median_seconds = best.result.measurement().median_seconds();
  record.job_id = view.id();
  record.updated_unix_ms = absl::ToUnixMillis(now);
  return record;
}

int TuningJob::TargetOf(const std::string& tuning_key) const {
  for (int t = 0; t < static_cast<int>(targets.size()); ++t) {
    if (targets[t].info.tuning_key() == tuning_key) return t;
  }
  return -1;
}

void TuningJob::RecordRetune(const RetuneVerdict& verdict, const std::string& tuning_key,
                             JobSnapshot* snapshot) {
  if (verdict.outcome == RetuneOutcome::kNone) return;
  v1::Job* view = snapshot->stored.mutable_last_view();
  for (v1::Target& target : *view->mutable_targets()) {
    if (target.tuning_key() == tuning_key) {
      *target.mutable_retune() = RetuneView(verdict, snapshot->spec);
    }
  }
}

}  // namespace tunefleet::server
