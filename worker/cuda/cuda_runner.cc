#include "common/file_util.h"
#include "worker/cuda/cuda_runner.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "worker/cuda/cublas_gemm.h"
#include "worker/cuda/cuda_devices.h"
#include "worker/cuda/device_compare.h"
#include "worker/cuda/tensor_map.h"
#include "worker/host_tensors.h"
#include "worker/measurement.h"

namespace tunefleet::worker::cuda {
namespace {

constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxBlockXY = 1024;
constexpr int64_t kMaxBlockZ = 64;
constexpr int kRegisterAllocationUnit = 256;  // registers per warp, Volta..Hopper

// A distinct, reproducible seed per tensor argument.
uint64_t SeedFor(uint64_t seed, int arg) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(arg + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Stores a scalar argument's value as the kernel expects it.
absl::Status PackScalar(v1::DType dtype, double value, uint64_t* slot) {
  *slot = 0;
  switch (dtype) {
    case v1::DTYPE_I64: {
      int64_t v = static_cast<int64_t>(value);
      std::memcpy(slot, &v, sizeof(v));
      return absl::OkStatus();
    }
    case v1::DTYPE_I32: {
      int32_t v = static_cast<int32_t>(value);
      std::memcpy(slot, &v, sizeof(v));
      return absl::OkStatus();
    }
    case v1::DTYPE_F64:
      std::memcpy(slot, &value, sizeof(value));
      return absl::OkStatus();
    case v1::DTYPE_F32: {
      float v = static_cast<float>(value);
      std::memcpy(slot, &v, sizeof(v));
      return absl::OkStatus();
    }
    case v1::DTYPE_F16: {
      uint16_t v = FloatToHalf(static_cast<float>(value));
      std::memcpy(slot, &v, sizeof(v));
      return absl::OkStatus();
    }
    case v1::DTYPE_BF16: {
      uint16_t v = FloatToBf16(static_cast<float>(value));
      std::memcpy(slot, &v, sizeof(v));
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError("scalar argument without a dtype");
  }
}

}  // namespace

struct CudaRunner::Tensor {
  int arg = -1;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  int64_t elements = 0;
  std::vector<int64_t> dims;  // as allocated (the default config's), outermost first
  size_t bytes = 0;
  CUdeviceptr data = 0;
  CUdeviceptr pristine = 0;  // ROLE_IN / ROLE_INOUT: the initial contents
  CUdeviceptr expected = 0;  // ROLE_OUT / ROLE_INOUT when checked: the reference's output
};

// One loaded cubin and the launch of its entry for one config.
struct CudaRunner::Kernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t smem = 0;
  std::vector<uint64_t> scalars;  // one slot per argument
  std::vector<CUtensorMap> maps;  // one per argument (zeros but for used tensor maps)
  std::vector<void*> params;      // cuLaunchKernel's kernelParams
};

struct CudaRunner::Job {
  v1::KernelSpec spec;
  v1::Shape shape;
  v1::Config default_config;
  v1::MeasureOptions measure;
  std::unique_ptr<ConfigSpace> space;
  std::vector<Tensor> tensors;
  std::vector<int> tensor_of_arg;  // argument index -> tensors index, or -1
  bool checked = false;            // expected outputs exist
  std::unique_ptr<CublasGemm> cublas;
  GemmPlan gemm;
  Kernel reference;
};

struct CudaRunner::Verdict {
  v1::TrialStatus status = v1::TRIAL_STATUS_OK;
  std::string error;
  bool ok() const { return status == v1::TRIAL_STATUS_OK; }
  static Verdict Fail(v1::TrialStatus status, std::string error) {
    return Verdict{status, std::move(error)};
  }
};

CudaRunner::CudaRunner(const CudaDriver* driver, CudaRunnerOptions options)
    : driver_(driver), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<CudaRunner>> CudaRunner::Create(CudaRunnerOptions options) {
  ASSIGN_OR_RETURN(const CudaDriver* driver, LoadCudaDriver());
  std::unique_ptr<CudaRunner> runner(new CudaRunner(driver, std::move(options)));
  RETURN_IF_ERROR(runner->Init());
  return runner;
}

absl::Status CudaRunner::Init() {
  int count = 0;
  CUresult result = driver_->DeviceGetCount(&count);
  if (result == CUDA_ERROR_NO_DEVICE || (result == CUDA_SUCCESS && count == 0)) {
    return absl::UnavailableError("no CUDA device is visible");
  }
  RETURN_IF_ERROR(driver_->Check(result, "cuDeviceGetCount"));
  int ordinal = -1;
  for (int i = 0; i < count && ordinal < 0; ++i) {
    ASSIGN_OR_RETURN(v1::Device device, DescribeCudaDevice(*driver_, i));
    if (options_.device_id.empty() || device.id() == options_.device_id) {
      device_ = std::move(device);
      ordinal = i;
    }
  }
  if (ordinal < 0) {
    return absl::NotFoundError(absl::StrCat("no CUDA device ", options_.device_id));
  }
  RETURN_IF_ERROR(driver_->Check(driver_->DeviceGet(&cu_device_, ordinal), "cuDeviceGet"));
  RETURN_IF_ERROR(driver_->Check(driver_->DevicePrimaryCtxRetain(&context_, cu_device_),
                                 "cuDevicePrimaryCtxRetain"));
  RETURN_IF_ERROR(driver_->Check(driver_->CtxSetCurrent(context_), "cuCtxSetCurrent"));
  RETURN_IF_ERROR(driver_->Check(driver_->StreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
                                 "cuStreamCreate"));
  ASSIGN_OR_RETURN(timer_, GpuTimer::Create(driver_, stream_,
                                            static_cast<size_t>(DeviceLimit(
                                                device_, "l2_bytes", 50 << 20))));
  return absl::OkStatus();
}

CudaRunner::~CudaRunner() {
  if (poisoned_) {
    // Nothing can be freed in a poisoned context; the process is exiting.
    if (timer_) timer_->Abandon();
    if (job_ && job_->cublas) job_->cublas->Abandon();
    return;
  }
  ReleaseJob();
  timer_.reset();
  if (stream_ != nullptr) driver_->StreamDestroy(stream_);
  if (context_ != nullptr) driver_->DevicePrimaryCtxRelease(cu_device_);
}

void CudaRunner::ReleaseJob() {
  if (!job_) return;
  if (poisoned_) {
    if (job_->cublas) job_->cublas->Abandon();
    job_.release();  // leaked on purpose: the context is gone
    return;
  }
  for (Tensor& tensor : job_->tensors) {
    if (tensor.data != 0) driver_->MemFree(tensor.data);
    if (tensor.pristine != 0) driver_->MemFree(tensor.pristine);
    if (tensor.expected != 0) driver_->MemFree(tensor.expected);
  }
  if (job_->reference.module != nullptr) driver_->ModuleUnload(job_->reference.module);
  job_.reset();
}

// ---------------------------------------------------------------- Prepare

absl::Status CudaRunner::Prepare(const v1::PrepareRequest& request) {
  if (poisoned_) return absl::FailedPreconditionError("the CUDA context is poisoned");
  ReleaseJob();
  auto job = std::make_unique<Job>();
  job->spec = request.kernel();
  ASSIGN_OR_RETURN(job->shape, NormalizeShape(job->spec, request.shape()));
  DeviceLimits limits = request.limits().empty()
                            ? LimitsFromDevice(device_)
                            : LimitsFromDevice([&] {
                                v1::Device d;
                                *d.mutable_limits() = request.limits();
                                return d;
                              }());
  ASSIGN_OR_RETURN(job->space, ConfigSpace::Create(job->spec, job->shape, limits));
  ASSIGN_OR_RETURN(job->default_config, DefaultConfig(job->spec));
  RETURN_IF_ERROR(job->space->Bind(job->default_config));
  job->measure = WithMeasureDefaults(request.measure());
  job_ = std::move(job);

  absl::Status status = AllocateTensors(request.seed());
  if (status.ok()) status = ComputeExpected(request.reference_artifact());
  if (!status.ok()) ReleaseJob();
  return status;
}

absl::Status CudaRunner::AllocateTensors(uint64_t seed) {
  Job& job = *job_;
  job.tensor_of_arg.assign(job.spec.args_size(), -1);
  for (int i = 0; i < job.spec.args_size(); ++i) {
    const v1::Argument& arg = job.spec.args(i);
    if (!arg.has_tensor()) continue;
    Tensor tensor;
    tensor.arg = i;
    tensor.dtype = arg.tensor().dtype();
    tensor.role = arg.tensor().role();
    ASSIGN_OR_RETURN(tensor.elements, job.space->TensorElements(i));
    ASSIGN_OR_RETURN(tensor.dims, job.space->TensorDims(i));
    ASSIGN_OR_RETURN(tensor.bytes, TensorBytes(arg.name(), tensor.dtype, tensor.elements));
    const size_t alloc = std::max<size_t>(tensor.bytes, 16);
    job.tensor_of_arg[i] = static_cast<int>(job.tensors.size());
    job.tensors.push_back(tensor);  // owned by the job from here on
    Tensor& owned = job.tensors.back();
    RETURN_IF_ERROR(driver_->Check(driver_->MemAlloc(&owned.data, alloc),
                                   absl::StrCat("cuMemAlloc(", arg.name(), ")")));
    if (owned.role == v1::ROLE_OUT || owned.bytes == 0) continue;
    std::vector<uint8_t> host(owned.bytes);
    FillTensor(owned.dtype, arg.tensor().init(), SeedFor(seed, i), owned.elements,
               host.data());
    RETURN_IF_ERROR(driver_->Check(driver_->MemcpyHtoD(owned.data, host.data(), owned.bytes),
                                   "cuMemcpyHtoD"));
    // Inputs too are restored before every run: a config that scribbles on
    // one must not change what the configs after it compute.
    RETURN_IF_ERROR(driver_->Check(driver_->MemAlloc(&owned.pristine, alloc), "cuMemAlloc"));
    RETURN_IF_ERROR(driver_->Check(
        driver_->MemcpyHtoD(owned.pristine, host.data(), owned.bytes), "cuMemcpyHtoD"));
  }
  // Pageable uploads may still be in flight; the kernels run on a
  // non-blocking stream that does not wait for them.
  return driver_->Check(driver_->CtxSynchronize(), "cuCtxSynchronize");
}

absl::Status CudaRunner::ComputeExpected(const std::string& reference_artifact) {
  Job& job = *job_;
  const v1::Reference& reference = job.spec.reference();
  if (reference.library() == kCublasGemmLibrary) {
    ASSIGN_OR_RETURN(job.gemm, PlanCublasGemm(job.spec, job.shape));
    ASSIGN_OR_RETURN(job.cublas, CublasGemm::Create(stream_));
    Verdict verdict = ResetOutputs();
    if (verdict.ok()) {
      verdict = LaunchAndWait(ReferenceLaunch(), options_.reference_timeout_seconds);
    }
    if (!verdict.ok()) return absl::InternalError(absl::StrCat("cuBLAS reference: ", verdict.error));
  } else if (!reference.library().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown reference library \"", reference.library(), "\""));
  } else if (!reference.entry().empty()) {
    RETURN_IF_ERROR(RunReferenceKernel(reference_artifact));
  } else {
    return absl::OkStatus();  // no reference: timed, never checked
  }
  return KeepExpected();
}

absl::Status CudaRunner::RunReferenceKernel(const std::string& artifact) {
  if (artifact.empty()) {
    return absl::InvalidArgumentError("the spec names a reference kernel but no "
                                      "reference_artifact was given");
  }
  Kernel& kernel = job_->reference;
  Verdict verdict = PrepareLaunch(job_->default_config, &kernel, Constraints::kIgnore);
  if (verdict.ok()) verdict = LoadKernel(artifact, job_->spec.reference().entry(), &kernel);
  if (verdict.ok()) verdict = CheckResources(&kernel);
  if (verdict.ok()) verdict = ResetOutputs();
  if (verdict.ok()) {
    verdict = LaunchAndWait(KernelLaunch(&kernel), options_.reference_timeout_seconds);
  }
  if (!verdict.ok()) {
    return absl::InternalError(absl::StrCat("reference kernel ", job_->spec.reference().entry(),
                                            ": ", TrialStatus_Name(verdict.status), ": ",
                                            verdict.error));
  }
  return absl::OkStatus();
}

absl::Status CudaRunner::KeepExpected() {
  if (!comparator_) {
    ASSIGN_OR_RETURN(comparator_, DeviceComparator::Create(driver_, cu_device_, stream_));
  }
  for (Tensor& tensor : job_->tensors) {
    if (tensor.role != v1::ROLE_OUT && tensor.role != v1::ROLE_INOUT) continue;
    if (tensor.bytes == 0) continue;
    RETURN_IF_ERROR(driver_->Check(driver_->MemAlloc(&tensor.expected, tensor.bytes),
                                   "cuMemAlloc(expected output)"));
    RETURN_IF_ERROR(driver_->Check(
        driver_->MemcpyDtoDAsync(tensor.expected, tensor.data, tensor.bytes, stream_),
        "cuMemcpyDtoDAsync(expected output)"));
  }
  RETURN_IF_ERROR(driver_->Check(driver_->StreamSynchronize(stream_), "cuStreamSynchronize"));
  job_->checked = true;
  return absl::OkStatus();
}

LaunchFn CudaRunner::ReferenceLaunch() {
  Job* job = job_.get();
  if (job->cublas) {
    return [job]() {
      const GemmPlan& plan = job->gemm;
      cublasStatus_t status = job->cublas->Run(
          plan, job->tensors[job->tensor_of_arg[plan.a_arg]].data,
          job->tensors[job->tensor_of_arg[plan.b_arg]].data,
          job->tensors[job->tensor_of_arg[plan.c_arg]].data);
      return status == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    };
  }
  return KernelLaunch(&job->reference);
}

absl::StatusOr<v1::Measurement> CudaRunner::MeasureReference() {
  if (poisoned_) return absl::FailedPreconditionError("the CUDA context is poisoned");
  if (!job_ || (!job_->cublas && job_->reference.function == nullptr)) {
    return absl::FailedPreconditionError("no prepared job with a reference");
  }
  v1::Measurement measurement;
  Verdict verdict = Measure(ReferenceLaunch(), &measurement);
  if (!verdict.ok()) return absl::InternalError(verdict.error);
  return measurement;
}

bool CudaRunner::Remeasure(const v1::MeasureOptions& measure) {
  if (!job_ || poisoned_) return false;
  job_->measure = WithMeasureDefaults(measure);
  return true;
}

// ---------------------------------------------------------------- Run

v1::TrialResult CudaRunner::Run(const v1::RunRequest& request) {
  phases_.Clear();
  LapClock clock;
  v1::TrialResult result;
  *result.mutable_config() = request.config();
  result.set_device_id(device_.id());
  Verdict verdict;
  if (poisoned_) {
    verdict = Verdict::Fail(v1::TRIAL_STATUS_CRASHED,
                            "the CUDA context was poisoned by an earlier trial");
  } else if (!job_) {
    verdict = Verdict::Fail(v1::TRIAL_STATUS_LAUNCH_ERROR, "no job prepared");
  }
  Kernel kernel;
  v1::Measurement measurement;
  if (verdict.ok()) verdict = PrepareLaunch(request.config(), &kernel);
  if (verdict.ok()) verdict = LoadKernel(request.artifact(), job_->spec.entry(), &kernel);
  if (verdict.ok()) verdict = CheckResources(&kernel);
  if (verdict.ok()) verdict = ResetOutputs();
  phases_.set_load_seconds(clock.Lap());
  const LaunchFn launch = KernelLaunch(&kernel);
  if (verdict.ok()) verdict = LaunchAndWait(launch, options_.launch_timeout_seconds);
  if (verdict.ok()) verdict = CompareOutputs();
  phases_.set_check_seconds(clock.Lap());
  bool cut_early = false;
  if (verdict.ok()) {
    verdict = Measure(launch, &measurement, request.best_seconds(), &cut_early);
    const double timed = clock.Lap();
    phases_.set_warmup_seconds(std::min(timer_->last_warmup_seconds(), timed));
    phases_.set_sampling_seconds(timed - phases_.warmup_seconds());
  }
  if (kernel.module != nullptr && !poisoned_) driver_->ModuleUnload(kernel.module);
  phases_.set_load_seconds(phases_.load_seconds() + clock.Lap());

  result.set_status(verdict.status);
  if (verdict.ok()) {
    *result.mutable_measurement() = measurement;
    result.set_cut_early(cut_early);
  } else {
    result.set_error(verdict.error);
  }
  return result;
}

CudaRunner::Verdict CudaRunner::PrepareLaunch(const v1::Config& config, Kernel* kernel,
                                              Constraints constraints) {
  Job& job = *job_;
  auto invalid = [](const absl::Status& status) {
    return Verdict::Fail(v1::TRIAL_STATUS_INVALID_CONFIG, std::string(status.message()));
  };
  absl::StatusOr<v1::Config> normalized = NormalizeConfig(job.spec, config);
  if (!normalized.ok()) return invalid(normalized.status());
  if (absl::Status s = job.space->Bind(*normalized); !s.ok()) return invalid(s);
  if (constraints == Constraints::kApply) {
    if (absl::Status s = job.space->CheckConstraints(); !s.ok()) return invalid(s);
  }
  absl::StatusOr<std::array<int64_t, 3>> grid = job.space->Grid();
  absl::StatusOr<std::array<int64_t, 3>> block = job.space->Block();
  absl::StatusOr<int64_t> smem = job.space->SharedMemBytes();
  if (!grid.ok()) return invalid(grid.status());
  if (!block.ok()) return invalid(block.status());
  if (!smem.ok()) return invalid(smem.status());
  kernel->grid = *grid;
  kernel->block = *block;
  kernel->smem = *smem;
  kernel->scalars.assign(job.spec.args_size(), 0);
  kernel->maps.assign(job.spec.args_size(), CUtensorMap{});
  kernel->params.assign(job.spec.args_size(), nullptr);
  for (int i = 0; i < job.spec.args_size(); ++i) {
    const v1::Argument& arg = job.spec.args(i);
    if (arg.has_tensor()) {
      kernel->params[i] = &job.tensors[job.tensor_of_arg[i]].data;
      continue;
    }
    if (arg.has_tensor_map()) {
      if (absl::Status s = EncodeMap(i, &kernel->maps[i]); !s.ok()) return invalid(s);
      kernel->params[i] = &kernel->maps[i];
      continue;
    }
    absl::StatusOr<double> value = job.space->ScalarValue(i);
    if (!value.ok()) return invalid(value.status());
    if (absl::Status s = PackScalar(arg.scalar().dtype(), *value, &kernel->scalars[i]);
        !s.ok()) {
      return invalid(s);
    }
    kernel->params[i] = &kernel->scalars[i];
  }
  return Verdict();
}

absl::Status CudaRunner::EncodeMap(int arg, CUtensorMap* map) {
  Job& job = *job_;
  ASSIGN_OR_RETURN(const ConfigSpace::TensorMapBox box, job.space->TensorMapValue(arg));
  if (!box.used) return absl::OkStatus();  // the kernel gets zeros
  // The dims the tensor was allocated with, whatever a spec's shape
  // expressions say at this config: the map never covers more than the
  // allocation.
  const Tensor& tensor = job.tensors[job.tensor_of_arg[box.tensor_arg]];
  absl::StatusOr<TensorMapLayout> layout =
      PlanTensorMap(tensor.dtype, tensor.dims, box.box, box.swizzle_bytes);
  absl::Status status = layout.ok() ? EncodeTensorMap(*driver_, *layout, tensor.data, map)
                                    : layout.status();
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(job.spec.args(arg).name(), ": ", status.message()));
  }
  return absl::OkStatus();
}

CudaRunner::Verdict CudaRunner::LoadKernel(const std::string& artifact,
                                           const std::string& entry, Kernel* kernel) {
  absl::StatusOr<std::string> image = ReadFile(artifact);
  if (!image.ok()) {
    return Verdict::Fail(v1::TRIAL_STATUS_LAUNCH_ERROR, std::string(image.status().message()));
  }
  CUresult result = driver_->ModuleLoadData(&kernel->module, image->data());
  if (result != CUDA_SUCCESS) {
    kernel->module = nullptr;
    return FromGpu(GpuResult{result, false, "cuModuleLoadData"}, "cuModuleLoadData");
  }
  result = driver_->ModuleGetFunction(&kernel->function, kernel->module, entry.c_str());
  if (result != CUDA_SUCCESS) {
    return FromGpu(GpuResult{result, false, "cuModuleGetFunction"},
                   absl::StrCat("cuModuleGetFunction(", entry, ")"));
  }
  return Verdict();
}

CudaRunner::Verdict CudaRunner::CheckResources(Kernel* kernel) {
  int regs = 0, static_smem = 0, max_threads = 0, local = 0;
  const std::pair<CUfunction_attribute, int*> attributes[] = {
      {CU_FUNC_ATTRIBUTE_NUM_REGS, &regs},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &static_smem},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &max_threads},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &local}};
  for (const auto& [attribute, value] : attributes) {
    CUresult result = driver_->FuncGetAttribute(value, attribute, kernel->function);
    if (result != CUDA_SUCCESS) {
      return FromGpu(GpuResult{result, false, "cuFuncGetAttribute"}, "cuFuncGetAttribute");
    }
  }
  const int64_t threads = kernel->block[0] * kernel->block[1] * kernel->block[2];
  const int64_t warps = (threads + 31) / 32;
  const int64_t regs_needed =
      warps * ((int64_t{regs} * 32 + kRegisterAllocationUnit - 1) / kRegisterAllocationUnit *
               kRegisterAllocationUnit);
  const int64_t regs_per_block = static_cast<int64_t>(DeviceLimit(device_, "regs_per_block", 65536));
  const int64_t smem_optin =
      static_cast<int64_t>(DeviceLimit(device_, "max_smem_per_block_optin", 49152));
  const std::string usage = absl::StrCat(
      " (", regs, " registers/thread, ", static_smem, " B static + ", kernel->smem,
      " B dynamic shared memory, ", local, " B local, ", threads, " threads)");
  auto invalid = [&](const std::string& why) {
    return Verdict::Fail(v1::TRIAL_STATUS_INVALID_CONFIG, why + usage);
  };
  if (options_.check_resources) {
    const auto& g = kernel->grid;
    const auto& b = kernel->block;
    if (g[0] < 1 || g[1] < 1 || g[2] < 1 || threads < 1) return invalid("empty grid or block");
    if (g[0] > kMaxGridX || g[1] > kMaxGridYZ || g[2] > kMaxGridYZ) return invalid("grid too large");
    if (b[0] > kMaxBlockXY || b[1] > kMaxBlockXY || b[2] > kMaxBlockZ) return invalid("block dims too large");
    if (threads > max_threads) {
      return invalid(absl::StrCat("block of ", threads, " threads exceeds the kernel's limit of ",
                                  max_threads));
    }
    if (regs_needed > regs_per_block) {
      return invalid(absl::StrCat("needs ", regs_needed, " registers per block, the limit is ",
                                  regs_per_block));
    }
    if (static_smem + kernel->smem > smem_optin) {
      return invalid(absl::StrCat("shared memory over the limit of ", smem_optin, " B"));
    }
  }
  if (kernel->smem > 0) {
    CUresult result = driver_->FuncSetAttribute(
        kernel->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(std::min<int64_t>(kernel->smem, INT32_MAX)));
    if (result != CUDA_SUCCESS && options_.check_resources) {
      return invalid(absl::StrCat("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES): ",
                                  driver_->Describe(result)));
    }
  }
  return Verdict();
}

CudaRunner::Verdict CudaRunner::ResetOutputs() {
  for (const Tensor& tensor : job_->tensors) {
    if (tensor.bytes == 0) continue;
    CUresult result = CUDA_SUCCESS;
    if (tensor.role == v1::ROLE_IN || tensor.role == v1::ROLE_INOUT) {
      result = driver_->MemcpyDtoDAsync(tensor.data, tensor.pristine, tensor.bytes, stream_);
    } else if (tensor.role == v1::ROLE_OUT) {
      result = driver_->MemsetD8Async(tensor.data, 0xFF, tensor.bytes, stream_);
    }
    if (result != CUDA_SUCCESS) {
      return FromGpu(GpuResult{result, false, "reset outputs"}, "restoring inputs");
    }
  }
  return Verdict();
}

LaunchFn CudaRunner::KernelLaunch(Kernel* kernel) {
  const CudaDriver* driver = driver_;
  CUstream stream = stream_;
  return [driver, stream, kernel]() {
    return driver->LaunchKernel(
        kernel->function, static_cast<unsigned>(kernel->grid[0]),
        static_cast<unsigned>(kernel->grid[1]), static_cast<unsigned>(kernel->grid[2]),
        static_cast<unsigned>(kernel->block[0]), static_cast<unsigned>(kernel->block[1]),
        static_cast<unsigned>(kernel->block[2]), static_cast<unsigned>(kernel->smem), stream,
        kernel->params.data(), nullptr);
  };
}

CudaRunner::Verdict CudaRunner::LaunchAndWait(const LaunchFn& launch, double timeout_seconds) {
  CUresult result = launch();
  if (result != CUDA_SUCCESS) return FromGpu(GpuResult{result, false, "launch"}, "launch");
  return FromGpu(timer_->Sync(timeout_seconds), "kernel");
}

CudaRunner::Verdict CudaRunner::FromGpu(const GpuResult& result, const std::string& what) {
  if (result.ok()) return Verdict();
  if (result.timed_out) {
    poisoned_ = true;
    return Verdict::Fail(v1::TRIAL_STATUS_TIMEOUT,
                         absl::StrCat(what, ": ", result.what));
  }
  std::string error = absl::StrCat(what, ": ", driver_->Describe(result.error));
  if (IsStickyError(result.error)) {
    poisoned_ = true;
    return Verdict::Fail(v1::TRIAL_STATUS_CRASHED, std::move(error));
  }
  return Verdict::Fail(v1::TRIAL_STATUS_LAUNCH_ERROR, std::move(error));
}

CudaRunner::Verdict CudaRunner::CompareOutputs() {
  if (!job_->checked) return Verdict();
  for (const Tensor& tensor : job_->tensors) {
    if (tensor.expected == 0) continue;
    CUresult error = CUDA_SUCCESS;
    absl::StatusOr<DeviceComparison> comparison = comparator_->Compare(
        tensor.dtype, tensor.data, tensor.expected, tensor.elements, job_->spec.tolerance(),
        &error);
    if (error != CUDA_SUCCESS) {
      return FromGpu(GpuResult{error, false, "comparing outputs"}, "comparing outputs");
    }
    if (!comparison.ok()) {
      return Verdict::Fail(v1::TRIAL_STATUS_LAUNCH_ERROR,
                           std::string(comparison.status().message()));
    }
    if (!comparison->ok()) {
      return Verdict::Fail(v1::TRIAL_STATUS_WRONG_RESULT,
                           absl::StrCat("argument ", job_->spec.args(tensor.arg).name(), ": ",
                                        comparison->Describe()));
    }
  }
  return Verdict();
}

CudaRunner::Verdict CudaRunner::Measure(const LaunchFn& launch, v1::Measurement* measurement,
                                        double best_seconds, bool* cut_early) {
  return FromGpu(timer_->Measure(launch, job_->measure, options_.launch_timeout_seconds,
                                 measurement, best_seconds, cut_early),
                 "measuring");
}

}  // namespace tunefleet::worker::cuda
