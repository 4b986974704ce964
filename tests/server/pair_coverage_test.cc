// PairCoverage: which value pairs of two params the configs so far cover.
#include "server/pair_coverage.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

v1::KernelSpec Spec(const char* text) {
  v1::KernelSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec));
  return spec;
}

TEST(PairCoverageTest, CountsThePairsNoConfigAddedSoFarHas) {
  const ConfigDigits digits(Spec(R"pb(
    params { name: "A" values: [ 1, 2 ] }
    params { name: "B" values: [ 1, 2, 3 ] }
    params { name: "C" values: [ 1, 2 ] }
  )pb"));
  PairCoverage coverage(digits);
  ASSERT_TRUE(coverage.enabled());
  EXPECT_EQ(coverage.Uncovered({0, 0, 0}), 3);  // (A,B), (A,C), (B,C)
  coverage.Add({0, 0, 0});
  EXPECT_EQ(coverage.Uncovered({0, 0, 0}), 0);
  EXPECT_EQ(coverage.Uncovered({0, 1, 0}), 2);  // (A,C) = (1,1) is covered
  EXPECT_EQ(coverage.Uncovered({1, 1, 1}), 3);
  coverage.Add({1, 1, 1});
  EXPECT_EQ(coverage.Uncovered({0, 1, 1}), 2);  // (B,C) = (2,2) is covered
  EXPECT_EQ(coverage.Uncovered({1, 0, 1}), 2);  // (A,C) = (2,2) is covered
  coverage.Add({0, 1, 0});
  EXPECT_EQ(coverage.Uncovered({1, 1, 1}), 0);
  EXPECT_EQ(coverage.Uncovered({0, 1, 1}), 1);  // only (A,C) = (1,2) is new
}

TEST(PairCoverageTest, ASingleParamHasNoPairs) {
  const ConfigDigits digits(Spec(R"pb(params { name: "A" values: [ 1, 2, 3 ] })pb"));
  PairCoverage coverage(digits);
  coverage.Add({1});
  EXPECT_EQ(coverage.Uncovered({2}), 0);
}

TEST(PairCoverageTest, IsDisabledWhenThePairsAreTooManyToKeep) {
  v1::KernelSpec spec;
  for (const char* name : {"A", "B"}) {
    v1::Parameter* param = spec.add_params();
    param->set_name(name);
    for (int v = 0; v < 1100; ++v) param->add_values(v);  // 1,210,000 pairs
  }
  const ConfigDigits digits(spec);
  PairCoverage coverage(digits);
  EXPECT_FALSE(coverage.enabled());
  coverage.Add({1, 2});
  EXPECT_EQ(coverage.Uncovered({3, 4}), 0);
}

}  // namespace
}  // namespace tunefleet::server
