#include "common/config_space.h"

#include <random>
#include <set>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include "tests/common/counting_allocator.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::HeapAllocations;
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

// gemm_f16's tensor maps: encoded only where LOAD=1, with the tile's box
// and the swizzle its BLOCK_K asks for; zeros elsewhere.
TEST(ConfigSpaceTest, TensorMapsGiveTheirBoxWhereTheyAreUsed) {
  absl::StatusOr<KernelBundle> gemm = LoadKernelDir(SourceDir() + "/kernels/cuda/gemm_f16");
  ASSERT_OK(gemm);
  auto space = Space(gemm->spec, "M=1000,N=1032,K=1000", PlaceholderLimits(v1::BACKEND_CUDA));
  int a_map = -1;
  for (int i = 0; i < gemm->spec.args_size(); ++i) {
    if (gemm->spec.args(i).name() == "A_map") a_map = i;
  }
  ASSERT_GE(a_map, 0);
  const std::string tma =
      "MMA=3,BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,WARPS_M=8,WARPS_N=1,STAGES=8,GROUP_M=8,"
      "SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=1";
  ASSERT_OK(space->Bind(*ParseConfig(tma)));
  absl::StatusOr<ConfigSpace::TensorMapBox> box = space->TensorMapValue(a_map);
  ASSERT_OK(box);
  EXPECT_TRUE(box->used);
  EXPECT_EQ(gemm->spec.args(box->tensor_arg).name(), "A");
  EXPECT_EQ(box->box, (std::vector<int64_t>{128, 32}));
  EXPECT_EQ(box->swizzle_bytes, 64);
  EXPECT_EQ(*space->TensorDims(box->tensor_arg), (std::vector<int64_t>{1000, 1000}));

  std::string cp_async = tma;
  cp_async.back() = '0';
  ASSERT_OK(space->Bind(*ParseConfig(cp_async)));
  box = space->TensorMapValue(a_map);
  ASSERT_OK(box);
  EXPECT_FALSE(box->used);
  EXPECT_TRUE(box->box.empty());
  EXPECT_THAT(space->TensorMapValue(0), StatusIsWith(absl::StatusCode::kInvalidArgument,
                                                     "is not a tensor map"));
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

// A CPU spec with problem dims M and N and the params, derived values and
// constraints added by the caller.
v1::KernelSpec EmptySpec() {
  v1::KernelSpec spec;
  spec.set_name("walk");
  spec.set_backend(v1::BACKEND_CPU);
  spec.add_sources("walk.cc");
  spec.set_entry("walk");
  spec.add_problem()->set_name("M");
  spec.add_problem()->set_name("N");
  return spec;
}

void AddParam(v1::KernelSpec* spec, const std::string& name, std::vector<int64_t> values) {
  v1::Parameter* param = spec->add_params();
  param->set_name(name);
  for (int64_t v : values) param->add_values(v);
}

void AddDerived(v1::KernelSpec* spec, const std::string& name, const std::string& expr) {
  v1::Derived* derived = spec->add_derived();
  derived->set_name(name);
  derived->set_expr(expr);
}

void AddConstraint(v1::KernelSpec* spec, const std::string& expr) {
  spec->add_constraints()->set_expr(expr);
}

// The valid ordinals found by binding every ordinal of the space.
std::vector<uint64_t> BruteForce(ConfigSpace* space) {
  std::vector<uint64_t> valid;
  for (uint64_t ordinal = 0; ordinal < space->full_size(); ++ordinal) {
    space->Bind(ordinal);
    if (space->Valid()) valid.push_back(ordinal);
  }
  return valid;
}

std::vector<uint64_t> Enumerated(ConfigSpace* space) {
  std::vector<uint64_t> valid;
  ConfigEnumerator enumerator(space);
  for (uint64_t ordinal = 0; enumerator.Next(&ordinal);) valid.push_back(ordinal);
  return valid;
}

std::vector<uint64_t> EnumeratedByRuns(ConfigSpace* space) {
  std::vector<uint64_t> valid;
  ConfigEnumerator enumerator(space);
  uint64_t first = 0;
  uint64_t count = 0;
  while (enumerator.NextRun(&first, &count)) {
    EXPECT_GT(count, 0u);
    for (uint64_t i = 0; i < count; ++i) valid.push_back(first + i);
  }
  return valid;
}

void ExpectWalksAgree(const v1::KernelSpec& spec, const std::string& shape,
                      const DeviceLimits& limits) {
  auto space = Space(spec, shape, limits);
  ASSERT_NE(space, nullptr);
  std::vector<uint64_t> expected = BruteForce(space.get());
  EXPECT_EQ(Enumerated(space.get()), expected) << spec.DebugString();
  EXPECT_EQ(EnumeratedByRuns(space.get()), expected) << spec.DebugString();
}

TEST(ConfigEnumeratorTest, MatchesBruteForceOnTheMatmulSpace) {
  v1::KernelSpec spec = MatmulSpec();
  for (double l2 : {2097152.0, 262144.0, 65536.0, 1.0}) {
    DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
    limits["l2_bytes"] = l2;
    for (const char* shape : {"M=512,N=512,K=512", "M=64,N=100,K=40", "M=1,N=1,K=1"}) {
      ExpectWalksAgree(spec, shape, limits);
    }
  }
}

TEST(ConfigEnumeratorTest, MatchesBruteForceWithConstraintsOnPrefixesAndSuffixes) {
  v1::KernelSpec spec = EmptySpec();
  AddParam(&spec, "A", {1, 2, 3, 4, 5});
  AddParam(&spec, "B", {1, 2, 4, 8});
  AddParam(&spec, "C", {0, 1, 2});
  AddParam(&spec, "D", {2, 3, 5, 7});
  AddConstraint(&spec, "A != 3");            // first param only
  AddConstraint(&spec, "D % 2 == 1");        // last param only
  AddConstraint(&spec, "C + D <= M");        // a suffix and a dim
  AddConstraint(&spec, "A * B <= N");        // a prefix and a dim
  ExpectWalksAgree(spec, "M=7,N=12", PlaceholderLimits(v1::BACKEND_CPU));
  ExpectWalksAgree(spec, "M=1,N=12", PlaceholderLimits(v1::BACKEND_CPU));
}

TEST(ConfigEnumeratorTest, MatchesBruteForceWithDerivedValuesAndDeviceLimits) {
  v1::KernelSpec spec = EmptySpec();
  AddParam(&spec, "TILE", {8, 16, 32, 64});
  AddParam(&spec, "WARPS", {1, 2, 4, 8});
  AddParam(&spec, "STAGES", {1, 2, 3});
  AddParam(&spec, "VEC", {1, 2, 4});
  AddDerived(&spec, "tile_bytes", "TILE * TILE * 4");
  AddDerived(&spec, "smem", "tile_bytes * STAGES");           // derived over a derived
  AddDerived(&spec, "unused", "VEC * 1000");                  // in no constraint
  AddDerived(&spec, "per_warp", "cdiv(TILE, WARPS) * VEC");   // params 0, 1 and 3
  AddConstraint(&spec, "smem <= l1d_bytes");
  AddConstraint(&spec, "per_warp >= 4");
  AddConstraint(&spec, "WARPS <= cores / 16");                // a limit and param 1
  AddConstraint(&spec, "M >= 2");                             // constants only
  for (double l1d : {4096.0, 16384.0, 49152.0}) {
    DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
    limits["l1d_bytes"] = l1d;
    ExpectWalksAgree(spec, "M=4,N=4", limits);
    ExpectWalksAgree(spec, "M=1,N=4", limits);  // M >= 2 fails: nothing is valid
  }
}

TEST(ConfigEnumeratorTest, ReturnsUnconstrainedTrailingParamsAsOneRun) {
  v1::KernelSpec spec = EmptySpec();
  AddParam(&spec, "A", {1, 2, 3});
  AddParam(&spec, "B", {1, 2, 3, 4});
  AddParam(&spec, "C", {1, 2, 3, 4, 5});
  AddConstraint(&spec, "A != 2");
  auto space = Space(spec, "M=1,N=1", PlaceholderLimits(v1::BACKEND_CPU));
  ConfigEnumerator enumerator(space.get());
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  uint64_t first = 0;
  uint64_t count = 0;
  while (enumerator.NextRun(&first, &count)) runs.emplace_back(first, count);
  EXPECT_EQ(runs, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 20}, {40, 20}}));
}

TEST(ConfigEnumeratorTest, ResumesCorrectlyWhenTheSpaceIsBoundBetweenCalls) {
  v1::KernelSpec spec = MatmulSpec();
  auto space = Space(spec, "M=64,N=256,K=128", PlaceholderLimits(v1::BACKEND_CPU));
  std::vector<uint64_t> expected = BruteForce(space.get());
  ConfigEnumerator enumerator(space.get());
  ConfigEnumerator other(space.get());
  std::vector<uint64_t> walked;
  for (uint64_t ordinal = 0; enumerator.Next(&ordinal);) {
    walked.push_back(ordinal);
    space->Bind(space->full_size() - 1 - ordinal);
    uint64_t unused = 0;
    other.Next(&unused);
  }
  EXPECT_EQ(walked, expected);
}

TEST(ConfigEnumeratorTest, MatchesBruteForceOnRandomSpecs) {
  std::mt19937 rng(20261122);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> ops = {"<=", "<", "==", "!=", ">=", ">"};
  for (int round = 0; round < 300; ++round) {
    v1::KernelSpec spec = EmptySpec();
    std::vector<std::string> names = {"M", "N", "cores", "l1d_bytes / 4096"};
    const int params = 1 + pick(5);
    for (int p = 0; p < params; ++p) {
      std::vector<int64_t> values;
      for (int v = 1 + pick(4); v > 0; --v) values.push_back(1 + pick(12));
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      AddParam(&spec, absl::StrCat("P", p), values);
      names.push_back(absl::StrCat("P", p));
    }
    auto term = [&] {
      std::string a = names[pick(static_cast<int>(names.size()))];
      std::string b = names[pick(static_cast<int>(names.size()))];
      const char* op[] = {" + ", " * ", " - ", " % "};
      return pick(3) == 0 ? a : absl::StrCat("(", a, op[pick(4)], b, ")");
    };
    for (int d = pick(4); d > 0; --d) {
      std::string name = absl::StrCat("d", spec.derived_size());
      AddDerived(&spec, name, term());
      names.push_back(name);
    }
    for (int c = pick(5); c > 0; --c) {
      AddConstraint(&spec, absl::StrCat(term(), " ", ops[pick(6)], " ", term()));
    }
    ExpectWalksAgree(spec, absl::StrCat("M=", 1 + pick(16), ",N=", 1 + pick(16)),
                     PlaceholderLimits(v1::BACKEND_CPU));
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(ConfigEnumeratorTest, RejectingConfigsAllocatesNothing) {
  v1::KernelSpec spec = MatmulSpec();
  DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
  limits["l2_bytes"] = 262144;
  auto space = Space(spec, "M=64,N=100,K=40", limits);
  ConfigEnumerator enumerator(space.get());
  const int64_t before = HeapAllocations();
  int64_t valid = 0;
  for (uint64_t ordinal = 0; enumerator.Next(&ordinal);) ++valid;
  for (uint64_t ordinal = 0; ordinal < space->full_size(); ++ordinal) {
    space->Bind(ordinal);
    valid -= space->Valid() ? 1 : 0;
  }
  EXPECT_EQ(HeapAllocations() - before, 0);
  EXPECT_EQ(valid, 0);
}

}  // namespace
}  // namespace tunefleet
