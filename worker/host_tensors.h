// Host-side tensor helpers shared by every backend: dtype sizes, fp16/bf16
// conversion, seeded generation from a spec's Distribution, and comparison
// with a tolerance.
#ifndef TUNEFLEET_WORKER_HOST_TENSORS_H_
#define TUNEFLEET_WORKER_HOST_TENSORS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tunefleet/v1/kernel_spec.pb.h"

namespace tunefleet::worker {

// Bytes per element; 0 for DTYPE_UNSPECIFIED.
size_t DTypeSize(v1::DType dtype);

// Bytes of a tensor of `elements` of `dtype`. InvalidArgument naming `name`
// for an unknown dtype, a negative count or a size that overflows (the
// coordinator refuses these at submission; a child does not rely on it).
absl::StatusOr<size_t> TensorBytes(const std::string& name, v1::DType dtype, int64_t elements);

float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);  // round to nearest even
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);  // round to nearest even

// Reads element `i` of a buffer of `dtype` as double.
double LoadAsDouble(v1::DType dtype, const void* data, int64_t i);

// Fills `count` elements of `dtype` at `out` from `init`, deterministically
// for a given `seed` (the same bytes on every machine, however many threads
// fill it: a tensor of millions of elements is split across up to 16
// threads, no more than UsableCpus()).
void FillTensor(v1::DType dtype, const v1::Distribution& init, uint64_t seed,
                int64_t count, void* out);

// OK when at most max_mismatch_ratio of the elements differ by more than
// atol + rtol * |expected| (NaN never matches). Otherwise FailedPrecondition
// whose message gives the mismatch count, the first bad element and the
// largest finite error (the same wording as the CUDA runner's device_compare.h).
absl::Status CompareTensors(v1::DType dtype, const void* actual,
                            const void* expected, int64_t count,
                            const v1::Tolerance& tolerance);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_HOST_TENSORS_H_
