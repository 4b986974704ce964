// Hostile submissions over real gRPC on 127.0.0.1:0: each is refused at the
// coordinator with its canonical code naming the field, and the coordinator
// keeps serving.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "server/coordinator.h"
#include "tests/support/test_support.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::server {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::TempDir;

struct Case {
  std::string name;
  std::function<void(v1::JobSpec*)> edit;
  grpc::StatusCode code;
  std::string text;  // the message names the field
};

class HostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CoordinatorOptions options;
    options.listen = "127.0.0.1:0";
    options.data_dir = dir_.path();
    options.metrics_listen = "";
    options.jobs.max_tensor_bytes = int64_t{1} << 30;
    absl::StatusOr<std::unique_ptr<Coordinator>> coordinator = Coordinator::Start(options);
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(coordinator_->port()),
                                   grpc::InsecureChannelCredentials());
    tuning_ = v1::TuningService::NewStub(channel_);
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    *spec_.mutable_kernel() = bundle->spec;
    for (const auto& file : bundle->sources) *spec_.add_sources() = file;
    *spec_.mutable_shape() = *ParseShape("M=128,N=128,K=128");
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  grpc::Status Submit(const v1::JobSpec& spec) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    v1::SubmitJobResponse response;
    return tuning_->SubmitJob(Context().get(), request, &response);
  }

  void ExpectRefused(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      v1::JobSpec spec = spec_;
      c.edit(&spec);
      grpc::Status status = Submit(spec);
      EXPECT_EQ(status.error_code(), c.code) << c.name << ": " << status.error_message();
      EXPECT_THAT(status.error_message(), HasSubstr(c.text)) << c.name;
      ExpectServing();
    }
  }

  // The server still accepts the untouched job.
  void ExpectServing() {
    grpc::Status status = Submit(spec_);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }

  // A raw call of `method` with `bytes` as the request.
  grpc::Status RawCall(const std::string& method, const std::string& bytes) {
    grpc::GenericStub generic(channel_);
    auto context = Context();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::Status result;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    generic.UnaryCall(context.get(), method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status status) {
                        std::lock_guard<std::mutex> lock(mu);
                        result = status;
                        done = true;
                        cv.notify_one();
                      });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return result;
  }

  v1::TensorArg* Tensor(v1::JobSpec* spec, int arg) {
    return spec->mutable_kernel()->mutable_args(arg)->mutable_tensor();
  }

  TempDir dir_;
  std::unique_ptr<Coordinator> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TuningService::Stub> tuning_;
  v1::JobSpec spec_;
};

TEST_F(HostileInputTest, UnknownEnumValuesAreInvalidArgumentNamingTheField) {
  ExpectRefused({
      {"dtype 8", [&](auto* s) { Tensor(s, 0)->set_dtype(static_cast<v1::DType>(8)); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.args[0].tensor.dtype: unknown value 8"},
      {"role 9", [&](auto* s) { Tensor(s, 2)->set_role(static_cast<v1::Role>(9)); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.args[2].tensor.role"},
      {"init kind", [&](auto* s) {
         Tensor(s, 1)->mutable_init()->set_kind(static_cast<v1::Distribution::Kind>(-3));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.args[1].tensor.init.kind"},
      {"scalar dtype", [](auto* s) {
         s->mutable_kernel()->mutable_args(3)->mutable_scalar()->set_dtype(
             static_cast<v1::DType>(99));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.args[3].scalar.dtype"},
      {"backend", [](auto* s) { s->mutable_kernel()->set_backend(static_cast<v1::Backend>(7)); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.backend"},
      {"strategy", [](auto* s) { s->set_strategy("genetic; DROP TABLE"); },
       grpc::StatusCode::INVALID_ARGUMENT, "strategy"},
  });
}

TEST_F(HostileInputTest, UnsafeSourcePathsAreInvalidArgument) {
  auto rename = [](const std::string& path) {
    return [path](v1::JobSpec* s) {
      s->mutable_kernel()->set_sources(0, path);
      s->mutable_sources(0)->set_path(path);
    };
  };
  ExpectRefused({
      {"dot-dot", rename("../../../etc/passwd"), grpc::StatusCode::INVALID_ARGUMENT,
       "kernel.sources[0]: path has a \"..\" component"},
      {"inner dot-dot", rename("a/../../b.cc"), grpc::StatusCode::INVALID_ARGUMENT, "\"..\""},
      {"absolute", rename("/etc/passwd"), grpc::StatusCode::INVALID_ARGUMENT, "is absolute"},
      {"NUL", rename(std::string("a.cc\0b", 6)), grpc::StatusCode::INVALID_ARGUMENT,
       "control character"},
      {"newline", rename("a\n.cc"), grpc::StatusCode::INVALID_ARGUMENT, "control character"},
      {"empty", rename(""), grpc::StatusCode::INVALID_ARGUMENT, "is empty"},
      {"long", rename(std::string(300, 'a')), grpc::StatusCode::INVALID_ARGUMENT, "over 255"},
      {"carried file only", [](auto* s) { s->mutable_sources(0)->set_path("../x.cc"); },
       grpc::StatusCode::INVALID_ARGUMENT, "sources[0]"},
      {"twice", [](auto* s) { s->mutable_kernel()->add_sources("matmul.cc"); },
       grpc::StatusCode::INVALID_ARGUMENT, "given twice"},
      {"carried twice", [](auto* s) { *s->add_sources() = s->sources(0); },
       grpc::StatusCode::INVALID_ARGUMENT, "given twice"},
  });
}

TEST_F(HostileInputTest, TensorsThatOverflowOrExceedTheLimitAreRefused) {
  ExpectRefused({
      // The shape that made a worker spin: 10^20 elements.
      {"M^4", [&](auto* s) {
         for (int i = 0; i < 4; ++i) Tensor(s, 0)->add_shape("M");
         *s->mutable_shape() = *ParseShape("M=100000,N=128,K=128");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "tensor size overflows"},
      // 2^62 elements: the count fits 64 bits, the bytes do not.
      {"2^62 elements", [](auto* s) {
         *s->mutable_shape() = *ParseShape("M=2147483648,N=128,K=2147483648");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "tensor A: 4611686018427387904 elements"},
      // 3 x 16 GiB, over the 1 GiB of this coordinator.
      {"over the limit", [](auto* s) {
         *s->mutable_shape() = *ParseShape("M=65536,N=65536,K=65536");
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "over the limit of 1073741824"},
      {"absurd dim", [](auto* s) {
         *s->mutable_shape() = *ParseShape("M=4611686018427387904,N=1,K=1");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "shape dim M"},
  });
}

TEST_F(HostileInputTest, BadBudgetsAndTolerancesAreRefused) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto tolerance = [](auto* s) { return s->mutable_kernel()->mutable_tolerance(); };
  ExpectRefused({
      {"negative budget", [](auto* s) { s->set_strategy("random"), s->set_budget(-5); },
       grpc::StatusCode::INVALID_ARGUMENT, "budget: -5 is negative"},
      {"absurd budget", [](auto* s) { s->set_strategy("random"), s->set_budget(int64_t{1} << 60); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "budget"},
      {"NaN rtol switching the check off", [&](auto* s) {
         tolerance(s)->set_rtol(kNaN);
         tolerance(s)->set_max_mismatch_ratio(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.tolerance.rtol"},
      {"infinite atol", [&](auto* s) { tolerance(s)->set_atol(kInf); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.tolerance.atol"},
      {"negative atol", [&](auto* s) { tolerance(s)->set_atol(-1e-3); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.tolerance.atol"},
      {"ratio 1", [&](auto* s) { tolerance(s)->set_max_mismatch_ratio(1); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.tolerance.max_mismatch_ratio"},
      {"NaN ratio", [&](auto* s) { tolerance(s)->set_max_mismatch_ratio(kNaN); },
       grpc::StatusCode::INVALID_ARGUMENT, "kernel.tolerance.max_mismatch_ratio"},
  });
}

TEST_F(HostileInputTest, UndecodableRequestIsInvalidArgument) {
  // Field 1 (spec) as a length-delimited record longer than the message.
  const std::string truncated("\x0a\x7f\x01", 3);
  grpc::Status status = RawCall("/tunefleet.v1.TuningService/SubmitJob", truncated);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("cannot be decoded"));
  // A callback method, a server-streaming one and the worker service.
  for (const char* method : {"/tunefleet.v1.TuningService/GetBestConfig",
                             "/tunefleet.v1.TuningService/WatchJob",
                             "/tunefleet.v1.WorkerService/ReportResults",
                             "/tunefleet.v1.WorkerService/LeaseWork"}) {
    status = RawCall(method, truncated);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << method << ": " << status.error_message();
  }
  ExpectServing();
}

}  // namespace
}  // namespace tunefleet::server
