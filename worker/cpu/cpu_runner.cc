#include "worker/cpu/cpu_runner.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "worker/host_tensors.h"
#include "worker/measurement.h"

namespace tunefleet::worker {
namespace {

absl::Status OutOfMemory(size_t bytes, const std::string& name) {
  return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes for ", name));
}

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The CPU backend's calibration kernel (docs/measurement.md, Calibration):
// fixed work that runs at the core's current speed, a pass over 256 KiB and
// a dependent chain of multiply-adds, some tens of microseconds. A CPU
// spec's reference is usually its slowest config, too slow to time again
// every half second. The arguments are ignored.
void CalibrationKernel(void** /*args*/) {
  static std::vector<double> data(32768, 1.0);
  double sum = 0;
  for (double& value : data) {
    value = value * 0.999999 + 1e-6;
    sum += value;
  }
  for (int i = 0; i < 20000; ++i) sum = sum * 0.9999999 + 1e-7;
  volatile double sink = sum;
  (void)sink;
}

// Per-argument seeds, decorrelated so that A and B of one job differ.
uint64_t ArgSeed(uint64_t seed, int index) {
  return seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(index + 1) * 0xd1b54a32d192ed03ULL;
}

// An artifact opened with dlopen, closed when the handle goes away.
class Library {
 public:
  static absl::StatusOr<Library> Open(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      return absl::FailedPreconditionError(
          absl::StrCat("dlopen ", path, ": ", error ? error : "unknown error"));
    }
    return Library(handle);
  }
  Library(Library&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  Library& operator=(Library&&) = delete;
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }

  absl::StatusOr<void (*)(void**)> Entry(const std::string& name) const {
    void* symbol = dlsym(handle_, name.c_str());
    if (symbol == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("entry \"", name, "\" not found (is it extern \"C\"?)"));
    }
    return reinterpret_cast<void (*)(void**)>(symbol);
  }

 private:
  explicit Library(void* handle) : handle_(handle) {}
  void* handle_;
};

v1::TrialResult Failed(const v1::RunRequest& request, v1::TrialStatus status,
                       absl::string_view error) {
  v1::TrialResult result;
  *result.mutable_config() = request.config();
  result.set_status(status);
  result.set_error(std::string(error));
  return result;
}

}  // namespace

// 64-byte aligned host memory.
struct CpuKernelRunner::Buffer {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data;
  size_t bytes = 0;

  static Buffer Allocate(size_t bytes) {
    Buffer buffer;
    buffer.bytes = bytes;
    buffer.data.reset(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
    return buffer;
  }
  void CopyFrom(const Buffer& other) { std::memcpy(data.get(), other.data.get(), bytes); }
};

struct CpuKernelRunner::Arg {
  std::string name;
  bool is_tensor = false;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  int64_t count = 0;
  Buffer pristine;  // IN / INOUT: the generated input
  Buffer expected;  // OUT / INOUT: the reference's output
  Buffer work;      // what the kernel sees
  void* pointer = nullptr;  // tensor: the value args[i] points to
  union {
    int64_t i64;
    int32_t i32;
    double f64;
    float f32;
  } scalar{};
};

CpuKernelRunner::CpuKernelRunner() = default;
CpuKernelRunner::~CpuKernelRunner() = default;

absl::Status CpuKernelRunner::AllocateArgs() {
  args_.clear();
  args_.resize(spec_.args_size());
  arg_ptrs_.assign(spec_.args_size(), nullptr);
  has_inout_ = false;
  for (int i = 0; i < spec_.args_size(); ++i) {
    const v1::Argument& spec_arg = spec_.args(i);
    Arg& arg = args_[i];
    arg.name = spec_arg.name();
    if (spec_arg.has_tensor_map()) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", arg.name, ": tensor maps are CUDA's"));
    }
    if (!spec_arg.has_tensor()) {
      arg.dtype = spec_arg.scalar().dtype();
      arg_ptrs_[i] = &arg.scalar;
      continue;
    }
    const v1::TensorArg& tensor = spec_arg.tensor();
    arg.is_tensor = true;
    arg.dtype = tensor.dtype();
    arg.role = tensor.role();
    ASSIGN_OR_RETURN(arg.count, space_->TensorElements(i));
    ASSIGN_OR_RETURN(const size_t bytes, TensorBytes(arg.name, arg.dtype, arg.count));
    arg.work = Buffer::Allocate(bytes);
    if (arg.work.data == nullptr) return OutOfMemory(bytes, arg.name);
    if (arg.role != v1::ROLE_OUT) {
      arg.pristine = Buffer::Allocate(bytes);
      if (arg.pristine.data == nullptr) return OutOfMemory(bytes, arg.name);
      FillTensor(arg.dtype, tensor.init(), ArgSeed(seed_, i), arg.count, arg.pristine.data.get());
    }
    if (arg.role != v1::ROLE_IN) {
      arg.expected = Buffer::Allocate(bytes);
      if (arg.expected.data == nullptr) return OutOfMemory(bytes, arg.name);
    }
    has_inout_ = has_inout_ || arg.role == v1::ROLE_INOUT;
    arg.pointer = arg.work.data.get();
    arg_ptrs_[i] = &arg.pointer;
  }
  return absl::OkStatus();
}

absl::Status CpuKernelRunner::BindScalars(const v1::Config& config) {
  RETURN_IF_ERROR(space_->Bind(config));
  for (int i = 0; i < spec_.args_size(); ++i) {
    Arg& arg = args_[i];
    if (arg.is_tensor) {
      ASSIGN_OR_RETURN(int64_t count, space_->TensorElements(i));
      if (count != arg.count) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", arg.name, " has ", count, " elements under this config, ",
            arg.count, " under the default: tensor shapes may not depend on params"));
      }
      continue;
    }
    ASSIGN_OR_RETURN(double value, space_->ScalarValue(i));
    switch (arg.dtype) {
      case v1::DTYPE_I64: arg.scalar.i64 = std::llround(value); break;
      case v1::DTYPE_I32: arg.scalar.i32 = static_cast<int32_t>(std::llround(value)); break;
      case v1::DTYPE_F64: arg.scalar.f64 = value; break;
      case v1::DTYPE_F32: arg.scalar.f32 = static_cast<float>(value); break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("scalar ", arg.name, ": dtype not supported on CPU"));
    }
  }
  return absl::OkStatus();
}

void CpuKernelRunner::ResetArgs() {
  for (Arg& arg : args_) {
    if (!arg.is_tensor) continue;
    if (arg.role == v1::ROLE_OUT) {
      std::memset(arg.work.data.get(), 0xff, arg.work.bytes);
    } else {
      arg.work.CopyFrom(arg.pristine);
    }
  }
}

void CpuKernelRunner::RestoreInouts() {
  for (Arg& arg : args_) {
    if (arg.is_tensor && arg.role == v1::ROLE_INOUT) arg.work.CopyFrom(arg.pristine);
  }
}

absl::Status CpuKernelRunner::CheckOutputs() {
  for (const Arg& arg : args_) {
    if (!arg.is_tensor || arg.role == v1::ROLE_IN) continue;
    absl::Status same = CompareTensors(arg.dtype, arg.work.data.get(),
                                       arg.expected.data.get(), arg.count,
                                       spec_.tolerance());
    if (!same.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(arg.name, ": ", same.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status CpuKernelRunner::Prepare(const v1::PrepareRequest& request) {
  prepared_ = false;
  spec_ = request.kernel();
  seed_ = request.seed();
  measure_ = WithMeasureDefaults(request.measure());
  if (!spec_.reference().library().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the CPU backend has no reference library \"", spec_.reference().library(), "\""));
  }
  DeviceLimits limits;
  for (const v1::DeviceLimit& limit : request.limits()) limits[limit.name()] = limit.value();
  ASSIGN_OR_RETURN(v1::Shape shape, NormalizeShape(spec_, request.shape()));
  ASSIGN_OR_RETURN(space_, ConfigSpace::Create(spec_, shape, limits));
  ASSIGN_OR_RETURN(v1::Config config, DefaultConfig(spec_));
  RETURN_IF_ERROR(space_->Bind(config));
  RETURN_IF_ERROR(AllocateArgs());
  RETURN_IF_ERROR(BindScalars(config));

  ASSIGN_OR_RETURN(Library reference, Library::Open(request.reference_artifact()));
  ASSIGN_OR_RETURN(KernelFn fn, reference.Entry(spec_.reference().entry()));
  ResetArgs();
  fn(arg_ptrs_.data());
  for (Arg& arg : args_) {
    if (arg.is_tensor && arg.role != v1::ROLE_IN) arg.expected.CopyFrom(arg.work);
  }
  calibration_ = Calibration();
  Calibrate();
  prepared_ = true;
  return absl::OkStatus();
}

bool CpuKernelRunner::Remeasure(const v1::MeasureOptions& measure) {
  if (!prepared_) return false;
  measure_ = WithMeasureDefaults(measure);
  return true;
}

void CpuKernelRunner::Calibrate() {
  if (!calibration_.Due(measure_, Clock::now())) return;
  // The core is warm from the run before; the millisecond sizes batches.
  v1::MeasureOptions options = CalibrationOptions(measure_);
  options.set_warmup_seconds(0.001);
  bool cut_early = false;
  const v1::Measurement m = Time(CalibrationKernel, options,
                                 /*call_seconds=*/0, /*best_seconds=*/0, &cut_early);
  calibration_.Record(m.median_seconds(), Clock::now());
}

v1::Measurement CpuKernelRunner::Time(KernelFn fn, const v1::MeasureOptions& options,
                                      double call_seconds, double best_seconds,
                                      bool* cut_early, double* warmup_seconds) {
  const v1::MeasureOptions measure = FitToDeadline(options, call_seconds);
  void** args = arg_ptrs_.data();
  int warmup_calls = 0;
  const Clock::time_point warmup_start = Clock::now();
  // A core that timed a kernel moments ago runs at its clock already.
  const double idle_seconds =
      last_timed_.has_value() ? std::chrono::duration<double>(warmup_start - *last_timed_).count()
                              : HUGE_VAL;
  const double warmup = WarmupSeconds(measure, idle_seconds, call_seconds);
  while (SecondsSince(warmup_start) < warmup) {
    RestoreInouts();
    fn(args);
    ++warmup_calls;
  }
  // RestoreInouts is inside the warm-up clock, so this overestimates a call:
  // batches only ever come out too small, never too large.
  const double per_call =
      warmup_calls > 0 ? SecondsSince(warmup_start) / warmup_calls : call_seconds;
  constexpr double kMinSampleSeconds = 20e-6;
  int batch = 1;
  if (!has_inout_ && per_call < kMinSampleSeconds) {
    batch = static_cast<int>(std::ceil(kMinSampleSeconds / std::max(per_call, 1e-9)));
  }
  std::vector<double> samples;  // ascending
  const Clock::time_point start = Clock::now();
  if (warmup_seconds != nullptr) {
    *warmup_seconds = std::chrono::duration<double>(start - warmup_start).count();
  }
  *cut_early = false;
  while (WantMoreSamples(measure, samples, SecondsSince(start))) {
    RestoreInouts();
    const Clock::time_point t0 = Clock::now();
    for (int b = 0; b < batch; ++b) fn(args);
    InsertSorted(SecondsSince(t0) / batch, &samples);
    if (CutEarly(measure, best_seconds, samples)) {
      *cut_early = true;
      break;
    }
  }
  last_timed_ = Clock::now();
  return Summarize(std::move(samples));
}

v1::TrialResult CpuKernelRunner::Run(const v1::RunRequest& request) {
  phases_.Clear();
  LapClock clock;
  if (!prepared_) {
    return Failed(request, v1::TRIAL_STATUS_LAUNCH_ERROR, "runner is not prepared");
  }
  absl::Status bound = BindScalars(request.config());
  if (!bound.ok()) {
    return Failed(request, v1::TRIAL_STATUS_INVALID_CONFIG, bound.message());
  }
  absl::StatusOr<Library> library = Library::Open(request.artifact());
  if (!library.ok()) {
    return Failed(request, v1::TRIAL_STATUS_LAUNCH_ERROR, library.status().message());
  }
  absl::StatusOr<KernelFn> fn = library->Entry(spec_.entry());
  if (!fn.ok()) return Failed(request, v1::TRIAL_STATUS_LAUNCH_ERROR, fn.status().message());

  ResetArgs();
  phases_.set_load_seconds(clock.Lap());
  const Clock::time_point start = Clock::now();
  (*fn)(arg_ptrs_.data());
  const double call_seconds = SecondsSince(start);
  absl::Status same = CheckOutputs();
  phases_.set_check_seconds(clock.Lap());
  if (!same.ok()) return Failed(request, v1::TRIAL_STATUS_WRONG_RESULT, same.message());

  v1::TrialResult result;
  *result.mutable_config() = request.config();
  bool cut_early = false;
  double warmup_seconds = 0;
  *result.mutable_measurement() =
      Time(*fn, measure_, call_seconds, request.best_seconds(), &cut_early, &warmup_seconds);
  Calibrate();  // its kernel's time counts with the samples'
  phases_.set_warmup_seconds(warmup_seconds);
  phases_.set_sampling_seconds(clock.Lap() - warmup_seconds);
  result.mutable_measurement()->set_calibration_seconds(calibration_.seconds());
  result.set_status(v1::TRIAL_STATUS_OK);
  result.set_cut_early(cut_early);
  // Inputs a kernel may have scribbled on are restored by the next ResetArgs.
  return result;
}

}  // namespace tunefleet::worker
