// Answers "what is my best config?": the exact tuning key, else the nearest
// tuned shape of the same kernel on the same device model and toolkit, else
// the spec's default config.
#ifndef TUNEFLEET_SERVER_BEST_CONFIG_H_
#define TUNEFLEET_SERVER_BEST_CONFIG_H_

#include "absl/status/statusor.h"
#include "server/store/store.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// `latest` is the newest submitted job of the kernel (its spec and sources
// give the code digest and the default config). Only stored rows whose key
// matches the current code and measurement protocol count. InvalidArgument
// for a bad shape.
absl::StatusOr<v1::GetBestConfigResponse> ResolveBestConfig(
    Store* store, const v1::JobSpec& latest,
    const v1::GetBestConfigRequest& request);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_BEST_CONFIG_H_
