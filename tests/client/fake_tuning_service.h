// A scripted TuningService for the client's service tests, served over real
// gRPC on 127.0.0.1:0. Jobs answer from a table; a few ids behave specially.
#ifndef TUNEFLEET_TESTS_CLIENT_FAKE_TUNING_SERVICE_H_
#define TUNEFLEET_TESTS_CLIENT_FAKE_TUNING_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::testing {

// Job ids with special behaviour:
inline constexpr char kSlowJob[] = "slow";  // GetJob waits for the deadline
inline constexpr char kEndlessJob[] = "endless";  // WatchJob never finishes
// Unknown ids are NOT_FOUND. A job's watch stream is its `updates`, then
// nothing more (so a script that ends unfinished breaks the stream).
//
// Thread-safety: safe; gRPC calls the handlers on its own threads.
class FakeTuningService final : public v1::TuningService::Service {
 public:
  void AddJob(const std::string& id, std::vector<v1::Job> updates);
  std::optional<v1::SubmitJobRequest> last_submit() const;
  void set_best(v1::GetBestConfigResponse best);

  grpc::Status SubmitJob(grpc::ServerContext*,
                         const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const v1::GetJobRequest* request,
                      v1::GetJobResponse* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context,
                        const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::WatchJobEvent>* writer) override;
  grpc::Status CancelJob(grpc::ServerContext*,
                         const v1::CancelJobRequest* request,
                         v1::CancelJobResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext*,
                        const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status GetBestConfig(grpc::ServerContext*,
                             const v1::GetBestConfigRequest* request,
                             v1::GetBestConfigResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                           v1::ListWorkersResponse* response) override;

 private:
  std::optional<std::vector<v1::Job>> Updates(const std::string& id) const;

  mutable absl::Mutex mu_;
  std::map<std::string, std::vector<v1::Job>> jobs_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::SubmitJobRequest> last_submit_ ABSL_GUARDED_BY(mu_);
  v1::GetBestConfigResponse best_ ABSL_GUARDED_BY(mu_);
};

// A job in `state` with `done` of `total` trials.
v1::Job MakeJob(const std::string& id, v1::JobState state, int64_t done,
                int64_t total);

// Serves `service` on 127.0.0.1 at a port of the system's choosing.
class FakeServer {
 public:
  explicit FakeServer(FakeTuningService* service);
  ~FakeServer();
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_CLIENT_FAKE_TUNING_SERVICE_H_
