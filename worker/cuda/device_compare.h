// Checks a kernel's output against the expected output where both already
// are: on the GPU. One grid-stride pass per tensor counts the elements
// outside atol + rtol * |expected| (computed in double, NaN never matches:
// the same rule as the host's CompareTensors) and finds the first mismatch
// and the largest finite error; only a 32-byte summary, and on a failure the
// four elements the message quotes, cross to the host. A second pass, only
// when the check fails, finds the index of the largest error.
//
// The comparison kernels are CUDA C++ without headers, compiled once per
// DeviceComparator with NVRTC for the device's own architecture (about
// 0.1 s; a benchmark child does it once per job).
//
// Thread-safety: not thread-safe; owned by the CudaRunner of one context.
#ifndef TUNEFLEET_WORKER_CUDA_DEVICE_COMPARE_H_
#define TUNEFLEET_WORKER_CUDA_DEVICE_COMPARE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::worker::cuda {

struct DeviceComparison {
  int64_t count = 0;
  int64_t mismatches = 0;
  int64_t allowed = 0;       // floor(max_mismatch_ratio * count)
  int64_t first = -1;        // lowest mismatching index, -1 when none
  double first_actual = 0;   // the elements at `first`
  double first_expected = 0;
  int64_t worst = -1;        // lowest index of the largest finite error
  double worst_error = 0;    // |actual - expected| there
  bool ok() const {
    return mismatches == 0 || static_cast<double>(mismatches) <= static_cast<double>(allowed);
  }
  // "N of M elements differ (allowed A); first at [i]: got x, expected y;
  // worst |error| e at [j]" — the host's wording plus the worst error.
  std::string Describe() const;
};

// The comparison kernels' CUDA source (compiled by Create; exposed so that a
// host without a GPU can check that it compiles).
const char* ComparisonKernelSource();

class DeviceComparator {
 public:
  // Compiles and loads the comparison kernels in the current context for
  // `device` (its compute capability picks the architecture). Unavailable
  // when NVRTC cannot be loaded; Internal when it fails.
  static absl::StatusOr<std::unique_ptr<DeviceComparator>> Create(const CudaDriver* driver,
                                                                  CUdevice device,
                                                                  CUstream stream);
  ~DeviceComparator();
  DeviceComparator(const DeviceComparator&) = delete;
  DeviceComparator& operator=(const DeviceComparator&) = delete;

  // Compares `count` elements of `dtype` at `actual` with those at
  // `expected` (device pointers) on the stream, and waits for the summary.
  // A driver error is returned as the CUresult in `*error` (sticky errors
  // leave the context unusable, as for any launch) with a non-OK status.
  absl::StatusOr<DeviceComparison> Compare(v1::DType dtype, CUdeviceptr actual,
                                           CUdeviceptr expected, int64_t count,
                                           const v1::Tolerance& tolerance, CUresult* error);

 private:
  struct Kernels;
  DeviceComparator(const CudaDriver* driver, CUstream stream);
  CUresult ReadElement(v1::DType dtype, CUdeviceptr base, int64_t index, double* value);

  const CudaDriver* driver_;
  CUstream stream_;
  CUmodule module_ = nullptr;
  std::unique_ptr<Kernels> kernels_;
  CUdeviceptr summary_ = 0;  // struct Summary in the kernels' source
  int grid_ = 0;             // blocks per pass: enough to fill the device
};

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_DEVICE_COMPARE_H_
