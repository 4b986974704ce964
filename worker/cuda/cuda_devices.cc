#include "worker/cuda/cuda_devices.h"

#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace tunefleet::worker::cuda {
namespace {

struct AttributeLimit {
  const char* name;
  CUdevice_attribute attribute;
  double scale;  // the reported value is multiplied by this
};

constexpr AttributeLimit kAttributeLimits[] = {
    {"max_threads_per_block", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1},
    {"max_smem_per_block", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 1},
    {"max_smem_per_block_optin",
     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 1},
    {"smem_per_sm", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 1},
    {"regs_per_block", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 1},
    {"regs_per_sm", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 1},
    {"max_threads_per_sm", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 1},
    {"sm_count", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1},
    {"l2_bytes", CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 1},
    {"warp_size", CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1},
    {"cc_major", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1},
    {"cc_minor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1},
    {"max_blocks_per_sm", CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 1},
    {"smem_reserved_per_block",
     CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1},
    {"sm_clock_mhz", CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1e-3},
    {"mem_clock_mhz", CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1e-3},
    {"mem_bus_width_bits", CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 1},
};

void AddLimit(v1::Device* device, const std::string& name, double value) {
  v1::DeviceLimit* limit = device->add_limits();
  limit->set_name(name);
  limit->set_value(value);
}

// "cuda 13.0, nvidia 580.95.05" (the kernel module's version when readable).
std::string DriverVersion(const CudaDriver& driver) {
  int version = 0;
  std::string out = "cuda ?";
  if (driver.DriverGetVersion(&version) == CUDA_SUCCESS) {
    out = absl::StrCat("cuda ", version / 1000, ".", (version % 1000) / 10);
  }
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (file && std::getline(file, line)) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue ..."
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (!word.empty() && word[0] >= '0' && word[0] <= '9' &&
          word.find('.') != absl::string_view::npos) {
        absl::StrAppend(&out, ", nvidia ", word);
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::string FormatUuid(const CUuuid& uuid) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
  }
  return out;
}

absl::StatusOr<v1::Device> DescribeCudaDevice(const CudaDriver& driver,
                                              int ordinal) {
  CUdevice dev = 0;
  RETURN_IF_ERROR(driver.Check(driver.DeviceGet(&dev, ordinal), "cuDeviceGet"));
  char name[256] = {};
  RETURN_IF_ERROR(driver.Check(driver.DeviceGetName(name, sizeof(name) - 1, dev),
                               "cuDeviceGetName"));
  CUuuid uuid;
  RETURN_IF_ERROR(driver.Check(driver.DeviceGetUuid(&uuid, dev), "cuDeviceGetUuid"));
  size_t total_mem = 0;
  RETURN_IF_ERROR(driver.Check(driver.DeviceTotalMem(&total_mem, dev),
                               "cuDeviceTotalMem"));

  v1::Device device;
  device.set_id(FormatUuid(uuid));
  device.set_backend(v1::BACKEND_CUDA);
  device.set_driver(DriverVersion(driver));
  int major = 0;
  int minor = 0;
  for (const AttributeLimit& limit : kAttributeLimits) {
    int value = 0;
    RETURN_IF_ERROR(driver.Check(driver.DeviceGetAttribute(&value, limit.attribute, dev),
                                 absl::StrCat("cuDeviceGetAttribute(", limit.name, ")")));
    if (limit.attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) major = value;
    if (limit.attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) minor = value;
    AddLimit(&device, limit.name, value * limit.scale);
  }
  AddLimit(&device, "global_mem_bytes", static_cast<double>(total_mem));
  device.set_model(absl::StrCat(name, " sm_", major, minor));
  return device;
}

absl::StatusOr<std::vector<v1::Device>> ListCudaDevices() {
  ASSIGN_OR_RETURN(const CudaDriver* driver, LoadCudaDriver());
  int count = 0;
  CUresult result = driver->DeviceGetCount(&count);
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_NOT_INITIALIZED) {
    return std::vector<v1::Device>();
  }
  RETURN_IF_ERROR(driver->Check(result, "cuDeviceGetCount"));
  std::vector<v1::Device> devices;
  for (int i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(v1::Device device, DescribeCudaDevice(*driver, i));
    devices.push_back(std::move(device));
  }
  return devices;
}

double DeviceLimit(const v1::Device& device, const std::string& name,
                   double fallback) {
  for (const v1::DeviceLimit& limit : device.limits()) {
    if (limit.name() == name) return limit.value();
  }
  return fallback;
}

}  // namespace tunefleet::worker::cuda
