// Conversion between absl::Status and grpc::Status, one canonical code to the
// same code. Nothing else in tunefleet converts statuses. What a server sends
// carries PublicMessage (common/public_status.h): store details and internal
// errors are logged to stderr, never sent.
#ifndef TUNEFLEET_COMMON_GRPC_STATUS_H_
#define TUNEFLEET_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace tunefleet {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// INVALID_ARGUMENT "<field> is required": a request without a field the
// method needs.
grpc::Status MissingField(const char* field);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_GRPC_STATUS_H_
