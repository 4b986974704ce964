// Discovery of the CUDA devices visible to this process, described as
// v1::Device messages: the GPU UUID as id, "<name> sm_<major><minor>" as
// model, and the device limits that kernel-spec expressions may use.
//
// Limits reported: exactly the names of PlaceholderLimits(BACKEND_CUDA)
// (max_threads_per_block, max_smem_per_block, max_smem_per_block_optin,
// smem_per_sm, regs_per_block, regs_per_sm, max_threads_per_sm, sm_count,
// l2_bytes, warp_size, cc_major, cc_minor), plus global_mem_bytes,
// max_blocks_per_sm, smem_reserved_per_block, sm_clock_mhz (the typical
// clock the driver reports), mem_clock_mhz and mem_bus_width_bits.
//
// Thread-safety: the functions are thread-safe.
#ifndef TUNEFLEET_WORKER_CUDA_CUDA_DEVICES_H_
#define TUNEFLEET_WORKER_CUDA_CUDA_DEVICES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::worker::cuda {

// Every visible device, in ordinal order. Unavailable when the driver cannot
// be loaded; an empty list when it loads but sees no device.
absl::StatusOr<std::vector<v1::Device>> ListCudaDevices();

// The description of device `ordinal`.
absl::StatusOr<v1::Device> DescribeCudaDevice(const CudaDriver& driver,
                                              int ordinal);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
std::string FormatUuid(const CUuuid& uuid);

// The value of limit `name` in `device`, or `fallback` when absent.
double DeviceLimit(const v1::Device& device, const std::string& name,
                   double fallback);

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_CUDA_DEVICES_H_
