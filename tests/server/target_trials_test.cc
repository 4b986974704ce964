#include "server/target_trials.h"

#include <algorithm>
#include <set>

#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::SourceDir;

// `principal` taking or giving back configs while the `live` principals live.
Holder Among(const std::string& principal, std::vector<std::string> live) {
  return Holder{principal, [live = std::move(live)](const std::vector<std::string>& besides) {
                  return std::any_of(live.begin(), live.end(), [&](const std::string& p) {
                    return std::find(besides.begin(), besides.end(), p) == besides.end();
                  });
                }};
}

// Six valid configs of matmul, measured with the finalists round on.
class TargetTrialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    auto space = *ConfigSpace::Create(
        bundle->spec, *NormalizeShape(bundle->spec, *ParseShape("M=512,N=512,K=512")),
        PlaceholderLimits(v1::BACKEND_CPU));
    StrategyOptions options;
    options.name = "random";
    options.budget = 6;
    options.seed = 3;
    auto strategy = MakeStrategy(space.get(), options);
    ASSERT_OK(strategy);
    trials_ = std::make_unique<TargetTrials>(std::move(space), *std::move(strategy),
                                             /*max_attempts=*/2, std::nullopt,
                                             /*finalists=*/2);
  }

  static v1::TrialResult Ok(double seconds) {
    v1::TrialResult result;
    result.set_status(v1::TRIAL_STATUS_OK);
    result.mutable_measurement()->set_median_seconds(seconds);
    return result;
  }

  std::unique_ptr<TargetTrials> trials_;
};

// A lease another coordinator process granted (JobManager::Report's
// adoption): what is still to be measured is taken, and a config whose
// result came with the receipt is taken even from the lease holding it now.
TEST_F(TargetTrialsTest, AdoptTakesWhatIsLeftAndWhatCameMeasured) {
  bool finalists = false;
  std::vector<uint64_t> other = trials_->Take(2, "other", 1, &finalists);  // granted here
  ASSERT_EQ(other.size(), 2u);
  ASSERT_TRUE(trials_->Complete(other[1], "other", 1, Ok(2e-3)));
  // The old lease held other[0] (measured: in hand), other[1] (stored since)
  // and two configs never handed out here.
  std::vector<uint64_t> fresh = trials_->Take(2, "probe", 9, &finalists);
  for (uint64_t ordinal : fresh) trials_->Release(ordinal, "probe", 9, /*expired=*/false);
  const std::vector<uint64_t> receipt = {other[0], other[1], fresh[0], fresh[1]};
  const auto in_hand = [&](uint64_t ordinal) { return ordinal == other[0]; };
  std::vector<uint64_t> taken = trials_->Adopt(receipt, in_hand, "adopted", 2);
  EXPECT_EQ(taken, (std::vector<uint64_t>{other[0], fresh[0], fresh[1]}));
  EXPECT_FALSE(trials_->Complete(other[0], "other", 1, Ok(1e-3)));  // stale now
  EXPECT_TRUE(trials_->Complete(other[0], "adopted", 2, Ok(1e-3)));
  // Not taken twice, nor once measured.
  EXPECT_TRUE(trials_->Adopt(receipt, in_hand, "again", 3).empty());
  for (uint64_t ordinal : {fresh[0], fresh[1]}) {
    EXPECT_TRUE(trials_->Complete(ordinal, "adopted", 2, Ok(3e-3)));
  }
  EXPECT_EQ(trials_->done(), 4);
}

TEST_F(TargetTrialsTest, OrphanedConfigsGoBackToTheQueueWithoutCountingAsLost) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(3, "gone", 1, &finalists);
  std::vector<uint64_t> kept = trials_->Take(3, "alive", 2, &finalists);
  ASSERT_EQ(held.size(), 3u);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_FALSE(trials_->HasWork());
  EXPECT_EQ(trials_->ReclaimOrphans([](const std::string& id) { return id == "alive"; }), 3);
  EXPECT_TRUE(trials_->HasWork());
  EXPECT_FALSE(trials_->Complete(held[0], "gone", 1, Ok(1)));  // no longer held
  std::vector<uint64_t> again = trials_->Take(10, "new", 3, &finalists);
  EXPECT_EQ(std::set<uint64_t>(again.begin(), again.end()),
            std::set<uint64_t>(held.begin(), held.end()));
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_TRUE(trials_->Complete(again[i], "new", 3, Ok(1e-3 * (i + 1))));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_TRUE(trials_->Complete(kept[i], "alive", 2, Ok(1e-2 * (i + 1))));
  }
  // The finalists lease, orphaned too, is offered again.
  std::vector<uint64_t> finals = trials_->Take(1, "finals", 4, &finalists);
  ASSERT_TRUE(finalists);
  EXPECT_EQ(finals.size(), 2u);
  EXPECT_EQ(trials_->ReclaimOrphans([](const std::string&) { return false; }), 2);
  EXPECT_TRUE(trials_->HasWork());
  EXPECT_EQ(trials_->Take(1, "finals-2", 5, &finalists), finals);
  EXPECT_TRUE(finalists);
  for (uint64_t ordinal : finals) trials_->Complete(ordinal, "finals-2", 5, Ok(1e-3));
  EXPECT_TRUE(trials_->Finished());
  EXPECT_EQ(trials_->done(), 6);
}

TEST_F(TargetTrialsTest, AConfigOnePrincipalLostGoesToAnotherAndIsLostOnlyWhenAllLostIt) {
  const Holder rogue = Among("host:rogue", {"host:rogue", "host:honest"});
  const Holder honest = Among("host:honest", {"host:rogue", "host:honest"});
  bool finalists = false;
  std::vector<uint64_t> taken = trials_->Take(1, "l1", 1, &finalists, rogue);
  ASSERT_EQ(taken.size(), 1u);
  const uint64_t config = taken[0];
  EXPECT_FALSE(trials_->Release(config, "l1", 1, /*expired=*/true, rogue).has_value());
  // The rogue gets new configs, never the one it lost while honest lives.
  std::vector<uint64_t> again = trials_->Take(1, "l2", 2, &finalists, rogue);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0], config);
  EXPECT_FALSE(trials_->Release(again[0], "l2", 2, /*expired=*/true, rogue).has_value());
  std::vector<uint64_t> honest_batch = trials_->Take(1, "l3", 3, &finalists, honest);
  ASSERT_EQ(honest_batch, (std::vector<uint64_t>{config}));  // lost configs first
  // Lost by both live principals, max_attempts (2) times in all: recorded.
  std::optional<v1::TrialResult> lost = trials_->Release(config, "l3", 3, true, honest);
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->status(), v1::TRIAL_STATUS_WORKER_LOST);
  // With the honest principal gone, the rogue may take back what it lost.
  const Holder alone = Among("host:rogue", {"host:rogue"});
  EXPECT_EQ(trials_->Take(1, "l4", 4, &finalists, alone), (std::vector<uint64_t>{again[0]}));
}

TEST_F(TargetTrialsTest, AFinalistsRoundOnePrincipalLostGoesToAnother) {
  const Holder rogue = Among("host:rogue", {"host:rogue", "host:honest"});
  const Holder honest = Among("host:honest", {"host:rogue", "host:honest"});
  bool finalists = false;
  std::vector<uint64_t> search = trials_->Take(6, "s", 1, &finalists, honest);
  ASSERT_EQ(search.size(), 6u);  // the whole budget
  for (uint64_t ordinal : search) trials_->Complete(ordinal, "s", 1, Ok(1e-3 + ordinal * 1e-9));
  std::vector<uint64_t> finals = trials_->Take(6, "f1", 100, &finalists, rogue);
  ASSERT_TRUE(finalists);
  trials_->Release(finals[0], "f1", 100, /*expired=*/true, rogue);
  // The rogue is not handed the round again while honest lives, so its
  // losses alone cannot reach max_attempts and skip the round.
  EXPECT_TRUE(trials_->Take(6, "f2", 101, &finalists, rogue).empty());
  EXPECT_FALSE(trials_->Finished());
  std::vector<uint64_t> again = trials_->Take(6, "f3", 102, &finalists, honest);
  EXPECT_TRUE(finalists);
  EXPECT_EQ(again, finals);
}

TEST_F(TargetTrialsTest, TheBestIgnoresCutTrialsWhichAreNeverFinalists) {
  bool finalists = false;
  EXPECT_FALSE(trials_->best_seconds().has_value());
  std::vector<uint64_t> taken = trials_->Take(6, "l", 1, &finalists);
  ASSERT_EQ(taken.size(), 6u);
  ASSERT_TRUE(trials_->Complete(taken[0], "l", 1, Ok(4e-3)));
  EXPECT_EQ(trials_->best_seconds(), 4e-3);
  // Cut trials: one with a partial median that reads fastest of all.
  for (size_t i = 1; i < 4; ++i) {
    v1::TrialResult cut = Ok(i == 1 ? 1e-3 : 9e-3);
    cut.set_cut_early(true);
    ASSERT_TRUE(trials_->Complete(taken[i], "l", 1, cut));
  }
  EXPECT_EQ(trials_->best_seconds(), 4e-3);
  ASSERT_TRUE(trials_->Complete(taken[4], "l", 1, Ok(3e-3)));
  ASSERT_TRUE(trials_->Complete(taken[5], "l", 1, Ok(5e-3)));
  EXPECT_EQ(trials_->best_seconds(), 3e-3);
  // The finalists are the two fastest uncut configs.
  std::vector<uint64_t> finals = trials_->Take(1, "finals", 2, &finalists);
  ASSERT_TRUE(finalists);
  EXPECT_EQ(finals, (std::vector<uint64_t>{taken[4], taken[0]}));
  EXPECT_EQ(trials_->outcome_counts().at(v1::TRIAL_STATUS_OK), 6);
}

// The config served before the job (never measured by its search here)
// joins the finalists, and stays first while it is tied with the fastest.
TEST_F(TargetTrialsTest, TheDefenderJoinsTheFinalistsAndLeadsWhileTied) {
  bool finalists = false;
  std::vector<uint64_t> taken = trials_->Take(6, "l", 1, &finalists);
  ASSERT_EQ(taken.size(), 6u);
  ConfigSpace* space = trials_->space();
  uint64_t defender = 0;
  for (;; ++defender) {
    ASSERT_LT(defender, space->full_size());
    space->Bind(defender);
    if (space->Valid() && std::find(taken.begin(), taken.end(), defender) == taken.end()) break;
  }
  trials_->Defend(defender);
  trials_->Defend(space->full_size());  // not a config: ignored
  for (size_t i = 0; i < taken.size(); ++i) {
    ASSERT_TRUE(trials_->Complete(taken[i], "l", 1, Ok(1e-3 * (i + 1))));
  }
  std::vector<uint64_t> finals = trials_->Take(1, "finals", 2, &finalists);
  ASSERT_TRUE(finalists);
  EXPECT_EQ(finals, (std::vector<uint64_t>{taken[0], taken[1], defender}));
  // The defender measures 0.5% slower than the fastest: tied, so it leads.
  ASSERT_TRUE(trials_->Complete(taken[0], "finals", 2, Ok(1.000e-3)));
  ASSERT_TRUE(trials_->Complete(taken[1], "finals", 2, Ok(1.5e-3)));
  ASSERT_TRUE(trials_->Complete(defender, "finals", 2, Ok(1.005e-3)));
  EXPECT_TRUE(trials_->Finished());
  std::vector<TrialOutcome> ranked = trials_->Fastest(3);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].ordinal, defender);
  EXPECT_EQ(ranked[1].ordinal, taken[0]);
  EXPECT_EQ(ranked[2].ordinal, taken[1]);
}

// Exhaustive over the same space, with the plateau rule after `plateau` batches.
std::unique_ptr<TargetTrials> Exhaustive(int plateau, int finalists) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  auto space = *ConfigSpace::Create(
      bundle->spec, *NormalizeShape(bundle->spec, *ParseShape("M=512,N=512,K=512")),
      PlaceholderLimits(v1::BACKEND_CPU));
  StrategyOptions options;
  auto strategy = MakeStrategy(space.get(), options);
  return std::make_unique<TargetTrials>(std::move(space), *std::move(strategy),
                                        /*max_attempts=*/2, std::nullopt, finalists, plateau);
}

TEST_F(TargetTrialsTest, ARandomSampleSmallerThanTheSpaceEndsOnItsTrialBudget) {
  bool finalists = false;
  EXPECT_EQ(trials_->stop_reason(), v1::STOP_REASON_UNSPECIFIED);
  std::vector<uint64_t> taken = trials_->Take(6, "l", 1, &finalists);
  for (uint64_t ordinal : taken) trials_->Complete(ordinal, "l", 1, Ok(1e-3));
  EXPECT_EQ(trials_->stop_reason(), v1::STOP_REASON_TRIAL_BUDGET);
}

TEST_F(TargetTrialsTest, ThePlateauRuleStopsProposalsAndLeasedConfigsStillFinish) {
  std::unique_ptr<TargetTrials> trials = Exhaustive(/*plateau=*/2, /*finalists=*/0);
  const int64_t space = trials->total();
  ASSERT_GT(space, 12);
  bool finalists = false;
  std::vector<uint64_t> first = trials->Take(2, "a", 1, &finalists);
  for (uint64_t ordinal : first) trials->Complete(ordinal, "a", 1, Ok(1e-3));
  std::vector<uint64_t> second = trials->Take(2, "b", 2, &finalists);
  std::vector<uint64_t> third = trials->Take(2, "c", 3, &finalists);
  for (uint64_t ordinal : second) trials->Complete(ordinal, "b", 2, Ok(2e-3));
  EXPECT_EQ(trials->batches_without_improvement(), 1);
  EXPECT_TRUE(trials->HasWork());
  trials->Complete(third[0], "c", 3, Ok(0.995e-3));  // within 1 %: no improvement
  trials->Complete(third[1], "c", 3, Ok(5e-3));
  EXPECT_EQ(trials->stop_reason(), v1::STOP_REASON_PLATEAU);
  EXPECT_FALSE(trials->HasWork());
  EXPECT_TRUE(trials->Finished());
  EXPECT_EQ(trials->total(), 6);
  EXPECT_EQ(trials->done(), 6);
}

TEST_F(TargetTrialsTest, ATimeStopLetsLeasedConfigsFinishThenRunsTheFinalists) {
  std::unique_ptr<TargetTrials> trials = Exhaustive(/*plateau=*/0, /*finalists=*/2);
  bool finalists = false;
  std::vector<uint64_t> out = trials->Take(3, "a", 1, &finalists);
  trials->StopSearch(v1::STOP_REASON_TIME_BUDGET);
  EXPECT_EQ(trials->stop_reason(), v1::STOP_REASON_TIME_BUDGET);
  EXPECT_TRUE(trials->Take(3, "b", 2, &finalists).empty());
  EXPECT_FALSE(trials->Finished());
  for (size_t i = 0; i < out.size(); ++i) trials->Complete(out[i], "a", 1, Ok(1e-3 * (i + 1)));
  std::vector<uint64_t> finals = trials->Take(1, "finals", 3, &finalists);
  ASSERT_TRUE(finalists);
  EXPECT_EQ(finals, (std::vector<uint64_t>{out[0], out[1]}));
  for (uint64_t ordinal : finals) trials->Complete(ordinal, "finals", 3, Ok(1e-3));
  EXPECT_TRUE(trials->Finished());
  EXPECT_EQ(trials->total(), 3);
  trials->StopSearch(v1::STOP_REASON_PLATEAU);  // the first reason stands
  EXPECT_EQ(trials->stop_reason(), v1::STOP_REASON_TIME_BUDGET);
}

TEST_F(TargetTrialsTest, AnExhaustiveSearchEndsWithTheSpaceExhausted) {
  std::unique_ptr<TargetTrials> trials = Exhaustive(/*plateau=*/0, /*finalists=*/0);
  bool finalists = false;
  std::vector<uint64_t> all = trials->Take(100000, "a", 1, &finalists);
  for (uint64_t ordinal : all) trials->Complete(ordinal, "a", 1, Ok(1e-3));
  EXPECT_TRUE(trials->Finished());
  EXPECT_EQ(trials->stop_reason(), v1::STOP_REASON_SPACE_EXHAUSTED);
  trials->StopSearch(v1::STOP_REASON_TIME_BUDGET);  // over already: unchanged
  EXPECT_EQ(trials->stop_reason(), v1::STOP_REASON_SPACE_EXHAUSTED);
}

TEST_F(TargetTrialsTest, ConfigsProposedAheadAreLeasedFirstAndOnlyOnce) {
  // The random sample of 6: proposed ahead in two calls, never twice.
  std::vector<uint64_t> first = trials_->ProposeAhead(2, /*limit=*/4);
  std::vector<uint64_t> second = trials_->ProposeAhead(4, /*limit=*/4);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);  // the limit: 4 wait ahead
  EXPECT_TRUE(trials_->ProposeAhead(4, /*limit=*/4).empty());
  EXPECT_EQ(trials_->ahead(), 4);
  std::set<uint64_t> ahead(first.begin(), first.end());
  ahead.insert(second.begin(), second.end());
  EXPECT_EQ(ahead.size(), 4u);

  // A lease takes the configs proposed ahead first, in their order, then
  // new proposals; nothing is handed out twice.
  bool finalists = false;
  std::vector<uint64_t> leased = trials_->Take(3, "a", 1, &finalists);
  EXPECT_EQ(leased, (std::vector<uint64_t>{first[0], first[1], second[0]}));
  EXPECT_EQ(trials_->ahead(), 1);
  std::vector<uint64_t> rest = trials_->Take(10, "b", 2, &finalists);
  ASSERT_EQ(rest.size(), 3u);  // the one left ahead, then the last 2 of the sample
  EXPECT_EQ(rest[0], second[1]);
  std::set<uint64_t> all(leased.begin(), leased.end());
  all.insert(rest.begin(), rest.end());
  EXPECT_EQ(all.size(), 6u);
  EXPECT_TRUE(trials_->ProposeAhead(4, 4).empty());  // the sample is spent
}

TEST_F(TargetTrialsTest, ConfigsProposedAheadKeepTheSearchOpenUntilLeased) {
  std::unique_ptr<TargetTrials> trials = Exhaustive(/*plateau=*/0, /*finalists=*/0);
  bool finalists = false;
  std::vector<uint64_t> first = trials->Take(2, "a", 1, &finalists);
  ASSERT_EQ(first.size(), 2u);
  // The rest of the space, proposed ahead: the strategy has nothing left.
  std::vector<uint64_t> ahead = trials->ProposeAhead(100000, 100000);
  ASSERT_FALSE(ahead.empty());
  EXPECT_TRUE(trials->ProposeAhead(8, 100000).empty());
  for (uint64_t ordinal : first) trials->Complete(ordinal, "a", 1, Ok(1e-3));
  // Nothing leased, the strategy exhausted, but configs wait ahead.
  EXPECT_FALSE(trials->Finished());
  EXPECT_TRUE(trials->HasWork());
  std::vector<uint64_t> rest = trials->Take(100000, "b", 2, &finalists);
  EXPECT_EQ(rest, ahead);
  for (uint64_t ordinal : rest) trials->Complete(ordinal, "b", 2, Ok(1e-3));
  EXPECT_TRUE(trials->Finished());
  EXPECT_EQ(trials->stop_reason(), v1::STOP_REASON_SPACE_EXHAUSTED);
  EXPECT_EQ(trials->done(), static_cast<int64_t>(first.size() + ahead.size()));
}

TEST_F(TargetTrialsTest, AStopRuleDropsConfigsProposedAheadButNotLeased) {
  std::unique_ptr<TargetTrials> trials = Exhaustive(/*plateau=*/0, /*finalists=*/0);
  bool finalists = false;
  std::vector<uint64_t> out = trials->Take(2, "a", 1, &finalists);
  ASSERT_EQ(trials->ProposeAhead(3, 8).size(), 3u);
  EXPECT_TRUE(trials->HasWork());
  trials->StopSearch(v1::STOP_REASON_TIME_BUDGET);
  EXPECT_EQ(trials->ahead(), 0);
  EXPECT_TRUE(trials->Take(3, "b", 2, &finalists).empty());
  for (uint64_t ordinal : out) trials->Complete(ordinal, "a", 1, Ok(1e-3));
  EXPECT_TRUE(trials->Finished());
  EXPECT_EQ(trials->total(), 2);
}

TEST_F(TargetTrialsTest, ARecheckRanksAConfigAtItsFastestAndTheFinalistsRoundWaitsForIt) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(6, "l1", 1, &finalists);
  ASSERT_EQ(held.size(), 6u);
  // The liar reports the first config 5 s; the others take 1-5 ms.
  ASSERT_TRUE(trials_->Complete(held[0], "l1", 1, Ok(5.0), "liar"));
  for (size_t i = 1; i < held.size(); ++i) {
    ASSERT_TRUE(trials_->Complete(held[i], "l1", 1, Ok(1e-3 * i), "liar"));
  }
  EXPECT_FALSE(trials_->Recheck(/*ordinal=*/held[0] + 1000000, false, {"liar"},
                                absl::InfiniteFuture()));  // never measured
  ASSERT_TRUE(trials_->Recheck(held[0], false, {"liar"}, absl::InfiniteFuture()));
  EXPECT_FALSE(trials_->Recheck(held[0], false, {"liar"}, absl::InfiniteFuture()));  // queued
  EXPECT_TRUE(trials_->HasWork());
  EXPECT_FALSE(trials_->Finished());

  bool referee = true;
  EXPECT_TRUE(trials_->TakeRechecks(4, "liar", "l2", 2, &referee).empty());  // not its own
  EXPECT_TRUE(trials_->Take(4, "l2", 2, &finalists).empty());
  EXPECT_FALSE(finalists);  // the finalists round waits for the recheck
  ASSERT_EQ(trials_->TakeRechecks(4, "honest", "l3", 3, &referee),
            std::vector<uint64_t>{held[0]});
  EXPECT_FALSE(referee);
  EXPECT_FALSE(trials_->HoldsRecheck(held[0], "l2", 2));
  ASSERT_TRUE(trials_->HoldsRecheck(held[0], "l3", 3));
  trials_->EndRecheck(held[0]);
  trials_->Rerank(held[0], Ok(2e-4), "honest");
  trials_->RechecksSettled();
  ASSERT_EQ(trials_->Fastest(1).size(), 1u);
  EXPECT_EQ(trials_->Fastest(1)[0].ordinal, held[0]);
  EXPECT_EQ(trials_->Fastest(1)[0].principal, "honest");
  EXPECT_EQ(trials_->Fastest(16).size(), 6u);  // one entry per config

  std::vector<uint64_t> finals = trials_->Take(4, "l5", 5, &finalists);
  EXPECT_TRUE(finalists);
  EXPECT_EQ(finals.front(), held[0]);  // the hidden config is a finalist
  EXPECT_FALSE(trials_->Recheck(held[1], false, {"liar"}, absl::InfiniteFuture()));  // too late
}

TEST_F(TargetTrialsTest, AQuarantinedPrincipalsMeasurementsLeaveTheRankingAndStaleRechecksDrop) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(6, "l1", 1, &finalists);
  ASSERT_EQ(held.size(), 6u);
  ASSERT_TRUE(trials_->Complete(held[0], "l1", 1, Ok(1e-9), "liar"));
  for (size_t i = 1; i < held.size(); ++i) {
    ASSERT_TRUE(trials_->Complete(held[i], "l1", 1, Ok(1e-3 * i), "honest"));
  }
  EXPECT_EQ(trials_->Unrank("liar"), std::vector<uint64_t>{held[0]});
  EXPECT_EQ(trials_->Fastest(1)[0].ordinal, held[1]);
  EXPECT_TRUE(trials_->Unrank("").empty());  // unknown provenance is never dropped

  const absl::Time now = absl::FromUnixSeconds(1000);
  ASSERT_TRUE(trials_->Recheck(held[0], false, {"liar"}, now));
  bool referee = false;
  ASSERT_EQ(trials_->TakeRechecks(4, "honest", "l2", 2, &referee).size(), 1u);
  const auto anyone = [](const std::vector<std::string>&) { return true; };
  EXPECT_TRUE(trials_->DropStaleRechecks(now + absl::Seconds(1), anyone).empty());  // leased
  // A returned lease puts it back to wait, and past its deadline it drops.
  trials_->ReleaseRecheck(held[0], "l2", 2, "honest", now);
  EXPECT_TRUE(trials_->Take(4, "l3", 3, &finalists).empty());
  EXPECT_FALSE(finalists);
  EXPECT_TRUE(trials_->DropStaleRechecks(now - absl::Seconds(1), anyone).empty());  // it waits
  const std::vector<std::pair<uint64_t, bool>> dropped =
      trials_->DropStaleRechecks(now + absl::Seconds(1), anyone);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].first, held[0]);
  EXPECT_EQ(trials_->rechecks(), 0);
  std::vector<uint64_t> finals = trials_->Take(4, "l4", 4, &finalists);
  EXPECT_TRUE(finalists);
  EXPECT_EQ(std::count(finals.begin(), finals.end(), held[0]), 0);
}

TEST_F(TargetTrialsTest, ARefereesRecheckIsLeasedApartFromChecks) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(6, "l1", 1, &finalists);
  for (size_t i = 0; i < held.size(); ++i) {
    ASSERT_TRUE(trials_->Complete(held[i], "l1", 1, Ok(1e-3 * (i + 1)), "a"));
  }
  ASSERT_TRUE(trials_->Recheck(held[0], true, {"a", "b"}, absl::InfiniteFuture()));
  ASSERT_TRUE(trials_->Recheck(held[1], false, {"a"}, absl::InfiniteFuture()));
  bool referee = false;
  EXPECT_EQ(trials_->TakeRechecks(4, "b", "l2", 2, &referee), std::vector<uint64_t>{held[1]});
  EXPECT_FALSE(referee);
  EXPECT_EQ(trials_->TakeRechecks(4, "c", "l3", 3, &referee), std::vector<uint64_t>{held[0]});
  EXPECT_TRUE(referee);
}

TEST_F(TargetTrialsTest, ARecheckNoPrincipalTakingPartMayTakeIsDroppedBeforeItsDeadline) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(6, "l1", 1, &finalists);
  for (size_t i = 0; i < held.size(); ++i) {
    ASSERT_TRUE(trials_->Complete(held[i], "l1", 1, Ok(1e-3 * (i + 1)), "a"));
  }
  ASSERT_TRUE(trials_->Recheck(held[0], false, {"a"}, absl::InfiniteFuture()));
  const auto only_a = [](const std::vector<std::string>& not_by) {
    return std::find(not_by.begin(), not_by.end(), "a") == not_by.end();
  };
  const auto b_too = [](const std::vector<std::string>&) { return true; };
  EXPECT_TRUE(trials_->DropStaleRechecks(absl::Now(), b_too).empty());
  EXPECT_EQ(trials_->DropStaleRechecks(absl::Now(), only_a).size(), 1u);
  EXPECT_TRUE(trials_->Take(4, "l2", 2, &finalists).size() > 0);
  EXPECT_TRUE(finalists);
}

TEST_F(TargetTrialsTest, ARerankSetsAConfigsRankAndAReleasedRecheckGoesToAnotherPrincipal) {
  bool finalists = false;
  std::vector<uint64_t> held = trials_->Take(6, "l1", 1, &finalists);
  for (size_t i = 0; i < held.size(); ++i) {
    ASSERT_TRUE(trials_->Complete(held[i], "l1", 1, Ok(1e-3 * (i + 1)), "a"));
  }
  trials_->Rerank(held[0], Ok(9e-3), "b");  // slower than its claim: set, not kept at the min
  EXPECT_EQ(trials_->Fastest(1)[0].ordinal, held[1]);
  v1::TrialResult failed;
  failed.set_status(v1::TRIAL_STATUS_CRASHED);
  trials_->Rerank(held[1], failed, "b");  // no run: out of the ranking
  EXPECT_EQ(trials_->Fastest(1)[0].ordinal, held[2]);
  EXPECT_EQ(trials_->Fastest(16).size(), 5u);

  ASSERT_TRUE(trials_->Recheck(held[3], false, {"a"}, absl::InfiniteFuture()));
  EXPECT_FALSE(trials_->HasRecheckFor("a"));
  EXPECT_TRUE(trials_->HasRecheckFor("b"));
  bool referee = false;
  ASSERT_EQ(trials_->TakeRechecks(4, "b", "l2", 2, &referee).size(), 1u);
  EXPECT_FALSE(trials_->HasRecheckFor("c"));  // leased
  trials_->ReleaseRecheck(held[3], "l2", 2, "b", absl::InfiniteFuture());
  EXPECT_FALSE(trials_->HasRecheckFor("b"));  // it let it go once
  EXPECT_TRUE(trials_->HasRecheckFor("c"));
  EXPECT_EQ(trials_->TakeRechecks(4, "c", "l3", 3, &referee), std::vector<uint64_t>{held[3]});
}

}  // namespace
}  // namespace tunefleet::server
