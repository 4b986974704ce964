#include "common/tuning_key.h"

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::SourceDir;

class TuningKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> loaded = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    bundle_ = *std::move(loaded);
  }
  std::string Key(const v1::KernelSpec& spec, const std::vector<v1::SourceFile>& sources,
                  const std::string& shape = "M=512,N=512,K=512",
                  const std::string& model = "cpu", const std::string& toolkit = "g++ 12") {
    return ComputeTuningKey({&spec, &sources, *ParseShape(shape), model, toolkit});
  }
  KernelBundle bundle_;
};

TEST_F(TuningKeyTest, FixedInputsGiveAFixedKey) {
  v1::KernelSpec spec;
  spec.set_name("k");
  spec.set_backend(v1::BACKEND_CPU);
  spec.set_entry("k");
  spec.add_sources("k.cc");
  v1::SourceFile file;
  file.set_path("k.cc");
  file.set_digest("00");
  std::vector<v1::SourceFile> sources = {file};
  // A golden value: changing the canonical form must be a deliberate,
  // versioned decision (it disowns every stored result). Protocol 5:
  // calibration (4: the precision rule; 3: the low-clock rule; 2: the
  // early-cut rule).
  EXPECT_EQ(Key(spec, sources, "N=1"), "1a07822b85751428cef8b3fa4f7ec86c");
  EXPECT_EQ(CanonicalKeyText({&spec, &sources, *ParseShape("N=1"), "cpu", "g++ 12"}),
            "tunefleet-tuning-key\nkernel=k\ncode=" + KernelDigest(spec, sources) +
                "\nshape=N=1\ndtypes=\ndevice_model=cpu\ntoolkit=g++ 12\nprotocol=6\n");
}

TEST_F(TuningKeyTest, EveryInputChangesTheKey) {
  const std::string base = Key(bundle_.spec, bundle_.sources);
  EXPECT_NE(Key(bundle_.spec, bundle_.sources, "M=512,N=512,K=256"), base);
  EXPECT_NE(Key(bundle_.spec, bundle_.sources, "M=512,N=512,K=512", "other cpu"), base);
  EXPECT_NE(Key(bundle_.spec, bundle_.sources, "M=512,N=512,K=512", "cpu", "g++ 13"), base);
  std::vector<v1::SourceFile> edited = bundle_.sources;
  edited[0].set_digest("ffff");
  EXPECT_NE(Key(bundle_.spec, edited), base);
  v1::KernelSpec options = bundle_.spec;
  options.add_compile_options("-funroll-loops");
  EXPECT_NE(Key(options, bundle_.sources), base);
  v1::KernelSpec dtype = bundle_.spec;
  dtype.mutable_args(0)->mutable_tensor()->set_dtype(v1::DTYPE_F64);
  EXPECT_NE(Key(dtype, bundle_.sources), base);
}

TEST_F(TuningKeyTest, GrowingTheSpaceKeepsTheKey) {
  const std::string base = Key(bundle_.spec, bundle_.sources);
  v1::KernelSpec grown = bundle_.spec;
  grown.mutable_params(0)->add_values(256);
  grown.add_constraints()->set_expr("BLOCK_M > 0");
  grown.set_description("edited");
  EXPECT_EQ(Key(grown, bundle_.sources), base);
}

}  // namespace
}  // namespace tunefleet
