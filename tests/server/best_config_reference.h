// The reference answer to "what is my best config?": a linear scan of the
// kernel's stored best rows that recomputes every row's tuning key. The
// BestConfigIndex must answer exactly as it does.
#ifndef TUNEFLEET_TESTS_SERVER_BEST_CONFIG_REFERENCE_H_
#define TUNEFLEET_TESTS_SERVER_BEST_CONFIG_REFERENCE_H_

#include "absl/status/statusor.h"
#include "server/best_config_index.h"
#include "server/store/store.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// `latest` is the newest submitted job of the kernel (its spec and sources
// give the code digest and the default config). Only stored rows whose key
// matches the current code and measurement protocol count: the exact shape
// (first in key order), else the nearest whose config is valid at the asked
// shape (every constraint of a ConfigSpace compiled at that shape with
// placeholder limits holds; ties in key order: for matmul, whose
// constraints on device limits alone hold for every config with placeholder
// limits, the rule ConfigFit states otherwise), else the default config.
// InvalidArgument for a bad shape.
absl::StatusOr<BestConfigAnswer> ReferenceBestConfig(
    Store* store, const v1::JobSpec& latest,
    const v1::GetBestConfigRequest& request);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_TESTS_SERVER_BEST_CONFIG_REFERENCE_H_
