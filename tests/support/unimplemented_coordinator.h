// A worker::Coordinator whose every call is UNIMPLEMENTED: a test's fake
// derives from it and overrides only the calls it plays.
#ifndef TUNEFLEET_TESTS_SUPPORT_UNIMPLEMENTED_COORDINATOR_H_
#define TUNEFLEET_TESTS_SUPPORT_UNIMPLEMENTED_COORDINATOR_H_

#include <string>

#include "absl/status/status.h"
#include "worker/coordinator.h"

namespace tunefleet::testing {

class UnimplementedCoordinator : public worker::Coordinator {
 public:
  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest&) override {
    return Unimplemented();
  }
  absl::StatusOr<v1::LeaseWorkResponse> LeaseWork(const v1::LeaseWorkRequest&) override {
    return Unimplemented();
  }
  absl::StatusOr<v1::ReportResultsResponse> ReportResults(
      const v1::ReportResultsRequest&) override {
    return Unimplemented();
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest&) override {
    return Unimplemented();
  }
  absl::StatusOr<std::string> GetBlob(const std::string&) override { return Unimplemented(); }
  absl::StatusOr<v1::Artifact> GetArtifact(const std::string&) override {
    return Unimplemented();
  }
  absl::Status PutArtifact(const v1::PutArtifactRequest&) override { return Unimplemented(); }
  absl::StatusOr<v1::GetCompileWorkResponse> GetCompileWork(
      const v1::GetCompileWorkRequest&) override {
    return Unimplemented();
  }
  void InterruptLeaseWaits() override {}

 private:
  static absl::Status Unimplemented() {
    return absl::UnimplementedError("not played by this fake coordinator");
  }
};

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_SUPPORT_UNIMPLEMENTED_COORDINATOR_H_
