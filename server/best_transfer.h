// The BestTransfer: a fleet's best configs out as a table another fleet (or
// an application) can take, and such a table in. Imported rows are stored
// marked imported with their provenance (job, times, origin) and never
// replace a measured row of the same key unless asked to.
#ifndef TUNEFLEET_SERVER_BEST_TRANSFER_H_
#define TUNEFLEET_SERVER_BEST_TRANSFER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "server/best_config_index.h"
#include "server/store/store.h"
#include "tunefleet/v1/admin_service.pb.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// What an import did.
struct ImportSummary {
  int64_t imported = 0;       // rows written
  int64_t kept_measured = 0;  // rows refused: a measured best of the key is kept
  int64_t kernels_added = 0;  // kernels the coordinator did not know
  int64_t not_served = 0;     // written, but tuned with other code than the kernel's here
};

// Thread-safety: safe for concurrent use; holds no state of its own. An
// import racing a job that finishes the same key may leave the index with the
// imported row while the store holds the measured one, until a restart; the
// store's row is always the right one.
class BestTransfer {
 public:
  // Both must outlive the transfer. `now_unix_ms` dates the kernels added.
  BestTransfer(Store* store, BestConfigIndex* index, std::function<int64_t()> now_unix_ms);

  // The rows served for `kernel_name` ("" every kernel) and `device_model`
  // ("" every model), with the specs of their kernels. NotFound for a named
  // kernel never submitted here.
  absl::StatusOr<v1::ExportBestResponse> Export(const std::string& kernel_name,
                                                const std::string& device_model);
  // Stores the kernels this coordinator does not know, then the rows (see
  // Store::ImportBest). InvalidArgument, before anything is stored, for a
  // missing origin or a row or kernel that does not parse.
  absl::StatusOr<ImportSummary> Import(const v1::ImportBestRequest& request);

 private:
  Store* const store_;
  BestConfigIndex* const index_;
  const std::function<int64_t()> now_unix_ms_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_BEST_TRANSFER_H_
