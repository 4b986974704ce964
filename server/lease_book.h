// The LeaseBook: every lease the coordinator has handed out and not yet got
// back, with its epoch and expiry, indexed by lease id, by worker and by
// expiry time.
#ifndef TUNEFLEET_SERVER_LEASE_BOOK_H_
#define TUNEFLEET_SERVER_LEASE_BOOK_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"

namespace tunefleet::server {

// Trials of one job target handed to one worker device. `ordinals` are the
// configs not yet reported.
struct Lease {
  std::string id;
  int64_t epoch = 0;
  std::string worker_id;
  std::string device_id;  // the device that runs it
  std::string principal;  // the worker's, for provenance
  std::string job_id;
  int target = 0;
  absl::Time expires;
  // Renewals (Renew, RenewWorker) move `expires` no later than this: a lease
  // that reports no result expires then, even while its worker heartbeats or
  // sends empty reports. The JobManager moves it on at each report that
  // carries a result. Default: no limit.
  absl::Time idle_until = absl::InfiniteFuture();
  // However it reports, the lease ends here: renewals and reports never move
  // `expires` or `idle_until` past it, so a worker that reports a result now
  // and then cannot hold a batch of configs for good. Default: no limit.
  absl::Time deadline = absl::InfiniteFuture();
  std::vector<uint64_t> ordinals;
  bool finalists = false;  // the finalists round: trials already stored
  bool verify = false;     // a verification: re-measures another principal's claim
  bool spot = false;       // spot checks: re-measures other principals' search results
  bool referee = false;    // with verify or spot: settles a dispute (a third principal)
  // Build every config from the sources (v1::Lease.own_build): the
  // finalists round, verifications, and the search leases drawn for an
  // audit build.
  bool own_build = false;
};

// Thread-safety: not thread-safe; owned and locked by the JobManager.
// Costs: Grant, Find, Remove are O(log n); HeldBy O(k) for the k leases
// one principal holds of one job; RenewWorker is O(k log n) for a
// worker holding k leases, whatever the number n of leases in the book;
// TakeExpired is O(e log n) for e expired leases.
class LeaseBook {
 public:
  // `first_epoch`: epochs count up from here. Choose it so that it never
  // repeats across coordinator restarts (e.g. from the clock).
  explicit LeaseBook(int64_t first_epoch);

  // Assigns a new lease id ("l<N>") and epoch to `lease` and keeps it.
  const Lease& Grant(Lease lease);
  // True when `id` has the form of this book's ids, "l<N>" (held or not).
  static bool IsLeaseId(const std::string& id);
  // The lease `id` when it is still held under `epoch` by `worker_id`;
  // nullptr for an expired, returned or foreign lease.
  Lease* Find(const std::string& id, int64_t epoch, const std::string& worker_id);
  // Moves the expiry of lease `id` on to `expires` (never back: a renewal
  // applied late, a heartbeat's in Tick, cannot shorten one made since), but
  // no later than its idle_until and its deadline, which do pull it back
  // (no-op when the lease is gone).
  void Renew(const std::string& id, absl::Time expires);
  // Renew for every lease of `worker_id`.
  void RenewWorker(const std::string& worker_id, absl::Time expires);
  // Removes lease `id` and returns it (empty id when it was not held).
  Lease Remove(const std::string& id);
  // Removes and returns every lease that expired before `now`.
  std::vector<Lease> TakeExpired(absl::Time now);
  // Takes `ordinals` of target `target` of `job_id` out of every lease of
  // the job but `except` (they were adopted into it: JobManager::Report);
  // returns the ids of the leases that held nothing else (the caller
  // removes them).
  std::vector<std::string> Disown(const std::string& job_id, int target,
                                  const std::vector<uint64_t>& ordinals,
                                  const std::string& except);
  // Removes and returns every lease of `job_id`.
  std::vector<Lease> TakeJob(const std::string& job_id);
  // True when some lease of `job_id` is out.
  bool HasJob(const std::string& job_id) const;
  // The leases `worker_id` holds now (O(k) for k leases of the worker).
  std::vector<const Lease*> OfWorker(const std::string& worker_id) const;
  // The ids of the leases `principal`'s workers hold (a walk of the book:
  // for rare events, a quarantine).
  std::vector<std::string> IdsOfPrincipal(const std::string& principal) const;
  // How many of them run on `device_id`.
  int CountOnDevice(const std::string& worker_id, const std::string& device_id) const;
  // The configs of target `target` of `job_id` that `principal`'s plain
  // search leases hold now: no finalists, verification or spot-check lease
  // (O(k) for its k leases of the job).
  int64_t HeldBy(const std::string& job_id, int target, const std::string& principal) const;
  size_t size() const { return leases_.size(); }

 private:
  void Unindex(const Lease& lease);

  int64_t next_epoch_;
  int64_t next_id_ = 1;
  absl::flat_hash_map<std::string, Lease> leases_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> by_worker_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> by_job_;
  // (job id, principal) -> lease ids.
  absl::flat_hash_map<std::pair<std::string, std::string>, absl::flat_hash_set<std::string>>
      by_job_principal_;
  std::set<std::pair<absl::Time, std::string>> by_expiry_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_LEASE_BOOK_H_
