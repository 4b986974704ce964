#include "worker/cuda/nvrtc_program.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tunefleet::worker::cuda {

absl::StatusOr<NvrtcOutput> RunNvrtc(const Nvrtc& nvrtc, const std::string& source,
                                     const std::string& name,
                                     const std::vector<std::string>& options) {
  nvrtcProgram program = nullptr;
  nvrtcResult result = nvrtc.CreateProgram(&program, source.c_str(), name.c_str(),
                                           0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("nvrtcCreateProgram: ", nvrtc.GetErrorString(result)));
  }
  std::vector<const char*> argv;
  for (const std::string& option : options) argv.push_back(option.c_str());
  nvrtcResult compiled = nvrtc.CompileProgram(program, static_cast<int>(argv.size()),
                                              argv.data());
  NvrtcOutput output;
  size_t log_size = 0;
  absl::Status status;
  if (nvrtc.GetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    output.log.resize(log_size);
    if (nvrtc.GetProgramLog(program, output.log.data()) != NVRTC_SUCCESS) output.log.clear();
    while (!output.log.empty() && output.log.back() == '\0') output.log.pop_back();
  }
  if (compiled == NVRTC_SUCCESS) {
    size_t size = 0;
    if (nvrtc.GetCUBINSize(program, &size) != NVRTC_SUCCESS || size == 0) {
      status = absl::InternalError("nvrtcGetCUBINSize failed (no cubin: is the arch real?)");
    } else {
      output.cubin.resize(size);
      if (nvrtc.GetCUBIN(program, output.cubin.data()) != NVRTC_SUCCESS) {
        status = absl::InternalError("nvrtcGetCUBIN failed");
      }
      output.ok = status.ok();
    }
  } else if (compiled != NVRTC_ERROR_COMPILATION) {
    status = absl::InternalError(
        absl::StrCat("nvrtcCompileProgram: ", nvrtc.GetErrorString(compiled), "\n", output.log));
  }
  nvrtc.DestroyProgram(&program);
  if (!status.ok()) return status;
  return output;
}

}  // namespace tunefleet::worker::cuda
