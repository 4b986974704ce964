// The lease vocabulary, shared by the job manager, the profile manager, the
// long-polls and the worker service: what a worker device asks for, what it
// is granted, what it reports and what the coordinator answers, the
// compile-ahead query and grant of compile-only workers, and LeaseSource,
// what grants leases.
#ifndef TUNEFLEET_SERVER_LEASE_H_
#define TUNEFLEET_SERVER_LEASE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tunefleet/v1/tuning_service.pb.h"
#include "tunefleet/v1/types.pb.h"
#include "tunefleet/v1/worker_service.pb.h"

namespace tunefleet::server {

// What a worker device asks for.
struct LeaseQuery {
  std::string worker_id;
  std::string device_id;  // empty: the worker's first device
  int max_trials = 0;     // 0: the batch size
};

// Trials handed to a worker.
struct LeaseGrant {
  std::string lease_id;
  int64_t epoch = 0;
  absl::Time expires;
  std::string job_id;
  std::shared_ptr<const v1::JobSpec> spec;  // sources carry digests only
  std::string tuning_key;
  // Search, the finalists round (verification too) or a profile (by the
  // ProfileManager): v1::LeaseKind says what each asks of the worker.
  v1::LeaseKind kind = v1::LEASE_KIND_SEARCH;
  // The target's best median so far for the early-cut rule; 0 when none is
  // known, and for finalists and verification leases (never cut).
  double best_seconds = 0;
  // Compile every config here, fetching no shared artifact (v1::Lease's
  // own_build): the finalists round and verifications, whose measurements
  // decide the served best, and the search leases drawn for an audit build.
  bool own_build = false;
  std::vector<std::pair<uint64_t, v1::Config>> trials;  // ordinal, config
  // A plain search lease's receipt (server/lease_receipts.h); empty for
  // the others.
  std::string receipt;
};

// The lease as the worker receives it: `kind`, and the bools `finalists`
// and `profile` for workers that predate it.
v1::Lease LeaseToProto(const LeaseGrant& grant);

// What a compile-only worker asks for: configs of CUDA targets whose devices
// have compute capability `compute_capability` (90 for sm_90) and whose
// toolkit is the worker's.
struct CompileQuery {
  std::string toolkit;
  int compute_capability = 0;
  int max_configs = 0;  // 0: the batch size
  std::string worker_id;  // who compiles them: its grants admit its artifacts
};

// Configs of one job target to compile ahead of its leases.
struct CompileGrant {
  std::string job_id;
  std::shared_ptr<const v1::JobSpec> spec;  // sources carry digests only
  v1::Device device;  // the target's model and limits (no id)
  std::vector<v1::Config> configs;
};

// Results a worker sends for one lease.
struct ResultReport {
  std::string worker_id;
  std::string lease_id;
  int64_t epoch = 0;
  std::vector<std::pair<uint64_t, v1::TrialResult>> trials;  // ordinal, result
  bool release = false;  // the worker gives back what it did not report
  std::string receipt;   // the lease's, as granted (LeaseGrant::receipt)
};

struct ReportAck {
  // The lease is gone: stop working on it.
  static ReportAck Cancelled() {
    ReportAck ack;
    ack.cancelled = true;
    return ack;
  }

  absl::Time expires;
  bool cancelled = false;  // the lease is gone: stop working on it
  double best_seconds = 0;  // as LeaseGrant::best_seconds, as of the report
  // Set when the report was adopted from its receipt into a lease of this
  // process: the worker reports the rest under this id and epoch.
  std::string adopted_lease_id;
  int64_t adopted_epoch = 0;
};

// What grants leases: the JobManager (search and finalists leases) and the
// ProfileManager (profile leases). LongPolls asks the sources in turn for a
// lease; the worker service sends each report to the source that granted
// its lease, and each heartbeat and blob check to every source.
//
// Thread-safety: implementations are safe for concurrent use.
class LeaseSource {
 public:
  virtual ~LeaseSource() = default;

  // A lease for `query` now, or none (nothing this worker device may take).
  virtual absl::StatusOr<std::optional<LeaseGrant>> TryLease(const LeaseQuery& query) = 0;
  // True when `lease_id` is one this source grants (its own id scheme),
  // whether the lease is still held or not: its reports go to Report.
  virtual bool Grants(const std::string& lease_id) const = 0;
  // Applies a worker's results for a lease this source granted.
  virtual absl::StatusOr<ReportAck> Report(const ResultReport& report) = 0;
  // The worker is alive (a heartbeat): its leases of this source go on.
  virtual void RenewLeases(const std::string& worker_id) = 0;
  // OK when one of the worker's leases of this source needs the source blob
  // `digest`; PermissionDenied otherwise.
  virtual absl::Status CheckBlobLeased(const std::string& worker_id,
                                       const std::string& digest) = 0;
  // OK when `worker_id` holds work of this source that compiles `config` of
  // job `job_id` (for `reference`, the job's reference: any of its work),
  // so that it may publish the artifact; PermissionDenied otherwise.
  virtual absl::Status CheckArtifactLeased(const std::string& worker_id,
                                           const std::string& job_id,
                                           const v1::Config& config, bool reference) = 0;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_LEASE_H_
