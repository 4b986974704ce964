// The coordinate strategy on a synthetic landscape of two groups of params
// whose best values depend on each other: one group at a time from the best
// so far, nothing proposed past a group until its results are in, a fixed
// point of the rule at the end, and restored results, failures, the budget
// and bad spaces.
#include "server/coordinate_strategy.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/target_trials.h"
#include "server/valid_configs.h"
#include "tests/support/test_support.h"
#include "tests/support/valid_ordinals.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::ValidOrdinals;

// Two kernels of one function: qk (two params) and pv (one), and a param of
// no group. qk__BLOCK + pv__BLOCK > 14 breaks a constraint.
constexpr char kSpec[] = R"pb(
  name: "pair"
  backend: BACKEND_CPU
  problem { name: "N" }
  params { name: "qk__BLOCK" values: [ 1, 2, 3, 4, 5, 6, 7, 8 ] }
  params { name: "qk__WARPS" values: [ 1, 2, 4 ] }
  params { name: "pv__BLOCK" values: [ 1, 2, 3, 4, 5, 6, 7, 8 ] }
  params { name: "SPLIT" values: [ 1, 2 ] }
  constraints { expr: "qk__BLOCK + pv__BLOCK <= 14" }
  default_config: "qk__BLOCK=1,qk__WARPS=1,pv__BLOCK=1,SPLIT=1"
)pb";

// The function's time: qk's best BLOCK is pv's + 2, pv is pulled towards 5,
// WARPS=2 and SPLIT=2 are best; configs with qk__WARPS = 4 and pv__BLOCK = 3
// fail to compile. From the default the rule climbs the coupled valley in
// three rounds to qk=6, pv=4, where neither kernel alone can do better; the
// space's optimum is qk=7, pv=5.
v1::TrialResult PairTime(const v1::Config& config) {
  const double qk = static_cast<double>(config.values(0).value());
  const double warps = static_cast<double>(config.values(1).value());
  const double pv = static_cast<double>(config.values(2).value());
  const double split = static_cast<double>(config.values(3).value());
  v1::TrialResult result;
  if (warps == 4 && pv == 3) {
    result.set_status(v1::TRIAL_STATUS_COMPILE_ERROR);
    return result;
  }
  const double seconds = 1e-3 * (1 + 0.05 * std::pow(qk - pv - 2, 2) + 0.04 * std::pow(pv - 5, 2) +
                                 0.1 * std::abs(warps - 2) + 0.05 * (2 - split));
  result.set_status(v1::TRIAL_STATUS_OK);
  result.mutable_measurement()->set_median_seconds(seconds);
  return result;
}

class CoordinateStrategyTest : public ::testing::Test {
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
    valid_ = ValidOrdinals(space_.get());
  }

  uint64_t Ordinal(const std::string& text) {
    return *space_->OrdinalOf(*NormalizeConfig(spec_, *ParseConfig(text)));
  }

  std::unique_ptr<SearchStrategy> Make(int64_t budget, std::vector<uint64_t> leading) {
    StrategyOptions options;
    options.name = "coordinate";
    options.budget = budget;
    if (!leading.empty()) options.default_ordinal = leading.front();
    options.warm_start.assign(leading.begin() + std::min<size_t>(1, leading.size()),
                              leading.end());
    absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy =
        MakeStrategy(space_.get(), options);
    EXPECT_TRUE(strategy.ok()) << strategy.status();
    return strategy.ok() ? *std::move(strategy) : nullptr;
  }

  double Seconds(uint64_t ordinal) {
    v1::TrialResult result = PairTime(space_->ConfigAt(ordinal));
    return result.status() == v1::TRIAL_STATUS_OK ? result.measurement().median_seconds()
                                                  : INFINITY;
  }

  // Proposes in batches of `batch`, observing a batch's results only once
  // the strategy has nothing more to propose; returns every proposal in
  // order. Checks that no proposal is repeated, observed or invalid.
  std::vector<uint64_t> Drive(SearchStrategy* strategy, int batch) {
    std::vector<uint64_t> all;
    std::set<uint64_t> seen(observed_.begin(), observed_.end());
    while (!strategy->Exhausted()) {
      std::vector<uint64_t> proposed = strategy->Propose(batch);
      if (proposed.empty()) {
        EXPECT_FALSE(pending_.empty()) << "nothing proposed and nothing to wait for";
        if (pending_.empty()) break;
        for (uint64_t ordinal : pending_) strategy->Observe(ordinal, PairTime(space_->ConfigAt(ordinal)));
        pending_.clear();
        continue;
      }
      for (uint64_t ordinal : proposed) {
        EXPECT_TRUE(valid_.contains(ordinal));
        EXPECT_TRUE(seen.insert(ordinal).second) << "proposed twice: " << ordinal;
        pending_.push_back(ordinal);
        all.push_back(ordinal);
      }
    }
    EXPECT_TRUE(strategy->Propose(batch).empty());
    for (uint64_t ordinal : pending_) strategy->Observe(ordinal, PairTime(space_->ConfigAt(ordinal)));
    pending_.clear();
    return all;
  }

  // The fastest of `ordinals` (and of the restored ones).
  uint64_t Fastest(const std::vector<uint64_t>& ordinals) {
    uint64_t best = ordinals.front();
    for (uint64_t ordinal : ordinals) {
      if (Seconds(ordinal) < Seconds(best)) best = ordinal;
    }
    for (uint64_t ordinal : observed_) {
      if (Seconds(ordinal) < Seconds(best)) best = ordinal;
    }
    return best;
  }

  // True when no valid config differing from `at` in one group's params
  // alone is faster: a fixed point of the coordinate rule.
  bool FixedPoint(uint64_t at) {
    const ParamGroups groups = GroupParams(spec_);
    const ConfigDigits digits(spec_);
    for (uint64_t other : valid_) {
      std::vector<int> a = digits.Digits(at);
      std::vector<int> b = digits.Digits(other);
      std::set<int> differ;
      for (size_t p = 0; p < a.size(); ++p) {
        if (a[p] != b[p]) differ.insert(groups.group_of_param[p]);
      }
      if (differ.size() == 1 && Seconds(other) < Seconds(at)) return false;
    }
    return true;
  }

  v1::KernelSpec spec_;
  std::unique_ptr<ConfigSpace> space_;
  std::set<uint64_t> valid_;
  std::vector<uint64_t> pending_;
  std::vector<uint64_t> observed_;  // restored before the search
};

TEST_F(CoordinateStrategyTest, GroupsAreTheParamsPrefixesAndEachUngroupedParamAlone) {
  const ParamGroups groups = GroupParams(spec_);
  EXPECT_EQ(groups.names, (std::vector<std::string>{"qk", "pv", "SPLIT"}));
  EXPECT_EQ(groups.group_of_param, (std::vector<int>{0, 0, 1, 2}));
}

// The shared cases (tests/data/param_groups.json), which the Python
// package's split_config passes too: a param of a kernel's group is named
// after it, any other is a group of its own.
TEST(ParamGroupsTest, TheSharedCasesGroupAsThePythonPackageSplits) {
  std::ifstream file(SourceDir() + "/tests/data/param_groups.json");
  ASSERT_TRUE(file);
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str());
  v1::KernelSpec spec;
  for (const nlohmann::json& c : json["cases"]) {
    spec.add_params()->set_name(c["name"].get<std::string>());
  }
  const ParamGroups groups = GroupParams(spec);
  ASSERT_EQ(groups.group_of_param.size(), json["cases"].size());
  for (size_t i = 0; i < json["cases"].size(); ++i) {
    const nlohmann::json& c = json["cases"][i];
    const std::string kernel = c["kernel"].get<std::string>();
    EXPECT_EQ(groups.names[groups.group_of_param[i]],
              kernel.empty() ? c["name"].get<std::string>() : kernel)
        << c.dump();
  }
}

TEST_F(CoordinateStrategyTest, SearchesOneGroupAtATimeFromTheBestSoFarToAFixedPoint) {
  const uint64_t start = Ordinal(spec_.default_config());
  std::unique_ptr<SearchStrategy> strategy = Make(10000, {start});
  ASSERT_NE(strategy, nullptr);
  std::vector<uint64_t> proposals;
  // Batches of 5: a group's configs span several leases, and the next
  // group waits for all of them.
  const ConfigDigits digits(spec_);
  const ParamGroups groups = GroupParams(spec_);
  uint64_t incumbent = start;
  double incumbent_seconds = Seconds(start);
  ASSERT_EQ(strategy->Propose(5), std::vector<uint64_t>{start});
  EXPECT_TRUE(strategy->Propose(5).empty()) << "nothing before the default's result";
  strategy->Observe(start, PairTime(space_->ConfigAt(start)));
  proposals.push_back(start);
  while (!strategy->Exhausted()) {
    // One phase: proposals until the strategy waits; each differs from the
    // incumbent in one group alone, the same group for the whole phase.
    std::vector<uint64_t> phase;
    for (std::vector<uint64_t> batch = strategy->Propose(5); !batch.empty();
         batch = strategy->Propose(5)) {
      phase.insert(phase.end(), batch.begin(), batch.end());
    }
    if (phase.empty()) break;
    std::set<int> phase_groups;
    for (uint64_t ordinal : phase) {
      std::vector<int> a = digits.Digits(incumbent);
      std::vector<int> b = digits.Digits(ordinal);
      for (size_t p = 0; p < a.size(); ++p) {
        if (a[p] != b[p]) phase_groups.insert(groups.group_of_param[p]);
      }
    }
    EXPECT_EQ(phase_groups.size(), 1u) << "a phase moves one group";
    for (uint64_t ordinal : phase) {
      strategy->Observe(ordinal, PairTime(space_->ConfigAt(ordinal)));
      if (Seconds(ordinal) < incumbent_seconds) {
        incumbent = ordinal;
        incumbent_seconds = Seconds(ordinal);
      }
    }
    proposals.insert(proposals.end(), phase.begin(), phase.end());
  }
  EXPECT_TRUE(strategy->converged());
  const uint64_t best = Fastest(proposals);
  EXPECT_TRUE(FixedPoint(best)) << space_->ConfigAt(best).ShortDebugString();
  EXPECT_EQ(best, Ordinal("qk__BLOCK=6,qk__WARPS=2,pv__BLOCK=4,SPLIT=2"))
      << space_->ConfigAt(best).ShortDebugString();
  // Three rounds of 23 + 7 + 1 configs at most, of 366 valid ones.
  EXPECT_GT(proposals.size(), 62u);
  EXPECT_LE(proposals.size(), 94u);
  EXPECT_EQ(strategy->planned_total(), static_cast<int64_t>(proposals.size()));
}

// A result it was told that turns out a lie (its principal quarantined, the
// config measured again by another) never moves the walk: the next phase
// starts from the fastest result that stands.
TEST_F(CoordinateStrategyTest, AnAmendedLieNeverBecomesTheIncumbent) {
  const uint64_t start = Ordinal(spec_.default_config());
  std::unique_ptr<SearchStrategy> strategy = Make(10000, {start});
  ASSERT_NE(strategy, nullptr);
  ASSERT_EQ(strategy->Propose(5), std::vector<uint64_t>{start});
  strategy->Observe(start, PairTime(space_->ConfigAt(start)));
  std::vector<uint64_t> phase;
  for (std::vector<uint64_t> batch = strategy->Propose(5); !batch.empty();
       batch = strategy->Propose(5)) {
    phase.insert(phase.end(), batch.begin(), batch.end());
  }
  ASSERT_GE(phase.size(), 3u);
  // The slowest config of the phase (but its last) claimed at 1 ns.
  uint64_t lie = phase.front();
  for (size_t i = 0; i + 1 < phase.size(); ++i) {
    if (Seconds(phase[i]) > Seconds(lie)) lie = phase[i];
  }
  v1::TrialResult claimed = PairTime(space_->ConfigAt(lie));
  claimed.set_status(v1::TRIAL_STATUS_OK);
  claimed.mutable_measurement()->set_median_seconds(1e-9);
  uint64_t truly_fastest = start;
  for (uint64_t ordinal : phase) {
    if (ordinal == phase.back()) continue;
    strategy->Observe(ordinal, ordinal == lie ? claimed : PairTime(space_->ConfigAt(ordinal)));
  }
  strategy->Amend(lie, PairTime(space_->ConfigAt(lie)));  // measured again by another
  strategy->Observe(phase.back(), PairTime(space_->ConfigAt(phase.back())));
  for (uint64_t ordinal : phase) {
    if (Seconds(ordinal) < Seconds(truly_fastest)) truly_fastest = ordinal;
  }
  ASSERT_NE(truly_fastest, lie);
  // The next phase varies one group of the truly fastest config.
  const ConfigDigits digits(spec_);
  const ParamGroups groups = GroupParams(spec_);
  std::vector<uint64_t> next = strategy->Propose(100);
  ASSERT_FALSE(next.empty());
  for (uint64_t ordinal : next) {
    std::set<int> differ;
    const std::vector<int> a = digits.Digits(truly_fastest);
    const std::vector<int> b = digits.Digits(ordinal);
    for (size_t p = 0; p < a.size(); ++p) {
      if (a[p] != b[p]) differ.insert(groups.group_of_param[p]);
    }
    EXPECT_EQ(differ.size(), 1u) << space_->ConfigAt(ordinal).ShortDebugString();
  }
}

TEST_F(CoordinateStrategyTest, RestoredResultsAreUsedAndNeverProposed) {
  // A job resumed after a restart: some configs of the first groups were
  // measured before it.
  for (const char* text : {"qk__BLOCK=2,qk__WARPS=2,pv__BLOCK=1,SPLIT=1",
                           "qk__BLOCK=1,qk__WARPS=2,pv__BLOCK=1,SPLIT=1"}) {
    observed_.push_back(Ordinal(text));
  }
  std::unique_ptr<SearchStrategy> strategy = Make(10000, {Ordinal(spec_.default_config())});
  for (uint64_t ordinal : observed_) strategy->Observe(ordinal, PairTime(space_->ConfigAt(ordinal)));
  std::vector<uint64_t> proposals = Drive(strategy.get(), 7);
  for (uint64_t ordinal : observed_) {
    EXPECT_EQ(std::count(proposals.begin(), proposals.end(), ordinal), 0);
  }
  EXPECT_TRUE(strategy->converged());
  EXPECT_TRUE(FixedPoint(Fastest(proposals)));
}

TEST_F(CoordinateStrategyTest, AFailedDefaultStartsFromTheFirstValidConfigThatPasses) {
  // The default fails (qk__WARPS=4 with pv__BLOCK=3 does not compile).
  const uint64_t failing = Ordinal("qk__BLOCK=1,qk__WARPS=4,pv__BLOCK=3,SPLIT=1");
  ASSERT_EQ(Seconds(failing), INFINITY);
  std::unique_ptr<SearchStrategy> strategy = Make(10000, {failing});
  std::vector<uint64_t> proposals = Drive(strategy.get(), 3);
  EXPECT_EQ(proposals.front(), failing);
  EXPECT_EQ(proposals[1], *valid_.begin()) << "then the valid configs in order";
  EXPECT_TRUE(strategy->converged());
  EXPECT_TRUE(FixedPoint(Fastest(proposals)));
}

TEST_F(CoordinateStrategyTest, TheBudgetCapsWhatItProposes) {
  std::unique_ptr<SearchStrategy> strategy = Make(9, {Ordinal(spec_.default_config())});
  std::vector<uint64_t> proposals = Drive(strategy.get(), 4);
  EXPECT_EQ(proposals.size(), 9u);
  EXPECT_TRUE(strategy->Exhausted());
  EXPECT_FALSE(strategy->converged());
  EXPECT_FALSE(strategy->covers_space());
}

TEST_F(CoordinateStrategyTest, TheBudgetCountsRestoredResults) {
  observed_ = {Ordinal("qk__BLOCK=2,qk__WARPS=2,pv__BLOCK=1,SPLIT=1"),
               Ordinal("qk__BLOCK=3,qk__WARPS=1,pv__BLOCK=2,SPLIT=2")};
  std::unique_ptr<SearchStrategy> strategy = Make(6, {Ordinal(spec_.default_config())});
  for (uint64_t ordinal : observed_) {
    strategy->Observe(ordinal, PairTime(space_->ConfigAt(ordinal)));
  }
  EXPECT_EQ(Drive(strategy.get(), 4).size(), 4u);
  EXPECT_TRUE(strategy->Exhausted());
}

TEST_F(CoordinateStrategyTest, ItWaitsBetweenGroupsAndOnlyThen) {
  std::unique_ptr<SearchStrategy> strategy = Make(10000, {Ordinal(spec_.default_config())});
  EXPECT_FALSE(strategy->waiting());
  std::vector<uint64_t> first = strategy->Propose(100);
  ASSERT_EQ(first.size(), 1u);  // the default alone
  EXPECT_TRUE(strategy->waiting());
  strategy->Observe(first[0], PairTime(space_->ConfigAt(first[0])));
  EXPECT_FALSE(strategy->waiting());
  std::vector<uint64_t> group = strategy->Propose(5);
  EXPECT_EQ(group.size(), 5u);
  EXPECT_FALSE(strategy->waiting()) << "more of the group to propose";
  std::vector<uint64_t> rest = strategy->Propose(100);
  EXPECT_EQ(group.size() + rest.size(), 23u);  // qk: 8 x 3 - 1
  EXPECT_TRUE(strategy->waiting());
}

TEST_F(CoordinateStrategyTest, WhenNothingPassesItGivesUpAfterTheDefaultBudget) {
  spec_.mutable_params(1)->clear_values();
  spec_.mutable_params(1)->add_values(4);  // qk__WARPS=4 ...
  spec_.mutable_params(2)->clear_values();
  spec_.mutable_params(2)->add_values(3);  // ... with pv__BLOCK=3 never compiles
  spec_.set_default_config("qk__BLOCK=1,qk__WARPS=4,pv__BLOCK=3,SPLIT=1");
  Build();
  std::unique_ptr<SearchStrategy> strategy = Make(10000, {Ordinal(spec_.default_config())});
  std::vector<uint64_t> proposals = Drive(strategy.get(), 100);
  EXPECT_EQ(proposals.size(), valid_.size());  // 16: under the default budget
  EXPECT_TRUE(strategy->Exhausted());
  EXPECT_FALSE(strategy->converged());
}

TEST_F(CoordinateStrategyTest, EmptySpacesOversizedGroupsAndNoBudgetAreRefused) {
  StrategyOptions options;
  options.name = "coordinate";
  options.budget = 0;
  EXPECT_THAT(MakeStrategy(space_.get(), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options.budget = 100;
  v1::Parameter* wide = spec_.add_params();  // qk: 8 x 3 x 200 combinations
  wide->set_name("qk__UNROLL");
  for (int v = 1; v <= 200; ++v) wide->add_values(v);
  Build();
  EXPECT_THAT(MakeStrategy(space_.get(), options).status(),
              StatusIs(absl::StatusCode::kResourceExhausted));
  spec_.mutable_params()->RemoveLast();
  spec_.add_constraints()->set_expr("qk__BLOCK > 100");
  Build();
  EXPECT_THAT(MakeStrategy(space_.get(), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// Through a TargetTrials, as the JobManager drives it: a group's configs
// held by a lease that vanished are reclaimed (the target has no other work
// while the strategy waits), and the converged search ends with the
// plateau stop reason.
TEST_F(CoordinateStrategyTest, ATargetWaitingOnALostLeaseGetsItBackAndEndsOnAPlateau) {
  StrategyOptions options;
  options.name = "coordinate";
  options.budget = 10000;
  options.default_ordinal = Ordinal(spec_.default_config());
  absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy = MakeStrategy(space_.get(), options);
  ASSERT_OK(strategy);
  TargetTrials trials(std::move(space_), *std::move(strategy), /*max_attempts=*/2, std::nullopt,
                      /*finalists=*/0);
  bool finalists = false;
  std::vector<uint64_t> lost = trials.Take(4, "vanished", 1, &finalists);
  ASSERT_EQ(lost.size(), 1u);  // the default alone
  EXPECT_FALSE(trials.HasWork()) << "nothing to lease until the default's result";
  EXPECT_EQ(trials.ReclaimOrphans([](const std::string&) { return false; }), 1);
  EXPECT_TRUE(trials.HasWork());
  int64_t epoch = 2;
  while (!trials.Finished()) {
    const std::string lease = absl::StrCat("l", epoch);
    std::vector<uint64_t> taken = trials.Take(7, lease, epoch, &finalists);
    ASSERT_FALSE(taken.empty()) << "a target with work leases something";
    for (uint64_t ordinal : taken) {
      v1::TrialResult result = PairTime(trials.space()->ConfigAt(ordinal));
      ASSERT_TRUE(trials.Complete(ordinal, lease, epoch, result));
    }
    ++epoch;
  }
  EXPECT_EQ(trials.stop_reason(), v1::STOP_REASON_PLATEAU);
}

}  // namespace
}  // namespace tunefleet::server
