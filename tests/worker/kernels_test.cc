// The kernel specs the worker ships and tests with load, and their spaces are
// what their comments promise.
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

int ValidConfigs(const std::string& dir, const std::string& shape_text) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(testing::SourceDir() + "/" + dir);
  EXPECT_OK(bundle);
  if (!bundle.ok()) return -1;
  absl::StatusOr<v1::Shape> shape = ParseShape(shape_text);
  EXPECT_OK(shape);
  absl::StatusOr<v1::Shape> normalized = NormalizeShape(bundle->spec, *shape);
  EXPECT_OK(normalized);
  auto space = ConfigSpace::Create(bundle->spec, *normalized,
                                   PlaceholderLimits(v1::BACKEND_CPU));
  EXPECT_OK(space);
  if (!space.ok()) return -1;
  ConfigEnumerator configs(space->get());
  int count = 0;
  for (uint64_t ordinal; configs.Next(&ordinal);) ++count;
  return count;
}

TEST(ShippedKernelsTest, TransposeHasAtLeastTwentyValidConfigs) {
  EXPECT_GE(ValidConfigs("kernels/cpu/transpose", "M=1024,N=1024"), 20);
}

TEST(ShippedKernelsTest, MatmulLoads) {
  EXPECT_GT(ValidConfigs("kernels/cpu/matmul", "M=512,N=512,K=512"), 20);
}

TEST(ShippedKernelsTest, FaultySpaceHasEveryFault) {
  EXPECT_EQ(ValidConfigs("tests/worker/faulty_cpu", "N=4096"), 12);
  EXPECT_EQ(ValidConfigs("tests/worker/faulty_cpu", "N=4098"), 6);  // UNROLL=4 invalid
}

}  // namespace
}  // namespace tunefleet
