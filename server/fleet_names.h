// FleetNames: the kernel names and device models a request may name, those
// something in the fleet or its store knows, and the NotFound that names the
// field and lists the known names for a name that matches nothing. Reading
// with a misspelt name ("H10O", "matmull") is then an error saying what
// would match, instead of an empty answer.
//
// A kernel is known when a spec of it was submitted or imported: the
// BestConfigIndex holds the newest spec of each (loaded from the store at
// start-up). A device model is known when
//   - a best row names it, measured or imported (the index holds every
//     stored row: the fleet has tuned on it, or was handed its results), or
//   - a worker with a device of that model registered since the coordinator
//     started (WorkerRegistry::SawModel: alive or not).
// So a model whose workers have not connected yet, after a restart or on a
// fleet that lost them, stays known as long as a stored row names it.
//
// Why NotFound, also for SubmitJob's device_model: whether a name is known
// depends on the fleet's state (the same request becomes valid once a worker
// of that model registers), which Abseil's rule keeps out of
// InvalidArgument; the name refers to an entity that is not there, and the
// caller's next step is the same as for any unknown name: correct it, or
// bring a worker of that model first.
#ifndef TUNEFLEET_SERVER_FLEET_NAMES_H_
#define TUNEFLEET_SERVER_FLEET_NAMES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/best_config_index.h"
#include "server/worker_registry.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use; holds no state of its own. A
// check of a known device model takes the index's reader lock and, only for
// a model no row names, the registry's lock of models seen: never the lock
// leasing uses. Listing the known names (the error path) sorts them all.
class FleetNames {
 public:
  // `index` may be null: no kernel and only registered workers' models are
  // known then. Both must outlive this.
  FleetNames(const BestConfigIndex* index, const WorkerRegistry* workers);

  // OK for an empty `name` (a filter that names no kernel) and a known
  // kernel; else NotFound: "<field> \"<name>\" names no kernel this
  // coordinator knows; known kernels: ..." (NamesToList's names).
  absl::Status CheckKernel(absl::string_view field, const std::string& name) const;
  // OK for an empty `model` and a known device model; else NotFound naming
  // `field` and listing the known models, as CheckKernel.
  absl::Status CheckDeviceModel(absl::string_view field, const std::string& model) const;

 private:
  const BestConfigIndex* const index_;
  const WorkerRegistry* const workers_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_FLEET_NAMES_H_
