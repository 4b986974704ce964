#include "common/config_fit.h"

#include <cmath>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/common/counting_allocator.h"
#include "tests/support/nearest_cases.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::ExpressionCase;
using ::tunefleet::testing::HeapAllocations;
using ::tunefleet::testing::LoadExpressionCases;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIsWith;

v1::KernelSpec MatmulSpec() {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  return bundle->spec;
}

std::unique_ptr<ConfigFit> FitOf(const v1::KernelSpec& spec) {
  absl::StatusOr<std::unique_ptr<ConfigFit>> fit = ConfigFit::Create(spec);
  EXPECT_TRUE(fit.ok()) << fit.status();
  return fit.ok() ? *std::move(fit) : nullptr;
}

bool Fits(const ConfigFit& fit, std::vector<int64_t> dims, const std::string& config,
          const DeviceLimits* limits = nullptr) {
  return fit.Fits(dims, *ParseConfig(config), limits);
}

// The values the shared file gives python/tunefleet/spec_expr.py to match are
// muParser's, as ConfigSpace compiles it (the names as device limits).
TEST(SpecExpressionTest, TheSharedCasesAreMuParsersValues) {
  absl::StatusOr<std::vector<ExpressionCase>> cases = LoadExpressionCases();
  ASSERT_OK(cases);
  for (const ExpressionCase& c : *cases) {
    DeviceLimits names(c.names.begin(), c.names.end());
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
        ConfigSpace::Create(v1::KernelSpec(), v1::Shape(), names);
    ASSERT_OK(space);
    absl::StatusOr<double> value = (*space)->Evaluate(c.expr);
    ASSERT_OK(value);
    if (std::isnan(c.value)) {
      EXPECT_TRUE(std::isnan(*value)) << c.expr << " = " << *value;
    } else {
      EXPECT_DOUBLE_EQ(*value, c.value) << c.expr;
    }
  }
}

// matmul's constraints on l2_bytes alone hold for every config with the
// placeholder limits, so there ConfigFit must agree with the full space.
TEST(ConfigFitTest, AgreesWithTheSpaceAtTheAskedShapeOnEveryMatmulConfig) {
  const v1::KernelSpec spec = MatmulSpec();
  std::unique_ptr<ConfigFit> fit = FitOf(spec);
  ASSERT_NE(fit, nullptr);
  EXPECT_FALSE(fit->uses_limits());
  std::mt19937_64 rng(20261127);
  for (int i = 0; i < 40; ++i) {
    const std::vector<int64_t> dims = {1 + static_cast<int64_t>(rng() % 600),
                                       1 + static_cast<int64_t>(rng() % 600),
                                       1 + static_cast<int64_t>(rng() % 600)};
    const v1::Shape shape =
        *ParseShape(absl::StrCat("M=", dims[0], ",N=", dims[1], ",K=", dims[2]));
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
        ConfigSpace::Create(spec, shape, PlaceholderLimits(v1::BACKEND_CPU));
    ASSERT_OK(space);
    for (uint64_t ordinal = 0; ordinal < (*space)->full_size(); ++ordinal) {
      (*space)->Bind(ordinal);
      EXPECT_EQ(fit->Fits(dims, (*space)->ConfigAt(ordinal)), (*space)->Valid())
          << ShapeToString(shape) << " " << ConfigToString((*space)->ConfigAt(ordinal));
    }
  }
}

TEST(ConfigFitTest, AConfigFitsOnlyWhenItNamesEveryParamOnceWithAListedValue) {
  std::unique_ptr<ConfigFit> fit = FitOf(MatmulSpec());
  ASSERT_NE(fit, nullptr);
  const std::vector<int64_t> dims = {256, 256, 256};
  EXPECT_TRUE(Fits(*fit, dims, "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0"));
  EXPECT_TRUE(Fits(*fit, dims, "LOOP_ORDER=0,UNROLL=1,BLOCK_K=64,BLOCK_N=64,BLOCK_M=32"));
  EXPECT_FALSE(Fits(*fit, dims, "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1"));
  EXPECT_FALSE(Fits(*fit, dims, "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0,X=1"));
  EXPECT_FALSE(Fits(*fit, dims, "BLOCK_M=33,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0"));
  v1::Config twice = *ParseConfig("BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1");
  *twice.add_values() = twice.values(0);
  EXPECT_FALSE(fit->Fits(dims, twice));
}

TEST(ConfigFitTest, ConstraintsOnDeviceLimitsAloneAreNotCheckedOthersUseTheLimitsGiven) {
  v1::KernelSpec spec = MatmulSpec();
  DeviceLimits tiny = PlaceholderLimits(v1::BACKEND_CPU);
  tiny["l2_bytes"] = 1024;  // breaks matmul's constraints on l2_bytes alone: not checked
  std::unique_ptr<ConfigFit> fit = FitOf(spec);
  ASSERT_NE(fit, nullptr);
  const std::string config = "BLOCK_M=128,BLOCK_N=512,BLOCK_K=256,UNROLL=1,LOOP_ORDER=0";
  EXPECT_TRUE(Fits(*fit, {1024, 1024, 1024}, config, &tiny));

  spec.add_constraints()->set_expr("BLOCK_K * K * 4 <= l2_bytes");  // a dim and a limit
  std::unique_ptr<ConfigFit> per_k = FitOf(spec);
  ASSERT_NE(per_k, nullptr);
  EXPECT_TRUE(per_k->uses_limits());
  DeviceLimits small = PlaceholderLimits(v1::BACKEND_CPU);
  small["l2_bytes"] = 256 * 1024;
  EXPECT_TRUE(Fits(*per_k, {1024, 1024, 1024}, config));  // placeholder: 2 MiB
  EXPECT_FALSE(Fits(*per_k, {1024, 1024, 1024}, config, &small));
  EXPECT_TRUE(Fits(*per_k, {1024, 1024, 256}, config, &small));
  const DeviceLimits none;  // every limit its placeholder again
  EXPECT_TRUE(Fits(*per_k, {1024, 1024, 1024}, config, &none));
}

TEST(ConfigFitTest, AnExpressionThatDoesNotCompileIsInvalidArgumentNamingIt) {
  v1::KernelSpec spec = MatmulSpec();
  spec.add_constraints()->set_expr("BLOCK_M <= TILE");
  EXPECT_THAT(ConfigFit::Create(spec),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "constraint #6"));
  spec = MatmulSpec();
  spec.mutable_launch()->set_grid_x("no_such_name");  // not compiled: not needed
  EXPECT_OK(ConfigFit::Create(spec));
}

TEST(ConfigFitTest, CheckingAllocatesNothing) {
  std::unique_ptr<ConfigFit> fit = FitOf(MatmulSpec());
  ASSERT_NE(fit, nullptr);
  const v1::Config fits = *ParseConfig("BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0");
  const v1::Config too_big =
      *ParseConfig("BLOCK_M=128,BLOCK_N=512,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0");
  const std::vector<int64_t> dims = {64, 64, 64};
  const int64_t before = HeapAllocations();
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(fit->Fits(dims, fits));
    EXPECT_FALSE(fit->Fits(dims, too_big));
  }
  EXPECT_EQ(HeapAllocations() - before, 0);
}

TEST(ConfigFitTest, ConcurrentChecksAgree) {
  std::unique_ptr<ConfigFit> fit = FitOf(MatmulSpec());
  ASSERT_NE(fit, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const v1::Config config =
          *ParseConfig("BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0");
      for (int i = 0; i < 2000; ++i) {
        const int64_t n = 64 + (i + t) % 128;  // fits from N=128 on
        const std::vector<int64_t> dims = {64, n, 64};
        if (fit->Fits(dims, config) != (n >= 128)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tunefleet
