// One NVRTC compilation in this process: source text and options in, cubin
// and program log out. Used by the NvrtcCompiler (in-process mode) and by
// the tunefleet-nvrtc helper.
//
// Thread-safety: RunNvrtc may be called from several threads at once.
#ifndef TUNEFLEET_WORKER_CUDA_NVRTC_PROGRAM_H_
#define TUNEFLEET_WORKER_CUDA_NVRTC_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::worker::cuda {

// One NVRTC compilation in this process. `ok` false with the program log when
// the source does not compile; a non-OK status when NVRTC itself failed.
struct NvrtcOutput {
  bool ok = false;
  std::string cubin;
  std::string log;
};
absl::StatusOr<NvrtcOutput> RunNvrtc(const Nvrtc& nvrtc,
                                     const std::string& source,
                                     const std::string& name,
                                     const std::vector<std::string>& options);

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_NVRTC_PROGRAM_H_
