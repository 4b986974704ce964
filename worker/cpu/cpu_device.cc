#include "worker/cpu/cpu_device.h"

#include <sys/utsname.h>

#include <fstream>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/config_space.h"
#include "common/sha256.h"
#include "common/usable_cpus.h"

namespace tunefleet::worker {
namespace {

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

// The value of the first /proc/cpuinfo line starting with `name`; "" when none.
std::string CpuInfoField(const std::string& name) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "";
}

std::string CpuModelName() {
  std::string model = CpuInfoField("model name");
  return model.empty() ? "unknown CPU" : model;
}

// "48K" / "1024K" / "32M" as bytes; 0 when unreadable.
double ParseCacheSize(const std::string& text) {
  if (text.empty()) return 0;
  double scale = 1;
  std::string digits = text;
  char unit = text.back();
  if (unit == 'K' || unit == 'M' || unit == 'G') {
    scale = unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : 1073741824.0;
    digits.pop_back();
  }
  int64_t value = 0;
  return absl::SimpleAtoi(digits, &value) ? static_cast<double>(value) * scale : 0;
}

// Cache sizes of cpu0 by limit name, from /sys/devices/system/cpu/cpu0/cache.
std::map<std::string, double> CacheSizes() {
  std::map<std::string, double> sizes;
  for (int index = 0; index < 8; ++index) {
    std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index);
    std::string level = ReadLine(dir + "/level");
    std::string type = ReadLine(dir + "/type");
    if (level.empty()) break;
    double bytes = ParseCacheSize(ReadLine(dir + "/size"));
    if (bytes <= 0 || type == "Instruction") continue;
    if (level == "1") sizes["l1d_bytes"] = bytes;
    if (level == "2") sizes["l2_bytes"] = bytes;
    if (level == "3") sizes["l3_bytes"] = bytes;
  }
  return sizes;
}

}  // namespace

v1::Device DiscoverCpuDevice() {
  const int cores = UsableCpus();
  DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
  limits["cores"] = cores;
  for (const auto& [name, bytes] : CacheSizes()) limits[name] = bytes;

  v1::Device device;
  device.set_id("cpu0");
  device.set_model(absl::StrCat(CpuModelName(), " x", cores));
  device.set_backend(v1::BACKEND_CPU);
  for (const auto& [name, value] : limits) {
    v1::DeviceLimit* limit = device.add_limits();
    limit->set_name(name);
    limit->set_value(value);
  }
  utsname uts;
  if (uname(&uts) == 0) device.set_driver(absl::StrCat("linux ", uts.release));
  return device;
}

std::string CpuFeatureDigest() {
  static const std::string* digest =
      new std::string(Sha256Hex(CpuInfoField("flags")).substr(0, 16));
  return *digest;
}

}  // namespace tunefleet::worker
