// `tunectl validate`: checks a kernel directory without a server and
// measures its config space.
#ifndef TUNEFLEET_CLIENT_TUNECTL_VALIDATE_H_
#define TUNEFLEET_CLIENT_TUNECTL_VALIDATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tunefleet::tunectl {

// Spaces larger than this are not walked to count their valid configs.
inline constexpr uint64_t kMaxCountedConfigs = 10'000'000;

struct ValidateReport {
  std::string spec_path;
  std::string kernel;
  std::string backend;  // "CPU" or "CUDA"
  int parameters = 0;
  uint64_t full_size = 0;  // saturated at UINT64_MAX
  int source_files = 0;
  int64_t source_bytes = 0;
  std::string default_config;
  std::vector<std::pair<std::string, int>> config_sets;  // name, configs
  // Set only when a shape was given:
  std::string shape;                      // in the spec's dim order
  std::optional<uint64_t> valid_configs;  // unset above kMaxCountedConfigs
  std::string default_problem;  // the constraint the default breaks, if any
};

// Reads `dir`/kernel.textproto and its sources and checks the spec and every
// expression, against placeholder limits of the spec's backend. With a
// `shape` ("M=1024,N=1024,K=1024"; empty for none) it also counts the valid
// configs. Spec problems are INVALID_ARGUMENT reading
// "<dir>/kernel.textproto:<line>: <problem>" (no line when the problem is a
// missing field); a missing file is NOT_FOUND.
absl::StatusOr<ValidateReport> ValidateKernelDirectory(
    const std::string& dir, const std::string& shape);

std::string ValidateReportText(const ValidateReport& report);
std::string ValidateReportJson(const ValidateReport& report);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_VALIDATE_H_
