// What the coordinator counts, behind an interface so that the core classes
// stay free of any metrics library. PrometheusMetrics is the real sink;
// NullMetrics counts nothing.
#ifndef TUNEFLEET_SERVER_METRICS_H_
#define TUNEFLEET_SERVER_METRICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// Thread-safety: implementations are safe for concurrent use.
class CoordinatorMetrics {
 public:
  enum class Submission { kAccepted, kCached, kRejected };
  enum class Verification { kAgreed, kDisagreed, kUnverified, kDisputed };
  enum class SpotCheck { kAgreed, kDisputed, kOverruled, kUnsettled };

  virtual ~CoordinatorMetrics() = default;
  virtual void JobSubmitted(Submission submission) = 0;
  // A job moved from `from` (JOB_STATE_UNSPECIFIED for a new or reloaded
  // job) to `to`.
  virtual void JobStateChanged(v1::JobState from, v1::JobState to) = 0;
  virtual void TrialRecorded(v1::TrialStatus status) = 0;
  virtual void LeaseGranted(int trials) = 0;
  virtual void LeaseExpired() = 0;
  // A lease another coordinator process granted was adopted from its
  // receipt (server/lease_receipts.h) with `results` results in hand; or a
  // receipt was refused (forged, altered, another principal's).
  virtual void LeaseAdopted(int results) = 0;
  virtual void ReceiptRefused() = 0;
  virtual void WorkersAlive(int count) = 0;
  // Best-vs-default speed-up of a finished job target.
  virtual void SpeedupObserved(double speedup) = 0;
  virtual void StoreCall(absl::Duration elapsed) = 0;
  // A RUNNING job was found with nothing leased and nothing to lease, and
  // its configs were queued again.
  virtual void StrandedJobRepaired() = 0;
  // Whether the store answered its last health check.
  virtual void StoreHealthy(bool healthy) = 0;
  // Whether this coordinator leads its database (else it is a standby).
  virtual void Leading(bool leading) = 0;
  // A call refused before its handler: no or a bad credential
  // (`authenticated` false), or a role that may not call the method.
  virtual void CallRefused(bool authenticated) = 0;
  // A candidate best's verification ended (kUnverified: served without one).
  virtual void VerificationFinished(Verification outcome) = 0;
  // A spot check of a search result ended (server/spot_checks.h), or its
  // dispute went to a referee.
  virtual void SpotCheckFinished(SpotCheck outcome) = 0;
  // How many worker principals are quarantined now.
  virtual void WorkersQuarantined(int count) = 0;
  // One store call ended: its operation (the Store method, e.g.
  // "InsertTrials"), its code (kOk included) and how long it took.
  virtual void StoreOperation(absl::string_view operation, absl::StatusCode code,
                              absl::Duration elapsed) = 0;
  // One RPC ended: `method` is "Service/Method" for a method of a
  // registered service, else "other"; its code and how long it took.
  virtual void CallFinished(absl::string_view method, absl::StatusCode code,
                            absl::Duration elapsed) = 0;
  // Trials waiting to be leased now, per device model, for every model
  // with unfinished jobs (a model left out has none).
  virtual void QueuedTrials(const std::vector<std::pair<std::string, int64_t>>& by_model) = 0;
  // A job's search ended (the job finished, failed or was cancelled), for
  // `reason`.
  virtual void SearchFinished(v1::StopReason reason) = 0;
  // A finished job target's best was compared with the best served before
  // it (REPLACED, REGRESSED or FORCED; FIRST is no retune and not counted).
  virtual void RetuneFinished(v1::RetuneOutcome outcome) = 0;
  // Configs of profile requests waiting for a worker or leased, now.
  virtual void ProfilesPending(int64_t configs) = 0;
  // A profile was stored: with the counters read (`read`), or with the
  // reason none could be.
  virtual void ProfileStored(bool read) = 0;
  // What the shared-artifact shelf holds now.
  virtual void ArtifactsShelved(int64_t count, int64_t bytes) = 0;
  // A worker asked for a shared artifact: served (`found`) or not.
  virtual void ArtifactRequested(bool found) = 0;
  // Two publishes of one artifact key differed (SharedArtifacts::Put).
  virtual void ArtifactConflicted() = 0;
  // The batches the job lock's hot sections ran in (LockCombiner), and the
  // sections, since the start: totals, which only grow.
  virtual void JobLockBatches(int64_t batches, int64_t sections) = 0;
};

// Not final: a test records what it needs by overriding a method or two.
class NullMetrics : public CoordinatorMetrics {
 public:
  void JobSubmitted(Submission) override {}
  void JobStateChanged(v1::JobState, v1::JobState) override {}
  void TrialRecorded(v1::TrialStatus) override {}
  void LeaseGranted(int) override {}
  void LeaseExpired() override {}
  void LeaseAdopted(int) override {}
  void ReceiptRefused() override {}
  void WorkersAlive(int) override {}
  void SpeedupObserved(double) override {}
  void StoreCall(absl::Duration) override {}
  void StrandedJobRepaired() override {}
  void StoreHealthy(bool) override {}
  void Leading(bool) override {}
  void CallRefused(bool) override {}
  void VerificationFinished(Verification) override {}
  void SpotCheckFinished(SpotCheck) override {}
  void WorkersQuarantined(int) override {}
  void StoreOperation(absl::string_view, absl::StatusCode, absl::Duration) override {}
  void CallFinished(absl::string_view, absl::StatusCode, absl::Duration) override {}
  void QueuedTrials(const std::vector<std::pair<std::string, int64_t>>&) override {}
  void SearchFinished(v1::StopReason) override {}
  void RetuneFinished(v1::RetuneOutcome) override {}
  void ProfilesPending(int64_t) override {}
  void ProfileStored(bool) override {}
  void ArtifactsShelved(int64_t, int64_t) override {}
  void ArtifactRequested(bool) override {}
  void ArtifactConflicted() override {}
  void JobLockBatches(int64_t, int64_t) override {}
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_METRICS_H_
