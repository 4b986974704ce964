// The WorkerRegistry: the workers the coordinator knows, their devices and
// when each was last heard from.
#ifndef TUNEFLEET_SERVER_WORKER_REGISTRY_H_
#define TUNEFLEET_SERVER_WORKER_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// A device of a live worker, with what tuning needs to know about it.
struct WorkerDevice {
  std::string worker_id;
  v1::Device device;
  std::string toolkit;
};

// Most devices one registration may name, and most device models the
// workers of one principal may have: more than any real host (or fleet
// under one certificate) has, few enough that one certificate cannot bind
// jobs to hundreds of invented models.
inline constexpr size_t kMaxDevicesPerWorker = 64;
inline constexpr size_t kMaxModelsPerPrincipal = 8;

// What a worker says of itself when it registers.
struct WorkerRegistration {
  std::string host;
  std::vector<v1::Device> devices;
  std::string toolkit;  // compiler name and version, part of the tuning key
  // Who the worker is, as the transport established it: what provenance
  // records, and what verification and quarantine are about. Not empty.
  std::string principal;
  // A compile-only worker: no devices, the CUDA arch it compiles for.
  std::string compile_target;
};

// A live device able to run a (model, toolkit) target, with its principal.
struct LiveDevice {
  std::string worker_id;
  std::string device_id;
  std::string principal;
  std::string host;
};

// Thread-safety: safe for concurrent use.
class WorkerRegistry {
 public:
  using Clock = std::function<absl::Time()>;
  // A worker not heard from for `timeout` is no longer alive; Prune forgets
  // it once it has been silent for `forget_after` (default 10 × timeout).
  // `device_models`, when not empty, are the only device models a worker
  // may register (the operator's allowlist, --device-model).
  WorkerRegistry(absl::Duration timeout, Clock clock,
                 absl::Duration forget_after = absl::InfiniteDuration(),
                 std::vector<std::string> device_models = {});

  // InvalidArgument when the request names no device or a device without a
  // model or backend, or no principal; PermissionDenied for a device model
  // not on the allowlist. Returns the new worker id.
  absl::StatusOr<std::string> Register(const WorkerRegistration& registration);
  // False when the worker is unknown (e.g. the coordinator restarted).
  bool Touch(const std::string& worker_id);
  // The model and toolkit of device `device_id` (empty: the first) of a
  // registered worker (alive or not: a call from it is itself a sign of
  // life, so the call marks it as heard from). NotFound for an unknown worker
  // or device.
  struct ModelOf {
    std::string model;
    std::string toolkit;
    std::string principal;
    std::string device_id;  // the device's own id (never empty)
  };
  absl::StatusOr<ModelOf> TouchDevice(const std::string& worker_id,
                                      const std::string& device_id);
  // One device per (model, toolkit) among live workers of `backend`.
  std::vector<WorkerDevice> LiveModels(v1::Backend backend);
  // Every device of a live worker of `model` and `toolkit`.
  std::vector<LiveDevice> LiveDevices(const std::string& model, const std::string& toolkit);
  // Whether `wanted` holds for the principal of a live worker with a device
  // of `model` and `toolkit`. Walks the principals of that model (not their
  // devices), asks `wanted` first and then looks for one live worker of
  // those it accepts; stops at the first and copies nothing: a fleet of one
  // principal's thousand workers answers "anyone besides it?" at once.
  // `wanted` runs under the registry's reader lock: it must not call the
  // registry (taking another leaf lock, as the quarantine list's, is fine).
  bool AnyLiveDevice(const std::string& model, const std::string& toolkit,
                     absl::FunctionRef<bool(const std::string& principal)> wanted);
  // A device of `model` of a registered worker (alive or not) as the worker
  // reported it, with its limits; nullopt when none has one. Scans every worker.
  std::optional<v1::Device> DeviceOf(const std::string& model);
  // The principal of a registered worker; NotFound for an unknown one.
  absl::StatusOr<std::string> PrincipalOf(const std::string& worker_id);
  std::vector<v1::WorkerInfo> List();
  // How many registered workers are alive (List, counted, without copies).
  int CountAlive();
  // A registered worker as List shows it; NotFound for an unknown one.
  absl::StatusOr<v1::WorkerInfo> Info(const std::string& worker_id);
  bool Alive(const std::string& worker_id);
  // Forgets workers silent for `forget_after`; returns how many. A forgotten
  // worker that calls again is told to register again.
  int Prune();

  // Whether a worker with a device of `model` registered since the registry
  // was built (alive or not, forgotten by Prune or not). Takes only the
  // lock of the models seen, never the one leasing uses.
  bool SawModel(const std::string& model) const;
  // Every model SawModel is true of, sorted.
  std::vector<std::string> SeenModels() const;

 private:
  // When a worker was last heard. Touch sets it under the reader lock, so
  // that the leases, reports and heartbeats of a thousand workers never queue
  // on the registry's lock; two Touches that race store either time.
  class LastSeen {
   public:
    absl::Time Get() const { return absl::FromUnixNanos(ns_.load(std::memory_order_relaxed)); }
    void Set(absl::Time when) { ns_.store(absl::ToUnixNanos(when), std::memory_order_relaxed); }

   private:
    std::atomic<int64_t> ns_{0};
  };
  struct Entry {
    v1::WorkerInfo info;
    std::string principal;
    LastSeen last_seen;
  };
  bool IsAlive(const Entry& entry) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool IsAlive(const Entry& entry, absl::Time now) const;

  const absl::Duration timeout_;
  const Clock clock_;
  const absl::Duration forget_after_;
  const absl::flat_hash_set<std::string> device_models_;  // empty: any
  absl::Mutex mu_;
  // Node-based: by_model_ points at its entries.
  absl::node_hash_map<std::string, Entry> workers_ ABSL_GUARDED_BY(mu_);
  // The workers with a device of each (model, toolkit), by principal.
  absl::flat_hash_map<std::pair<std::string, std::string>,
                      absl::flat_hash_map<std::string, std::vector<const Entry*>>>
      by_model_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  mutable absl::Mutex seen_mu_;
  absl::flat_hash_set<std::string> seen_models_ ABSL_GUARDED_BY(seen_mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_WORKER_REGISTRY_H_
