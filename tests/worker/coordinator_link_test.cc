// The worker's gRPC link against a fake WorkerService on 127.0.0.1:0.
#include "worker/coordinator_link.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::testing::StatusIs;

class FakeWorkerService final : public v1::WorkerService::Service {
 public:
  grpc::Status RegisterWorker(grpc::ServerContext*, const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override {
    if (request->host().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "host is empty");
    }
    response->set_worker_id("w-" + request->host());
    return grpc::Status::OK;
  }
  // Holds the long poll until the client gives up or the wait ends.
  grpc::Status LeaseWork(grpc::ServerContext* context, const v1::LeaseWorkRequest* request,
                         v1::LeaseWorkResponse*) override {
    const absl::Time end = absl::Now() + absl::Milliseconds(request->wait_ms());
    while (absl::Now() < end && !context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
    return grpc::Status::OK;
  }
  grpc::Status GetBlob(grpc::ServerContext*, const v1::GetBlobRequest* request,
                       v1::GetBlobResponse* response) override {
    if (request->digest() != "abc") return grpc::Status(grpc::StatusCode::NOT_FOUND, "no blob");
    response->set_content("blob bytes");
    return grpc::Status::OK;
  }
};

class CoordinatorLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    CoordinatorLinkOptions options;
    options.security.insecure = true;
    absl::StatusOr<std::unique_ptr<Coordinator>> link =
        CreateGrpcCoordinator(absl::StrCat("127.0.0.1:", port), options);
    ASSERT_TRUE(link.ok()) << link.status();
    link_ = *std::move(link);
  }
  void TearDown() override { server_->Shutdown(absl::ToChronoTime(absl::Now())); }

  FakeWorkerService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Coordinator> link_;
};

TEST_F(CoordinatorLinkTest, CallsAndConvertsStatuses) {
  v1::RegisterWorkerRequest request;
  request.set_host("h1");
  absl::StatusOr<v1::RegisterWorkerResponse> response = link_->RegisterWorker(request);
  ASSERT_OK(response);
  EXPECT_EQ(response->worker_id(), "w-h1");
  EXPECT_THAT(link_->RegisterWorker(v1::RegisterWorkerRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<std::string> blob = link_->GetBlob("abc");
  ASSERT_OK(blob);
  EXPECT_EQ(*blob, "blob bytes");
  EXPECT_THAT(link_->GetBlob("zzz"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(CoordinatorLinkTest, InterruptEndsALongPollAtOnce) {
  v1::LeaseWorkRequest request;
  request.set_wait_ms(30000);
  absl::StatusOr<v1::LeaseWorkResponse> response;
  const absl::Time start = absl::Now();
  std::thread poll([&] { response = link_->LeaseWork(request); });
  absl::SleepFor(absl::Milliseconds(200));
  link_->InterruptLeaseWaits();
  poll.join();
  EXPECT_THAT(response, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Later polls return at once.
  EXPECT_THAT(link_->LeaseWork(request), StatusIs(absl::StatusCode::kCancelled));
}

TEST(CoordinatorLinkUnreachableTest, IsUnavailable) {
  CoordinatorLinkOptions options;
  options.call_timeout = absl::Seconds(2);
  options.security.insecure = true;
  absl::StatusOr<std::unique_ptr<Coordinator>> link = CreateGrpcCoordinator("127.0.0.1:1", options);
  ASSERT_TRUE(link.ok()) << link.status();
  v1::HeartbeatRequest request;
  EXPECT_THAT((*link)->Heartbeat(request), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(CoordinatorLinkUnreachableTest, UnreadableCertificateIsNotFound) {
  CoordinatorLinkOptions options;
  options.security.cert_file = "/nonexistent/worker.crt";
  options.security.key_file = "/nonexistent/worker.key";
  EXPECT_THAT(CreateGrpcCoordinator("127.0.0.1:1", options).status(),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace tunefleet::worker
