// Checks on a submitted job that guard the coordinator and the workers
// against hostile input: what the spec loader's structural checks do not
// cover because a spec read from disk cannot carry it (out-of-range enum
// numbers, unsafe source paths, non-finite tolerances, absurd budgets and
// dims, tensors too large to allocate). Pure functions; no state.
#ifndef TUNEFLEET_SERVER_JOB_INPUT_H_
#define TUNEFLEET_SERVER_JOB_INPUT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "common/config_space.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// Longest source path accepted, in bytes.
inline constexpr size_t kMaxSourcePathBytes = 255;
// Largest value of one problem dim (2^40); beyond it expressions evaluated
// in double precision stop being exact long before any tensor fits.
inline constexpr int64_t kMaxDimValue = int64_t{1} << 40;
// Largest fraction of mismatching elements a tolerance may allow.
inline constexpr double kMaxMismatchRatio = 0.1;

// Every enum field of `spec` (backend, tensor and scalar dtypes, tensor
// roles, init kinds) holds a defined value; proto3 keeps unknown numbers
// as they arrive. InvalidArgument naming the field otherwise.
absl::Status CheckEnums(const v1::KernelSpec& spec);

// Every source path of the job (kernel.sources, reference.sources, the
// carried files) is relative, non-empty, at most kMaxSourcePathBytes, has
// no empty or ".." component and no control character; the carried files
// and kernel.sources are each unique. InvalidArgument naming the field.
absl::Status CheckSourcePaths(const v1::JobSpec& spec);

// rtol and atol finite and >= 0; max_mismatch_ratio finite in
// [0, kMaxMismatchRatio]. InvalidArgument naming the field.
absl::Status CheckTolerance(const v1::Tolerance& tolerance);

// Longest time budget a job may ask for: 30 days.
inline constexpr int64_t kMaxTimeBudgetSeconds = int64_t{30} * 24 * 3600;
// Most batches without improvement the plateau rule may wait for.
inline constexpr int32_t kMaxPlateauBatches = 100'000;

// The strategy is known; the budget is >= 0 (InvalidArgument) and at most
// `max_trials` (ResourceExhausted); the stop rules are in range:
// time_budget_seconds in [0, kMaxTimeBudgetSeconds], plateau_batches in
// [0, kMaxPlateauBatches] (InvalidArgument).
absl::Status CheckStrategy(const v1::JobSpec& spec, int64_t max_trials);

// Every dim of `shape` is at most kMaxDimValue. InvalidArgument.
absl::Status CheckDims(const v1::Shape& shape);

// The bytes of all tensors of the job under its default config: an
// InvalidArgument when a size overflows 64 bits, ResourceExhausted when the
// total is over `max_bytes`.
// REQUIRES: `space` is the job's space; the spec passed ValidateKernelSpec.
absl::StatusOr<int64_t> CheckTensorBytes(ConfigSpace* space, int64_t max_bytes);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_JOB_INPUT_H_
