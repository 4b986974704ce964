// The coordinator over real gRPC on 127.0.0.1:0, with its SQLite store:
// bad input gets a canonical code naming the problem and the server keeps
// serving.
#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "common/subprocess.h"

#include "common/config_space.h"
#include "common/config_text.h"
#include "common/grpc_security.h"
#include "common/spec_loader.h"
#include "common/tuning_key.h"
#include "gtest/gtest.h"
#include "server/coordinator.h"
#include "server/store/store.h"
#include "tests/support/test_support.h"
#include "tunefleet/v1/admin_service.grpc.pb.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::TempDir;

class CoordinatorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartCoordinator();
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    *request_.mutable_spec()->mutable_kernel() = bundle->spec;
    for (const auto& file : bundle->sources) *request_.mutable_spec()->add_sources() = file;
    *request_.mutable_spec()->mutable_shape() = *ParseShape("M=128,N=128,K=128");
  }

  // A coordinator over the data in dir_ (again, after a Shutdown: a restart).
  void StartCoordinator() {
    CoordinatorOptions options;
    options.listen = "127.0.0.1:0";
    options.data_dir = dir_.path();
    options.max_message_bytes = 1 << 20;
    options.metrics_listen = "127.0.0.1:0";
    options.max_watches_per_principal = max_watches_per_principal_;
    options.forget_workers_after = forget_workers_after_;
    options.lease_threads = lease_threads_;
    absl::StatusOr<std::unique_ptr<Coordinator>> coordinator = Coordinator::Start(options);
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(coordinator_->port()),
                                   grpc::InsecureChannelCredentials());
    tuning_ = v1::TuningService::NewStub(channel_);
    workers_ = v1::WorkerService::NewStub(channel_);
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  grpc::Status Submit(const v1::SubmitJobRequest& request, v1::SubmitJobResponse* response) {
    return tuning_->SubmitJob(Context().get(), request, response);
  }

  // Registers a worker with one CPU device of `model`, as any program can;
  // returns its id.
  std::string Register(const std::string& host, const std::string& model = "test-cpu") {
    return Registered(host, model).worker_id();
  }
  // What the coordinator answers a worker of `host` registering.
  v1::RegisterWorkerResponse Registered(const std::string& host,
                                        const std::string& model = "test-cpu") {
    v1::RegisterWorkerRequest request;
    request.set_host(host);
    request.set_toolkit("g++ test");
    request.set_measurement_protocol(kMeasurementProtocolVersion);
    v1::Device* device = request.add_devices();
    device->set_id("cpu0");
    device->set_model(model);
    device->set_backend(v1::BACKEND_CPU);
    for (const auto& [name, value] : PlaceholderLimits(v1::BACKEND_CPU)) {
      v1::DeviceLimit* limit = device->add_limits();
      limit->set_name(name);
      limit->set_value(value);
    }
    v1::RegisterWorkerResponse response;
    EXPECT_TRUE(workers_->RegisterWorker(Context().get(), request, &response).ok());
    return response;
  }

  // The best row of `shape` on `model` with `toolkit`, keyed by `spec`'s code.
  static BestRecord BestRow(const v1::JobSpec& spec, const std::string& shape,
                            const std::string& config, const std::string& model = "test-cpu",
                            const std::string& toolkit = "gcc") {
    std::vector<v1::SourceFile> sources(spec.sources().begin(), spec.sources().end());
    BestRecord row;
    row.kernel_name = "matmul";
    row.shape = shape;
    row.device_model = model;
    row.toolkit = toolkit;
    row.tuning_key = ComputeTuningKey(
        {&spec.kernel(), &sources, *ParseShape(row.shape), row.device_model, row.toolkit});
    row.config = config;
    row.median_seconds = 0.25;
    return row;
  }

  int max_watches_per_principal_ = 64;
  absl::Duration forget_workers_after_ = absl::InfiniteDuration();
  int lease_threads_ = -1;  // CoordinatorOptions::lease_threads

  // Stores `rows` while the coordinator is down, then starts it again: it
  // serves them from its index after the restart.
  void StoreBestWhileDown(const std::vector<BestRecord>& rows) {
    coordinator_->Shutdown(absl::Seconds(1));
    coordinator_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store =
        OpenStore("sqlite://" + dir_.path() + "/tunefleet.db");
    ASSERT_OK(store);
    for (const BestRecord& row : rows) ASSERT_OK((*store)->UpsertBest(row));
    store->reset();
    StartCoordinator();
  }

  // The server still answers a plain call.
  void ExpectServing() {
    v1::ListJobsResponse jobs;
    EXPECT_TRUE(tuning_->ListJobs(Context().get(), v1::ListJobsRequest(), &jobs).ok());
  }

  TempDir dir_;
  std::unique_ptr<Coordinator> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TuningService::Stub> tuning_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
  v1::SubmitJobRequest request_;
};

TEST_F(CoordinatorServiceTest, AcceptsAJobAndListsIt) {
  v1::SubmitJobResponse response;
  ASSERT_TRUE(Submit(request_, &response).ok());
  EXPECT_EQ(response.job().state(), v1::JOB_STATE_QUEUED);
  v1::GetJobRequest get;
  get.set_job_id(response.job().id());
  v1::GetJobResponse got;
  ASSERT_TRUE(tuning_->GetJob(Context().get(), get, &got).ok());
  EXPECT_EQ(got.job().kernel_name(), "matmul");
  EXPECT_EQ(ShapeToString(got.job().shape()), "M=128,N=128,K=128");
}

TEST_F(CoordinatorServiceTest, BadSubmissionsAreInvalidArgumentNamingTheProblem) {
  struct Case {
    std::string name;
    std::function<void(v1::SubmitJobRequest*)> edit;
    grpc::StatusCode code;
    std::string text;
  };
  std::vector<Case> cases = {
      {"missing dim", [](auto* r) { r->mutable_spec()->mutable_shape()->mutable_dims()->RemoveLast(); },
       grpc::StatusCode::INVALID_ARGUMENT, "missing dim K"},
      {"zero dim", [](auto* r) { r->mutable_spec()->mutable_shape()->mutable_dims(0)->set_value(0); },
       grpc::StatusCode::INVALID_ARGUMENT, "M=0 must be positive"},
      {"negative dim", [](auto* r) { r->mutable_spec()->mutable_shape()->mutable_dims(1)->set_value(-5); },
       grpc::StatusCode::INVALID_ARGUMENT, "N=-5"},
      {"unknown name", [](auto* r) { r->mutable_spec()->mutable_kernel()->add_constraints()->set_expr("TILE > 2"); },
       grpc::StatusCode::INVALID_ARGUMENT, "TILE"},
      {"empty space", [](auto* r) { r->mutable_spec()->mutable_kernel()->add_constraints()->set_expr("BLOCK_M > 4096"); },
       grpc::StatusCode::INVALID_ARGUMENT, "empty"},
      {"unknown dtype", [](auto* r) { r->mutable_spec()->mutable_kernel()->mutable_args(0)->mutable_tensor()->set_dtype(v1::DTYPE_UNSPECIFIED); },
       grpc::StatusCode::INVALID_ARGUMENT, "no dtype"},
      {"no spec", [](auto* r) { r->clear_spec(); },
       grpc::StatusCode::INVALID_ARGUMENT, "spec is required"},
      {"space over cap", [](auto* r) {
         r->mutable_spec()->mutable_kernel()->clear_config_sets();
         for (int i = 0; i < 5; ++i) {
           auto* p = r->mutable_spec()->mutable_kernel()->add_params();
           p->set_name("EXTRA" + std::to_string(i));
           for (int v = 0; v < 40; ++v) p->add_values(v);
         }
         r->mutable_spec()->mutable_kernel()->set_default_config(
             r->spec().kernel().default_config() + ",EXTRA0=0,EXTRA1=0,EXTRA2=0,EXTRA3=0,EXTRA4=0");
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "over the cap"},
  };
  for (const Case& c : cases) {
    v1::SubmitJobRequest request = request_;
    c.edit(&request);
    v1::SubmitJobResponse response;
    grpc::Status status = Submit(request, &response);
    EXPECT_EQ(status.error_code(), c.code) << c.name << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr(c.text)) << c.name;
    ExpectServing();
  }
}

TEST_F(CoordinatorServiceTest, UnknownJobIsNotFound) {
  v1::GetJobRequest get;
  get.set_job_id("j-nope");
  v1::GetJobResponse got;
  EXPECT_EQ(tuning_->GetJob(Context().get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::CancelJobRequest cancel;
  cancel.set_job_id("j-nope");
  v1::CancelJobResponse cancelled;
  EXPECT_EQ(tuning_->CancelJob(Context().get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::WatchJobRequest watch;
  watch.set_job_id("j-nope");
  auto context = Context();
  auto reader = tuning_->WatchJob(context.get(), watch);
  v1::WatchJobEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  ExpectServing();
}

TEST_F(CoordinatorServiceTest, OversizedMessageIsResourceExhausted) {
  v1::SubmitJobRequest request = request_;
  request.mutable_spec()->mutable_sources(0)->mutable_content()->append(2 << 20, 'x');
  v1::SubmitJobResponse response;
  EXPECT_EQ(Submit(request, &response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ExpectServing();
}

TEST_F(CoordinatorServiceTest, BestConfigIsTheDefaultUntilTunedThenTheStoredRow) {
  v1::GetBestConfigRequest ask;
  v1::GetBestConfigResponse best;
  EXPECT_EQ(tuning_->GetBestConfig(Context().get(), ask, &best).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // no kernel name
  ask.set_kernel_name("matmul");
  *ask.mutable_shape() = *ParseShape("M=128,N=128,K=128");
  EXPECT_EQ(tuning_->GetBestConfig(Context().get(), ask, &best).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  ask.set_device_model("test-cpu");
  ask.set_toolkit("gcc");
  EXPECT_EQ(tuning_->GetBestConfig(Context().get(), ask, &best).error_code(),
            grpc::StatusCode::NOT_FOUND);  // no worker has the model yet
  Register("host-a");
  ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
  EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_DEFAULT);
  EXPECT_EQ(best.config_text(), request_.spec().kernel().default_config());
  EXPECT_EQ(best.device_model(), "test-cpu");

  // A row stored while the coordinator was down is served after a restart.
  BestRecord row = BestRow(request_.spec(), "M=128,N=128,K=128",
                           "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,UNROLL=4,LOOP_ORDER=0");
  row.job_id = submitted.job().id();
  StoreBestWhileDown({row});
  ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
  EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_EXACT);
  EXPECT_EQ(best.config_text(), "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,UNROLL=4,LOOP_ORDER=0");
  EXPECT_EQ(best.config().values_size(), 5);
  EXPECT_EQ(best.median_seconds(), 0.25);
  EXPECT_EQ(best.job_id(), submitted.job().id());
  EXPECT_EQ(ShapeToString(best.tuned_shape()), "M=128,N=128,K=128");
  EXPECT_EQ(best.toolkit(), "gcc");
  *ask.mutable_shape() = *ParseShape("M=256,N=128,K=128");
  ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
  EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE);
  ask.mutable_shape()->mutable_dims()->RemoveLast();
  EXPECT_EQ(tuning_->GetBestConfig(Context().get(), ask, &best).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Each read that names a kernel or device model, and a submit's target
// model: NOT_FOUND naming the field and listing what would match.
TEST_F(CoordinatorServiceTest, UnknownNamesAreNotFoundListingTheKnownOnes) {
  using ::testing::HasSubstr;
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());  // no device model named
  v1::SubmitJobRequest typo = request_;
  typo.mutable_spec()->set_device_model("test-cpx");
  grpc::Status refused = Submit(typo, &submitted);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("device_model \"test-cpx\" names no device model this coordinator "
                        "knows; it knows none yet"));
  Register("host-a");
  Register("host-b", "other-cpu");
  refused = Submit(typo, &submitted);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("known device models: \"other-cpu\", \"test-cpu\""));

  v1::GetBestConfigRequest ask;
  ask.set_kernel_name("matmull");
  *ask.mutable_shape() = request_.spec().shape();
  v1::GetBestConfigResponse best;
  grpc::Status status = tuning_->GetBestConfig(Context().get(), ask, &best);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(),
              HasSubstr("kernel_name \"matmull\" names no kernel this coordinator knows; "
                        "known kernels: \"matmul\""));
  ask.set_kernel_name("matmul");
  ask.set_device_model("test-cpx");
  status = tuning_->GetBestConfig(Context().get(), ask, &best);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("device_model \"test-cpx\""));
  EXPECT_THAT(status.error_message(), HasSubstr("\"test-cpu\""));
  ask.set_device_model("other-cpu");  // known, nothing tuned on it: the default
  ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
  EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_DEFAULT);

  v1::ListJobsRequest list;
  v1::ListJobsResponse jobs;
  list.set_kernel_name("matmull");
  status = tuning_->ListJobs(Context().get(), list, &jobs);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("known kernels: \"matmul\""));
  list.set_kernel_name("matmul");
  list.set_device_model("test-cpx");
  status = tuning_->ListJobs(Context().get(), list, &jobs);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("device_model \"test-cpx\""));
  list.set_device_model("test-cpu");  // the queued job was bound to both workers
  ASSERT_TRUE(tuning_->ListJobs(Context().get(), list, &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), 1);

  v1::ExportBestRequest exported;
  v1::ExportBestResponse table;
  exported.set_kernel_name("matmull");
  status = tuning_->ExportBest(Context().get(), exported, &table);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("known kernels: \"matmul\""));
  exported.set_kernel_name("matmul");
  exported.set_device_model("test-cpx");
  status = tuning_->ExportBest(Context().get(), exported, &table);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("device_model \"test-cpx\""));
  exported.set_device_model("test-cpu");
  EXPECT_TRUE(tuning_->ExportBest(Context().get(), exported, &table).ok());
  ExpectServing();
}

// A shape naming a dim the kernel lacks, or missing one, lists its dims.
TEST_F(CoordinatorServiceTest, AShapeWithAWrongDimListsTheKernelsDims) {
  using ::testing::HasSubstr;
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  v1::SubmitJobRequest extra = request_;
  *extra.mutable_spec()->mutable_shape() = *ParseShape("M=128,N=128,K=128,Q=4");
  grpc::Status status = Submit(extra, &submitted);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("shape names dim Q, which kernel matmul does not have (its dims: M, N, K)"));
  v1::GetBestConfigRequest ask;
  ask.set_kernel_name("matmul");
  *ask.mutable_shape() = *ParseShape("M=128,N=128");
  v1::GetBestConfigResponse best;
  status = tuning_->GetBestConfig(Context().get(), ask, &best);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("shape is missing dim K of kernel matmul (its dims: M, N, K)"));
}

// The rule for a submit whose device model no live worker has: known from a
// stored row (the fleet tuned on it before this process), it is accepted and
// waits for a worker of that model; one that registers runs it.
TEST_F(CoordinatorServiceTest, ASubmitForAModelSeenBeforeWaitsForItsWorkers) {
  BestRecord row = BestRow(request_.spec(), "M=64,N=64,K=64",
                           "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0",
                           /*model=*/"seen-cpu", /*toolkit=*/"g++ test");
  row.median_seconds = 0.5;
  row.job_id = "j-earlier";
  ASSERT_NO_FATAL_FAILURE(StoreBestWhileDown({row}));
  v1::SubmitJobRequest request = request_;
  request.mutable_spec()->set_device_model("seen-cpu");
  v1::SubmitJobResponse submitted;
  grpc::Status status = Submit(request, &submitted);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submitted.job().state(), v1::JOB_STATE_QUEUED);
  EXPECT_THAT(submitted.job().reason(), ::testing::HasSubstr("of model seen-cpu"));
  EXPECT_EQ(submitted.job().targets_size(), 0);

  Register("host-a", "seen-cpu");
  v1::GetJobRequest get;
  get.set_job_id(submitted.job().id());
  v1::GetJobResponse got;
  ASSERT_TRUE(tuning_->GetJob(Context().get(), get, &got).ok());
  ASSERT_EQ(got.job().targets_size(), 1);
  EXPECT_EQ(got.job().targets(0).device_model(), "seen-cpu");
}

// At M=N=K=64 the nearest tuned row's config (BLOCK_M=128,BLOCK_N=512) is
// one the spec forbids there.
TEST_F(CoordinatorServiceTest, BestConfigAtAnUntunedShapeIsValidThere) {
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  const std::string too_big = "BLOCK_M=128,BLOCK_N=512,BLOCK_K=128,UNROLL=4,LOOP_ORDER=0";
  const std::string fits = "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=4,LOOP_ORDER=0";
  StoreBestWhileDown({BestRow(request_.spec(), "M=512,N=512,K=512", too_big),
                      BestRow(request_.spec(), "M=1024,N=1024,K=1024", fits)});
  const v1::KernelSpec& spec = request_.spec().kernel();
  for (const char* device_model : {"test-cpu", ""}) {
    v1::GetBestConfigRequest ask;
    ask.set_kernel_name("matmul");
    *ask.mutable_shape() = *ParseShape("M=64,N=64,K=64");
    ask.set_device_model(device_model);
    v1::GetBestConfigResponse best;
    ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
    EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE);
    EXPECT_EQ(best.config_text(), fits);
    EXPECT_EQ(ShapeToString(best.tuned_shape()), "M=1024,N=1024,K=1024");
    // Valid at the asked shape by the spec's own space.
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
        ConfigSpace::Create(spec, ask.shape(), PlaceholderLimits(spec.backend()));
    ASSERT_OK(space);
    ASSERT_OK((*space)->Bind(*NormalizeConfig(spec, best.config())));
    EXPECT_OK((*space)->CheckConstraints());

    // Where no tuned row fits: the spec's default config.
    *ask.mutable_shape() = *ParseShape("M=64,N=64,K=32");
    ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
    EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_DEFAULT);
    EXPECT_EQ(best.config_text(), spec.default_config());
  }
}

// A constraint on a dim and a device limit is checked with the limits the
// model's workers reported once one registered, placeholders before.
TEST_F(CoordinatorServiceTest, NearestRowsAreCheckedWithTheRegisteredWorkersLimits) {
  request_.mutable_spec()->mutable_kernel()->add_constraints()->set_expr(
      "BLOCK_K * K * 4 <= l2_bytes");
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  StoreBestWhileDown(
      {BestRow(request_.spec(), "M=1024,N=1024,K=2048",
               "BLOCK_M=32,BLOCK_N=64,BLOCK_K=128,UNROLL=1,LOOP_ORDER=0"),
       BestRow(request_.spec(), "M=1024,N=1024,K=8192",
               "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0")});
  v1::GetBestConfigRequest ask;
  ask.set_kernel_name("matmul");
  *ask.mutable_shape() = *ParseShape("M=1024,N=1024,K=1024");
  ask.set_device_model("test-cpu");
  v1::GetBestConfigResponse best;
  ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
  EXPECT_EQ(ShapeToString(best.tuned_shape()), "M=1024,N=1024,K=2048");  // 2 MiB of L2

  v1::RegisterWorkerRequest worker;
  worker.set_host("small-l2");
  worker.set_toolkit("gcc");
  worker.set_measurement_protocol(kMeasurementProtocolVersion);
  v1::Device* device = worker.add_devices();
  device->set_id("cpu0");
  device->set_model("test-cpu");
  device->set_backend(v1::BACKEND_CPU);
  for (const auto& [name, value] : PlaceholderLimits(v1::BACKEND_CPU)) {
    v1::DeviceLimit* limit = device->add_limits();
    limit->set_name(name);
    limit->set_value(name == "l2_bytes" ? 256 * 1024 : value);
  }
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(workers_->RegisterWorker(Context().get(), worker, &registered).ok());
  ASSERT_TRUE(tuning_->GetBestConfig(Context().get(), ask, &best).ok());
  EXPECT_EQ(best.source(), v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE);
  // BLOCK_K=128 needs 512 KiB at K=1024.
  EXPECT_EQ(ShapeToString(best.tuned_shape()), "M=1024,N=1024,K=8192");
}

TEST_F(CoordinatorServiceTest, UnknownMethodIsUnimplemented) {
  grpc::GenericStub generic(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  grpc::Status result;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  generic.UnaryCall(&context, "/tunefleet.v1.TuningService/NoSuchMethod", grpc::StubOptions(),
                    &request, &response, [&](grpc::Status status) {
                      std::lock_guard<std::mutex> lock(mu);
                      result = status;
                      done = true;
                      cv.notify_one();
                    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  EXPECT_EQ(result.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  ExpectServing();
}

// A worker that measures under another measurement protocol would store
// results under keys whose protocol they do not follow (docs/measurement.md).
TEST_F(CoordinatorServiceTest, AWorkerOfAnotherMeasurementProtocolIsRefused) {
  v1::RegisterWorkerRequest request;
  request.set_host("old-release");
  request.set_toolkit("g++ test");
  v1::Device* device = request.add_devices();
  device->set_id("cpu0");
  device->set_model("test-cpu");
  device->set_backend(v1::BACKEND_CPU);
  v1::RegisterWorkerResponse response;
  for (int protocol : {0, kMeasurementProtocolVersion - 1, kMeasurementProtocolVersion + 1}) {
    request.set_measurement_protocol(protocol);
    grpc::Status status = workers_->RegisterWorker(Context().get(), request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << protocol;
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr("measurement protocol")) << protocol;
  }
  ExpectServing();
}

TEST_F(CoordinatorServiceTest, WorkerCallsCheckTheirInput) {
  v1::RegisterWorkerRequest empty;
  v1::RegisterWorkerResponse registered;
  EXPECT_EQ(workers_->RegisterWorker(Context().get(), empty, &registered).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::LeaseWorkRequest lease;
  lease.set_worker_id("w-unknown");
  v1::LeaseWorkResponse leased;
  EXPECT_EQ(workers_->LeaseWork(Context().get(), lease, &leased).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_worker_id("w-unknown");
  v1::HeartbeatResponse beat;
  ASSERT_TRUE(workers_->Heartbeat(Context().get(), heartbeat, &beat).ok());
  EXPECT_TRUE(beat.reregister());
  v1::GetBlobRequest blob;
  blob.set_digest("00");
  v1::GetBlobResponse content;
  EXPECT_EQ(workers_->GetBlob(Context().get(), blob, &content).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // no worker_id
  blob.set_worker_id("w-unknown");
  EXPECT_EQ(workers_->GetBlob(Context().get(), blob, &content).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);  // holds no lease
  ExpectServing();
}

TEST_F(CoordinatorServiceTest, OnePrincipalHoldsABoundedNumberOfWatchStreams) {
  coordinator_->Shutdown(absl::Seconds(1));
  coordinator_.reset();
  max_watches_per_principal_ = 2;
  StartCoordinator();
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  v1::WatchJobRequest watch;
  watch.set_job_id(submitted.job().id());
  struct Stream {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientReader<v1::WatchJobEvent>> reader;
  };
  auto open = [&] {
    Stream stream{Context(), nullptr};
    stream.reader = tuning_->WatchJob(stream.context.get(), watch);
    return stream;
  };
  std::vector<Stream> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(open());
    v1::WatchJobEvent event;
    ASSERT_TRUE(held.back().reader->Read(&event));  // the stream is open
  }
  Stream refused = open();
  v1::WatchJobEvent event;
  EXPECT_FALSE(refused.reader->Read(&event));
  grpc::Status status = refused.reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("--max-watches-per-principal"));
  // One closes: its slot serves the next.
  held[0].context->TryCancel();
  held[0].reader->Finish().IgnoreError();
  held.erase(held.begin());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  bool reopened = false;
  while (!reopened && absl::Now() < deadline) {
    Stream again = open();
    reopened = again.reader->Read(&event);
    if (reopened) {
      held.push_back(std::move(again));
    } else {
      again.reader->Finish().IgnoreError();
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  EXPECT_TRUE(reopened);
  for (Stream& stream : held) stream.context->TryCancel();
  for (Stream& stream : held) stream.reader->Finish().IgnoreError();
  ExpectServing();
}

TEST_F(CoordinatorServiceTest, WatchStreamsUntilTheJobEnds) {
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  v1::WatchJobRequest watch;
  watch.set_job_id(submitted.job().id());
  auto context = Context();
  auto reader = tuning_->WatchJob(context.get(), watch);
  v1::WatchJobEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.job().state(), v1::JOB_STATE_QUEUED);
  v1::CancelJobRequest cancel;
  cancel.set_job_id(submitted.job().id());
  v1::CancelJobResponse cancelled;
  ASSERT_TRUE(tuning_->CancelJob(Context().get(), cancel, &cancelled).ok());
  v1::JobState last = event.job().state();
  while (reader->Read(&event)) last = event.job().state();
  EXPECT_EQ(last, v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(reader->Finish().ok());
}

// A TCP connection to 127.0.0.1:`port`; -1 when refused.
int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A plain HTTP/1.0 GET on loopback; returns the body ("" when no answer
// came within 15 s).
std::string HttpGet(int port, const std::string& path) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  const timeval patience{15, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// Opens a connection to the metrics port and sends half a request.
int HalfOpenHttp(int port) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return -1;
  const std::string partial = "GET /metrics HTTP/1.1\r\nHost: local";
  (void)!write(fd, partial.data(), partial.size());
  return fd;
}

TEST_F(CoordinatorServiceTest, IdleMetricsConnectionsDoNotBlindTheScrape) {
  const int port = coordinator_->metrics_port();
  std::vector<int> idle;
  for (int i = 0; i < 12; ++i) idle.push_back(HalfOpenHttp(port));
  // More idle connections than the endpoint has threads: each is closed
  // after the request timeout, and the scrape is answered (with civetweb's
  // defaults, two threads held 30 s by each idle connection, it is not).
  const std::string text = HttpGet(port, "/metrics");
  EXPECT_THAT(text, ::testing::HasSubstr("tunefleet_coordinator_"));
  for (int fd : idle) {
    if (fd >= 0) close(fd);
  }
}

TEST_F(CoordinatorServiceTest, MetricsAreValidPrometheusTextWithoutDuplicateSeries) {
  v1::SubmitJobResponse response;
  ASSERT_TRUE(Submit(request_, &response).ok());
  v1::SubmitJobRequest bad = request_;
  bad.mutable_spec()->clear_shape();
  EXPECT_FALSE(Submit(bad, &response).ok());
  ASSERT_NE(coordinator_->metrics_port(), 0);
  const std::string text = HttpGet(coordinator_->metrics_port(), "/metrics");
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "tunefleet_coordinator_jobs_submitted_total{result=\"accepted\"} 1"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "tunefleet_coordinator_jobs_submitted_total{result=\"rejected\"} 1"));
  EXPECT_THAT(text, ::testing::HasSubstr("tunefleet_coordinator_jobs{state=\"queued\"} 1"));
  EXPECT_THAT(text, ::testing::HasSubstr("tunefleet_coordinator_best_speedup_ratio_bucket{le=\"+Inf\"}"));
  // promtool misses duplicate series and families split in two: check here.
  std::set<std::string> series;
  std::set<std::string> families;
  std::string last_family;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    if (absl::StartsWith(line, "# TYPE ")) {
      std::string family(std::vector<absl::string_view>(absl::StrSplit(line, ' '))[2]);
      EXPECT_TRUE(families.insert(family).second) << "family split: " << family;
      continue;
    }
    if (line[0] == '#') continue;
    std::string name_and_labels(line.substr(0, line.rfind(' ')));
    EXPECT_TRUE(series.insert(name_and_labels).second) << "duplicate series: " << line;
  }
  TempDir dir;
  std::ofstream(dir.path() + "/metrics.txt") << text;
  SubprocessOptions promtool;
  promtool.argv = {"sh", "-c", "promtool check metrics < " + dir.path() + "/metrics.txt"};
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Start(promtool);
  ASSERT_OK(process);
  absl::StatusOr<ExitInfo> exit = (*process)->Wait(absl::Seconds(30));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << "promtool check metrics: " << exit->ToString()
                               << " (install the Debian package prometheus)";
}

// A coordinator with TLS (a development CA made by scripts/dev-ca.sh): a
// call without credentials never reaches its handler, and is counted.
TEST(SecureCoordinatorTest, RefusesAndCountsACallWithoutCredentials) {
  TempDir dir;
  const std::string ca = dir.path() + "/ca";
  SubprocessOptions make;
  make.argv = {SourceDir() + "/scripts/dev-ca.sh", ca, "coordinator"};
  absl::StatusOr<std::unique_ptr<Subprocess>> made = Subprocess::Start(make);
  ASSERT_TRUE(made.ok()) << made.status();
  absl::StatusOr<ExitInfo> exit = (*made)->Wait(absl::Seconds(30));
  ASSERT_TRUE(exit.ok() && exit->success());
  CoordinatorOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = dir.path();
  options.metrics_listen = "127.0.0.1:0";
  options.tls = ServerTls{ca + "/coordinator.crt", ca + "/coordinator.key", ca + "/ca.crt"};
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator = Coordinator::Start(options);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  ChannelSecurity security;
  security.ca_file = ca + "/ca.crt";
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(security);
  ASSERT_TRUE(credentials.ok());
  auto stub = v1::TuningService::NewStub(grpc::CreateChannel(
      "localhost:" + std::to_string((*coordinator)->port()), *credentials));
  grpc::ClientContext context;
  v1::ListJobsResponse response;
  grpc::Status status = stub->ListJobs(&context, v1::ListJobsRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  const std::string text = HttpGet((*coordinator)->metrics_port(), "/metrics");
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "tunefleet_coordinator_calls_refused_total{code=\"UNAUTHENTICATED\"} 1"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "tunefleet_coordinator_calls_refused_total{code=\"PERMISSION_DENIED\"} 0"));
}

}  // namespace
}  // namespace tunefleet::server

namespace tunefleet::server {
namespace {

// A worker speaking WorkerService directly, as any program can.
class LeaseLimitsTest : public CoordinatorServiceTest {
 protected:
  // One device holds at most two leases of at most max_batch_size trials
  // each; a third is ResourceExhausted, and the server serves on.
  void ExpectCapped();

  grpc::Status Lease(const std::string& worker, int max_trials, v1::LeaseWorkResponse* response) {
    v1::LeaseWorkRequest request;
    request.set_worker_id(worker);
    request.set_max_trials(max_trials);
    request.set_wait_ms(2000);
    return workers_->LeaseWork(Context().get(), request, response);
  }

  grpc::Status Blob(const std::string& worker, const std::string& digest) {
    v1::GetBlobRequest request;
    request.set_worker_id(worker);
    request.set_digest(digest);
    v1::GetBlobResponse response;
    return workers_->GetBlob(Context().get(), request, &response);
  }
};

TEST_F(LeaseLimitsTest, ArtifactsAreCheckedAndServedOnlyToTheirPrincipal) {
  const std::string key(64, 'a');
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  std::string job_id = submitted.job().id();
  v1::Config config;  // of the trial leased below
  auto put = [&](const std::string& worker, const std::string& k, const std::string& content) {
    v1::PutArtifactRequest request;
    request.set_worker_id(worker);
    request.set_key(k);
    request.mutable_artifact()->set_content(content);
    request.set_job_id(job_id);
    *request.mutable_config() = config;
    v1::PutArtifactResponse response;
    return workers_->PutArtifact(Context().get(), request, &response);
  };
  auto get = [&](const std::string& worker, const std::string& k, v1::Artifact* artifact) {
    v1::GetArtifactRequest request;
    request.set_worker_id(worker);
    request.set_key(k);
    v1::GetArtifactResponse response;
    grpc::Status status = workers_->GetArtifact(Context().get(), request, &response);
    *artifact = response.artifact();
    return status;
  };
  v1::Artifact artifact;
  EXPECT_EQ(get("", key, &artifact).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(get("w-unknown", key, &artifact).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(put("w-unknown", key, "cubin").error_code(), grpc::StatusCode::NOT_FOUND);

  const std::string alice = Register("alice");
  const std::string alice_again = Register("alice");  // another process, the same principal
  const std::string bob = Register("bob");
  EXPECT_EQ(put(alice, "../../x", "cubin").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(put(alice, key, "").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(get(alice, key, &artifact).error_code(), grpc::StatusCode::NOT_FOUND);
  // Only for leased work: Alice holds no lease yet.
  grpc::Status unleased = put(alice, key, "cubin");
  EXPECT_EQ(unleased.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(unleased.error_message().find("leased work"), std::string::npos)
      << unleased.error_message();
  v1::LeaseWorkResponse leased;
  ASSERT_TRUE(Lease(alice, 1, &leased).ok());
  ASSERT_EQ(leased.lease().trials_size(), 1);
  config = leased.lease().trials(0).config();
  ASSERT_TRUE(put(alice, key, "cubin").ok());
  ASSERT_TRUE(get(alice_again, key, &artifact).ok());
  EXPECT_EQ(artifact.content(), "cubin");
  EXPECT_EQ(get(bob, key, &artifact).error_code(), grpc::StatusCode::NOT_FOUND);
  // Bob leased nothing; Alice's lease carries no other config, no other job.
  EXPECT_EQ(put(bob, key, "cubin").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  job_id = "j-unknown";
  EXPECT_EQ(put(alice, key, "cubin").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  job_id = "";
  EXPECT_EQ(put(alice, key, "cubin").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  job_id = submitted.job().id();
  for (v1::ParamValue& value : *config.mutable_values()) value.set_value(value.value() * 1000 + 7);
  EXPECT_EQ(put(alice, key, "cubin").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  config = leased.lease().trials(0).config();
  // Another publish of the key with other bytes: a conflict, and the key is
  // served no more.
  EXPECT_EQ(put(alice, key, "other bytes").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(get(alice, key, &artifact).error_code(), grpc::StatusCode::NOT_FOUND);
  // Every worker of the principal hears of it, to build its fetched copy again.
  auto unshared = [&](const std::string& worker) {
    v1::HeartbeatRequest heartbeat;
    heartbeat.set_worker_id(worker);
    v1::HeartbeatResponse beat;
    EXPECT_TRUE(workers_->Heartbeat(Context().get(), heartbeat, &beat).ok());
    return std::vector<std::string>(beat.unshared_artifacts().begin(),
                                    beat.unshared_artifacts().end());
  };
  EXPECT_EQ(unshared(alice_again), std::vector<std::string>{key});
  EXPECT_TRUE(unshared(bob).empty());
  const v1::RegisterWorkerResponse restarted = Registered("alice");  // before its first lease
  EXPECT_EQ(std::vector<std::string>(restarted.unshared_artifacts().begin(),
                                     restarted.unshared_artifacts().end()),
            std::vector<std::string>{key});
  EXPECT_THAT(HttpGet(coordinator_->metrics_port(), "/metrics"),
              ::testing::HasSubstr("tunefleet_coordinator_artifact_conflicts_total 1"));
  ExpectServing();
}

TEST_F(LeaseLimitsTest, InvalidatingAForgottenWorkerDropsWhatItsPrincipalShared) {
  coordinator_->Shutdown(absl::Seconds(1));
  coordinator_.reset();
  forget_workers_after_ = absl::Milliseconds(300);
  StartCoordinator();
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  const std::string alice = Register("alice");
  v1::LeaseWorkResponse leased;
  ASSERT_TRUE(Lease(alice, 1, &leased).ok());
  ASSERT_EQ(leased.lease().trials_size(), 1);
  v1::PutArtifactRequest put;
  put.set_worker_id(alice);
  put.set_key(std::string(64, 'b'));
  put.mutable_artifact()->set_content("cubin");
  put.set_job_id(submitted.job().id());
  *put.mutable_config() = leased.lease().trials(0).config();
  v1::PutArtifactResponse put_response;
  ASSERT_TRUE(workers_->PutArtifact(Context().get(), put, &put_response).ok());
  v1::ReportResultsRequest report;
  report.set_worker_id(alice);
  report.set_lease_id(leased.lease().lease_id());
  report.set_epoch(leased.lease().epoch());
  v1::ReportedTrial* trial = report.add_trials();
  trial->set_index(leased.lease().trials(0).index());
  trial->mutable_result()->set_status(v1::TRIAL_STATUS_OK);
  trial->mutable_result()->set_device_id("cpu0");
  v1::Measurement* measured = trial->mutable_result()->mutable_measurement();
  measured->set_median_seconds(1e-3);
  measured->set_p20_seconds(0.98e-3);
  measured->set_p80_seconds(1.02e-3);
  measured->set_samples(10);
  v1::ReportResultsResponse reported;
  ASSERT_TRUE(workers_->ReportResults(Context().get(), report, &reported).ok());
  ASSERT_FALSE(reported.cancelled());
  // Alice falls silent, and the registry forgets her worker id.
  const auto known = [&] {
    v1::ListWorkersResponse listed;
    EXPECT_TRUE(tuning_->ListWorkers(Context().get(), v1::ListWorkersRequest(), &listed).ok());
    return !listed.workers().empty();
  };
  for (int i = 0; i < 100 && known(); ++i) absl::SleepFor(absl::Milliseconds(50));
  ASSERT_FALSE(known());
  // Invalidating that id finds her principal in the rows it excludes.
  auto admin = v1::AdminService::NewStub(channel_);
  v1::InvalidateTrialsRequest invalidate;
  invalidate.set_worker(alice);
  v1::InvalidateTrialsResponse invalidated;
  ASSERT_TRUE(admin->InvalidateTrials(Context().get(), invalidate, &invalidated).ok());
  EXPECT_EQ(invalidated.trials_excluded(), 1);
  EXPECT_EQ(invalidated.artifacts_dropped(), 1);
  ExpectServing();
}

void LeaseLimitsTest::ExpectCapped() {
  const std::string rogue = Register("rogue.example");
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());

  v1::LeaseWorkResponse first, second, third;
  ASSERT_TRUE(Lease(rogue, 1000, &first).ok());
  ASSERT_TRUE(first.has_lease());
  EXPECT_LE(first.lease().trials_size(), JobManagerOptions().max_batch_size);
  ASSERT_TRUE(Lease(rogue, 1000, &second).ok());
  grpc::Status refused = Lease(rogue, 1000, &third);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("leases already"), std::string::npos)
      << refused.error_message();
  ExpectServing();
}

TEST_F(LeaseLimitsTest, LeaseWorkCapsTrialsAndOutstandingLeasesPerDevice) { ExpectCapped(); }

TEST_F(LeaseLimitsTest, LeaseWorkTriedOnGrpcsThreadsCapsTheSame) {
  coordinator_->Shutdown(absl::Seconds(1));
  coordinator_.reset();
  lease_threads_ = 0;  // no lease pool, as on one CPU
  StartCoordinator();
  ExpectCapped();
}

TEST_F(LeaseLimitsTest, GetBlobServesOnlySourcesOfTheCallersLeases) {
  const std::string holder = Register("a.example");
  const std::string other = Register("b.example");
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(request_, &submitted).ok());
  v1::LeaseWorkResponse leased;
  ASSERT_TRUE(Lease(holder, 1, &leased).ok());
  ASSERT_TRUE(leased.has_lease());
  ASSERT_GT(leased.lease().sources_size(), 0);
  const std::string digest = leased.lease().sources(0).digest();

  EXPECT_TRUE(Blob(holder, digest).ok());
  grpc::Status denied = Blob(other, digest);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find("leased work"), std::string::npos)
      << denied.error_message();
  EXPECT_EQ(Blob(holder, std::string(64, '0')).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ExpectServing();
}

}  // namespace
}  // namespace tunefleet::server

namespace tunefleet::server {
namespace {

TEST_F(CoordinatorServiceTest, AdminCallsCheckTheirInputAndInvalidateNothingUnmatched) {
  auto admin = v1::AdminService::NewStub(channel_);
  v1::InvalidateTrialsResponse invalidated;
  grpc::Status empty =
      admin->InvalidateTrials(Context().get(), v1::InvalidateTrialsRequest(), &invalidated);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::InvalidateTrialsRequest nobody;
  nobody.set_worker("host:nobody");
  ASSERT_TRUE(admin->InvalidateTrials(Context().get(), nobody, &invalidated).ok());
  EXPECT_EQ(invalidated.trials_excluded(), 0);
  EXPECT_EQ(invalidated.keys_changed(), 0);
  v1::ReleaseWorkerResponse released;
  EXPECT_EQ(admin->ReleaseWorker(Context().get(), v1::ReleaseWorkerRequest(), &released)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::ReleaseWorkerRequest release;
  release.set_principal("host:nobody");
  ASSERT_TRUE(admin->ReleaseWorker(Context().get(), release, &released).ok());
  EXPECT_FALSE(released.released());
  ExpectServing();
}

}  // namespace
}  // namespace tunefleet::server
