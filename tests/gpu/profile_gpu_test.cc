// GPU tier: `ProfileJob` with the real Nsight Compute. A loopback fleet (a
// coordinator with SQLite and a --backend cuda worker) tunes a few configs of
// the CUDA gemm, then profiles its fastest config under ncu; the metrics
// must be plausible. Skips where there is no GPU or no ncu; where ncu cannot
// read the counters (ERR_NVGPUCTRPERM) the profile must say so instead.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "bench/local_fleet.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"
#include "worker/cuda/cuda_devices.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;

bool HaveGpu() {
  absl::StatusOr<std::vector<v1::Device>> devices = worker::cuda::ListCudaDevices();
  return devices.ok() && !devices->empty();
}

std::string Ncu() {
  absl::StatusOr<std::string> ncu = FindProgram("ncu");
  if (!ncu.ok()) ncu = FindProgram("/usr/local/cuda/bin/ncu");
  return ncu.ok() ? *ncu : "";
}

// The worker's sandbox: none, and bubblewrap (ncu then runs inside it).
class ProfileGpuTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ProfileGpuTest, TheFastestGemmConfigsProfileHasPlausibleMetrics) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU here";
  const std::string ncu = Ncu();
  if (ncu.empty()) GTEST_SKIP() << "no ncu here";
  TempDir dir;
  FleetOptions options;
  options.bin_dir = BuildDir() + "/bin";
  options.data_dir = dir.path() + "/fleet";
  options.backend = "cuda";
  options.finalists = 0;
  options.lease_ttl_ms = 30000;  // ncu replays each kernel: a profile takes seconds
  options.worker_flags = {"--ncu", ncu, "--sandbox", GetParam()};
  Fleet fleet(options);
  ASSERT_OK(fleet.StartCoordinator());
  ASSERT_OK(fleet.StartWorker().status());
  ClientOptions client_options;
  client_options.target = fleet.address();
  client_options.insecure = true;
  client_options.deadline = std::chrono::seconds(60);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
  ASSERT_OK(client);

  SubmitRequest request;
  request.kernel_dir = SourceDir() + "/kernels/cuda/gemm_f16";
  request.shape = "M=1024,N=1024,K=1024";
  request.config_set = "quick";
  absl::StatusOr<Job> job = (*client)->Submit(request);
  ASSERT_OK(job);
  absl::StatusOr<Job> done = (*client)->Watch(job->id, [](const Job&) {});
  ASSERT_OK(done);
  ASSERT_EQ(done->state, JobState::kSucceeded) << done->reason;

  ASSERT_OK((*client)->ProfileJob(job->id, 1).status());
  std::vector<KernelProfile> profiles;
  for (int i = 0; i < 1200; ++i) {  // ten minutes at most
    absl::StatusOr<std::vector<KernelProfile>> listed = (*client)->ListProfiles(job->id);
    ASSERT_OK(listed);
    profiles = *listed;
    if (!profiles.empty() && !profiles[0].pending) break;
    absl::SleepFor(absl::Milliseconds(500));
  }
  ASSERT_THAT(profiles, SizeIs(1));
  const KernelProfile& p = profiles[0];
  ASSERT_FALSE(p.pending);
  EXPECT_EQ(p.config, done->targets[0].best_config);
  std::printf("profile (sandbox %s) of %s: %s\n  duration %.2f us, cycles %.0f, "
              "%d regs/thread, smem %lld B, occupancy %.1f%%, L2 hit %.1f%%, "
              "DRAM %.1f GB/s (%.1f%%), %.1f TFLOP/s, ncu %s\n",
              GetParam().c_str(), p.config.c_str(),
              p.unavailable.empty() ? "read" : p.unavailable.c_str(),
              p.duration_seconds * 1e6, p.cycles, p.registers_per_thread,
              static_cast<long long>(p.shared_memory_bytes), p.achieved_occupancy_pct,
              p.l2_hit_rate_pct, p.dram_bytes_per_second / 1e9, p.dram_throughput_pct, p.tflops,
              p.ncu_version.c_str());
  if (absl::StrContains(p.unavailable, "performance counters")) {
    GTEST_SKIP() << "ncu cannot read this GPU's counters here: " << p.unavailable;
  }
  ASSERT_EQ(p.unavailable, "");
  EXPECT_GT(p.duration_seconds, 0);
  EXPECT_LT(p.duration_seconds, 1);
  EXPECT_GT(p.cycles, 0);
  EXPECT_GT(p.registers_per_thread, 0);
  EXPECT_LE(p.registers_per_thread, 255);
  EXPECT_GT(p.shared_memory_bytes, 0);  // the gemm stages its tiles in shared memory
  EXPECT_GT(p.achieved_occupancy_pct, 0);
  EXPECT_LE(p.achieved_occupancy_pct, 100);
  EXPECT_GE(p.l2_hit_rate_pct, 0);
  EXPECT_LE(p.l2_hit_rate_pct, 100);
  EXPECT_GE(p.dram_throughput_pct, 0);
  EXPECT_LE(p.dram_throughput_pct, 100);
  EXPECT_GT(p.tflops, 0);
  EXPECT_FALSE(p.ncu_version.empty());

  absl::StatusOr<Job> after = (*client)->GetJob(job->id);
  ASSERT_OK(after);
  EXPECT_EQ(after->state, JobState::kSucceeded);
}

INSTANTIATE_TEST_SUITE_P(Sandboxes, ProfileGpuTest, ::testing::Values("none", "bwrap"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tunefleet::testing
