// JobManager's periodic upkeep (Tick): leases that lapsed, writes the store
// refused, time budgets, jobs stranded with nothing leased, targets no worker
// takes part in, and the reasons of jobs that wait for a worker.
#include <algorithm>
#include <map>

#include "server/job_log.h"
#include "server/job_manager.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {

void JobManager::Tick() {
  if (const int forgotten = workers_->Prune(); forgotten > 0) {
    job_log::WorkersForgotten(forgotten);
  }
  metrics_->WorkersAlive(workers_->CountAlive());
  metrics_->JobLockBatches(combiner_.batches(), combiner_.sections());
  Pending pending;
  std::vector<std::pair<std::string, int64_t>> queued;
  // Expiry is judged as of before the heartbeats are taken: one that comes
  // while this waits for the lock counts at the next Tick, and judged by then.
  const absl::Time now = clock_();
  absl::flat_hash_map<std::string, absl::Time> heard;
  {
    absl::MutexLock lock(&heard_mu_);
    heard.swap(heard_);
  }
  {
    absl::MutexLock lock(&mu_);
    // The heartbeats since the last Tick, before anything expires.
    for (const auto& [worker_id, at] : heard) {
      leases_.RenewWorker(worker_id, at + options_.lease_ttl);
    }
    for (const Lease& lease : leases_.TakeExpired(now)) {
      metrics_->LeaseExpired();
      job_log::LeaseExpired(lease);
      ReturnLease(lease, /*expired=*/true, &pending);
    }
    pending.rows.insert(pending.rows.end(), unstored_rows_.begin(), unstored_rows_.end());
    unstored_rows_.clear();
    pending.quarantines.swap(unstored_quarantines_);
    const std::vector<std::string> unfinished(unfinished_writes_.begin(),
                                              unfinished_writes_.end());
    for (const std::string& id : unfinished) {
      if (Job* job = FindJob(id)) MaybeFinish(job, &pending);
    }
    for (auto& [sequence, job] : jobs_) {
      const bool verifying = std::any_of(
          job->targets.begin(), job->targets.end(), [](const Target& t) {
            return t.verification != nullptr && !t.verification->done();
          });
      if (verifying) MaybeFinish(job.get(), &pending);  // an auto verification's deadline
      if (ApplyTimeBudget(job.get())) {
        pending.work = true;  // the finalists round may be ready
        MaybeFinish(job.get(), &pending);
      }
    }
    absl::erase_if(adopted_, [&](const auto& entry) {
      return now > entry.second.issued + options_.lease_max_age;  // no receipt that old counts
    });
    DropStaleChecks(&pending);
    RepairStranded(&pending);
    AbandonOrphans(&pending);
    ExplainStalls();
    queued = QueuedByModel();
  }
  metrics_->QueuedTrials(queued);
  Flush(std::move(pending));
}

std::vector<std::pair<std::string, int64_t>> JobManager::QueuedByModel() const {
  std::map<std::string, int64_t> by_model;
  for (const auto& [sequence, job] : jobs_) job->AddQueued(&by_model);
  return {by_model.begin(), by_model.end()};
}

bool JobManager::HasLiveWorker(const v1::StoredTarget& target) const {
  return workers_->AnyLiveDevice(target.device_model(), target.toolkit(),
                                 [](const std::string&) { return true; });
}

void JobManager::ExplainStalls() {
  for (auto& [sequence, job] : jobs_) {
    if (!job->Live() || job->targets.empty()) continue;
    const std::string missing =
        job->MissingWorkers([this](const v1::StoredTarget& t) { return HasLiveWorker(t); });
    if (!job->ExplainStall(missing)) continue;
    job_log::Stalled(job->view.id(), job->view.reason());
    Changed(job.get());
  }
}

void JobManager::RepairStranded(Pending* pending) {
  for (auto& [sequence, job] : jobs_) {
    if (!job->Live() || job->targets.empty() || leases_.HasJob(job->view.id()) ||
        unfinished_writes_.contains(job->view.id())) {
      continue;
    }
    // RUNNING with nothing leased and nothing to lease: configs held by
    // leases that no longer exist go back to the queue.
    const std::optional<int64_t> moved = job->RepairStranded();
    if (!moved.has_value()) continue;
    if (!job->SearchesFinished()) {
      spdlog::warn("job {} had nothing leased and nothing queued; {} configs queued again",
                   job->view.id(), *moved);
      metrics_->StrandedJobRepaired();
      pending->work = true;
    }
    MaybeFinish(job.get(), pending);
  }
}

void JobManager::AbandonOrphans(Pending* pending) {
  for (auto& [sequence, job] : jobs_) {
    if (!job->Live()) continue;
    const std::vector<std::string> abandoned = job->AbandonOrphans(
        [this](const Target& target) { return AnyActivePrincipal(target, {}); }, clock_(),
        options_.orphan_timeout);
    if (abandoned.empty()) continue;
    for (const std::string& reason : abandoned) spdlog::warn("job {}: {}", job->view.id(), reason);
    MaybeFinish(job.get(), pending);
    Changed(job.get());
  }
}

}  // namespace tunefleet::server
