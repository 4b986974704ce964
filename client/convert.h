// Conversions between the public client structs and the tunefleet.v1 protos.
// Private to the client library.
#ifndef TUNEFLEET_CLIENT_CONVERT_H_
#define TUNEFLEET_CLIENT_CONVERT_H_

#include "absl/status/statusor.h"
#include "common/spec_loader.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::client_internal {

// "OK", "COMPILE_ERROR", ...: the enum name without its TRIAL_STATUS_ prefix.
std::string TrialStatusName(v1::TrialStatus status);

// The enum of a name TrialStatusName gives; INVALID_ARGUMENT for another.
absl::StatusOr<v1::TrialStatus> TrialStatusFromName(const std::string& name);
v1::JobState JobStateToProto(JobState state);

Job JobFromProto(const v1::Job& job);
Trial TrialFromProto(const v1::TrialRecord& trial);
KernelProfile ProfileFromProto(const v1::KernelProfile& profile);
BestConfig BestConfigFromProto(const v1::GetBestConfigResponse& response);
// Fills `best`'s tie set and measurement counts from `evidence`.
void SetEvidence(const v1::BestEvidence& evidence, BestConfig* best);
WorkerInfo WorkerFromProto(const v1::WorkerInfo& worker);

// The shape of `request`: its text, else its map. INVALID_ARGUMENT when the
// text does not parse or both are empty.
absl::StatusOr<v1::Shape> ShapeFromRequest(const SubmitRequest& request);

// The job spec for `request` with the kernel already loaded from its
// directory. INVALID_ARGUMENT when the shape does not fit the kernel.
absl::StatusOr<v1::JobSpec> JobSpecFromRequest(const SubmitRequest& request,
                                               KernelBundle bundle);

}  // namespace tunefleet::client_internal

#endif  // TUNEFLEET_CLIENT_CONVERT_H_
