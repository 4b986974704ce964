// A compile-only worker across real processes, with no GPU: a coordinator
// that names the builder's principal (--artifact-builders), a real
// `tunefleet-worker --compile-only --backend cuda --target sm_90` compiling
// with NVRTC, and this test playing an H200 worker of another principal over
// WorkerService. The configs the coordinator proposes ahead are compiled by
// the builder; the GPU worker's lease then hands out exactly those, and
// every one's cubin is on the coordinator's shelf for it to fetch.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "bench/local_fleet.h"
#include "common/config_space.h"
#include "common/sha256.h"
#include "common/spec_loader.h"
#include "common/tuning_key.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"
#include "worker/cuda/nvrtc_compiler.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;

constexpr char kBuilder[] = "builder";

class CompileOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!worker::cuda::LoadNvrtc().ok()) GTEST_SKIP() << "no NVRTC here";
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    options.backend = "cuda";
    options.compile_threads = 2;
    options.coordinator_flags = {"--artifact-builders", absl::StrCat("host:", kBuilder)};
    options.worker_flags = {"--compile-only", "--target", "sm_90"};
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    channel_ = grpc::CreateChannel(fleet_->address(), grpc::InsecureChannelCredentials());
    workers_ = v1::WorkerService::NewStub(channel_);
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  // The artifacts the builder's principal has on the coordinator's shelf.
  int BuilderArtifacts() {
    const std::string shelf = absl::StrCat(dir_.path(), "/artifacts/",
                                           Sha256Hex(absl::StrCat("host:", kBuilder)).substr(0, 16));
    int count = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(shelf, error)) {
      count += entry.path().filename().string().size() == 64 ? 1 : 0;
    }
    return count;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
};

TEST_F(CompileOnlyTest, TheConfigsAGpuWorkerLeasesWereCompiledAheadForIt) {
  std::unique_ptr<worker::cuda::NvrtcCompiler> nvrtc = [&] {
    worker::cuda::NvrtcCompilerOptions options;
    options.cache_dir = dir_.path() + "/keys";
    return *worker::cuda::NvrtcCompiler::Create(options);
  }();

  // An H200 worker of principal host:gpu-a, with the builder's NVRTC.
  v1::Device device;
  device.set_id("GPU-0");
  device.set_model("NVIDIA H200 sm_90");
  device.set_backend(v1::BACKEND_CUDA);
  for (const auto& [name, value] : PlaceholderLimits(v1::BACKEND_CUDA)) {
    v1::DeviceLimit* limit = device.add_limits();
    limit->set_name(name);
    limit->set_value(value);
  }
  v1::RegisterWorkerRequest registration;
  registration.set_host("gpu-a");
  registration.set_toolkit(nvrtc->toolkit());
  registration.set_measurement_protocol(kMeasurementProtocolVersion);
  *registration.add_devices() = device;
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(workers_->RegisterWorker(Context().get(), registration, &registered).ok());
  const std::string gpu_worker = registered.worker_id();

  // A registration that mixes devices and a compile target is refused.
  registration.set_compile_target("sm_90");
  v1::RegisterWorkerResponse refused;
  EXPECT_EQ(workers_->RegisterWorker(Context().get(), registration, &refused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // A device worker asking for compile work is told it is not compile-only.
  v1::GetCompileWorkRequest ask;
  ask.set_worker_id(gpu_worker);
  v1::GetCompileWorkResponse none;
  EXPECT_EQ(workers_->GetCompileWork(Context().get(), ask, &none).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  absl::StatusOr<std::unique_ptr<Client>> client = ConnectPlaintext(*fleet_);
  ASSERT_OK(client);
  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/cuda/gemm_f16";
  request.shape = "M=1024,N=1024,K=1024";
  request.strategy = "random";
  request.budget = 6;
  absl::StatusOr<Job> job = (*client)->Submit(request);
  ASSERT_OK(job);

  // A compile-only worker of another arch gets none of the job; a target that is
  // no CUDA arch is refused.
  v1::RegisterWorkerRequest other;
  other.set_host("builder-80");
  other.set_toolkit(nvrtc->toolkit());
  other.set_compile_target("gfx90a");
  v1::RegisterWorkerResponse other_id;
  EXPECT_EQ(workers_->RegisterWorker(Context().get(), other, &other_id).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  other.set_compile_target("sm_80");
  ASSERT_TRUE(workers_->RegisterWorker(Context().get(), other, &other_id).ok());
  v1::GetCompileWorkRequest ask_80;
  ask_80.set_worker_id(other_id.worker_id());
  ask_80.set_max_configs(64);
  v1::GetCompileWorkResponse work_80;
  ASSERT_TRUE(workers_->GetCompileWork(Context().get(), ask_80, &work_80).ok());
  EXPECT_EQ(work_80.work_size(), 0);

  // The builder takes the 6 configs ahead of any lease (the reference is
  // cuBLAS: nothing to compile).
  ASSERT_OK(fleet_->StartWorker(kBuilder));
  // The GPU worker stays alive meanwhile (NVRTC on a loaded machine may take
  // longer than the coordinator waits for a silent worker).
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (BuilderArtifacts() < 6 && absl::Now() < deadline) {
    v1::HeartbeatRequest heartbeat;
    heartbeat.set_worker_id(gpu_worker);
    v1::HeartbeatResponse alive;
    EXPECT_TRUE(workers_->Heartbeat(Context().get(), heartbeat, &alive).ok());
    absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_GE(BuilderArtifacts(), 6) << "the compile-only worker shared too little";

  // The GPU worker's lease: the configs proposed ahead, each one's cubin
  // there for it (it is not the builder's principal).
  v1::LeaseWorkRequest lease_request;
  lease_request.set_worker_id(gpu_worker);
  lease_request.set_device_id("GPU-0");
  lease_request.set_max_trials(6);
  lease_request.set_wait_ms(5000);
  v1::LeaseWorkResponse leased;
  ASSERT_TRUE(workers_->LeaseWork(Context().get(), lease_request, &leased).ok());
  ASSERT_EQ(leased.lease().trials_size(), 6);
  std::vector<v1::SourceFile> sources(leased.lease().sources().begin(),
                                      leased.lease().sources().end());
  for (v1::SourceFile& source : sources) {
    v1::GetBlobRequest blob;
    blob.set_worker_id(gpu_worker);
    blob.set_digest(source.digest());
    v1::GetBlobResponse content;
    ASSERT_TRUE(workers_->GetBlob(Context().get(), blob, &content).ok());
    source.set_content(content.content());
  }
  const v1::KernelSpec& spec = leased.lease().kernel();
  absl::StatusOr<v1::Shape> shape = NormalizeShape(spec, leased.lease().shape());
  ASSERT_OK(shape);
  for (const v1::Trial& trial : leased.lease().trials()) {
    absl::StatusOr<v1::Config> config = NormalizeConfig(spec, trial.config());
    ASSERT_OK(config);
    std::optional<worker::ArtifactLocation> where =
        nvrtc->Locate(worker::CompileJob{&spec, &sources, *config, device, false, *shape});
    ASSERT_TRUE(where.has_value());
    v1::GetArtifactRequest get;
    get.set_worker_id(gpu_worker);
    get.set_key(where->key);
    v1::GetArtifactResponse artifact;
    grpc::Status fetched = workers_->GetArtifact(Context().get(), get, &artifact);
    EXPECT_TRUE(fetched.ok()) << fetched.error_message() << " for " << trial.config().DebugString();
    EXPECT_GT(artifact.artifact().content().size(), 1000u);
  }
}

}  // namespace
}  // namespace tunefleet::testing
