#include "server/search_strategy.h"

#include <set>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

class SearchStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    spec_ = bundle->spec;
    space_ = *ConfigSpace::Create(spec_, *NormalizeShape(spec_, *ParseShape("M=512,N=512,K=512")),
                                  PlaceholderLimits(v1::BACKEND_CPU));
    ConfigEnumerator enumerator(space_.get());
    uint64_t ordinal = 0;
    while (enumerator.Next(&ordinal)) valid_.insert(ordinal);
  }
  std::vector<uint64_t> Drain(SearchStrategy* strategy, int batch) {
    std::vector<uint64_t> all;
    while (!strategy->Exhausted()) {
      std::vector<uint64_t> proposed = strategy->Propose(batch);
      EXPECT_FALSE(proposed.empty());
      all.insert(all.end(), proposed.begin(), proposed.end());
    }
    EXPECT_TRUE(strategy->Propose(batch).empty());
    return all;
  }
  v1::KernelSpec spec_;
  std::unique_ptr<ConfigSpace> space_;
  std::set<uint64_t> valid_;
};

TEST_F(SearchStrategyTest, ExhaustiveProposesEveryValidConfigOnceDefaultFirst) {
  StrategyOptions options;
  options.default_ordinal = *space_->OrdinalOf(
      *NormalizeConfig(spec_, *ParseConfig(spec_.default_config())));
  auto strategy = MakeStrategy(space_.get(), options);
  ASSERT_OK(strategy);
  EXPECT_EQ((*strategy)->planned_total(), static_cast<int64_t>(valid_.size()));
  std::vector<uint64_t> all = Drain(strategy->get(), 7);
  EXPECT_EQ(all.front(), *options.default_ordinal);
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()), valid_);
  EXPECT_EQ(all.size(), valid_.size());
}

TEST_F(SearchStrategyTest, RandomSamplesDistinctValidConfigsDeterministically) {
  StrategyOptions options;
  options.name = "random";
  options.budget = 20;
  options.seed = 42;
  std::vector<uint64_t> first = Drain(MakeStrategy(space_.get(), options)->get(), 3);
  std::vector<uint64_t> again = Drain(MakeStrategy(space_.get(), options)->get(), 5);
  EXPECT_EQ(first, again);
  EXPECT_EQ(first.size(), 20u);
  EXPECT_EQ(std::set<uint64_t>(first.begin(), first.end()).size(), 20u);
  for (uint64_t ordinal : first) EXPECT_TRUE(valid_.contains(ordinal));
  options.seed = 43;
  EXPECT_NE(Drain(MakeStrategy(space_.get(), options)->get(), 3), first);
}

TEST_F(SearchStrategyTest, RandomBudgetLargerThanSpaceTakesTheWholeSpace) {
  StrategyOptions options;
  options.name = "random";
  options.budget = 100000;
  std::vector<uint64_t> all = Drain(MakeStrategy(space_.get(), options)->get(), 50);
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()), valid_);
}

TEST_F(SearchStrategyTest, RefusesEmptyOversizedAndUnknown) {
  StrategyOptions options;
  options.max_trials = 10;
  EXPECT_THAT(MakeStrategy(space_.get(), options),
              StatusIsWith(absl::StatusCode::kResourceExhausted, "more than 10 valid configs"));
  options.name = "annealing";
  EXPECT_THAT(MakeStrategy(space_.get(), options),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "annealing"));
  spec_.add_constraints()->set_expr("0");
  auto empty = *ConfigSpace::Create(spec_, *NormalizeShape(spec_, *ParseShape("M=8,N=8,K=8")),
                                    PlaceholderLimits(v1::BACKEND_CPU));
  EXPECT_THAT(MakeStrategy(empty.get(), StrategyOptions{}),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "empty"));
}

}  // namespace
}  // namespace tunefleet::server
