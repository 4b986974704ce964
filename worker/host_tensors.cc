#include "worker/host_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/usable_cpus.h"

namespace tunefleet::worker {
namespace {

// Threads FillTensor uses at most for one large tensor.
constexpr int64_t kMaxFillThreads = 16;

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// SplitMix64: a counter-based generator, so element i's value depends only on
// (seed, i) and the same bytes come out on every machine.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
double Unit(uint64_t seed, uint64_t i, uint64_t stream) {
  uint64_t bits = Mix(seed ^ Mix(i * 2 + stream));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

double Sample(const v1::Distribution& init, uint64_t seed, int64_t i) {
  switch (init.kind()) {
    case v1::Distribution::KIND_UNSPECIFIED:
      return -1.0 + 2.0 * Unit(seed, i, 0);
    case v1::Distribution::KIND_UNIFORM:
      return init.low() + (init.high() - init.low()) * Unit(seed, i, 0);
    case v1::Distribution::KIND_NORMAL: {
      // Box-Muller; 1 - u keeps the logarithm finite.
      double u1 = 1.0 - Unit(seed, i, 0), u2 = Unit(seed, i, 1);
      double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      return init.low() + init.high() * z;
    }
    case v1::Distribution::KIND_ZEROS:
      return 0.0;
    case v1::Distribution::KIND_ONES:
      return 1.0;
    case v1::Distribution::KIND_ARANGE:
      return static_cast<double>(i);
    default:
      return 0.0;
  }
}

void Store(v1::DType dtype, double value, void* data, int64_t i) {
  switch (dtype) {
    case v1::DTYPE_F16:
      static_cast<uint16_t*>(data)[i] = FloatToHalf(static_cast<float>(value));
      break;
    case v1::DTYPE_BF16:
      static_cast<uint16_t*>(data)[i] = FloatToBf16(static_cast<float>(value));
      break;
    case v1::DTYPE_F32:
      static_cast<float*>(data)[i] = static_cast<float>(value);
      break;
    case v1::DTYPE_F64:
      static_cast<double*>(data)[i] = value;
      break;
    case v1::DTYPE_I32:
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(std::llround(value));
      break;
    case v1::DTYPE_I64:
      static_cast<int64_t*>(data)[i] = std::llround(value);
      break;
    default:
      break;
  }
}

// Random integers for integer tensors: uniform draws are rounded, so the
// default [-1, 1) gives {-1, 0, 1}.
double IntegerSample(const v1::Distribution& init, uint64_t seed, int64_t i) {
  if (init.kind() == v1::Distribution::KIND_UNIFORM) {
    double span = std::floor(init.high() - init.low());
    return init.low() + std::floor(span * Unit(seed, i, 0));
  }
  return std::round(Sample(init, seed, i));
}

}  // namespace

size_t DTypeSize(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F16:
    case v1::DTYPE_BF16:
      return 2;
    case v1::DTYPE_F32:
    case v1::DTYPE_I32:
      return 4;
    case v1::DTYPE_F64:
    case v1::DTYPE_I64:
      return 8;
    default:
      return 0;
  }
}

absl::StatusOr<size_t> TensorBytes(const std::string& name, v1::DType dtype, int64_t elements) {
  const size_t element = DTypeSize(dtype);
  if (element == 0 || elements < 0 ||
      static_cast<uint64_t>(elements) > std::numeric_limits<size_t>::max() / element) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", name, ": dtype ", dtype, " and ", elements, " elements make no size"));
  }
  return static_cast<size_t>(elements) * element;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000 | (mant << 13));  // inf/NaN
  if (exp != 0) return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return BitsFloat(sign);
  // Subnormal half: normalize into a float.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400) == 0);
  return BitsFloat(sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3ff) << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffff;
  if (abs >= 0x7f800000) {  // inf or NaN (keep NaN quiet and non-zero)
    return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 | ((abs >> 13) & 0x3ff) : 0);
  }
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds past 65504: inf
  if (abs < 0x38800000) {  // below the smallest normal half: subnormal or 0
    if (abs < 0x33000000) return sign;  // under half the smallest subnormal
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - exp;  // 14 + (112 - exp) ... in [14, 24]
    uint32_t half = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((abs >> 23) - 112) << 10 | ((abs >> 13) & 0x3ff);
  const uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into exp
  return sign | static_cast<uint16_t>(half);
}

float Bf16ToFloat(uint16_t bits) { return BitsFloat(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToBf16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) {
    return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN stays NaN
  }
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

double LoadAsDouble(v1::DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case v1::DTYPE_F16:
      return HalfToFloat(static_cast<const uint16_t*>(data)[i]);
    case v1::DTYPE_BF16:
      return Bf16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case v1::DTYPE_F32:
      return static_cast<const float*>(data)[i];
    case v1::DTYPE_F64:
      return static_cast<const double*>(data)[i];
    case v1::DTYPE_I32:
      return static_cast<const int32_t*>(data)[i];
    case v1::DTYPE_I64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

void FillTensor(v1::DType dtype, const v1::Distribution& init, uint64_t seed,
                int64_t count, void* out) {
  const bool integer = dtype == v1::DTYPE_I32 || dtype == v1::DTYPE_I64;
  const bool arange_f16 =
      dtype == v1::DTYPE_F16 && init.kind() == v1::Distribution::KIND_ARANGE;
  auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double value = integer ? IntegerSample(init, seed, i) : Sample(init, seed, i);
      if (arange_f16) value = static_cast<double>(i % 1024);
      Store(dtype, value, out, i);
    }
  };
  // Element i depends on (seed, i) alone, so the elements split across
  // threads give the same bytes: a GEMM's 16M-element inputs take a
  // fraction of a second instead of seconds of the job's start.
  constexpr int64_t kPerThread = int64_t{1} << 20;
  const int64_t threads = std::clamp<int64_t>(count / kPerThread, 1, kMaxFillThreads);
  const int64_t usable = std::min<int64_t>(threads, UsableCpus());
  if (usable <= 1) return fill(0, count);
  std::vector<std::thread> workers;
  const int64_t chunk = (count + usable - 1) / usable;
  for (int64_t t = 0; t < usable; ++t) {
    workers.emplace_back(fill, t * chunk, std::min(count, (t + 1) * chunk));
  }
  for (std::thread& worker : workers) worker.join();
}

absl::Status CompareTensors(v1::DType dtype, const void* actual,
                            const void* expected, int64_t count,
                            const v1::Tolerance& tolerance) {
  int64_t mismatches = 0;
  int64_t first = -1;
  int64_t worst = -1;  // the lowest index of the largest finite error
  double worst_error = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double a = LoadAsDouble(dtype, actual, i);
    const double e = LoadAsDouble(dtype, expected, i);
    const double error = std::fabs(a - e);
    const bool close = error <= tolerance.atol() + tolerance.rtol() * std::fabs(e);
    if (!close) {  // NaN compares false, so it never matches
      if (first < 0) first = i;
      ++mismatches;
      if (std::isfinite(error) && error > worst_error) {
        worst_error = error;
        worst = i;
      }
    }
  }
  const double allowed = tolerance.max_mismatch_ratio() * static_cast<double>(count);
  if (mismatches == 0 || static_cast<double>(mismatches) <= allowed) {
    return absl::OkStatus();
  }
  std::string message = absl::StrFormat(
      "%d of %d elements differ (allowed %d); first at [%d]: got %.9g, expected %.9g",
      mismatches, count, static_cast<int64_t>(allowed), first,
      LoadAsDouble(dtype, actual, first), LoadAsDouble(dtype, expected, first));
  if (worst >= 0) absl::StrAppendFormat(&message, "; worst |error| %.3g at [%d]", worst_error, worst);
  return absl::FailedPreconditionError(message);
}

}  // namespace tunefleet::worker
