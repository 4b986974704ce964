// The learning strategies (model, evolutionary) on a synthetic landscape
// whose optimum is known: valid and distinct proposals within the budget,
// determinism for a seed, restored results, the spec's priority, and finding
// the optimum with a small share of the space.
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "server/adaptive_strategy.h"
#include "server/pair_coverage.h"
#include "server/search_strategy.h"
#include "server/valid_configs.h"
#include "tests/support/test_support.h"
#include "tests/support/valid_ordinals.h"

namespace tunefleet::server {
namespace {

// Four params of 12 values each (20,736 points); P0 + P1 > 18 breaks a
// constraint.
constexpr char kSpec[] = R"pb(
  name: "synthetic"
  backend: BACKEND_CPU
  problem { name: "N" }
  params { name: "P0" values: [ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ] }
  params { name: "P1" values: [ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ] }
  params { name: "P2" values: [ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ] }
  params { name: "P3" values: [ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ] }
  derived { name: "AREA" expr: "P0 * P1" }
  constraints { expr: "P0 + P1 <= 18" }
  default_config: "P0=1,P1=1,P2=1,P3=1"
)pb";

// The time of a config: a bowl around P0=9, P1=4, P2=7, P3=2 with an
// interaction, and configs with P3 = 12 fail.
struct Landscape {
  std::function<v1::TrialResult(const v1::Config&)> result = [](const v1::Config& config) {
    double p[4];
    for (int i = 0; i < 4; ++i) p[i] = static_cast<double>(config.values(i).value());
    v1::TrialResult result;
    if (p[3] == 12) {
      result.set_status(v1::TRIAL_STATUS_COMPILE_ERROR);
      return result;
    }
    const double seconds = 1e-3 * (1 + 0.05 * std::pow(p[0] - 9, 2) + 0.08 * std::pow(p[1] - 4, 2) +
                                   0.03 * std::pow(p[2] - 7, 2) + 0.1 * std::pow(p[3] - 2, 2) +
                                   0.01 * std::abs((p[0] - 9) * (p[2] - 7)));
    result.set_status(v1::TRIAL_STATUS_OK);
    result.mutable_measurement()->set_median_seconds(seconds);
    return result;
  };
};

class AdaptiveStrategyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSpec, &spec_));
    Build();
  }

  void Build() {
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
        spec_, *NormalizeShape(spec_, *ParseShape("N=1")), PlaceholderLimits(v1::BACKEND_CPU));
    ASSERT_OK(space);
    space_ = *std::move(space);
    valid_ = ::tunefleet::testing::ValidOrdinals(space_.get());
    default_ = *space_->OrdinalOf(*NormalizeConfig(spec_, *ParseConfig(spec_.default_config())));
    optimum_ = *space_->OrdinalOf(*NormalizeConfig(spec_, *ParseConfig("P0=9,P1=4,P2=7,P3=2")));
  }

  std::unique_ptr<SearchStrategy> Make(int64_t budget, uint64_t seed) {
    StrategyOptions options;
    options.name = GetParam();
    options.budget = budget;
    options.seed = seed;
    options.default_ordinal = default_;
    absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy = MakeStrategy(space_.get(), options);
    EXPECT_OK(strategy);
    return strategy.ok() ? *std::move(strategy) : nullptr;
  }

  // Proposes in batches of `batch` and reports each batch's results, as a
  // fleet would, until the strategy is exhausted.
  std::vector<uint64_t> Run(SearchStrategy* strategy, int batch) {
    std::vector<uint64_t> all;
    while (!strategy->Exhausted()) {
      std::vector<uint64_t> proposed = strategy->Propose(batch);
      EXPECT_FALSE(proposed.empty()) << "not exhausted, yet proposes nothing";
      if (proposed.empty()) break;
      for (uint64_t ordinal : proposed) {
        strategy->Observe(ordinal, landscape_.result(space_->ConfigAt(ordinal)));
      }
      all.insert(all.end(), proposed.begin(), proposed.end());
    }
    EXPECT_TRUE(strategy->Propose(batch).empty());
    return all;
  }

  double Best(const std::vector<uint64_t>& measured) {
    double best = HUGE_VAL;
    for (uint64_t ordinal : measured) {
      v1::TrialResult result = landscape_.result(space_->ConfigAt(ordinal));
      if (result.status() == v1::TRIAL_STATUS_OK) {
        best = std::min(best, result.measurement().median_seconds());
      }
    }
    return best;
  }

  v1::KernelSpec spec_;
  std::unique_ptr<ConfigSpace> space_;
  std::set<uint64_t> valid_;
  uint64_t default_ = 0;
  uint64_t optimum_ = 0;
  Landscape landscape_;
};

TEST_P(AdaptiveStrategyTest, ProposesDistinctValidConfigsWithinTheBudgetDefaultFirst) {
  std::unique_ptr<SearchStrategy> strategy = Make(300, 1);
  ASSERT_NE(strategy, nullptr);
  EXPECT_EQ(strategy->planned_total(), 300);
  std::vector<uint64_t> all = Run(strategy.get(), 8);
  ASSERT_EQ(all.size(), 300u);
  EXPECT_EQ(all.front(), default_);
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), all.size());
  for (uint64_t ordinal : all) EXPECT_TRUE(valid_.contains(ordinal)) << ordinal;
}

TEST_P(AdaptiveStrategyTest, IsDeterministicForASeed) {
  std::vector<uint64_t> first = Run(Make(120, 7).get(), 8);
  std::vector<uint64_t> again = Run(Make(120, 7).get(), 8);
  EXPECT_EQ(first, again);
  EXPECT_NE(Run(Make(120, 8).get(), 8), first);
}

TEST_P(AdaptiveStrategyTest, FindsTheOptimumWithAFewPercentOfTheSpace) {
  // 3 % of the ~16,000 valid configs, over several seeds.
  const int64_t budget = static_cast<int64_t>(valid_.size()) * 3 / 100;
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    std::vector<uint64_t> measured = Run(Make(budget, seed).get(), 8);
    EXPECT_NE(std::find(measured.begin(), measured.end(), optimum_), measured.end())
        << "best found " << Best(measured) << " s, optimum 1e-3 s";
  }
}

TEST_P(AdaptiveStrategyTest, RestoredResultsCountAgainstTheBudgetAndAreNotProposedAgain) {
  std::unique_ptr<SearchStrategy> strategy = Make(50, 3);
  std::vector<uint64_t> restored(valid_.begin(), std::next(valid_.begin(), 5));
  for (uint64_t ordinal : restored) {
    strategy->Observe(ordinal, landscape_.result(space_->ConfigAt(ordinal)));
  }
  std::vector<uint64_t> rest = Run(strategy.get(), 8);
  EXPECT_EQ(rest.size(), 45u);
  for (uint64_t ordinal : restored) {
    EXPECT_EQ(std::find(rest.begin(), rest.end(), ordinal), rest.end()) << ordinal;
  }
}

// Amending results that turn out lies (their principal quarantined) leaves
// the budget and the configs used alone: the budget counts them still, and
// none is proposed again. (That the lies themselves are forgotten or
// replaced is checked from inside, AdaptiveStrategyAmendTest below.)
TEST_P(AdaptiveStrategyTest, AmendedResultsAreNeitherProposedAgainNorRecounted) {
  std::unique_ptr<SearchStrategy> strategy = Make(60, 5);
  std::vector<uint64_t> first = strategy->Propose(16);
  ASSERT_EQ(first.size(), 16u);
  v1::TrialResult lie;
  lie.set_status(v1::TRIAL_STATUS_OK);
  lie.mutable_measurement()->set_median_seconds(1e-12);
  for (uint64_t ordinal : first) strategy->Observe(ordinal, lie);
  for (size_t i = 0; i < first.size(); ++i) {
    if (i % 2) {
      strategy->Amend(first[i], std::nullopt);  // measured again later, or never
    } else {
      strategy->Amend(first[i], landscape_.result(space_->ConfigAt(first[i])));
    }
  }
  EXPECT_EQ(strategy->planned_total(), 60);
  std::vector<uint64_t> rest = Run(strategy.get(), 8);
  EXPECT_EQ(rest.size(), 44u);
  for (uint64_t ordinal : first) {
    EXPECT_EQ(std::count(rest.begin(), rest.end(), ordinal), 0) << ordinal;
  }
}

// What an adaptive strategy keeps of its results, seen from inside.
class ObservationsProbe final : public AdaptiveStrategy {
 public:
  explicit ObservationsProbe(ConfigSpace* space)
      : AdaptiveStrategy(space, ValidConfigs::Collect(space, 1 << 20), /*budget=*/60,
                         /*seed=*/1, /*leading=*/{}) {}
  using AdaptiveStrategy::Fastest;
  std::vector<uint64_t> Choose(int) override { return {}; }
};

TEST(AdaptiveStrategyAmendTest, AnAmendedLieIsReplacedByTheTrustedTimeOrForgotten) {
  v1::KernelSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSpec, &spec));
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("N=1")), PlaceholderLimits(v1::BACKEND_CPU));
  ASSERT_OK(space);
  ObservationsProbe probe(space->get());
  const std::vector<uint64_t> ordinals = {1, 2, 3};
  v1::TrialResult lie;
  lie.set_status(v1::TRIAL_STATUS_OK);
  lie.mutable_measurement()->set_median_seconds(1e-12);
  for (uint64_t ordinal : ordinals) probe.Observe(ordinal, lie);
  v1::TrialResult trusted = lie;
  trusted.mutable_measurement()->set_median_seconds(2e-3);
  probe.Amend(1, trusted);        // another principal measured it
  probe.Amend(2, std::nullopt);   // nobody else did: forgotten
  const auto fastest = probe.Fastest(10);
  ASSERT_EQ(fastest.size(), 2u);
  EXPECT_EQ(fastest[0].ordinal, 3u);  // a lie no one has amended yet
  EXPECT_EQ(fastest[1].ordinal, 1u);
  EXPECT_EQ(fastest[1].seconds, 2e-3);
}

TEST_P(AdaptiveStrategyTest, ABudgetOverTheSpaceTakesEveryValidConfigOnce) {
  spec_.add_constraints()->set_expr("P2 == 3 && P3 <= 2");  // 2 x (valid P0, P1 pairs)
  Build();
  std::vector<uint64_t> all = Run(Make(100000, 1).get(), 16);
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()), valid_);
  EXPECT_EQ(all.size(), valid_.size());
}

TEST_P(AdaptiveStrategyTest, RefusesAMissingBudget) {
  StrategyOptions options;
  options.name = GetParam();
  options.budget = 0;
  EXPECT_THAT(MakeStrategy(space_.get(), options),
              ::tunefleet::testing::StatusIsWith(absl::StatusCode::kInvalidArgument, "budget"));
}

INSTANTIATE_TEST_SUITE_P(Strategies, AdaptiveStrategyTest,
                         ::testing::Values("model", "evolutionary"));

// The spec's priority ranks the model strategy's first proposals.
TEST(ModelStrategyTest, ProposesByPriorityBeforeAnyResult) {
  v1::KernelSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSpec, &spec));
  spec.set_priority("-(abs(P0 - 5) + abs(P1 - 6) + abs(P2 - 7) + abs(P3 - 8))");
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("N=1")), PlaceholderLimits(v1::BACKEND_CPU));
  ASSERT_OK(space);
  StrategyOptions options;
  options.name = "model";
  options.budget = 100;
  absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy = MakeStrategy(space->get(), options);
  ASSERT_OK(strategy);
  std::vector<uint64_t> first = (*strategy)->Propose(1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(ConfigToString((*space)->ConfigAt(first[0])), "P0=5,P1=6,P2=7,P3=8");
}

// The fleet's history of two other shapes (times three times and a quarter
// of this shape's, the same landscape otherwise) is enough to start near the
// optimum, before any result of the job's own.
TEST(ModelStrategyTest, TrainsOnTheFleetsHistoryOfOtherShapes) {
  v1::KernelSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSpec, &spec));
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("N=1")), PlaceholderLimits(v1::BACKEND_CPU));
  ASSERT_OK(space);
  const std::set<uint64_t> valid_set = ::tunefleet::testing::ValidOrdinals(space->get());
  const std::vector<uint64_t> valid(valid_set.begin(), valid_set.end());
  Landscape landscape;
  auto seconds = [&](uint64_t ordinal) {
    v1::TrialResult result = landscape.result((*space)->ConfigAt(ordinal));
    return result.status() == v1::TRIAL_STATUS_OK ? result.measurement().median_seconds() : 0.0;
  };
  const uint64_t optimum = *(*space)->OrdinalOf(
      *NormalizeConfig(spec, *ParseConfig("P0=9,P1=4,P2=7,P3=2")));
  std::vector<PriorResult> history;
  std::mt19937_64 rng(7);
  for (int shape = 0; shape < 2; ++shape) {
    const double scale = shape == 0 ? 3.0 : 0.25;
    for (int i = 0; i < 150; ++i) {
      const uint64_t config = valid[rng() % valid.size()];
      if (config == optimum || seconds(config) == 0) continue;  // failures are not stored
      history.push_back(PriorResult{config, scale * seconds(config), shape});
    }
  }

  auto first_batch = [&](const std::vector<PriorResult>& prior) {
    StrategyOptions options;
    options.name = "model";
    options.budget = 100;
    options.seed = 3;
    options.history = prior;
    absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy =
        MakeStrategy(space->get(), options);
    EXPECT_OK(strategy);
    EXPECT_EQ((*strategy)->planned_total(), 100);  // the history is not proposals
    return (*strategy)->Propose(4);  // the fifth pick would be an exploration
  };
  // A uniform draw is 6.2 times the optimum on average, and under 1.3 times
  // it for 0.8% of the valid configs.
  std::vector<uint64_t> learned = first_batch(history);
  ASSERT_EQ(learned.size(), 4u);
  for (uint64_t config : learned) {
    EXPECT_GT(seconds(config), 0);
    EXPECT_LT(seconds(config), 1.3e-3) << ConfigToString((*space)->ConfigAt(config));
  }
  std::vector<uint64_t> uniform = first_batch({});
  ASSERT_EQ(uniform.size(), 4u);
  EXPECT_NE(uniform, learned);
}

// A tile whose best size grows with the problem: the time depends on how
// the tile fills the problem (`fill`, a derived value of the shape), so each
// shape has another optimum (TILE = sqrt(N)).
constexpr char kMovingSpec[] = R"pb(
  name: "moving"
  backend: BACKEND_CPU
  problem { name: "N" }
  params { name: "TILE" values: [ 1, 2, 4, 8, 16, 32, 64, 128 ] }
  params { name: "WAY" values: [ 1, 2, 3, 4 ] }
  derived { name: "fill" expr: "TILE * TILE / N" }
  default_config: "TILE=1,WAY=1"
)pb";

// The history of four other shapes, each measured in full at its own shape,
// teaches the model where the optimum of a fifth lies, though none of them
// had that optimum: each row's derived values and context are taken at the
// shape it was measured at. Told nothing of where the rows were measured
// (as measured at the job's own shape), it does not find it.
TEST(ModelStrategyTest, LearnsHowTheOptimumMovesWithTheShape) {
  v1::KernelSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kMovingSpec, &spec));
  const DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
  auto space_at = [&](int64_t n) {
    absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
        spec, *NormalizeShape(spec, *ParseShape(absl::StrCat("N=", n))), limits);
    EXPECT_OK(space);
    return *std::move(space);
  };
  auto seconds = [](const v1::Config& config, int64_t n) {
    const double tile = static_cast<double>(config.values(0).value());
    const double way = static_cast<double>(config.values(1).value());
    return 1e-3 * (1 + 0.1 * std::pow(std::log2(tile * tile / static_cast<double>(n)), 2) +
                   0.05 * std::pow(way - 2, 2));
  };
  std::unique_ptr<ConfigSpace> space = space_at(256);  // the optimum: TILE=16, WAY=2
  std::vector<PriorResult> history;
  std::vector<PriorShape> shapes;
  for (int64_t n : {4, 16, 64, 4096}) {  // optima TILE = 2, 4, 8, 64
    const int shape = static_cast<int>(shapes.size());
    shapes.push_back(PriorShape{*NormalizeShape(spec, *ParseShape(absl::StrCat("N=", n))),
                                limits, static_cast<int64_t>(space->full_size())});
    for (uint64_t ordinal = 0; ordinal < space->full_size(); ++ordinal) {
      history.push_back(PriorResult{ordinal, seconds(space->ConfigAt(ordinal), n), shape});
    }
  }
  auto first = [&](const std::vector<PriorShape>& where) {
    StrategyOptions options;
    options.name = "model";
    options.budget = 16;
    options.seed = 5;
    options.history = history;
    options.history_shapes = where;
    absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy = MakeStrategy(space.get(), options);
    EXPECT_OK(strategy);
    std::vector<uint64_t> proposed = (*strategy)->Propose(1);
    EXPECT_EQ(proposed.size(), 1u);
    return proposed.empty() ? std::string() : ConfigToString(space->ConfigAt(proposed[0]));
  };
  EXPECT_EQ(first(shapes), "TILE=16,WAY=2");
  EXPECT_NE(first({}), "TILE=16,WAY=2");
}

// Before it has results (no priority, no history), the model strategy draws
// spread-out configs: six two-valued params (64 configs, 60 value pairs) are
// pairwise covered by its first 8 proposals for every seed. Eight uniform
// draws leave about 6 pairs uncovered (each pair is in a quarter of the
// space: 60 x 0.75^8).
TEST(ModelStrategyTest, FirstDrawsCoverEveryPairOfParamValues) {
  v1::KernelSpec spec;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    name: "pairs"
    backend: BACKEND_CPU
    problem { name: "N" }
    params { name: "A" values: [ 0, 1 ] }
    params { name: "B" values: [ 0, 1 ] }
    params { name: "C" values: [ 0, 1 ] }
    params { name: "D" values: [ 0, 1 ] }
    params { name: "E" values: [ 0, 1 ] }
    params { name: "F" values: [ 0, 1 ] }
  )pb", &spec));
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = ConfigSpace::Create(
      spec, *NormalizeShape(spec, *ParseShape("N=1")), PlaceholderLimits(v1::BACKEND_CPU));
  ASSERT_OK(space);
  const ConfigDigits digits(spec);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    StrategyOptions options;
    options.name = "model";
    options.budget = 64;
    options.seed = seed;
    absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy =
        MakeStrategy(space->get(), options);
    ASSERT_OK(strategy);
    std::vector<uint64_t> first = (*strategy)->Propose(8);
    ASSERT_EQ(first.size(), 8u);
    PairCoverage coverage(digits);
    for (uint64_t ordinal : first) coverage.Add(digits.Digits(ordinal));
    int uncovered = 0;
    for (uint64_t ordinal = 0; ordinal < 64; ++ordinal) {
      uncovered += coverage.Uncovered(digits.Digits(ordinal)) > 0 ? 1 : 0;
    }
    EXPECT_EQ(uncovered, 0) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tunefleet::server
