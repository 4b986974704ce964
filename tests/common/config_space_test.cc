#include "common/config_space.h"

#include <set>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIsWith;

v1::KernelSpec MatmulSpec() {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  return bundle->spec;
}

std::unique_ptr<ConfigSpace> Space(const v1::KernelSpec& spec, const std::string& shape,
                                   const DeviceLimits& limits) {
  absl::StatusOr<v1::Shape> normalized = NormalizeShape(spec, *ParseShape(shape));
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
      ConfigSpace::Create(spec, *normalized, limits);
  EXPECT_TRUE(space.ok()) << space.status();
  return *std::move(space);
}

// The matmul constraints written out by hand, to check the compiled ones.
int64_t CountMatmulByHand(int64_t m, int64_t n, int64_t k, double l2) {
  int64_t count = 0;
  for (int64_t bm : {16, 32, 64, 128})
    for (int64_t bn : {64, 128, 256, 512})
      for (int64_t bk : {32, 64, 128, 256})
        for (int64_t unroll : {1, 4})
          for (int64_t order : {0, 1}) {
            bool ok = bk * bn * 4 <= l2 / 2 && bm * bn * 4 <= l2 / 4 &&
                      bm % unroll == 0 && (order == 0 || unroll == 1) &&
                      bm <= m && bn <= n && bk <= k;
            count += ok ? 1 : 0;
          }
  return count;
}

int64_t CountValid(ConfigSpace* space) {
  ConfigEnumerator enumerator(space);
  uint64_t ordinal = 0;
  int64_t count = 0;
  while (enumerator.Next(&ordinal)) ++count;
  return count;
}

TEST(ConfigSpaceTest, EnumeratesExactlyTheConfigsTheConstraintsAllow) {
  v1::KernelSpec spec = MatmulSpec();
  for (const auto& [shape, m, n, k, l2] :
       std::vector<std::tuple<std::string, int, int, int, double>>{
           {"M=512,N=512,K=512", 512, 512, 512, 2097152},
           {"M=512,N=512,K=512", 512, 512, 512, 262144},
           {"M=64,N=100,K=40", 64, 100, 40, 2097152}}) {
    DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
    limits["l2_bytes"] = l2;
    auto space = Space(spec, shape, limits);
    EXPECT_EQ(space->full_size(), 256u);
    EXPECT_EQ(CountValid(space.get()), CountMatmulByHand(m, n, k, l2)) << shape << " l2=" << l2;
  }
  auto space = Space(spec, "M=512,N=512,K=512", PlaceholderLimits(v1::BACKEND_CPU));
  EXPECT_GE(CountValid(space.get()), 100);
}

TEST(ConfigSpaceTest, OrdinalsRoundTrip) {
  v1::KernelSpec spec = MatmulSpec();
  auto space = Space(spec, "M=512,N=512,K=512", PlaceholderLimits(v1::BACKEND_CPU));
  std::set<std::string> seen;
  for (uint64_t ordinal = 0; ordinal < space->full_size(); ++ordinal) {
    v1::Config config = space->ConfigAt(ordinal);
    absl::StatusOr<uint64_t> back = space->OrdinalOf(config);
    ASSERT_OK(back);
    EXPECT_EQ(*back, ordinal);
    seen.insert(ConfigToString(config));
  }
  EXPECT_EQ(seen.size(), space->full_size());
}

TEST(ConfigSpaceTest, CheckConstraintsNamesTheBrokenOne) {
  v1::KernelSpec spec = MatmulSpec();
  auto space = Space(spec, "M=512,N=512,K=512", PlaceholderLimits(v1::BACKEND_CPU));
  ASSERT_OK(space->Bind(*ParseConfig("BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=4,LOOP_ORDER=1")));
  EXPECT_THAT(space->CheckConstraints(),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "LOOP_ORDER == 0 || UNROLL == 1"));
}

TEST(ConfigSpaceTest, EvaluatesSizesScalarsMetricsAndFunctions) {
  v1::KernelSpec spec = MatmulSpec();
  auto space = Space(spec, "M=100,N=200,K=300", PlaceholderLimits(v1::BACKEND_CPU));
  ASSERT_OK(space->Bind(*ParseConfig("BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=1")));
  EXPECT_EQ(*space->TensorElements(0), 100 * 300);
  EXPECT_EQ(*space->TensorElements(2), 100 * 200);
  EXPECT_EQ(*space->ScalarValue(5), 300);
  EXPECT_DOUBLE_EQ(*space->Metric(0, 0.5), 2.0 * 100 * 200 * 300 / 0.5 / 1e9);
  EXPECT_EQ(*space->Evaluate("cdiv(M, BLOCK_M)"), 4);
  EXPECT_EQ(*space->Evaluate("K % BLOCK_K"), 300 % 64);
  EXPECT_EQ(*space->Evaluate("is_pow2(BLOCK_N) + is_pow2(M)"), 1);
  EXPECT_EQ(*space->Evaluate("b_block_bytes"), 64 * 64 * 4);
  EXPECT_EQ(*space->Evaluate("floor(7 / 2) + ceil(7 / 2)"), 7);
}

TEST(ConfigSpaceTest, UnknownNameInExpressionIsNamed) {
  v1::KernelSpec spec = MatmulSpec();
  spec.mutable_constraints(0)->set_expr("BLOCK_M * WIDTH <= 4");
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("M=1,N=1,K=1")), PlaceholderLimits(v1::BACKEND_CPU));
  EXPECT_THAT(space, StatusIsWith(absl::StatusCode::kInvalidArgument, "WIDTH"));
  EXPECT_THAT(space, StatusIsWith(absl::StatusCode::kInvalidArgument, "constraint #1"));
}

TEST(ConfigSpaceTest, DerivedValueCannotUseLaterDerivedValue) {
  v1::KernelSpec spec = MatmulSpec();
  spec.mutable_derived(0)->set_expr("c_block_bytes * 2");
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("M=1,N=1,K=1")), PlaceholderLimits(v1::BACKEND_CPU));
  EXPECT_THAT(space, StatusIsWith(absl::StatusCode::kInvalidArgument, "c_block_bytes"));
}

TEST(ConfigSpaceTest, MissingDeviceLimitIsNamed) {
  v1::KernelSpec spec = MatmulSpec();
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("M=1,N=1,K=1")), DeviceLimits{});
  EXPECT_THAT(space, StatusIsWith(absl::StatusCode::kInvalidArgument, "l2_bytes"));
}

TEST(ConfigSpaceTest, NegativeSizeIsAnError) {
  v1::KernelSpec spec = MatmulSpec();
  spec.mutable_args(0)->mutable_tensor()->set_shape(0, "M - 1000");
  auto space = Space(spec, "M=1,N=1,K=1", PlaceholderLimits(v1::BACKEND_CPU));
  space->Bind(0);
  EXPECT_THAT(space->TensorElements(0), StatusIsWith(absl::StatusCode::kInvalidArgument, "not a size"));
}

TEST(ConfigSpaceTest, FullSizeSaturatesInsteadOfOverflowing) {
  v1::KernelSpec spec = MatmulSpec();
  spec.clear_constraints();
  for (int i = 0; i < 12; ++i) {
    v1::Parameter* param = spec.add_params();
    param->set_name("P" + std::to_string(i));
    for (int v = 0; v < 100; ++v) param->add_values(v);
  }
  auto space = Space(spec, "M=1,N=1,K=1", PlaceholderLimits(v1::BACKEND_CPU));
  EXPECT_EQ(space->full_size(), UINT64_MAX);
}

}  // namespace
}  // namespace tunefleet
