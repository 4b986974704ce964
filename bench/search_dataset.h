// A search dataset: every valid config of one space measured (an exhaustive
// job), written so that search strategies can be replayed against it without
// a device (bench/search_bench). gzip-compressed text when the file name
// ends in .gz:
//
//   # tunefleet search dataset v1
//   # kernel: kernels/cuda/gemm_f16        (directory, relative to the source tree)
//   # shape: M=4096,N=4096,K=4096
//   # device: NVIDIA H200
//   # limits: l2_bytes=52428800,max_threads_per_block=1024,...
//   config,status,median_seconds
//   "BLOCK_M=64,BLOCK_N=64,...",OK,0.000372
//
// `status` is a TrialStatus name without its TRIAL_STATUS_ prefix;
// median_seconds is 0 for a failed config.
//
// The rows may also be what `tunectl trials JOB -o csv` prints (its header
// line `config,device_model,status,...` instead of `config,status,...`):
// the header lines above followed by that output are a dataset. Its search
// rows that are not excluded are kept (not the finalists' or verifiers'
// re-measurements). Make such a job with the workers' early cut off
// (--cut-factor -1): a trial cut early carries a partial median.
#ifndef TUNEFLEET_BENCH_SEARCH_DATASET_H_
#define TUNEFLEET_BENCH_SEARCH_DATASET_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/config_space.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::bench {

struct DatasetRow {
  std::string config;  // short form
  v1::TrialStatus status = v1::TRIAL_STATUS_UNSPECIFIED;
  double median_seconds = 0;
};

struct SearchDataset {
  std::string kernel_dir;
  std::string shape;
  std::string device;
  DeviceLimits limits;
  std::vector<DatasetRow> rows;
};

absl::Status WriteDataset(const SearchDataset& dataset, const std::string& path);
// InvalidArgument naming the line for a malformed file.
// InvalidArgument naming the line for a malformed file.
absl::StatusOr<SearchDataset> ReadDataset(const std::string& path);

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_SEARCH_DATASET_H_
