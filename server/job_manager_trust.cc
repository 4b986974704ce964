// JobManager: the verification of candidate bests, spot checks of search
// results, quarantine, and which blobs a worker may fetch (the parts of the
// manager that decide whom to trust).
#include <algorithm>
#include <optional>
#include <random>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "server/best_config_index.h"
#include "server/best_derivation.h"
#include "server/job_manager.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
std::optional<LeaseGrant> JobManager::VerifyFrom(Job* job, int t, Lease lease,
                                                 const std::vector<LiveDevice>& live,
                                                 Pending* pending) {
  Verification& verification = *job->targets[t].verification;
  if (!verification.waiting()) return std::nullopt;
  const bool other_principal_live = std::any_of(live.begin(), live.end(), [&](const LiveDevice& d) {
    return verification.CanVerify(Measurer{d.principal, d.worker_id, d.device_id},
                                  /*other_principal_live=*/true);
  });
  if (!verification.CanVerify(Measurer{lease.principal, lease.worker_id, lease.device_id},
                              other_principal_live)) {
    return std::nullopt;  // never to the principal whose claim is checked
  }
  lease.job_id = job->view.id();
  lease.target = t;
  lease.expires = clock_() + options_.lease_ttl;
  lease.idle_until = clock_() + options_.lease_idle_limit;
  lease.deadline = clock_() + options_.lease_max_age;
  lease.finalists = true;  // measured interleaved on one device
  lease.verify = true;
  lease.referee = verification.disputed();
  lease.own_build = true;  // the measurement that decides what is served
  const Lease& granted = leases_.Grant(std::move(lease));
  Lease* held = leases_.Find(granted.id, granted.epoch, granted.worker_id);
  held->ordinals = verification.Take(held->id, held->epoch, held->principal);
  spdlog::info("job {}: the best of {} is re-measured by {} ({}/{}){}", job->view.id(),
               job->targets[t].info.tuning_key(), held->principal, held->worker_id,
               held->device_id, verification.disputed() ? ", the dispute's referee" : "");
  return GrantOf(job, *held, pending);
}

absl::Status JobManager::CheckBlobLeased(const std::string& worker_id,
                                         const std::string& digest) {
  absl::ReaderMutexLock lock(&mu_);
  for (const Lease* lease : leases_.OfWorker(worker_id)) {
    const Job* job = FindJob(lease->job_id);
    if (job == nullptr) continue;
    for (const v1::SourceFile& file : job->spec->sources()) {
      if (file.digest() == digest) return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "blob ", digest, " belongs to no lease worker ", worker_id,
      " holds; sources are served only for leased work"));
}

absl::Status JobManager::CheckArtifactLeased(const std::string& worker_id,
                                             const std::string& job_id,
                                             const v1::Config& config, bool reference) {
  absl::ReaderMutexLock lock(&mu_);
  if (const Job* job = FindJob(job_id); job != nullptr) {
    // The worker normalizes what it compiles; a config that is not one of
    // the job's is held by no lease.
    const absl::StatusOr<v1::Config> normalized = NormalizeConfig(job->spec->kernel(), config);
    auto ordinal_in = [&](const JobTarget& target) -> std::optional<uint64_t> {
      if (!normalized.ok() || target.trials == nullptr) return std::nullopt;
      const absl::StatusOr<uint64_t> ordinal = target.trials->space()->OrdinalOf(*normalized);
      return ordinal.ok() ? std::optional<uint64_t>(*ordinal) : std::nullopt;
    };
    for (const Lease* lease : leases_.OfWorker(worker_id)) {
      if (lease->job_id != job_id) continue;
      if (reference) return absl::OkStatus();
      const std::optional<uint64_t> ordinal = ordinal_in(job->targets[lease->target]);
      if (ordinal.has_value() && absl::c_linear_search(lease->ordinals, *ordinal)) {
        return absl::OkStatus();
      }
    }
    for (const JobTarget& target : job->targets) {
      auto granted = target.compile_grants.find(worker_id);
      if (granted == target.compile_grants.end()) continue;
      if (reference) return absl::OkStatus();
      const std::optional<uint64_t> ordinal = ordinal_in(target);
      if (ordinal.has_value() && granted->second.contains(*ordinal)) return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "worker ", worker_id, " holds no work of job ", job_id,
      reference ? " (its reference)" : absl::StrCat(" with config ", ConfigToString(config)),
      "; artifacts are accepted only for leased work"));
}

void JobManager::ApplyVerification(
    const std::vector<std::pair<uint64_t, v1::TrialResult>>& results, const Lease& lease,
    Target* target, Pending* pending) {
  Verification& verification = *target->verification;
  const bool was_disputed = verification.disputed();
  const size_t judged = verification.verifiers().size();
  for (const auto& [ordinal, result] : results) {
    verification.Complete(ordinal, lease.id, lease.epoch, result, options_.verify.tolerance);
  }
  if (verification.verifiers().size() > judged) {  // this lease's round was judged
    const Job& job = *FindJob(lease.job_id);
    for (const auto& [ordinal, result] : verification.LastJudgedResults()) {
      pending->rows.push_back(job.TrialRow(*target, lease, result, clock_()));
    }
  }
  if (verification.disputed() && !was_disputed) {
    AwaitReferee(target, target->VerificationReason(), pending);
    return;
  }
  if (!verification.done()) return;
  const std::string reason = target->VerificationReason();
  switch (verification.outcome()) {
    case Verification::Outcome::kAgreed:
      metrics_->VerificationFinished(CoordinatorMetrics::Verification::kAgreed);
      spdlog::info("verification agreed: {}", reason);
      break;
    case Verification::Outcome::kDisputed:
      metrics_->VerificationFinished(CoordinatorMetrics::Verification::kDisputed);
      spdlog::warn("verification unsettled: {}; the referee agreed with both sides or "
                   "neither, or its run failed: nobody is quarantined",
                   reason);
      break;
    default:
      metrics_->VerificationFinished(CoordinatorMetrics::Verification::kDisagreed);
      spdlog::warn("verification disagreed: {}", reason);
      break;
  }
  for (const std::string& principal : verification.Overruled()) {
    pending->quarantines.push_back(Quarantined{
        principal, absl::StrCat("overruled by a referee: ", reason)});
    ForgetPrincipal(principal, pending);
  }
}

void JobManager::SampleSpotChecks(const std::vector<RecordedResult>& recorded,
                                  const Lease& lease, Target* target, Pending* pending) {
  if (options_.verify.mode == VerifyMode::kOff || options_.spot.rate <= 0) return;
  std::uniform_real_distribution<double> uniform(0, 1);
  for (const RecordedResult& claim : recorded) {
    if (target->spot_checks.Claim(claim.ordinal, lease.principal, *claim.result, claim.new_best,
                                  options_.spot.rate, uniform(sampler_))) {
      QueueCheck(target, claim.ordinal, /*referee=*/false, {lease.principal}, pending);
    }
  }
}

bool JobManager::QueueCheck(Target* target, uint64_t ordinal, bool referee,
                            std::vector<std::string> not_by, Pending* pending) {
  // Once the target's verification was decided its ranking is final.
  if (target->verify_decided || !AnyActivePrincipal(*target, not_by) ||
      !target->trials->Recheck(ordinal, referee, std::move(not_by), clock_() + options_.spot.wait)) {
    return false;
  }
  target->spot_checks.Queued(ordinal);
  pending->work = true;
  return true;
}

void JobManager::ApplySpotChecks(const Job& job, const std::vector<RecordedResult>& checked,
                                 const Lease& lease, Target* target, Pending* pending) {
  for (const RecordedResult& check : checked) {
    const SpotChecks::Verdict verdict = target->spot_checks.Checked(
        check.ordinal, lease.principal, *check.result, options_.spot.tolerance);
    if (verdict.vouches) {
      target->measured_by[check.ordinal].push_back(
          Measurer{lease.principal, lease.worker_id, lease.device_id});
    }
    if (verdict.rank.has_value()) {
      target->trials->Rerank(check.ordinal, verdict.rank->result, verdict.rank->principal);
    }
    Judge(job, target, check.ordinal, verdict, pending);
  }
  target->trials->RechecksSettled();
}

void JobManager::Judge(const Job& job, Target* target, uint64_t ordinal,
                       const SpotChecks::Verdict& verdict, Pending* pending) {
  using Kind = SpotChecks::Verdict::Kind;
  const auto config = [&] { return ConfigToString(target->trials->space()->ConfigAt(ordinal)); };
  switch (verdict.kind) {
    case Kind::kNone:
      return;
    case Kind::kAgreed:
      metrics_->SpotCheckFinished(CoordinatorMetrics::SpotCheck::kAgreed);
      return;
    case Kind::kDisputed:
      metrics_->SpotCheckFinished(CoordinatorMetrics::SpotCheck::kDisputed);
      spdlog::warn("job {}: {}'s spot check of {} of {} disagrees with {}'s search result; "
                   "a referee of a third principal decides",
                   job.view.id(), verdict.principals[1], config(), target->info.tuning_key(),
                   verdict.principals[0]);
      if (!QueueCheck(target, ordinal, /*referee=*/true, verdict.principals, pending)) {
        Judge(job, target, ordinal, target->spot_checks.Dropped(ordinal), pending);
      }
      return;
    case Kind::kOverruled:
      metrics_->SpotCheckFinished(CoordinatorMetrics::SpotCheck::kOverruled);
      pending->quarantines.push_back(Quarantined{
          verdict.principals[0],
          absl::StrCat("overruled by a referee in a spot check of ", config(), " of ",
                       target->info.tuning_key(), " (job ", job.view.id(), ")")});
      ForgetPrincipal(verdict.principals[0], pending);
      return;
    case Kind::kUnsettled:
      metrics_->SpotCheckFinished(CoordinatorMetrics::SpotCheck::kUnsettled);
      if (verdict.principals.empty()) {
        spdlog::info("job {}: the spot check of {} of {} was not settled by a referee",
                     job.view.id(), config(), target->info.tuning_key());
      } else {
        spdlog::warn("job {}: the spot check of {} of {} was not settled by a referee; {} {} "
                     "each of its results there measured again by another principal",
                     job.view.id(), config(), target->info.tuning_key(),
                     absl::StrJoin(verdict.principals, " and "),
                     verdict.principals.size() == 1 ? "has" : "have");
      }
      for (const std::string& suspect : verdict.principals) Remeasure(target, suspect, pending);
      return;
  }
}

void JobManager::Remeasure(Target* target, const std::string& principal, Pending* pending) {
  const std::vector<uint64_t> unchecked = target->spot_checks.Unchecked(principal);
  if (unchecked.empty()) return;
  for (uint64_t ordinal : unchecked) {
    if (!QueueCheck(target, ordinal, /*referee=*/false, {principal}, pending)) return;
  }
}

void JobManager::ForgetPrincipal(const std::string& principal, Pending* pending) {
  {
    absl::MutexLock lock(&overruled_mu_);
    if (!overruled_.insert(principal).second) return;  // forgotten already
  }
  // Its leases go back: the checks it holds go to others.
  for (const std::string& id : leases_.IdsOfPrincipal(principal)) {
    ReturnLease(leases_.Remove(id), /*expired=*/false, pending);
  }
  for (auto& [sequence, job] : jobs_) {
    if (!job->Live()) continue;
    for (Target& target : job->targets) {
      // A target whose verification was decided has its ranking final: its
      // verification's rows decide its best without the principal's.
      if (target.trials == nullptr || target.verify_decided) continue;
      std::vector<uint64_t> theirs;
      for (auto& [ordinal, measurers] : target.measured_by) {
        if (std::erase_if(measurers, [&](const Measurer& m) { return m.principal == principal; })) {
          theirs.push_back(ordinal);
        }
      }
      target.spot_checks.MarkOverruled(principal);
      // The search strategy forgets what it learned from the principal (a
      // learned model of lies, a population of them): another principal's
      // measurement of the config takes its place, where there is one.
      const std::vector<uint64_t> unranked = target.trials->Unrank(principal);
      const absl::flat_hash_set<uint64_t> reranked(unranked.begin(), unranked.end());
      for (uint64_t ordinal : theirs) {
        std::optional<SpotChecks::Measured> trusted = target.spot_checks.TrustedRank(ordinal);
        // Ranked again below by the trusted measurement, which amends the
        // strategy with it too.
        if (trusted.has_value() && reranked.contains(ordinal)) continue;
        target.trials->Amend(ordinal, trusted.has_value()
                                          ? std::optional<v1::TrialResult>(trusted->result)
                                          : std::nullopt);
      }
      const std::vector<uint64_t> unchecked = target.spot_checks.Unchecked(principal);
      if (unranked.empty() && unchecked.empty()) continue;
      for (uint64_t ordinal : unranked) {
        // Ranked again at once by what another principal measured of it,
        // else measured again.
        if (std::optional<SpotChecks::Measured> trusted = target.spot_checks.TrustedRank(ordinal)) {
          target.trials->Rerank(ordinal, trusted->result, trusted->principal);
        } else {
          QueueCheck(&target, ordinal, /*referee=*/false, {principal}, pending);
        }
      }
      for (uint64_t ordinal : unchecked) {
        if (!QueueCheck(&target, ordinal, /*referee=*/false, {principal}, pending)) {
          break;
        }
      }
      target.trials->RechecksSettled();
    }
  }
}

void JobManager::DropStaleChecks(Pending* pending) {
  for (auto& [sequence, job] : jobs_) {
    if (!job->Live()) continue;
    bool dropped = false;
    for (Target& target : job->targets) {
      if (target.trials == nullptr || target.trials->rechecks() == 0) continue;
      // A check waits while a principal that may take it takes part: one
      // whose devices all died leaves it to the deadline no longer.
      const auto takeable = [&](const std::vector<std::string>& not_by) {
        return AnyActivePrincipal(target, not_by);
      };
      for (const auto& [ordinal, referee] :
           target.trials->DropStaleRechecks(clock_(), takeable)) {
        dropped = true;
        Judge(*job, &target, ordinal, target.spot_checks.Dropped(ordinal), pending);
      }
      target.trials->RechecksSettled();
    }
    if (dropped) {
      pending->work = true;  // the finalists round may be ready
      MaybeFinish(job.get(), pending);
      Changed(job.get());
    }
  }
}

// The verifier contradicted the claim: a third principal decides. With no
// referee alive (and verify_best=auto) the dispute ends at once.
void JobManager::AwaitReferee(Target* target, const std::string& reason, Pending* pending) {
  Verification& verification = *target->verification;
  const bool required = options_.verify.mode == VerifyMode::kRequired;
  verification.set_deadline(required ? absl::InfiniteFuture()
                                     : clock_() + options_.verify.wait);
  std::vector<LiveDevice> live =
      workers_->LiveDevices(target->info.device_model(), target->info.toolkit());
  const bool referee = std::any_of(live.begin(), live.end(), [&](const LiveDevice& d) {
    return verification.CanVerify({d.principal, d.worker_id, d.device_id}, true);
  });
  spdlog::warn("verification disputed: {}; {}", reason,
               referee || required ? "waiting for a referee of a third principal"
                                   : "no referee is alive");
  if (!referee && !required) {
    verification.GiveUp();
    metrics_->VerificationFinished(CoordinatorMetrics::Verification::kDisputed);
  }
  pending->work = true;
}

bool JobManager::VerificationSettled(const Job& job, Target* target, Pending* pending) {
  if (target->verification == nullptr) {
    if (target->verify_decided) return true;
    target->verify_decided = true;
    if (!StartVerification(job, target)) return true;
    pending->work = true;
    return false;
  }
  Verification& verification = *target->verification;
  if (verification.done()) return true;
  if (!verification.waiting() || clock_() < verification.deadline()) return false;
  verification.GiveUp();  // kAuto only: kRequired waits without a deadline
  if (verification.outcome() == Verification::Outcome::kDisputed) {
    metrics_->VerificationFinished(CoordinatorMetrics::Verification::kDisputed);
    spdlog::warn("job {}: no referee came for {} within {}; nobody is quarantined, and each "
                 "verified config counts at the slower of the two measurements "
                 "(verify_best=auto)",
                 job.view.id(), target->info.tuning_key(),
                 absl::FormatDuration(options_.verify.wait));
    return true;
  }
  metrics_->VerificationFinished(CoordinatorMetrics::Verification::kUnverified);
  spdlog::warn("job {}: no verifier came for {} within {}; its best is served unverified "
               "(verify_best=auto)",
               job.view.id(), target->info.tuning_key(),
               absl::FormatDuration(options_.verify.wait));
  return true;
}

bool JobManager::StartVerification(const Job& job, Target* target) {
  std::optional<BestRecord> served;
  if (index_ != nullptr) served = index_->Get(target->info.tuning_key());
  const JobTarget::VerifyStart start = target->StartVerification(
      options_.verify, served,
      workers_->LiveDevices(target->info.device_model(), target->info.toolkit()), clock_());
  if (start == JobTarget::VerifyStart::kNoVerifier) {
    metrics_->VerificationFinished(CoordinatorMetrics::Verification::kUnverified);
    spdlog::warn("job {}: no other worker of {} can verify the best of {}; served "
                 "unverified (verify_best=auto)",
                 job.view.id(), target->info.device_model(), target->info.tuning_key());
  }
  return start == JobTarget::VerifyStart::kStarted;
}

void JobManager::Quarantine(const Quarantined& quarantined) {
  absl::Status added =
      quarantine_->Add(quarantined.principal, quarantined.reason, absl::ToUnixMillis(clock_()));
  absl::StatusOr<InvalidationResult> invalidated =
      added.ok() ? keeper_->Invalidate(TrialFilter{quarantined.principal, "", ""})
                 : absl::StatusOr<InvalidationResult>(added);
  metrics_->WorkersQuarantined(static_cast<int>(quarantine_->size()));
  if (!invalidated.ok()) {
    spdlog::error("cannot quarantine {} yet ({}); trying again", quarantined.principal,
                  invalidated.status().ToString());
    absl::MutexLock lock(&mu_);
    unstored_quarantines_.push_back(quarantined);  // Tick tries again
    return;
  }
  spdlog::warn("quarantined {} ({}); {} of its trials excluded, {} best configs derived again",
               quarantined.principal, quarantined.reason, invalidated->trials,
               invalidated->keys);
  absl::MutexLock lock(&overruled_mu_);
  overruled_.erase(quarantined.principal);  // the quarantine list refuses it now
}

}  // namespace tunefleet::server
