// The CUDA backend in-process: NVRTC compiler, runner, the library's kernels
// and the failure-injection space (tests/gpu/faulty). Every test skips when
// what it needs is missing: NVRTC for the compile tests, a GPU for the rest.
// Configs that poison the CUDA context run in a re-executed copy of this
// binary (threadsafe death tests) so that this process survives them.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/support/unimplemented_coordinator.h"
#include "common/file_util.h"
#include "worker/artifact_sharing.h"
#include "worker/backends.h"
#include "worker/child_process.h"
#include "worker/cuda/cuda_backend.h"
#include "worker/cuda/cuda_devices.h"
#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/cuda_runner.h"
#include "worker/cuda/nvrtc_compiler.h"

namespace tunefleet::worker::cuda {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::TempDir;

constexpr int kPoisonedExit = 3;

KernelBundle LoadKernel(const std::string& relative_dir) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/" + relative_dir);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  return bundle.ok() ? *bundle : KernelBundle();
}

v1::Config Config(const v1::KernelSpec& spec, const std::string& text) {
  absl::StatusOr<v1::Config> parsed = ParseConfig(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<v1::Config> config = NormalizeConfig(spec, *parsed);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : v1::Config();
}

v1::Shape Shape(const std::string& text) {
  absl::StatusOr<v1::Shape> shape = ParseShape(text);
  EXPECT_TRUE(shape.ok()) << shape.status();
  return *shape;
}

// A device for compile-only tests: Hopper limits, no GPU needed.
v1::Device PlaceholderDevice() {
  v1::Device device;
  device.set_id("placeholder");
  device.set_backend(v1::BACKEND_CUDA);
  for (const auto& [name, value] : PlaceholderLimits(v1::BACKEND_CUDA)) {
    v1::DeviceLimit* limit = device.add_limits();
    limit->set_name(name);
    limit->set_value(value);
  }
  return device;
}

std::string HelperPath() {
  std::string beside = DefaultNvrtcHelperPath();
  if (!beside.empty()) return beside;
  std::string built = ::tunefleet::testing::BuildDir() + "/bin/tunefleet-nvrtc";
  return std::filesystem::exists(built) ? built : "";
}

// Skips the test when NVRTC cannot be loaded.
#define REQUIRE_NVRTC()                                                  \
  do {                                                                   \
    if (!LoadNvrtc().ok()) GTEST_SKIP() << LoadNvrtc().status();         \
  } while (0)

// The worker's default sandbox (bubblewrap): compiles run in it.
Sandbox BwrapSandbox() {
  SandboxOptions options;
  options.mode = SandboxMode::kBwrap;
  absl::StatusOr<Sandbox> sandbox = Sandbox::Create(options);
  EXPECT_TRUE(sandbox.ok()) << sandbox.status();
  return sandbox.ok() ? *sandbox : Sandbox();
}

std::unique_ptr<NvrtcCompiler> MakeCompiler(const std::string& cache_dir,
                                            double timeout_seconds = 120) {
  NvrtcCompilerOptions options;
  options.cache_dir = cache_dir;
  options.helper_path = HelperPath();
  if (!options.helper_path.empty()) options.sandbox = BwrapSandbox();
  options.timeout_seconds = timeout_seconds;
  absl::StatusOr<std::unique_ptr<NvrtcCompiler>> compiler = NvrtcCompiler::Create(options);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  return compiler.ok() ? std::move(*compiler) : nullptr;
}

CompileOutcome MustCompile(NvrtcCompiler* compiler, const KernelBundle& bundle,
                           const v1::Config& config, const v1::Device& device,
                           bool reference = false) {
  CompileJob job{&bundle.spec, &bundle.sources, config, device, reference, v1::Shape()};
  absl::StatusOr<CompileOutcome> outcome = compiler->Compile(job);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  return outcome.ok() ? *outcome : CompileOutcome();
}

// ------------------------------------------------------------ no GPU needed

TEST(CudaDriver, LoadsOrSaysWhyNot) {
  absl::StatusOr<const CudaDriver*> driver = LoadCudaDriver();
  if (!driver.ok()) {
    EXPECT_TRUE(absl::IsUnavailable(driver.status()) ||
                absl::IsFailedPrecondition(driver.status()))
        << driver.status();
    return;
  }
  EXPECT_EQ((*driver)->ErrorName(CUDA_ERROR_ILLEGAL_ADDRESS), "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_TRUE(IsStickyError(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_FALSE(IsStickyError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
}

TEST(CudaSpaces, GemmSpaceHasEnoughValidConfigs) {
  KernelBundle gemm = LoadKernel("kernels/cuda/gemm_f16");
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      gemm.spec, Shape("M=4096,N=4096,K=4096"), PlaceholderLimits(v1::BACKEND_CUDA));
  ASSERT_OK(space);
  ConfigEnumerator enumerator(space->get());
  uint64_t ordinal = 0;
  int valid = 0;
  while (enumerator.Next(&ordinal)) ++valid;
  EXPECT_GE(valid, 48);
  ASSERT_OK((*space)->Bind(Config(gemm.spec, gemm.spec.default_config())));
  EXPECT_OK((*space)->CheckConstraints());
}

TEST(CudaSpaces, EveryConfigSetEntryIsValid) {
  const std::map<std::string, std::string> kernels = {
      {"kernels/cuda/gemm_f16", "M=4096,N=4096,K=4096"},
      {"kernels/cuda/softmax", "ROWS=32768,COLS=4096"},
      {"kernels/cuda/flash_attn_fwd", "BATCH=4,HEADS=16,SEQ=2048"},
  };
  for (const auto& [dir, shape] : kernels) {
    if (!std::filesystem::exists(SourceDir() + "/" + dir)) continue;
    SCOPED_TRACE(dir);
    KernelBundle bundle = LoadKernel(dir);
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
        bundle.spec, Shape(shape), PlaceholderLimits(v1::BACKEND_CUDA));
    ASSERT_OK(space);
    // gemm_f16's "decode" set is valid where it is for: short-M shapes.
    absl::StatusOr<std::unique_ptr<ConfigSpace>> decode = ConfigSpace::Create(
        bundle.spec, Shape("M=16,N=4096,K=4096"), PlaceholderLimits(v1::BACKEND_CUDA));
    std::vector<std::pair<std::string, ConfigSpace*>> configs = {
        {bundle.spec.default_config(), space->get()}};
    for (const v1::ConfigSet& set : bundle.spec.config_sets()) {
      ConfigSpace* at = set.name() == "decode" && decode.ok() ? decode->get() : space->get();
      for (const std::string& text : set.configs()) configs.emplace_back(text, at);
    }
    for (const auto& [text, at] : configs) {
      ASSERT_OK(at->Bind(Config(bundle.spec, text)));
      absl::Status valid = at->CheckConstraints();
      EXPECT_TRUE(valid.ok()) << text << ": " << valid;
    }
  }
}

TEST(NvrtcCompiler, CompilesEveryKernelDefaultAndReference) {
  REQUIRE_NVRTC();
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path());
  ASSERT_NE(compiler, nullptr);
  EXPECT_THAT(compiler->toolkit(), HasSubstr("nvrtc 13."));
  for (const char* dir : {"kernels/cuda/gemm_f16", "kernels/cuda/softmax",
                          "kernels/cuda/flash_attn_fwd", "tests/gpu/faulty"}) {
    if (!std::filesystem::exists(SourceDir() + "/" + dir)) continue;
    SCOPED_TRACE(dir);
    KernelBundle bundle = LoadKernel(dir);
    v1::Config config = Config(bundle.spec, bundle.spec.default_config());
    CompileOutcome outcome = MustCompile(compiler.get(), bundle, config, PlaceholderDevice());
    EXPECT_TRUE(outcome.ok) << outcome.log;
    EXPECT_TRUE(std::filesystem::exists(outcome.artifact));
    EXPECT_THAT(outcome.log, HasSubstr("registers"));  // --ptxas-options=-v
    if (!bundle.spec.reference().entry().empty()) {
      CompileOutcome ref = MustCompile(compiler.get(), bundle, config, PlaceholderDevice(), true);
      EXPECT_TRUE(ref.ok) << ref.log;
      EXPECT_NE(ref.artifact, outcome.artifact);
    }
  }
}

TEST(NvrtcCompiler, CachesByConfigAndSource) {
  REQUIRE_NVRTC();
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path());
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  v1::Config good = Config(bundle.spec, "FAULT=0,BLOCK=128");
  CompileOutcome first = MustCompile(compiler.get(), bundle, good, PlaceholderDevice());
  CompileOutcome second = MustCompile(compiler.get(), bundle, good, PlaceholderDevice());
  ASSERT_TRUE(first.ok && second.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(first.artifact, second.artifact);
  CompileOutcome other = MustCompile(compiler.get(), bundle,
                                     Config(bundle.spec, "FAULT=0,BLOCK=256"), PlaceholderDevice());
  EXPECT_NE(other.artifact, first.artifact);
  bundle.sources[0].set_content(bundle.sources[0].content() + "\n// edited\n");
  bundle.sources[0].clear_digest();
  CompileOutcome edited = MustCompile(compiler.get(), bundle, good, PlaceholderDevice());
  EXPECT_FALSE(edited.cached);
  EXPECT_NE(edited.artifact, first.artifact);
}

// The coordinator's shelf as one principal sees it: an in-memory stand-in
// behind the worker's Coordinator seam (the real one: artifact_sharing_test).
class Shelf final : public ::tunefleet::testing::UnimplementedCoordinator {
 public:
  absl::StatusOr<v1::Artifact> GetArtifact(const std::string& key) override {
    auto it = artifacts_.find(key);
    if (it == artifacts_.end()) return absl::NotFoundError(key);
    return it->second;
  }
  // As SharedArtifacts: the same bytes again are acknowledged, others are
  // a conflict.
  absl::Status PutArtifact(const v1::PutArtifactRequest& request) override {
    auto [it, added] = artifacts_.emplace(request.key(), request.artifact());
    if (added || it->second.content() == request.artifact().content()) return absl::OkStatus();
    ++conflicts_;
    return absl::FailedPreconditionError("two publishes differed");
  }
  size_t size() const { return artifacts_.size(); }
  int conflicts() const { return conflicts_; }

 private:
  std::map<std::string, v1::Artifact> artifacts_;
  int conflicts_ = 0;
};

TEST(NvrtcCompiler, ACubinCompiledOnceServesASecondWorker) {
  REQUIRE_NVRTC();
  TempDir first_cache, second_cache;
  std::unique_ptr<NvrtcCompiler> first = MakeCompiler(first_cache.path());
  std::unique_ptr<NvrtcCompiler> second = MakeCompiler(second_cache.path());
  Shelf shelf;
  ArtifactSharing first_sharing(first.get(), &shelf);
  ArtifactSharing second_sharing(second.get(), &shelf);
  KernelBundle bundle = LoadKernel("kernels/cuda/gemm_f16");
  const v1::Config config = Config(bundle.spec, bundle.spec.default_config());
  CompileJob job{&bundle.spec, &bundle.sources, config, PlaceholderDevice(), false, v1::Shape()};

  std::optional<ArtifactLocation> where = first->Locate(job);
  ASSERT_TRUE(where.has_value());
  absl::StatusOr<CompileOutcome> compiled = first_sharing.Compile(job);
  ASSERT_TRUE(compiled.ok() && compiled->ok) << compiled.status() << compiled->log;
  EXPECT_FALSE(compiled->cached || compiled->fetched);
  EXPECT_EQ(compiled->artifact, where->artifact_path);
  EXPECT_EQ(shelf.size(), 1u);

  absl::StatusOr<CompileOutcome> fetched = second_sharing.Compile(job);
  ASSERT_TRUE(fetched.ok() && fetched->ok) << fetched.status() << fetched->log;
  EXPECT_TRUE(fetched->fetched);
  EXPECT_EQ(fetched->seconds, 0);
  EXPECT_EQ(ReadFile(fetched->artifact).value_or("a"), ReadFile(compiled->artifact).value_or("b"));
  EXPECT_THAT(fetched->log, HasSubstr("registers"));  // ptxas's report came along
  EXPECT_EQ(second_sharing.fetched(), 1);
  EXPECT_EQ(first_sharing.shared(), 1);

  // An own build (the finalists round) sets the fetched cubin aside and
  // compiles it from the sources, to the same bytes: NVRTC is
  // deterministic, so the shelf sees no conflict.
  CompileJob own = job;
  own.own_build = true;
  absl::StatusOr<CompileOutcome> rebuilt = second_sharing.Compile(own);
  ASSERT_TRUE(rebuilt.ok() && rebuilt->ok) << rebuilt.status() << rebuilt->log;
  EXPECT_FALSE(rebuilt->cached || rebuilt->fetched);
  EXPECT_GT(rebuilt->seconds, 0);
  EXPECT_EQ(ReadFile(rebuilt->artifact).value_or("a"), ReadFile(compiled->artifact).value_or("b"));
  EXPECT_EQ(second_sharing.shared(), 1);
  EXPECT_EQ(shelf.conflicts(), 0);
  // Built here now: the next own build is a plain cache hit.
  absl::StatusOr<CompileOutcome> again = second_sharing.Compile(own);
  ASSERT_TRUE(again.ok() && again->ok);
  EXPECT_TRUE(again->cached);
}

TEST(NvrtcCompiler, CompileErrorsKeepTheLog) {
  REQUIRE_NVRTC();
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path());
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  CompileOutcome syntax =
      MustCompile(compiler.get(), bundle, Config(bundle.spec, "FAULT=10,BLOCK=128"),
                  PlaceholderDevice());
  EXPECT_FALSE(syntax.ok);
  EXPECT_FALSE(syntax.timed_out);
  EXPECT_THAT(syntax.log, HasSubstr("error"));
  CompileOutcome static_smem =
      MustCompile(compiler.get(), bundle, Config(bundle.spec, "FAULT=7,BLOCK=128"),
                  PlaceholderDevice());
  EXPECT_FALSE(static_smem.ok);
  EXPECT_THAT(static_smem.log, HasSubstr("shared"));
  // The first line names the error (ptxas prints information before it) and
  // the log holds no NUL bytes, so one-line summaries show the cause.
  for (const CompileOutcome* outcome : {&syntax, &static_smem}) {
    const std::string first_line = outcome->log.substr(0, outcome->log.find('\n'));
    EXPECT_THAT(first_line, HasSubstr("error")) << outcome->log;
    EXPECT_EQ(outcome->log.find('\0'), std::string::npos);
  }
}

TEST(NvrtcCompiler, SandboxedCompileNeitherReadsNorEchoesFilesOutsideTheJob) {
  REQUIRE_NVRTC();
  if (HelperPath().empty()) GTEST_SKIP() << "no tunefleet-nvrtc helper built";
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path());
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  bundle.sources[0].set_content("#include \"/etc/passwd\"\n" + bundle.sources[0].content());
  bundle.sources[0].clear_digest();
  CompileOutcome outcome = MustCompile(compiler.get(), bundle,
                                       Config(bundle.spec, "FAULT=0,BLOCK=128"),
                                       PlaceholderDevice());
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.log, ::testing::Not(HasSubstr("root:")));
  EXPECT_THAT(outcome.log, HasSubstr("passwd"));  // "cannot open source file"
}

TEST(NvrtcCompiler, RefusesCompileOptionsOffTheAllowlist) {
  REQUIRE_NVRTC();
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path());
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  bundle.spec.add_compile_options("--pre-include=/etc/passwd");
  CompileOutcome outcome = MustCompile(compiler.get(), bundle,
                                       Config(bundle.spec, "FAULT=0,BLOCK=128"),
                                       PlaceholderDevice());
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.log, HasSubstr("\"--pre-include=/etc/passwd\" is not allowed"));
}

TEST(NvrtcCompiler, RuntimeFaultsCompile) {
  REQUIRE_NVRTC();
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path());
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  for (int fault : {1, 2, 3, 4, 5, 6, 8, 9, 11}) {
    CompileOutcome outcome = MustCompile(
        compiler.get(), bundle, Config(bundle.spec, absl::StrCat("FAULT=", fault, ",BLOCK=128")),
        PlaceholderDevice());
    EXPECT_TRUE(outcome.ok) << "FAULT=" << fault << ": " << outcome.log;
  }
}

TEST(NvrtcCompiler, PathologicalCompileIsAbandoned) {
  REQUIRE_NVRTC();
  if (HelperPath().empty()) GTEST_SKIP() << "no tunefleet-nvrtc helper built";
  TempDir cache;
  std::unique_ptr<NvrtcCompiler> compiler = MakeCompiler(cache.path(), 3.0);
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  const auto start = std::chrono::steady_clock::now();
  CompileOutcome slow = MustCompile(compiler.get(), bundle,
                                    Config(bundle.spec, "FAULT=12,BLOCK=128"), PlaceholderDevice());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(slow.ok);
  EXPECT_TRUE(slow.timed_out) << slow.log;
  EXPECT_LT(seconds, 10);
}

TEST(NvrtcCompiler, ArchSpecificTargetOnRequest) {
  REQUIRE_NVRTC();
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  CompileJob job{&bundle.spec, &bundle.sources, Config(bundle.spec, "FAULT=0,BLOCK=128"),
                 PlaceholderDevice(), false, v1::Shape()};
  absl::StatusOr<std::vector<std::string>> options = NvrtcOptionsFor(job, "/src");
  ASSERT_OK(options);
  EXPECT_THAT(*options, ::testing::Contains("--gpu-architecture=sm_90"));
  EXPECT_THAT(*options, ::testing::Contains("-DFAULT=0"));
  bundle.spec.add_compile_options(kArchSpecificOption);
  options = NvrtcOptionsFor(job, "/src");
  ASSERT_OK(options);
  EXPECT_THAT(*options, ::testing::Contains("--gpu-architecture=sm_90a"));
  EXPECT_THAT(*options, ::testing::Not(::testing::Contains(kArchSpecificOption)));
}

// ------------------------------------------------------------ GPU needed

// One runner for the in-process tests of this binary (one CUDA context).
CudaRunner* SharedRunner() {
  static absl::StatusOr<std::unique_ptr<CudaRunner>>* runner =
      new absl::StatusOr<std::unique_ptr<CudaRunner>>(CudaRunner::Create(CudaRunnerOptions()));
  return runner->ok() ? runner->value().get() : nullptr;
}

bool HaveGpu() {
  absl::StatusOr<std::vector<v1::Device>> devices = ListCudaDevices();
  return devices.ok() && !devices->empty();
}

#define REQUIRE_GPU()                                          \
  do {                                                         \
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU here";        \
  } while (0)

// Whether the first GPU is a Hopper (compute capability 9.x), where the
// configs built for sm_90a (TMA, wgmma) exist.
bool HaveHopper() {
  absl::StatusOr<std::vector<v1::Device>> devices = ListCudaDevices();
  if (!devices.ok() || devices->empty()) return false;
  const DeviceLimits limits = LimitsFromDevice(devices->front());
  const auto major = limits.find("cc_major");
  return major != limits.end() && major->second == 9;
}

#define REQUIRE_HOPPER()                                                       \
  do {                                                                         \
    if (!HaveHopper()) GTEST_SKIP() << "no Hopper GPU here (sm_90a configs)";  \
  } while (0)

// Compiles what a job needs and prepares `runner` for it.
class GpuJob {
 public:
  GpuJob(CudaRunner* runner, const std::string& dir, const std::string& shape,
         double budget_seconds = 0.05, double low_clock_fraction = 0)
      : runner_(runner), bundle_(LoadKernel(dir)) {
    compiler_ = MakeCompiler(cache_.path(), 300);
    v1::PrepareRequest request;
    *request.mutable_kernel() = bundle_.spec;
    *request.mutable_shape() = Shape(shape);
    request.set_seed(42);
    request.mutable_measure()->set_budget_seconds(budget_seconds);
    request.mutable_measure()->set_warmup_seconds(0.01);
    request.mutable_measure()->set_low_clock_fraction(low_clock_fraction);
    const v1::Reference& reference = bundle_.spec.reference();
    if (!reference.entry().empty() && reference.library().empty()) {
      CompileOutcome ref = MustCompile(compiler_.get(), bundle_,
                                       Config(bundle_.spec, bundle_.spec.default_config()),
                                       runner_->device(), true);
      EXPECT_TRUE(ref.ok) << ref.log;
      request.set_reference_artifact(ref.artifact);
    }
    prepared_ = runner_->Prepare(request);
  }

  const absl::Status& prepared() const { return prepared_; }
  const v1::KernelSpec& spec() const { return bundle_.spec; }

  v1::TrialResult Run(const std::string& config_text) {
    v1::Config config = Config(bundle_.spec, config_text);
    CompileOutcome outcome = MustCompile(compiler_.get(), bundle_, config, runner_->device());
    v1::TrialResult result;
    if (!outcome.ok) {
      result.set_status(v1::TRIAL_STATUS_COMPILE_ERROR);
      result.set_error(outcome.log);
      return result;
    }
    v1::RunRequest run;
    *run.mutable_config() = config;
    run.set_artifact(outcome.artifact);
    return runner_->Run(run);
  }

 private:
  CudaRunner* runner_;
  TempDir cache_;
  KernelBundle bundle_;
  std::unique_ptr<NvrtcCompiler> compiler_;
  absl::Status prepared_;
};

std::string Describe(const v1::TrialResult& result) {
  return absl::StrCat(v1::TrialStatus_Name(result.status()), ": ", result.error());
}

TEST(CudaDevices, ReportTheSpecLimitNames) {
  REQUIRE_GPU();
  absl::StatusOr<std::vector<v1::Device>> devices = DiscoverCudaDevices();
  ASSERT_OK(devices);
  ASSERT_FALSE(devices->empty());
  for (const v1::Device& device : *devices) {
    EXPECT_THAT(device.id(), ::testing::StartsWith("GPU-"));
    EXPECT_THAT(device.model(), HasSubstr(" sm_"));
    EXPECT_EQ(device.backend(), v1::BACKEND_CUDA);
    DeviceLimits limits = LimitsFromDevice(device);
    for (const auto& [name, placeholder] : PlaceholderLimits(v1::BACKEND_CUDA)) {
      EXPECT_TRUE(limits.count(name)) << name;
      EXPECT_GT(limits[name], name == "cc_minor" ? -1 : 0) << name;
    }
    EXPECT_GT(limits["global_mem_bytes"], 0);
    std::printf("device %s | %s | %s\n", device.id().c_str(), device.model().c_str(),
                device.driver().c_str());
  }
}

struct DefaultCase {
  const char* dir;
  const char* shape;
};

// Test names from letters, digits and '_' only ("gemm_f16_M1024_N1024_K1024").
std::string Identifier(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  return out;
}

// Stable parameter text for test listings (ctest names include it).
void PrintTo(const DefaultCase& c, std::ostream* os) {
  *os << Identifier(std::string(c.dir) + "_" + c.shape);
}

std::string DefaultCaseName(const ::testing::TestParamInfo<DefaultCase>& info) {
  std::string dir = info.param.dir;
  return Identifier(dir.substr(dir.rfind('/') + 1) + "_" + info.param.shape);
}

class DefaultConfigTest : public ::testing::TestWithParam<DefaultCase> {};

TEST_P(DefaultConfigTest, PassesTheReference) {
  REQUIRE_GPU();
  const DefaultCase& c = GetParam();
  if (!std::filesystem::exists(SourceDir() + "/" + c.dir)) GTEST_SKIP() << c.dir << " absent";
  GpuJob job(SharedRunner(), c.dir, c.shape);
  ASSERT_OK(job.prepared());
  v1::TrialResult result = job.Run(job.spec().default_config());
  EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << Describe(result);
  EXPECT_GE(result.measurement().samples(), 5);
  EXPECT_GT(result.measurement().median_seconds(), 0);
  EXPECT_GT(result.measurement().clock_mhz(), 100);
  // Calibrated by the SM clock (docs/measurement.md, "Calibration"): the
  // time a million cycles take at the clocks the samples ran at, about
  // 1 / MHz seconds, so that the calibrated time is the kernel's megacycles.
  const v1::Measurement& m = result.measurement();
  EXPECT_NEAR(m.calibration_seconds() * m.clock_mhz(), 1.0, 0.1);
  std::printf("%s %s: median %.2f us, clock %.0f MHz, %.4f Mcycles\n", c.dir, c.shape,
              m.median_seconds() * 1e6, m.clock_mhz(), CalibratedTime(m));
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, DefaultConfigTest,
    ::testing::Values(DefaultCase{"kernels/cuda/gemm_f16", "M=1024,N=1024,K=1024"},
                      DefaultCase{"kernels/cuda/gemm_f16", "M=1000,N=1032,K=1000"},
                      DefaultCase{"kernels/cuda/gemm_f16", "M=129,N=77,K=1001"},
                      DefaultCase{"kernels/cuda/softmax", "ROWS=4096,COLS=4096"},
                      DefaultCase{"kernels/cuda/softmax", "ROWS=1001,COLS=20000"},
                      DefaultCase{"kernels/cuda/flash_attn_fwd", "BATCH=2,HEADS=4,SEQ=1024"},
                      DefaultCase{"kernels/cuda/flash_attn_fwd", "BATCH=1,HEADS=3,SEQ=333"}),
    DefaultCaseName);

// At ROWS=65536,COLS=256 softmax's default config (256 threads x 8 halves a
// row) breaks the spec's "no more than half the threads idle" constraint.
// The reference still runs with the default's launch, and the configs valid
// at this shape are checked against it.
TEST(CudaRunner, ReferenceRunsWhereTheDefaultConfigBreaksAConstraint) {
  REQUIRE_GPU();
  GpuJob job(SharedRunner(), "kernels/cuda/softmax", "ROWS=65536,COLS=256");
  ASSERT_OK(job.prepared());
  EXPECT_EQ(job.Run(job.spec().default_config()).status(), v1::TRIAL_STATUS_INVALID_CONFIG);
  for (const char* config :
       {"ROWS_PER_BLOCK=4,THREADS=128,VEC=2", "ROWS_PER_BLOCK=2,THREADS=64,VEC=4"}) {
    v1::TrialResult result = job.Run(config);
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << config << " " << Describe(result);
  }
}

TEST(CudaRunner, GemmConfigsAreMeasured) {
  REQUIRE_GPU();
  GpuJob job(SharedRunner(), "kernels/cuda/gemm_f16", "M=2048,N=2048,K=2048");
  ASSERT_OK(job.prepared());
  for (const v1::ConfigSet& set : job.spec().config_sets()) {
    if (set.name() == "decode") continue;  // short-M shapes: the split-K test below
    for (const std::string& config : set.configs()) {
      v1::TrialResult result = job.Run(config);
      EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << config << " " << Describe(result);
      const double tflops = 2.0 * 2048 * 2048 * 2048 / result.measurement().median_seconds() / 1e12;
      std::printf("gemm 2048^3 %s: %.1f TFLOP/s (%lld samples), %.4f Mcycles\n", config.c_str(),
                  tflops, static_cast<long long>(result.measurement().samples()),
                  CalibratedTime(result.measurement()));
    }
  }
  absl::StatusOr<v1::Measurement> cublas = SharedRunner()->MeasureReference();
  ASSERT_OK(cublas);
  std::printf("cuBLAS 2048^3: %.1f TFLOP/s\n",
              2.0 * 2048 * 2048 * 2048 / cublas->median_seconds() / 1e12);
}

// The split-K configs (a cluster of blocks per C tile, summed through their
// shared memory) are right at a decode shape and at an awkward one whose K
// takes the scalar load path; printed beside cuBLAS.
TEST(CudaRunner, GemmSplitKConfigsAreRightAtShortMShapes) {
  REQUIRE_GPU();
  for (const char* shape : {"M=16,N=4096,K=4096", "M=129,N=77,K=1001"}) {
    GpuJob job(SharedRunner(), "kernels/cuda/gemm_f16", shape);
    ASSERT_OK(job.prepared());
    absl::StatusOr<v1::Measurement> cublas = SharedRunner()->MeasureReference();
    ASSERT_OK(cublas);
    for (const v1::ConfigSet& set : job.spec().config_sets()) {
      if (set.name() != "decode") continue;
      for (const std::string& config : set.configs()) {
        v1::TrialResult result = job.Run(config);
        EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << shape << " " << config << " "
                                                        << Describe(result);
        std::printf("gemm %s %s: %.2f us (cuBLAS %.2f us)\n", shape, config.c_str(),
                    result.measurement().median_seconds() * 1e6, cublas->median_seconds() * 1e6);
      }
    }
  }
}

// The TMA producer (LOAD=1) and the TMA store of C (EPILOGUE=2), each config
// checked against cuBLAS: boxes past M, N and K read zeros and stores past
// them are clipped; split-K clusters; persistent blocks (with C staged in
// shared memory of its own, either producer); a K whose rows are not
// 16-byte aligned is no place for a tensor map.
TEST(CudaRunner, GemmTmaConfigsAreRightAtEdgesSplitsAndPersistentBlocks) {
  REQUIRE_HOPPER();
  const std::string tail = ",WARPS_N=1,EPILOGUE=0,LOAD=1";
  const std::pair<const char*, std::string> cases[] = {
      {"M=1000,N=1032,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=5,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0" + tail},
      {"M=1000,N=1032,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,WARPS_M=8,STAGES=8,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=1,LOAD=1"},
      {"M=16,N=4096,K=4096",
       "MMA=3,BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2,"
       "PERSISTENT=0" + tail},
      {"M=129,N=77,K=1000",
       "MMA=3,BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=4,"
       "PERSISTENT=0" + tail},
      {"M=4000,N=4104,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=1" + tail},
      {"M=4000,N=4104,K=1000",  // C staged in shared memory of its own
       "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=3,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=1,WARPS_N=1,EPILOGUE=1,LOAD=1"},
      {"M=4000,N=4104,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,WARPS_M=8,STAGES=6,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=1,WARPS_N=1,EPILOGUE=1,LOAD=0"},
      // C stored by TMA (EPILOGUE=2), clipped at the edges, from either producer.
      {"M=1000,N=1032,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=2,LOAD=1"},
      {"M=4000,N=4104,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=3,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=1,WARPS_N=1,EPILOGUE=2,LOAD=1"},
      {"M=4000,N=4104,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=5,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=1,WARPS_N=1,EPILOGUE=2,LOAD=0"},
      {"M=16,N=4096,K=4096",
       "MMA=3,BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=2,LOAD=1"},
      // 192-wide tiles (m64n192 wgmma), a partial one at the edge.
      {"M=1000,N=1032,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=192,BLOCK_K=64,WARPS_M=8,STAGES=5,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=1,LOAD=1"},
      {"M=4000,N=4104,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=192,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=1,WARPS_N=1,EPILOGUE=2,LOAD=1"},
      {"M=1000,N=1032,K=1000",
       "MMA=1,BLOCK_M=128,BLOCK_N=192,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=0"},
      {"M=1000,N=1032,K=1000",
       "MMA=0,BLOCK_M=128,BLOCK_N=192,BLOCK_K=32,WARPS_M=2,STAGES=4,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=4,EPILOGUE=0,LOAD=0"},
      // The swapped decode path (MMA=4): weights on wgmma's M side.
      {"M=1,N=4096,K=4096",
       "MMA=4,BLOCK_M=16,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=1"},
      {"M=16,N=1032,K=1000",
       "MMA=4,BLOCK_M=16,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=1"},
      {"M=40,N=4096,K=4096",
       "MMA=4,BLOCK_M=32,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=6,GROUP_M=1,SPLIT_K=4,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=1"},
      {"M=100,N=1032,K=1000",
       "MMA=4,BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=8,SPLIT_K=2,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=0"},
      // The swapped path with 64-byte swizzled stages (BLOCK_K 32).
      {"M=40,N=4096,K=4096",
       "MMA=4,BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=1"},
      {"M=40,N=4096,K=4096",
       "MMA=4,BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=0"},
      // The TMA store from four consumer warpgroups, and after a split-K
      // reduction by two.
      {"M=1000,N=1032,K=1000",
       "MMA=3,BLOCK_M=256,BLOCK_N=64,BLOCK_K=64,WARPS_M=16,STAGES=4,GROUP_M=8,SPLIT_K=1,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=2,LOAD=1"},
      {"M=200,N=4104,K=1000",
       "MMA=3,BLOCK_M=128,BLOCK_N=64,BLOCK_K=64,WARPS_M=8,STAGES=8,GROUP_M=8,SPLIT_K=2,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=2,LOAD=1"},
      // Two consumer warpgroups reading the whole activation tile while the
      // first to finish would write its split's partial over it (wrong in 10
      // of 12 runs before the math barrier).
      {"M=64,N=4096,K=4096",
       "MMA=4,BLOCK_M=16,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=6,GROUP_M=1,SPLIT_K=4,"
       "PERSISTENT=0,WARPS_N=1,EPILOGUE=0,LOAD=1"},
  };
  for (const auto& [shape, config] : cases) {
    GpuJob job(SharedRunner(), "kernels/cuda/gemm_f16", shape);
    ASSERT_OK(job.prepared());
    absl::StatusOr<v1::Measurement> cublas = SharedRunner()->MeasureReference();
    ASSERT_OK(cublas);
    v1::TrialResult result = job.Run(config);
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << shape << " " << config << " "
                                                    << Describe(result);
    std::printf("gemm %s %s: %.2f us (cuBLAS %.2f us)\n", shape, config.c_str(),
                result.measurement().median_seconds() * 1e6, cublas->median_seconds() * 1e6);
  }
  GpuJob odd_k(SharedRunner(), "kernels/cuda/gemm_f16", "M=129,N=77,K=1001");
  ASSERT_OK(odd_k.prepared());
  EXPECT_EQ(odd_k.Run(std::string("MMA=3,BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,WARPS_M=4,STAGES=8,"
                                  "GROUP_M=1,SPLIT_K=4,PERSISTENT=0") +
                      tail)
                .status(),
            v1::TRIAL_STATUS_INVALID_CONFIG);
}

// flash_attn_fwd's Hopper path (MMA=1) against the reference kernel: every
// tile and ring shape, with and without the overlap and the turns, where the
// last query and key/value tiles are partial (SEQ=333: rows past SEQ arrive
// from the tensor maps as zeros, their scores are masked) and where they
// are whole; one K/V tile and fewer keys than a query tile (SEQ=40), a
// whole consumer warpgroup past SEQ (SEQ=300: 44 rows in the last tile);
// persistent blocks that walk several query tiles each (160 to 512 tiles on
// the device's SMs), the ring's phases running on, a single K/V tile each
// (SEQ=64).
TEST(CudaRunner, FlashAttnHopperConfigsAreRightAtEdges) {
  REQUIRE_HOPPER();
  const std::string fixed =
      ",ASYNC_COPY=1,EAGER_LOAD=1,SWIZZLE=1,Q_TILES=0,K_TILES=0,V_TILES=0,MMA_DB=0,"
      "OPT_SOFTMAX=1";
  const char* tiles[] = {
      "B_R=128,B_C=128,N_WARPS=8,STAGES=2,OVERLAP=1,PINGPONG=0",
      "B_R=128,B_C=128,N_WARPS=8,STAGES=2,OVERLAP=0,PINGPONG=0",
      "B_R=128,B_C=128,N_WARPS=8,STAGES=2,OVERLAP=0,PINGPONG=1",
      "B_R=128,B_C=128,N_WARPS=8,STAGES=3,OVERLAP=1,PINGPONG=1",
      "B_R=128,B_C=64,N_WARPS=8,STAGES=3,OVERLAP=1,PINGPONG=0",
      "B_R=64,B_C=128,N_WARPS=4,STAGES=3,OVERLAP=1,PINGPONG=0",
      "B_R=64,B_C=64,N_WARPS=4,STAGES=2,OVERLAP=0,PINGPONG=0",
  };
  std::vector<std::pair<std::string, std::string>> cases;
  for (const char* shape :
       {"BATCH=1,HEADS=3,SEQ=333", "BATCH=1,HEADS=3,SEQ=300", "BATCH=2,HEADS=4,SEQ=1024"}) {
    for (const char* tile : tiles) {
      cases.emplace_back(shape, std::string(tile) + ",PERSISTENT=0");
    }
  }
  for (const char* tile : {"B_R=128,B_C=128,N_WARPS=8,STAGES=2,OVERLAP=0,PINGPONG=1",
                           "B_R=128,B_C=64,N_WARPS=8,STAGES=2,OVERLAP=0,PINGPONG=0",
                           "B_R=64,B_C=64,N_WARPS=4,STAGES=2,OVERLAP=0,PINGPONG=0"}) {
    cases.emplace_back("BATCH=1,HEADS=3,SEQ=40", std::string(tile) + ",PERSISTENT=0");
  }
  for (const char* tile : {"B_R=128,B_C=128,N_WARPS=8,STAGES=3,OVERLAP=0,PINGPONG=1",
                           "B_R=64,B_C=64,N_WARPS=4,STAGES=2,OVERLAP=0,PINGPONG=0"}) {
    cases.emplace_back("BATCH=4,HEADS=40,SEQ=64", std::string(tile) + ",PERSISTENT=1");
  }
  const char* persistent[] = {
      "B_R=128,B_C=128,N_WARPS=8,STAGES=3,OVERLAP=0,PINGPONG=1",
      "B_R=128,B_C=128,N_WARPS=8,STAGES=2,OVERLAP=1,PINGPONG=1",
      "B_R=128,B_C=64,N_WARPS=8,STAGES=3,OVERLAP=1,PINGPONG=0",
      "B_R=64,B_C=128,N_WARPS=4,STAGES=2,OVERLAP=0,PINGPONG=0",
  };
  for (const char* shape : {"BATCH=2,HEADS=40,SEQ=333", "BATCH=4,HEADS=8,SEQ=1024"}) {
    for (const char* tile : persistent) {
      cases.emplace_back(shape, std::string(tile) + ",PERSISTENT=1");
    }
  }
  std::string prepared;
  std::unique_ptr<GpuJob> job;
  for (const auto& [shape, tile] : cases) {
    if (shape != prepared) {
      job = std::make_unique<GpuJob>(SharedRunner(), "kernels/cuda/flash_attn_fwd", shape);
      ASSERT_OK(job->prepared());
      prepared = shape;
    }
    const std::string config = "MMA=1," + tile + fixed;
    v1::TrialResult result = job->Run(config);
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << shape << " " << config << " "
                                                    << Describe(result);
    std::printf("flash_attn_fwd %s %s: %.2f us\n", shape.c_str(), config.c_str(),
                result.measurement().median_seconds() * 1e6);
  }
}

// The low-clock rule (docs/measurement.md) on real per-sample clocks: a
// fraction over 1 makes every sample "low" (none is above its own maximum),
// so samples are taken again and the still-low retakes are kept and counted;
// a negative fraction turns the rule off.
TEST(CudaRunner, EverySampleIsClockedAndLowClockSamplesAreTakenAgain) {
  REQUIRE_GPU();
  const char* dir = "kernels/cuda/gemm_f16";
  const char* shape = "M=1024,N=1024,K=1024";
  struct Case {
    double fraction;
    v1::Measurement m;
  };
  std::vector<Case> cases = {{0, {}}, {1.5, {}}, {-1, {}}};
  for (Case& c : cases) {
    GpuJob job(SharedRunner(), dir, shape, 0.02, c.fraction);
    ASSERT_OK(job.prepared());
    v1::TrialResult result = job.Run(job.spec().default_config());
    ASSERT_EQ(result.status(), v1::TRIAL_STATUS_OK) << Describe(result);
    c.m = result.measurement();
    std::printf("low_clock_fraction %.1f: %lld samples, clock %.0f MHz, %lld taken again, "
                "%lld kept low, median %.2f us\n",
                c.fraction, static_cast<long long>(c.m.samples()), c.m.clock_mhz(),
                static_cast<long long>(c.m.retaken_samples()),
                static_cast<long long>(c.m.low_clock_samples()), c.m.median_seconds() * 1e6);
    EXPECT_GT(c.m.clock_mhz(), 100);
    EXPECT_LT(c.m.clock_mhz(), 5000);
    EXPECT_LE(c.m.low_clock_samples(), c.m.samples());
  }
  // Every sample is low: the first min_samples (5) retakes are low too, so
  // retaking stops there, and every sample kept is flagged.
  EXPECT_EQ(cases[1].m.retaken_samples(), 5);
  EXPECT_EQ(cases[1].m.low_clock_samples(), cases[1].m.samples());
  EXPECT_EQ(cases[2].m.retaken_samples(), 0);
  EXPECT_EQ(cases[2].m.low_clock_samples(), 0);
}

// The faults the child survives, in one process, with a good config after
// each.
TEST(CudaRunner, ClassifiesRecoverableFaults) {
  REQUIRE_GPU();
  GpuJob job(SharedRunner(), "tests/gpu/faulty", "N=100000");
  ASSERT_OK(job.prepared());
  const std::vector<std::pair<std::string, v1::TrialStatus>> cases = {
      {"FAULT=0,BLOCK=128", v1::TRIAL_STATUS_OK},
      {"FAULT=6,BLOCK=128", v1::TRIAL_STATUS_INVALID_CONFIG},
      {"FAULT=7,BLOCK=128", v1::TRIAL_STATUS_COMPILE_ERROR},
      {"FAULT=8,BLOCK=128", v1::TRIAL_STATUS_INVALID_CONFIG},
      {"FAULT=9,BLOCK=128", v1::TRIAL_STATUS_WRONG_RESULT},
      {"FAULT=10,BLOCK=128", v1::TRIAL_STATUS_COMPILE_ERROR},
      {"FAULT=11,BLOCK=128", v1::TRIAL_STATUS_INVALID_CONFIG},
  };
  for (const auto& [config, expected] : cases) {
    v1::TrialResult result = job.Run(config);
    EXPECT_EQ(result.status(), expected) << config << " " << Describe(result);
    std::printf("faulty %s -> %s\n", config.c_str(), Describe(result).substr(0, 160).c_str());
    v1::TrialResult good = job.Run("FAULT=0,BLOCK=256");
    EXPECT_EQ(good.status(), v1::TRIAL_STATUS_OK) << "after " << config << " " << Describe(good);
  }
  EXPECT_FALSE(SharedRunner()->poisoned());
}

// Without the pre-launch checks the driver itself refuses the launch; the
// context stays usable.
TEST(CudaRunner, DriverLaunchErrorsAreNotFatal) {
  REQUIRE_GPU();
  CudaRunnerOptions options;
  options.check_resources = false;
  absl::StatusOr<std::unique_ptr<CudaRunner>> runner = CudaRunner::Create(options);
  ASSERT_OK(runner);
  GpuJob job(runner->get(), "tests/gpu/faulty", "N=100000");
  ASSERT_OK(job.prepared());
  for (const char* config : {"FAULT=11,BLOCK=128", "FAULT=6,BLOCK=128", "FAULT=8,BLOCK=128"}) {
    v1::TrialResult result = job.Run(config);
    EXPECT_EQ(result.status(), v1::TRIAL_STATUS_LAUNCH_ERROR) << config << " " << Describe(result);
    std::printf("unchecked %s -> %s\n", config, Describe(result).substr(0, 160).c_str());
  }
  EXPECT_EQ(job.Run("FAULT=0,BLOCK=128").status(), v1::TRIAL_STATUS_OK);
  EXPECT_FALSE((*runner)->poisoned());
}

// Runs one fatal config in this (re-executed) process, prints its result on
// stderr, and exits as a poisoned benchmark child would.
[[noreturn]] void RunFatalConfigAndExit(const std::string& config) {
  CudaRunnerOptions options;
  options.launch_timeout_seconds = 2;
  absl::StatusOr<std::unique_ptr<CudaRunner>> runner = CudaRunner::Create(options);
  if (!runner.ok()) _exit(10);
  GpuJob job(runner->get(), "tests/gpu/faulty", "N=100000");
  if (!job.prepared().ok()) _exit(11);
  v1::TrialResult result = job.Run(config);
  std::fprintf(stderr, "RESULT %s\n", Describe(result).c_str());
  std::fflush(stderr);
  _exit((*runner)->poisoned() ? kPoisonedExit : 0);
}

struct FatalCase {
  const char* config;
  const char* expected;  // regex over the RESULT line
};

void PrintTo(const FatalCase& c, std::ostream* os) { *os << Identifier(c.config); }

class FatalFaultTest : public ::testing::TestWithParam<FatalCase> {};

TEST_P(FatalFaultTest, IsReportedThenTheChildExits) {
  REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const FatalCase& c = GetParam();
  EXPECT_EXIT(RunFatalConfigAndExit(c.config), ::testing::ExitedWithCode(kPoisonedExit),
              c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Faulty, FatalFaultTest,
    ::testing::Values(
        FatalCase{"FAULT=1,BLOCK=128", "RESULT TRIAL_STATUS_CRASHED: .*CUDA_ERROR_ILLEGAL_ADDRESS"},
        FatalCase{"FAULT=2,BLOCK=128", "RESULT TRIAL_STATUS_CRASHED: .*CUDA_ERROR_"},
        FatalCase{"FAULT=3,BLOCK=128", "RESULT TRIAL_STATUS_CRASHED: .*CUDA_ERROR_ASSERT"},
        FatalCase{"FAULT=4,BLOCK=128",
                  "RESULT TRIAL_STATUS_CRASHED: .*CUDA_ERROR_MISALIGNED_ADDRESS"},
        FatalCase{"FAULT=5,BLOCK=128", "RESULT TRIAL_STATUS_TIMEOUT: "}),
    [](const ::testing::TestParamInfo<FatalCase>& info) { return Identifier(info.param.config); });

// After the crashes above (in other processes), this process's GPU work is
// still fine.
TEST(CudaRunner, GoodConfigAfterCrashesElsewhere) {
  REQUIRE_GPU();
  GpuJob job(SharedRunner(), "tests/gpu/faulty", "N=100000");
  ASSERT_OK(job.prepared());
  v1::TrialResult result = job.Run("FAULT=0,BLOCK=128");
  EXPECT_EQ(result.status(), v1::TRIAL_STATUS_OK) << Describe(result);
}

// The benchmark child as the worker starts it: the worker binary in the
// bubblewrap sandbox with the GPU's device nodes, measuring artifacts the
// sandboxed NVRTC helper compiled.
TEST(CudaBenchChild, MeasuresAndCrashesInsideTheSandbox) {
  REQUIRE_NVRTC();
  REQUIRE_GPU();
  if (HelperPath().empty()) GTEST_SKIP() << "no tunefleet-nvrtc helper built";
  TempDir cache;
  const std::vector<v1::Device> devices = *ListCudaDevices();
  CompilerOptions compiler_options;
  compiler_options.cache_dir = cache.path();
  compiler_options.program = HelperPath();
  compiler_options.sandbox = BwrapSandbox();
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = CreateCudaCompiler(compiler_options);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  KernelBundle bundle = LoadKernel("tests/gpu/faulty");
  auto compile = [&](const std::string& config, bool reference) {
    CompileJob job{&bundle.spec, &bundle.sources, Config(bundle.spec, config), devices[0],
                   reference, v1::Shape()};
    absl::StatusOr<CompileOutcome> outcome = (*compiler)->Compile(job);
    EXPECT_TRUE(outcome.ok() && outcome->ok) << (outcome.ok() ? outcome->log : "");
    return outcome.ok() ? outcome->artifact : "";
  };
  const std::string worker = ::tunefleet::testing::BuildDir() + "/bin/tunefleet-worker";
  const std::string inbox = cache.path() + "/children/0";
  ChildOptions child{{worker, "--child", "--backend", "cuda"}, ChildEnvironment(devices[0]),
                     compiler_options.sandbox,
                     ChildSandboxPolicy(v1::BACKEND_CUDA, worker, inbox), inbox};
  BenchChildProcess process(child);
  v1::ChildRequest prepare;
  *prepare.mutable_prepare()->mutable_kernel() = bundle.spec;
  *prepare.mutable_prepare()->mutable_shape() = Shape("N=1048576");
  *prepare.mutable_prepare()->mutable_limits() = devices[0].limits();
  prepare.mutable_prepare()->mutable_measure()->set_budget_seconds(0.02);
  if (!bundle.spec.reference().entry().empty()) {
    prepare.mutable_prepare()->set_reference_artifact(
        compile(bundle.spec.default_config(), true));
  }
  absl::StatusOr<ChildReply> prepared = process.Call(prepare, absl::Seconds(120));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->kind, ChildReply::Kind::kAnswered) << prepared->detail;
  ASSERT_EQ(prepared->response.error(), "");
  for (const auto& [config, status] :
       std::vector<std::pair<std::string, v1::TrialStatus>>{
           {"FAULT=0,BLOCK=128", v1::TRIAL_STATUS_OK},
           {"FAULT=1,BLOCK=128", v1::TRIAL_STATUS_CRASHED}}) {
    v1::ChildRequest run;
    *run.mutable_run()->mutable_config() = Config(bundle.spec, config);
    run.mutable_run()->set_artifact(compile(config, false));
    absl::StatusOr<ChildReply> reply = process.Call(run, absl::Seconds(60));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(reply->kind, ChildReply::Kind::kAnswered) << config << ": " << reply->detail;
    EXPECT_EQ(reply->response.result().status(), status)
        << config << ": " << reply->response.result().error();
  }
}

}  // namespace
}  // namespace tunefleet::worker::cuda
