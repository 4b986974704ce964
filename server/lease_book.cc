#include "server/lease_book.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tunefleet::server {

LeaseBook::LeaseBook(int64_t first_epoch) : next_epoch_(first_epoch) {}

bool LeaseBook::IsLeaseId(const std::string& id) {
  return id.size() > 1 && id[0] == 'l' &&
         std::all_of(id.begin() + 1, id.end(), [](char c) { return absl::ascii_isdigit(c); });
}

const Lease& LeaseBook::Grant(Lease lease) {
  lease.id = absl::StrCat("l", next_id_++);
  lease.epoch = next_epoch_++;
  by_worker_[lease.worker_id].insert(lease.id);
  by_job_[lease.job_id].insert(lease.id);
  by_job_principal_[{lease.job_id, lease.principal}].insert(lease.id);
  by_expiry_.emplace(lease.expires, lease.id);
  auto [it, inserted] = leases_.emplace(lease.id, std::move(lease));
  return it->second;
}

Lease* LeaseBook::Find(const std::string& id, int64_t epoch,
                       const std::string& worker_id) {
  auto it = leases_.find(id);
  if (it == leases_.end() || it->second.epoch != epoch ||
      it->second.worker_id != worker_id) {
    return nullptr;
  }
  return &it->second;
}

void LeaseBook::Renew(const std::string& id, absl::Time expires) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return;
  const absl::Time current = it->second.expires;
  expires = std::min({std::max(expires, current), it->second.idle_until, it->second.deadline});
  if (expires == current) return;
  by_expiry_.erase({it->second.expires, id});
  it->second.expires = expires;
  by_expiry_.emplace(expires, id);
}

void LeaseBook::RenewWorker(const std::string& worker_id, absl::Time expires) {
  auto it = by_worker_.find(worker_id);
  if (it == by_worker_.end()) return;
  for (const std::string& id : it->second) Renew(id, expires);
}

void LeaseBook::Unindex(const Lease& lease) {
  by_expiry_.erase({lease.expires, lease.id});
  auto worker = by_worker_.find(lease.worker_id);
  worker->second.erase(lease.id);
  if (worker->second.empty()) by_worker_.erase(worker);
  auto job = by_job_.find(lease.job_id);
  job->second.erase(lease.id);
  if (job->second.empty()) by_job_.erase(job);
  auto mine = by_job_principal_.find({lease.job_id, lease.principal});
  mine->second.erase(lease.id);
  if (mine->second.empty()) by_job_principal_.erase(mine);
}

Lease LeaseBook::Remove(const std::string& id) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return Lease();
  Unindex(it->second);
  Lease lease = std::move(it->second);
  leases_.erase(it);
  return lease;
}

std::vector<Lease> LeaseBook::TakeExpired(absl::Time now) {
  std::vector<Lease> expired;
  while (!by_expiry_.empty() && by_expiry_.begin()->first < now) {
    expired.push_back(Remove(by_expiry_.begin()->second));
  }
  return expired;
}

std::vector<std::string> LeaseBook::Disown(const std::string& job_id, int target,
                                           const std::vector<uint64_t>& ordinals,
                                           const std::string& except) {
  std::vector<std::string> emptied;
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return emptied;
  for (const std::string& id : it->second) {
    Lease& lease = leases_.at(id);
    if (id == except || lease.target != target) continue;
    const size_t erased = std::erase_if(lease.ordinals, [&](uint64_t ordinal) {
      return std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end();
    });
    if (erased > 0 && lease.ordinals.empty()) emptied.push_back(id);
  }
  return emptied;
}

std::vector<Lease> LeaseBook::TakeJob(const std::string& job_id) {
  std::vector<Lease> taken;
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return taken;
  const std::vector<std::string> ids(it->second.begin(), it->second.end());
  for (const std::string& id : ids) taken.push_back(Remove(id));
  return taken;
}

bool LeaseBook::HasJob(const std::string& job_id) const {
  return by_job_.contains(job_id);
}

std::vector<const Lease*> LeaseBook::OfWorker(const std::string& worker_id) const {
  std::vector<const Lease*> out;
  auto it = by_worker_.find(worker_id);
  if (it == by_worker_.end()) return out;
  for (const std::string& id : it->second) out.push_back(&leases_.at(id));
  return out;
}

std::vector<std::string> LeaseBook::IdsOfPrincipal(const std::string& principal) const {
  std::vector<std::string> ids;
  for (const auto& [id, lease] : leases_) {
    if (lease.principal == principal) ids.push_back(id);
  }
  return ids;
}

int LeaseBook::CountOnDevice(const std::string& worker_id,
                             const std::string& device_id) const {
  int count = 0;
  for (const Lease* lease : OfWorker(worker_id)) count += lease->device_id == device_id;
  return count;
}

int64_t LeaseBook::HeldBy(const std::string& job_id, int target,
                          const std::string& principal) const {
  auto it = by_job_principal_.find({job_id, principal});
  if (it == by_job_principal_.end()) return 0;
  int64_t held = 0;
  for (const std::string& id : it->second) {
    const Lease& lease = leases_.at(id);
    if (lease.target == target && !lease.finalists && !lease.verify && !lease.spot) {
      held += static_cast<int64_t>(lease.ordinals.size());
    }
  }
  return held;
}

}  // namespace tunefleet::server
