// The comparison on the device against the host's rule: the same verdict and
// the same message for every dtype, with NaNs, allowances and a tail that is
// not a multiple of the block. The kernels' compile check needs only NVRTC.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/device_compare.h"
#include "worker/cuda/nvrtc_program.h"
#include "worker/host_tensors.h"

namespace tunefleet::worker::cuda {
namespace {

TEST(DeviceCompare, KernelsCompileForHopper) {
  absl::StatusOr<const Nvrtc*> nvrtc = LoadNvrtc();
  if (!nvrtc.ok()) GTEST_SKIP() << nvrtc.status();
  absl::StatusOr<NvrtcOutput> output =
      RunNvrtc(**nvrtc, ComparisonKernelSource(), "compare.cu", {"--gpu-architecture=sm_90"});
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_TRUE(output->ok) << output->log;
  EXPECT_FALSE(output->cubin.empty());
}

// A context on GPU 0 with its own stream, or a skip.
class DeviceCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<const CudaDriver*> driver = LoadCudaDriver();
    if (!driver.ok()) GTEST_SKIP() << driver.status();
    driver_ = *driver;
    int count = 0;
    if (driver_->DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
      GTEST_SKIP() << "no CUDA GPU here";
    }
    ASSERT_EQ(driver_->DeviceGet(&device_, 0), CUDA_SUCCESS);
    ASSERT_EQ(driver_->DevicePrimaryCtxRetain(&context_, device_), CUDA_SUCCESS);
    ASSERT_EQ(driver_->CtxSetCurrent(context_), CUDA_SUCCESS);
    ASSERT_EQ(driver_->StreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    absl::StatusOr<std::unique_ptr<DeviceComparator>> comparator =
        DeviceComparator::Create(driver_, device_, stream_);
    ASSERT_TRUE(comparator.ok()) << comparator.status();
    comparator_ = *std::move(comparator);
  }

  void TearDown() override {
    comparator_.reset();
    for (CUdeviceptr buffer : buffers_) driver_->MemFree(buffer);
    if (stream_ != nullptr) driver_->StreamDestroy(stream_);
    if (context_ != nullptr) driver_->DevicePrimaryCtxRelease(device_);
  }

  CUdeviceptr Upload(const std::vector<uint8_t>& host) {
    CUdeviceptr buffer = 0;
    EXPECT_EQ(driver_->MemAlloc(&buffer, host.size()), CUDA_SUCCESS);
    EXPECT_EQ(driver_->MemcpyHtoD(buffer, host.data(), host.size()), CUDA_SUCCESS);
    // A pageable upload may still be in flight when cuMemcpyHtoD returns, and
    // the comparison runs on a non-blocking stream that does not wait for it.
    EXPECT_EQ(driver_->CtxSynchronize(), CUDA_SUCCESS);
    buffers_.push_back(buffer);
    return buffer;
  }

  // The device's verdict in the host's terms: OK, or the message.
  absl::Status OnDevice(v1::DType dtype, const std::vector<uint8_t>& actual,
                        const std::vector<uint8_t>& expected, int64_t count,
                        const v1::Tolerance& tolerance) {
    CUresult error = CUDA_SUCCESS;
    absl::StatusOr<DeviceComparison> comparison = comparator_->Compare(
        dtype, Upload(actual), Upload(expected), count, tolerance, &error);
    EXPECT_EQ(error, CUDA_SUCCESS);
    if (!comparison.ok()) return comparison.status();
    if (comparison->ok()) return absl::OkStatus();
    return absl::FailedPreconditionError(comparison->Describe());
  }

  const CudaDriver* driver_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::unique_ptr<DeviceComparator> comparator_;
  std::vector<CUdeviceptr> buffers_;
};

v1::Tolerance Tolerance(double rtol, double atol, double ratio) {
  v1::Tolerance tolerance;
  tolerance.set_rtol(rtol);
  tolerance.set_atol(atol);
  tolerance.set_max_mismatch_ratio(ratio);
  return tolerance;
}

TEST_F(DeviceCompareTest, AgreesWithTheHostForEveryDtype) {
  constexpr int64_t kCount = (int64_t{1} << 20) + 37;
  for (v1::DType dtype : {v1::DTYPE_F16, v1::DTYPE_BF16, v1::DTYPE_F32, v1::DTYPE_F64,
                          v1::DTYPE_I32, v1::DTYPE_I64}) {
    SCOPED_TRACE(v1::DType_Name(dtype));
    const size_t size = DTypeSize(dtype);
    v1::Distribution init;
    init.set_kind(v1::Distribution::KIND_UNIFORM);
    init.set_low(-100);
    init.set_high(100);
    std::vector<uint8_t> expected(kCount * size), noise(kCount * size);
    FillTensor(dtype, init, 1, kCount, expected.data());
    FillTensor(dtype, init, 2, kCount, noise.data());
    std::vector<uint8_t> actual = expected;
    // Wrong elements at both ends, in the middle and in the tail.
    for (int64_t i : {int64_t{0}, int64_t{5}, int64_t{4097}, kCount / 2, kCount - 1}) {
      std::memcpy(&actual[i * size], &noise[i * size], size);
    }
    const bool floating = dtype != v1::DTYPE_I32 && dtype != v1::DTYPE_I64;
    if (floating) std::memset(&actual[77 * size], 0xFF, size);  // NaN

    const v1::Tolerance cases[] = {Tolerance(1e-2, 1e-3, 0), Tolerance(0, 0, 0),
                                   Tolerance(1e-2, 1e-3, 1e-5), Tolerance(1e-2, 1e-3, 1e-3),
                                   Tolerance(1e6, 1e6, 0)};
    for (const v1::Tolerance& tolerance : cases) {
      SCOPED_TRACE(tolerance.ShortDebugString());
      absl::Status host = CompareTensors(dtype, actual.data(), expected.data(), kCount, tolerance);
      absl::Status device = OnDevice(dtype, actual, expected, kCount, tolerance);
      EXPECT_EQ(device, host);
    }
    EXPECT_TRUE(OnDevice(dtype, expected, expected, kCount, Tolerance(0, 0, 0)).ok());
  }
}

TEST_F(DeviceCompareTest, OnlyNaNsHaveNoWorstError) {
  std::vector<uint8_t> expected(1000 * 4, 0), actual = expected;
  std::memset(&actual[10 * 4], 0xFF, 4);
  absl::Status host = CompareTensors(v1::DTYPE_F32, actual.data(), expected.data(), 1000,
                                     Tolerance(0, 0, 0));
  EXPECT_EQ(OnDevice(v1::DTYPE_F32, actual, expected, 1000, Tolerance(0, 0, 0)), host);
  EXPECT_EQ(host.message().find("worst"), std::string::npos) << host;
}

// Not a check: what a 64 MiB fp16 output costs to compare here.
TEST_F(DeviceCompareTest, PrintsTheTimeOfA64MiBCompare) {
  constexpr int64_t kCount = int64_t{32} << 20;
  std::vector<uint8_t> data(kCount * 2, 0x3C);
  CUdeviceptr a = Upload(data), e = Upload(data);
  CUresult error = CUDA_SUCCESS;
  ASSERT_TRUE(comparator_->Compare(v1::DTYPE_F16, a, e, kCount, Tolerance(1e-2, 1e-2, 0), &error)
                  .ok());
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRounds = 20;
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(
        comparator_->Compare(v1::DTYPE_F16, a, e, kCount, Tolerance(1e-2, 1e-2, 0), &error).ok());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRounds;
  std::printf("device compare of 64 MiB fp16: %.3f ms\n", seconds * 1e3);
}

}  // namespace
}  // namespace tunefleet::worker::cuda
