#include "common/spec_loader.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/compile_options.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;

v1::KernelSpec MatmulSpec() {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  return bundle->spec;
}

TEST(SpecLoaderTest, LoadsMatmulWithSourcesAndDigests) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  ASSERT_OK(bundle);
  EXPECT_EQ(bundle->spec.name(), "matmul");
  EXPECT_EQ(bundle->spec.backend(), v1::BACKEND_CPU);
  ASSERT_EQ(bundle->sources.size(), 2u);  // kernel source and reference
  for (const v1::SourceFile& file : bundle->sources) {
    EXPECT_FALSE(file.content().empty());
    EXPECT_EQ(file.digest(), Sha256Hex(file.content()));
  }
}

TEST(SpecLoaderTest, MalformedTextNamesFileAndLine) {
  absl::StatusOr<v1::KernelSpec> spec =
      ParseKernelSpec("name: \"x\"\nbackend: BACKEND_CPU\nparams { name: \"A\" values: [1, }\n",
                      "k/kernel.textproto");
  EXPECT_THAT(spec, StatusIsWith(absl::StatusCode::kInvalidArgument, "k/kernel.textproto:3:"));
}

TEST(SpecLoaderTest, UnknownFieldNamesIt) {
  EXPECT_THAT(ParseKernelSpec("name: \"x\"\nbogus_field: 3\n", "f"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "bogus_field"));
}

TEST(SpecLoaderTest, MissingDirectoryIsNotFound) {
  EXPECT_THAT(LoadKernelDir("/nonexistent/kernel"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(SpecLoaderTest, LoadDirReportsMissingSource) {
  TempDir dir;
  std::ofstream(dir.path() + "/kernel.textproto") << R"(
    name: "k" backend: BACKEND_CPU sources: "k.cc" entry: "k"
    problem { name: "N" } params { name: "P" values: [1] }
    args { name: "x" tensor { dtype: DTYPE_F32 shape: "N" role: ROLE_OUT } }
    reference { sources: "k.cc" entry: "ref" } default_config: "P=1")";
  EXPECT_THAT(LoadKernelDir(dir.path()), StatusIsWith(absl::StatusCode::kNotFound, "k.cc"));
}

TEST(SpecLoaderTest, ValidationNamesTheProblem) {
  v1::KernelSpec spec = MatmulSpec();
  v1::KernelSpec dup = spec;
  dup.mutable_params(1)->set_name("BLOCK_M");
  EXPECT_THAT(ValidateKernelSpec(dup),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "BLOCK_M\" is used twice"));
  v1::KernelSpec empty_values = spec;
  empty_values.mutable_params(0)->clear_values();
  EXPECT_THAT(ValidateKernelSpec(empty_values),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "lists no values"));
  v1::KernelSpec bad_default = spec;
  bad_default.set_default_config("BLOCK_M=32");
  EXPECT_THAT(ValidateKernelSpec(bad_default),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "default_config"));
  v1::KernelSpec no_output = spec;
  no_output.mutable_args(2)->mutable_tensor()->set_role(v1::ROLE_IN);
  EXPECT_THAT(ValidateKernelSpec(no_output),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "no output"));
  v1::KernelSpec bad_name = spec;
  bad_name.set_name("mat mul");
  EXPECT_THAT(ValidateKernelSpec(bad_name), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SpecLoaderTest, TensorMapsNameATensorOfTheirRankOnCudaOnly) {
  v1::KernelSpec spec = MatmulSpec();
  spec.set_backend(v1::BACKEND_CUDA);
  v1::Argument* map = spec.add_args();
  map->set_name("A_map");
  map->mutable_tensor_map()->set_tensor(spec.args(0).name());
  map->mutable_tensor_map()->add_box("BLOCK_M");
  map->mutable_tensor_map()->add_box("BLOCK_K");
  EXPECT_OK(ValidateKernelSpec(spec));

  v1::KernelSpec on_cpu = spec;
  on_cpu.set_backend(v1::BACKEND_CPU);
  EXPECT_THAT(ValidateKernelSpec(on_cpu),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "only BACKEND_CUDA"));
  v1::KernelSpec no_tensor = spec;
  no_tensor.mutable_args(spec.args_size() - 1)->mutable_tensor_map()->set_tensor("M");
  EXPECT_THAT(ValidateKernelSpec(no_tensor),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "which is no tensor argument"));
  v1::KernelSpec short_box = spec;
  short_box.mutable_args(spec.args_size() - 1)->mutable_tensor_map()->mutable_box()->RemoveLast();
  EXPECT_THAT(ValidateKernelSpec(short_box),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "has 1 box dims"));
  v1::KernelSpec twice = spec;
  twice.mutable_args(spec.args_size() - 1)->set_name(spec.args(0).name());
  EXPECT_THAT(ValidateKernelSpec(twice),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "is used twice"));
  v1::KernelSpec unknown_name = spec;
  unknown_name.mutable_args(spec.args_size() - 1)->mutable_tensor_map()->set_when("NOPE");
  v1::Shape shape = *NormalizeShape(spec, *ParseShape("M=64,N=64,K=64"));
  EXPECT_THAT(ConfigSpace::Create(unknown_name, shape, PlaceholderLimits(v1::BACKEND_CUDA)),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "A_map when"));
}

TEST(SpecLoaderTest, NormalizeShapeOrdersAndChecksDims) {
  v1::KernelSpec spec = MatmulSpec();
  absl::StatusOr<v1::Shape> shape = NormalizeShape(spec, *ParseShape("K=3,N=2,M=1"));
  ASSERT_OK(shape);
  EXPECT_EQ(ShapeToString(*shape), "M=1,N=2,K=3");
  EXPECT_THAT(NormalizeShape(spec, *ParseShape("M=1,N=2")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "missing dim K"));
  EXPECT_THAT(NormalizeShape(spec, *ParseShape("M=1,N=0,K=3")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "N=0 must be positive"));
  EXPECT_THAT(NormalizeShape(spec, *ParseShape("M=-4,N=2,K=3")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "M=-4"));
  EXPECT_THAT(NormalizeShape(spec, *ParseShape("M=1,N=2,K=3,Q=4")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "dim Q"));
}

TEST(SpecLoaderTest, NormalizeConfigRejectsUnlistedValues) {
  v1::KernelSpec spec = MatmulSpec();
  EXPECT_THAT(NormalizeConfig(spec, *ParseConfig(
                  "BLOCK_M=33,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "BLOCK_M=33"));
}

}  // namespace
}  // namespace tunefleet

namespace tunefleet {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIsWith;

v1::KernelSpec TritonSpec(const std::string& name) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/triton/" + name);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  return bundle.ok() ? bundle->spec : v1::KernelSpec();
}

TEST(PythonSpecTest, TritonKernelsLoadAndTheMatmulSpaceIsLarge) {
  const v1::KernelSpec softmax = TritonSpec("softmax");
  EXPECT_EQ(softmax.backend(), v1::BACKEND_PYTHON);
  const v1::KernelSpec matmul = TritonSpec("matmul");
  EXPECT_EQ(matmul.backend(), v1::BACKEND_PYTHON);
  absl::StatusOr<v1::Shape> shape = NormalizeShape(matmul, *ParseShape("M=4096,N=4096,K=4096"));
  ASSERT_OK(shape);
  auto space = ConfigSpace::Create(matmul, *shape, PlaceholderLimits(v1::BACKEND_PYTHON));
  ASSERT_OK(space);
  int valid = 0;
  for (uint64_t i = 0; i < (*space)->full_size(); ++i) {
    (*space)->Bind(i);
    valid += (*space)->Valid() ? 1 : 0;
  }
  EXPECT_GE(valid, 48);
  // The autotune list is 48 configs, every one in the space and valid.
  const v1::ConfigSet* autotune = nullptr;
  for (const v1::ConfigSet& set : matmul.config_sets()) {
    if (set.name() == "autotune48") autotune = &set;
  }
  ASSERT_NE(autotune, nullptr);
  EXPECT_EQ(autotune->configs_size(), 48);
  for (const std::string& text : autotune->configs()) {
    absl::StatusOr<v1::Config> config = NormalizeConfig(matmul, *ParseConfig(text));
    ASSERT_OK(config);
    ASSERT_OK((*space)->Bind(*config));
    EXPECT_TRUE((*space)->Valid()) << text << ": " << (*space)->CheckConstraints();
  }
}

// The fused-MoE sweep's config set is valid at every batch size it is tuned
// for (bench/moe_sweep_bench.py), and so is the default; the full grid is
// the 1,920 points serving engines sweep.
TEST(PythonSpecTest, FusedMoeSweepSetIsValidAtEveryBatchSize) {
  const v1::KernelSpec moe = TritonSpec("fused_moe");
  ASSERT_OK(ValidateKernelSpec(moe));
  ASSERT_EQ(moe.config_sets_size(), 1);
  const v1::ConfigSet& set = moe.config_sets(0);
  EXPECT_EQ(set.name(), "sweep48");
  EXPECT_EQ(set.configs_size(), 48);
  for (int m : {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096}) {
    absl::StatusOr<v1::Shape> shape =
        NormalizeShape(moe, *ParseShape(absl::StrCat("M=", m, ",N=3584,K=4096,E=8,TOPK=2")));
    ASSERT_OK(shape);
    auto space = ConfigSpace::Create(moe, *shape, PlaceholderLimits(v1::BACKEND_PYTHON));
    ASSERT_OK(space);
    EXPECT_EQ((*space)->full_size(), 1920u);
    std::vector<std::string> configs(set.configs().begin(), set.configs().end());
    configs.push_back(moe.default_config());
    for (const std::string& text : configs) {
      absl::StatusOr<v1::Config> config = NormalizeConfig(moe, *ParseConfig(text));
      ASSERT_OK(config);
      ASSERT_OK((*space)->Bind(*config));
      EXPECT_TRUE((*space)->Valid()) << "M=" << m << " " << text << ": "
                                     << (*space)->CheckConstraints();
    }
  }
}

TEST(PythonSpecTest, ValidationNamesWhatThePythonBackendDoesNotTake) {
  const v1::KernelSpec good = TritonSpec("matmul");
  ASSERT_OK(ValidateKernelSpec(good));
  auto refused = [&](auto edit, const std::string& why) {
    v1::KernelSpec spec = good;
    edit(&spec);
    EXPECT_THAT(ValidateKernelSpec(spec),
                StatusIsWith(absl::StatusCode::kInvalidArgument, why));
  };
  refused([](v1::KernelSpec* s) { s->set_entry("build me"); }, "must name a Python function");
  refused([](v1::KernelSpec* s) { s->set_sources(0, "matmul.cu"); }, "is not a .py file");
  refused([](v1::KernelSpec* s) { s->mutable_reference()->set_library("cublas_gemm"); },
          "reference.library");
  refused([](v1::KernelSpec* s) { s->mutable_reference()->clear_entry(); }, "reference");
  refused([](v1::KernelSpec* s) { s->add_compile_options("-O3"); }, "compile_options");
  refused([](v1::KernelSpec* s) { s->mutable_launch()->set_grid_x("M"); }, "launch");
  refused(
      [](v1::KernelSpec* s) {
        v1::Argument* arg = s->add_args();
        arg->set_name("alpha");
        arg->mutable_scalar()->set_dtype(v1::DTYPE_F32);
        arg->mutable_scalar()->set_expr("1");
      },
      "scalar args");
  refused([](v1::KernelSpec* s) { s->set_backend(static_cast<v1::Backend>(42)); },
          "unknown backend 42");
  refused([](v1::KernelSpec* s) { s->mutable_reference()->set_supply("make inputs"); },
          "reference.supply");
  refused([](v1::KernelSpec* s) { s->mutable_reference()->set_check("1check"); },
          "reference.check");
  refused(
      [](v1::KernelSpec* s) {
        s->mutable_reference()->set_check("same");
        s->mutable_tolerance()->set_skip_check(true);
      },
      "a check that never runs");
  EXPECT_THAT(CheckCompileOption(v1::BACKEND_PYTHON, "-O3"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "python backend"));
}

// A user's input generator and checker, and skip_check, name Python
// functions and options: a Python spec takes them, no other backend does.
TEST(PythonSpecTest, SupplyAndCheckAreTheUsersPythonFunctions) {
  v1::KernelSpec spec = TritonSpec("matmul");
  spec.mutable_reference()->set_supply("make_inputs");
  spec.mutable_reference()->set_check("same_bits");
  ASSERT_OK(ValidateKernelSpec(spec));
  spec.mutable_reference()->clear_check();
  spec.mutable_tolerance()->set_skip_check(true);
  ASSERT_OK(ValidateKernelSpec(spec));

  absl::StatusOr<KernelBundle> cpu = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  ASSERT_OK(cpu);
  for (auto edit : {+[](v1::KernelSpec* s) { s->mutable_reference()->set_supply("inputs"); },
                    +[](v1::KernelSpec* s) { s->mutable_reference()->set_check("same"); },
                    +[](v1::KernelSpec* s) { s->mutable_tolerance()->set_skip_check(true); }}) {
    v1::KernelSpec other = cpu->spec;
    edit(&other);
    EXPECT_THAT(ValidateKernelSpec(other),
                StatusIsWith(absl::StatusCode::kInvalidArgument, "BACKEND_PYTHON"));
  }
}

}  // namespace
}  // namespace tunefleet
