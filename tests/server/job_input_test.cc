// The checks on untrusted job fields, called directly.
#include "server/job_input.h"

#include <cmath>
#include <limits>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

class JobInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    *spec_.mutable_kernel() = bundle->spec;
    for (const auto& file : bundle->sources) *spec_.add_sources() = file;
  }

  // The tensor bytes of the matmul job for `shape`.
  absl::StatusOr<int64_t> TensorBytes(const std::string& shape, int64_t max_bytes) {
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
        spec_.kernel(), *ParseShape(shape), PlaceholderLimits(v1::BACKEND_CPU));
    if (!space.ok()) return space.status();
    return CheckTensorBytes(space->get(), max_bytes);
  }

  v1::JobSpec spec_;
};

TEST_F(JobInputTest, TheShippedKernelPassesEveryCheck) {
  EXPECT_OK(CheckEnums(spec_.kernel()));
  EXPECT_OK(CheckSourcePaths(spec_));
  EXPECT_OK(CheckTolerance(spec_.kernel().tolerance()));
  EXPECT_OK(CheckStrategy(spec_, /*max_trials=*/100));
  EXPECT_OK(CheckDims(*ParseShape("M=1099511627776,N=1,K=1")));  // 2^40
}

TEST_F(JobInputTest, TensorBytesAreTheSumOverTensorsOfTheDefaultConfig) {
  // A (M x K), B (K x N), C (M x N), all f32.
  EXPECT_EQ(*TensorBytes("M=8,N=4,K=2", int64_t{1} << 30), 4 * (8 * 2 + 2 * 4 + 8 * 4));
  EXPECT_THAT(TensorBytes("M=1024,N=1024,K=1024", 3 * 4 * 1024 * 1024 - 1),
              StatusIsWith(absl::StatusCode::kResourceExhausted, "over the limit"));
  EXPECT_OK(TensorBytes("M=1024,N=1024,K=1024", 3 * 4 * 1024 * 1024));
  EXPECT_THAT(TensorBytes("M=2147483648,N=1,K=2147483648", std::numeric_limits<int64_t>::max()),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "overflows"));
}

TEST_F(JobInputTest, SourcePathsStayRelativeAndPrintable) {
  for (const std::string& bad : {std::string("../x"), std::string("a/../../x"),
                                 std::string("/etc/passwd"), std::string("a//b"),
                                 std::string("a/"), std::string("a\x1b" "b"),
                                 std::string(256, 'a'), std::string("")}) {
    v1::JobSpec spec = spec_;
    spec.mutable_kernel()->mutable_reference()->set_sources(0, bad);
    EXPECT_THAT(CheckSourcePaths(spec), StatusIsWith(absl::StatusCode::kInvalidArgument,
                                                     "kernel.reference.sources[0]"))
        << bad;
  }
  v1::JobSpec spec = spec_;
  spec.mutable_kernel()->set_sources(0, "dir/..hidden/a.cc");  // ".." only as a whole part
  spec.mutable_sources(0)->set_path("dir/..hidden/a.cc");
  EXPECT_OK(CheckSourcePaths(spec));
}

TEST_F(JobInputTest, TolerancesMustKeepTheCheckMeaningful) {
  auto with = [](double rtol, double atol, double ratio) {
    v1::Tolerance tolerance;
    tolerance.set_rtol(rtol);
    tolerance.set_atol(atol);
    tolerance.set_max_mismatch_ratio(ratio);
    return CheckTolerance(tolerance);
  };
  EXPECT_OK(with(1e-2, 1e-3, kMaxMismatchRatio));
  EXPECT_THAT(with(NAN, 0, 0), StatusIsWith(absl::StatusCode::kInvalidArgument, "rtol"));
  EXPECT_THAT(with(0, INFINITY, 0), StatusIsWith(absl::StatusCode::kInvalidArgument, "atol"));
  EXPECT_THAT(with(-1, 0, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(with(0, 0, 0.5), StatusIsWith(absl::StatusCode::kInvalidArgument, "ratio"));
  EXPECT_THAT(with(0, 0, -0.1), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(JobInputTest, BudgetsAndStrategies) {
  v1::JobSpec spec = spec_;
  spec.set_strategy("random");
  spec.set_budget(100);
  EXPECT_OK(CheckStrategy(spec, /*max_trials=*/100));
  spec.set_budget(101);
  EXPECT_THAT(CheckStrategy(spec, 100), StatusIs(absl::StatusCode::kResourceExhausted));
  spec.set_budget(-1);
  EXPECT_THAT(CheckStrategy(spec, 100), StatusIs(absl::StatusCode::kInvalidArgument));
  spec.set_budget(0);
  spec.set_strategy("annealing");
  EXPECT_THAT(CheckStrategy(spec, 100), StatusIsWith(absl::StatusCode::kInvalidArgument,
                                                     "unknown strategy"));
}

TEST_F(JobInputTest, StopRulesOutOfRangeAreRefusedNamingTheField) {
  v1::JobSpec spec = spec_;
  spec.set_time_budget_seconds(600);
  spec.set_plateau_batches(5);
  EXPECT_OK(CheckStrategy(spec, 100));
  spec.set_time_budget_seconds(-1);
  EXPECT_THAT(CheckStrategy(spec, 100),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "time_budget_seconds"));
  spec.set_time_budget_seconds(kMaxTimeBudgetSeconds + 1);
  EXPECT_THAT(CheckStrategy(spec, 100),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "time_budget_seconds"));
  spec.set_time_budget_seconds(0);
  spec.set_plateau_batches(-3);
  EXPECT_THAT(CheckStrategy(spec, 100),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "plateau_batches"));
  spec.set_plateau_batches(kMaxPlateauBatches + 1);
  EXPECT_THAT(CheckStrategy(spec, 100),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "plateau_batches"));
}

}  // namespace
}  // namespace tunefleet::server
