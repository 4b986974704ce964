#include "common/grpc_status.h"

#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/public_status.h"

namespace tunefleet {

// Both enumerations are the canonical codes with the same numbers (0..16).
// A client gets the public message; what it hides goes to the log (stderr).
grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::string message = PublicMessage(status);
  if (message != status.message()) {
    std::cerr << "tunefleet: answered \"" << message << "\" for: " << status << std::endl;
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::move(message));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

grpc::Status MissingField(const char* field) {
  return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(field, " is required")));
}

}  // namespace tunefleet
