#include "server/lease.h"

namespace tunefleet::server {

v1::Lease LeaseToProto(const LeaseGrant& grant) {
  v1::Lease lease;
  lease.set_lease_id(grant.lease_id);
  lease.set_epoch(grant.epoch);
  lease.set_expires_unix_ms(absl::ToUnixMillis(grant.expires));
  lease.set_job_id(grant.job_id);
  if (grant.spec != nullptr) {
    *lease.mutable_kernel() = grant.spec->kernel();
    *lease.mutable_sources() = grant.spec->sources();  // digests only
    *lease.mutable_shape() = grant.spec->shape();
    lease.set_seed(grant.spec->seed());
  }
  lease.set_tuning_key(grant.tuning_key);
  lease.set_kind(grant.kind);
  lease.set_finalists(grant.kind == v1::LEASE_KIND_FINALISTS);
  lease.set_profile(grant.kind == v1::LEASE_KIND_PROFILE);
  lease.set_best_seconds(grant.best_seconds);
  lease.set_own_build(grant.own_build);
  lease.set_receipt(grant.receipt);
  for (const auto& [ordinal, config] : grant.trials) {
    v1::Trial* trial = lease.add_trials();
    trial->set_index(static_cast<int64_t>(ordinal));
    *trial->mutable_config() = config;
  }
  return lease;
}

}  // namespace tunefleet::server
