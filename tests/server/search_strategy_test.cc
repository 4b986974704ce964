#include "server/search_strategy.h"

#include <algorithm>
#include <random>
#include <set>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/support/valid_ordinals.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::ValidOrdinals;

class SearchStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    spec_ = bundle->spec;
    space_ = *ConfigSpace::Create(spec_, *NormalizeShape(spec_, *ParseShape("M=512,N=512,K=512")),
                                  PlaceholderLimits(v1::BACKEND_CPU));
    valid_ = ValidOrdinals(space_.get());
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

// The warm start comes right after the default, valid and distinct ones only,
// for every strategy, and counts against the budget.
TEST_F(SearchStrategyTest, WarmStartFollowsTheDefaultForEveryStrategy) {
  const uint64_t def = *space_->OrdinalOf(
      *NormalizeConfig(spec_, *ParseConfig(spec_.default_config())));
  std::vector<uint64_t> others;
  for (uint64_t ordinal : valid_) {
    if (ordinal != def && others.size() < 2) others.push_back(ordinal);
  }
  uint64_t invalid = 0;
  while (valid_.contains(invalid)) ++invalid;
  for (const char* name : {"exhaustive", "random", "model", "evolutionary"}) {
    SCOPED_TRACE(name);
    StrategyOptions options;
    options.name = name;
    options.budget = 10;
    options.default_ordinal = def;
    options.warm_start = {others[1], invalid, def, others[0], others[1]};
    auto strategy = MakeStrategy(space_.get(), options);
    ASSERT_OK(strategy);
    std::vector<uint64_t> all = Drain(strategy->get(), 2);
    ASSERT_GE(all.size(), 3u);
    EXPECT_EQ(all[0], def);
    EXPECT_EQ(all[1], others[1]);
    EXPECT_EQ(all[2], others[0]);
    EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), all.size());
    if (std::string(name) != "exhaustive") {
      EXPECT_EQ(all.size(), 10u);
    }
  }
}

// Every valid ordinal of `space`, binding each ordinal in turn.
std::vector<uint64_t> BruteForce(ConfigSpace* space) {
  std::vector<uint64_t> valid;
  for (uint64_t ordinal = 0; ordinal < space->full_size(); ++ordinal) {
    space->Bind(ordinal);
    if (space->Valid()) valid.push_back(ordinal);
  }
  return valid;
}

// The random strategy's sample written over a list: a reservoir of every
// valid config in ordinal order, shuffled; then the leading config first, the
// others in the sample's order, `budget` in all.
std::vector<uint64_t> ReferenceSample(const std::vector<uint64_t>& valid, int64_t budget,
                                      uint64_t seed, std::optional<uint64_t> first) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> reservoir;
  int64_t seen = 0;
  for (uint64_t ordinal : valid) {
    ++seen;
    if (static_cast<int64_t>(reservoir.size()) < budget) {
      reservoir.push_back(ordinal);
    } else {
      std::uniform_int_distribution<int64_t> pick(0, seen - 1);
      int64_t j = pick(rng);
      if (j < budget) reservoir[j] = ordinal;
    }
  }
  std::shuffle(reservoir.begin(), reservoir.end(), rng);
  std::vector<uint64_t> out;
  if (first.has_value()) out.push_back(*first);
  for (uint64_t ordinal : reservoir) {
    if (static_cast<int64_t>(out.size()) == budget) break;
    if (!first.has_value() || ordinal != *first) out.push_back(ordinal);
  }
  return out;
}

// Matmul with a trailing param no constraint names, under tight limits.
class SearchStrategyWalkTest : public SearchStrategyTest {
 protected:
  void SetUp() override {
    SearchStrategyTest::SetUp();
    v1::Parameter* pad = spec_.add_params();
    pad->set_name("PAD");
    for (int v = 0; v < 6; ++v) pad->add_values(v);
    spec_.set_default_config(spec_.default_config() + ",PAD=3");
    DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
    limits["l2_bytes"] = 262144;
    space_ = *ConfigSpace::Create(spec_, *NormalizeShape(spec_, *ParseShape("M=128,N=256,K=64")),
                                  limits);
    valid_list_ = BruteForce(space_.get());
    default_ = *space_->OrdinalOf(*NormalizeConfig(spec_, *ParseConfig(spec_.default_config())));
    ASSERT_TRUE(std::binary_search(valid_list_.begin(), valid_list_.end(), default_));
  }
  std::vector<uint64_t> valid_list_;
  uint64_t default_ = 0;
};

TEST_F(SearchStrategyWalkTest, ExhaustiveProposesTheDefaultThenEveryValidConfigInOrder) {
  StrategyOptions options;
  options.default_ordinal = default_;
  std::vector<uint64_t> expected = {default_};
  for (uint64_t ordinal : valid_list_) {
    if (ordinal != default_) expected.push_back(ordinal);
  }
  for (int batch : {1, 7, 1000}) {
    auto strategy = MakeStrategy(space_.get(), options);
    ASSERT_OK(strategy);
    EXPECT_EQ((*strategy)->planned_total(), static_cast<int64_t>(valid_list_.size()));
    EXPECT_EQ(Drain(strategy->get(), batch), expected) << "batch " << batch;
  }
  options.default_ordinal.reset();
  EXPECT_EQ(Drain(MakeStrategy(space_.get(), options)->get(), 5), valid_list_);
}

TEST_F(SearchStrategyWalkTest, ExhaustiveCapCountsEveryValidConfig) {
  StrategyOptions options;
  options.max_trials = static_cast<int64_t>(valid_list_.size());
  EXPECT_OK(MakeStrategy(space_.get(), options));
  options.max_trials -= 1;
  EXPECT_THAT(MakeStrategy(space_.get(), options), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(SearchStrategyWalkTest, RandomSampleIsTheReservoirOverEveryValidConfig) {
  StrategyOptions options;
  options.name = "random";
  for (uint64_t seed : {0, 1, 42}) {
    for (int64_t budget : {1, 5, 64, 100000}) {
      for (std::optional<uint64_t> first : {std::optional<uint64_t>(), std::optional(default_)}) {
        options.seed = seed;
        options.budget = budget;
        options.default_ordinal = first;
        EXPECT_EQ(Drain(MakeStrategy(space_.get(), options)->get(), 9),
                  ReferenceSample(valid_list_, budget, seed, first))
            << "seed " << seed << " budget " << budget;
      }
    }
  }
}

// A re-tune's warm start puts the previous winner in front; the rest of the
// sample stays the first run's (but for its last config when the winner was
// not in it), so the worker's artifact cache serves it.
TEST_F(SearchStrategyWalkTest, RandomSampleDoesNotMoveWhenAWarmStartIsAdded) {
  StrategyOptions options;
  options.name = "random";
  options.seed = 7;
  options.budget = 20;
  std::vector<uint64_t> first = Drain(MakeStrategy(space_.get(), options)->get(), 8);
  ASSERT_EQ(first.size(), 20u);
  for (uint64_t winner : {first[11], valid_list_.back()}) {
    options.warm_start = {winner};
    std::vector<uint64_t> again = Drain(MakeStrategy(space_.get(), options)->get(), 8);
    ASSERT_EQ(again.size(), 20u);
    EXPECT_EQ(again[0], winner);
    std::vector<uint64_t> expected;
    for (uint64_t ordinal : first) {
      if (ordinal != winner && expected.size() < 19) expected.push_back(ordinal);
    }
    EXPECT_EQ(std::vector<uint64_t>(again.begin() + 1, again.end()), expected);
  }
}

TEST_F(SearchStrategyWalkTest, StrategiesOutliveTheSpace) {
  StrategyOptions exhaustive;
  exhaustive.default_ordinal = default_;
  StrategyOptions random = exhaustive;
  random.name = "random";
  auto first = MakeStrategy(space_.get(), exhaustive);
  auto second = MakeStrategy(space_.get(), random);
  ASSERT_OK(first);
  ASSERT_OK(second);
  space_.reset();
  EXPECT_EQ(Drain(first->get(), 4).size(), valid_list_.size());
  EXPECT_EQ(Drain(second->get(), 4).front(), default_);
}

}  // namespace
}  // namespace tunefleet::server
