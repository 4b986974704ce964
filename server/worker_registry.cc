#include "server/worker_registry.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace tunefleet::server {

WorkerRegistry::WorkerRegistry(absl::Duration timeout, Clock clock,
                               absl::Duration forget_after,
                               std::vector<std::string> device_models)
    : timeout_(timeout),
      clock_(std::move(clock)),
      forget_after_(forget_after == absl::InfiniteDuration() ? 10 * timeout : forget_after),
      device_models_(device_models.begin(), device_models.end()) {}

namespace {

// The distinct device models of a registration.
std::vector<std::string> ModelsOf(const v1::WorkerInfo& info) {
  std::vector<std::string> models;
  for (const v1::Device& device : info.devices()) models.push_back(device.model());
  std::sort(models.begin(), models.end());
  models.erase(std::unique(models.begin(), models.end()), models.end());
  return models;
}

}  // namespace

int WorkerRegistry::Prune() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_();
  return static_cast<int>(absl::erase_if(workers_, [&](const auto& id_and_entry) {
    const Entry& entry = id_and_entry.second;
    if (now - entry.last_seen.Get() <= forget_after_) return false;
    for (const std::string& model : ModelsOf(entry.info)) {
      auto by_model = by_model_.find({model, entry.info.toolkit()});
      auto of_principal = by_model->second.find(entry.principal);
      std::erase(of_principal->second, &entry);
      if (of_principal->second.empty()) by_model->second.erase(of_principal);
      if (by_model->second.empty()) by_model_.erase(by_model);
    }
    return true;
  }));
}

absl::StatusOr<std::string> WorkerRegistry::Register(
    const WorkerRegistration& request) {
  if (request.devices.empty() && request.compile_target.empty()) {
    return absl::InvalidArgumentError("worker registers no devices");
  }
  if (!request.devices.empty() && !request.compile_target.empty()) {
    return absl::InvalidArgumentError("a compile-only worker registers no devices");
  }
  if (request.devices.size() > kMaxDevicesPerWorker) {
    return absl::InvalidArgumentError(absl::StrCat("a worker registers at most ",
                                                   kMaxDevicesPerWorker, " devices, not ",
                                                   request.devices.size()));
  }
  absl::flat_hash_set<std::string> models;
  for (const v1::Device& device : request.devices) {
    if (device.id().empty() || device.model().empty() ||
        device.backend() == v1::BACKEND_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device \"", device.id(), "\" needs an id, a model and a backend"));
    }
    if (!device_models_.empty() && !device_models_.contains(device.model())) {
      return absl::PermissionDeniedError(absl::StrCat(
          "device model \"", device.model(), "\" is not one this fleet tunes for (the "
          "coordinator's --device-model list)"));
    }
    models.insert(device.model());
  }
  if (request.principal.empty()) {
    return absl::InvalidArgumentError("worker registers without a principal");
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [id, entry] : workers_) {  // the principal's other workers
    if (entry.principal != request.principal) continue;
    for (const v1::Device& device : entry.info.devices()) models.insert(device.model());
  }
  if (models.size() > kMaxModelsPerPrincipal) {
    return absl::InvalidArgumentError(absl::StrCat(
        "principal ", request.principal, " would have devices of ", models.size(),
        " models; at most ", kMaxModelsPerPrincipal, " are accepted"));
  }
  {
    absl::MutexLock seen(&seen_mu_);  // never taken before mu_
    for (const v1::Device& device : request.devices) seen_models_.insert(device.model());
  }
  // The time makes ids unique across coordinator restarts.
  std::string id = absl::StrCat("w", absl::ToUnixMillis(clock_()) % 100000000,
                                "-", next_id_++);
  Entry& entry = workers_[id];
  entry.info.set_worker_id(id);
  entry.info.set_host(request.host);
  entry.info.mutable_devices()->Assign(request.devices.begin(), request.devices.end());
  entry.info.set_toolkit(request.toolkit);
  entry.info.set_principal(request.principal);
  entry.info.set_compile_target(request.compile_target);
  entry.principal = request.principal;
  entry.last_seen.Set(clock_());
  for (const std::string& model : ModelsOf(entry.info)) {
    by_model_[{model, request.toolkit}][request.principal].push_back(&entry);
  }
  return id;
}

bool WorkerRegistry::Touch(const std::string& worker_id) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return false;
  it->second.last_seen.Set(clock_());
  return true;
}

bool WorkerRegistry::IsAlive(const Entry& entry) const { return IsAlive(entry, clock_()); }

bool WorkerRegistry::IsAlive(const Entry& entry, absl::Time now) const {
  return now - entry.last_seen.Get() <= timeout_;
}

bool WorkerRegistry::Alive(const std::string& worker_id) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  return it != workers_.end() && IsAlive(it->second);
}

absl::StatusOr<WorkerRegistry::ModelOf> WorkerRegistry::TouchDevice(
    const std::string& worker_id, const std::string& device_id) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown worker ", worker_id, "; register again"));
  }
  it->second.last_seen.Set(clock_());
  for (const v1::Device& device : it->second.info.devices()) {
    if (device_id.empty() || device.id() == device_id) {
      return ModelOf{device.model(), it->second.info.toolkit(), it->second.principal,
                     device.id()};
    }
  }
  return absl::NotFoundError(absl::StrCat("worker ", worker_id, " has no device ", device_id));
}

std::vector<WorkerDevice> WorkerRegistry::LiveModels(v1::Backend backend) {
  absl::ReaderMutexLock lock(&mu_);
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<WorkerDevice> out;
  for (const auto& [id, entry] : workers_) {
    if (!IsAlive(entry)) continue;
    for (const v1::Device& device : entry.info.devices()) {
      if (device.backend() != backend) continue;
      if (seen.emplace(device.model(), entry.info.toolkit()).second) {
        out.push_back(WorkerDevice{id, device, entry.info.toolkit()});
      }
    }
  }
  return out;
}

std::optional<v1::Device> WorkerRegistry::DeviceOf(const std::string& model) {
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [id, entry] : workers_) {
    for (const v1::Device& device : entry.info.devices()) {
      if (device.model() == model) return device;
    }
  }
  return std::nullopt;
}

std::vector<LiveDevice> WorkerRegistry::LiveDevices(const std::string& model,
                                                    const std::string& toolkit) {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<LiveDevice> out;
  auto by_model = by_model_.find({model, toolkit});
  if (by_model == by_model_.end()) return out;
  const absl::Time now = clock_();
  for (const auto& [principal, entries] : by_model->second) {
    for (const Entry* entry : entries) {
      if (!IsAlive(*entry, now)) continue;
      for (const v1::Device& device : entry->info.devices()) {
        if (device.model() != model) continue;
        out.push_back(LiveDevice{entry->info.worker_id(), device.id(), principal,
                                 entry->info.host()});
      }
    }
  }
  return out;
}

bool WorkerRegistry::AnyLiveDevice(const std::string& model, const std::string& toolkit,
                                   absl::FunctionRef<bool(const std::string& principal)> wanted) {
  absl::ReaderMutexLock lock(&mu_);
  auto by_model = by_model_.find({model, toolkit});
  if (by_model == by_model_.end()) return false;
  const absl::Time now = clock_();
  for (const auto& [principal, entries] : by_model->second) {
    if (!wanted(principal)) continue;
    if (std::any_of(entries.begin(), entries.end(),
                    [&](const Entry* entry) { return IsAlive(*entry, now); })) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<v1::WorkerInfo> WorkerRegistry::Info(const std::string& worker_id) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown worker ", worker_id, "; register again"));
  }
  v1::WorkerInfo info = it->second.info;
  info.set_alive(IsAlive(it->second));
  return info;
}

absl::StatusOr<std::string> WorkerRegistry::PrincipalOf(const std::string& worker_id) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown worker ", worker_id, "; register again"));
  }
  return it->second.principal;
}

bool WorkerRegistry::SawModel(const std::string& model) const {
  absl::MutexLock lock(&seen_mu_);
  return seen_models_.contains(model);
}

std::vector<std::string> WorkerRegistry::SeenModels() const {
  absl::MutexLock lock(&seen_mu_);
  std::vector<std::string> models(seen_models_.begin(), seen_models_.end());
  std::sort(models.begin(), models.end());
  return models;
}

int WorkerRegistry::CountAlive() {
  absl::ReaderMutexLock lock(&mu_);
  const absl::Time now = clock_();
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(), [&](const auto& entry) {
    return IsAlive(entry.second, now);
  }));
}

std::vector<v1::WorkerInfo> WorkerRegistry::List() {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::WorkerInfo> out;
  for (const auto& [id, entry] : workers_) {
    v1::WorkerInfo info = entry.info;
    info.set_last_seen_unix_ms(absl::ToUnixMillis(entry.last_seen.Get()));
    info.set_alive(IsAlive(entry));
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.worker_id() < b.worker_id();
  });
  return out;
}

}  // namespace tunefleet::server
