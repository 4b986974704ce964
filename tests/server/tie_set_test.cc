// The tie rule (server/tie_set.h) on synthetic finalist rounds: each config
// has a true time, each round measures it with seeded noise and, for the
// drifting clock, a factor shared by the configs of that round (interleaved
// rounds see the same clock), and the contenders are combined as the worker
// combines rounds (the median of the round medians, their CV).
#include "server/tie_set.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

using ::testing::ElementsAre;

struct Truth {
  std::string config;
  double seconds;
};

// `rounds` interleaved rounds of `configs`; round r runs at clock factor
// 1 + drift * r, every run with Gaussian noise of relative size `noise`.
std::vector<Contender> Rounds(const std::vector<Truth>& configs, int rounds, double noise,
                              double drift, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> jitter(0, noise);
  std::vector<std::vector<double>> medians(configs.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < configs.size(); ++i) {
      medians[i].push_back(configs[i].seconds * (1 + drift * r) * (1 + jitter(rng)));
    }
  }
  std::vector<Contender> round;
  for (size_t i = 0; i < configs.size(); ++i) {
    std::vector<double> sorted = medians[i];
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    double mean = 0;
    for (double m : sorted) mean += m / n;
    double var = 0;
    for (double m : sorted) var += (m - mean) * (m - mean) / (n - 1);
    round.push_back(Contender{configs[i].config, median, rounds, std::sqrt(var) / mean});
  }
  return round;
}

std::vector<std::string> Members(const std::vector<Contender>& round, const TieSet& set) {
  std::vector<std::string> configs;
  for (size_t i : set.members) configs.push_back(round[i].config);
  return configs;
}

TEST(TieSetTest, AClearWinnerStandsAlone) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::vector<Contender> round =
        Rounds({{"B=1", 1.05e-3}, {"B=2", 1.00e-3}, {"B=3", 1.10e-3}}, 5, 0.003, 0, seed);
    std::optional<TieSet> set = TieSetOf(round);
    ASSERT_TRUE(set.has_value());
    EXPECT_THAT(Members(round, *set), ElementsAre("B=2")) << "seed " << seed;
    EXPECT_EQ(round[set->chosen].config, "B=2");
    EXPECT_EQ(set->chosen_gap, 0);
  }
}

// Two configs of the same true time: both are members, the one that
// measured faster is served (no defender yet), and once served it defends
// its place whichever measures faster afterwards.
TEST(TieSetTest, ATrueTieServesTheFasterThenKeepsTheDefender) {
  int b_faster = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::vector<Contender> round =
        Rounds({{"B=2", 1e-3}, {"B=1", 1e-3}, {"B=9", 1.2e-3}}, 5, 0.004, 0, seed);
    std::optional<TieSet> set = TieSetOf(round);
    ASSERT_TRUE(set.has_value());
    ASSERT_EQ(set->members.size(), 2u) << "seed " << seed;
    EXPECT_EQ(set->chosen, set->members.front()) << "seed " << seed;
    EXPECT_EQ(set->chosen_gap, 0);
    b_faster += round[set->members.front()].config == "B=2";
    std::optional<TieSet> defended = TieSetOf(round, "B=1");
    EXPECT_EQ(round[defended->chosen].config, "B=1") << "seed " << seed;
    EXPECT_NEAR(defended->chosen_gap, round[defended->chosen].median_seconds /
                                          round[defended->members.front()].median_seconds - 1,
                1e-12);
  }
  EXPECT_GT(b_faster, 5);  // the noise did pick either as the fastest
}

TEST(TieSetTest, EqualTimesOrderByConfigWhateverTheRoundsOrder) {
  std::vector<Contender> round = {{"B=7", 1e-3}, {"B=3", 1e-3}, {"B=5", 1.2e-3}};
  EXPECT_EQ(round[TieSetOf(round)->chosen].config, "B=3");
  std::reverse(round.begin(), round.end());
  EXPECT_EQ(round[TieSetOf(round)->chosen].config, "B=3");
}

// A clock that speeds up over the rounds moves every config of a round alike:
// the rounds' interleaving keeps a 3% gap a clear win, however noisy each
// config's own rounds look.
TEST(TieSetTest, ADriftingClockDoesNotHideAGapMeasuredInterleaved) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::vector<Contender> round =
        Rounds({{"B=1", 1.03e-3}, {"B=2", 1.00e-3}}, 9, 0.001, -0.004, seed);
    std::optional<TieSet> set = TieSetOf(round);
    ASSERT_TRUE(set.has_value());
    EXPECT_THAT(Members(round, *set), ElementsAre("B=2")) << "seed " << seed;
  }
}

TEST(TieSetTest, WithinTheToleranceIsATieWithoutRoundsBeyondItIsNot) {
  std::vector<Contender> round = {{"B=3", 1.000e-3}, {"B=2", 1.009e-3}, {"B=1", 1.011e-3}};
  std::optional<TieSet> set = TieSetOf(round);
  ASSERT_TRUE(set.has_value());
  EXPECT_THAT(Members(round, *set), ElementsAre("B=3", "B=2"));
  EXPECT_EQ(round[set->chosen].config, "B=3");
  EXPECT_EQ(set->chosen_gap, 0);
  set = TieSetOf(round, "B=2");  // a defender 0.9% behind keeps its place
  EXPECT_EQ(round[set->chosen].config, "B=2");
  EXPECT_NEAR(set->chosen_gap, 0.009, 1e-9);
}

TEST(TieSetTest, NoisyRoundsWidenTheTieBeyondTheTolerance) {
  // 3% apart, but each config's rounds vary 5%: not told apart.
  Contender fastest{"B=2", 1.00e-3, 3, 0.05};
  Contender other{"B=1", 1.03e-3, 3, 0.05};
  EXPECT_TRUE(Tied(fastest, other));
  other.rounds_cv = 0.005;
  fastest.rounds_cv = 0.005;
  EXPECT_FALSE(Tied(fastest, other));
  // One round says nothing about the noise: only the tolerance counts.
  Contender once{"B=1", 1.03e-3, 1, 0.5};
  EXPECT_FALSE(Tied(Contender{"B=2", 1.00e-3, 1, 0.5}, once));
}

TEST(TieSetTest, TheDefenderIsKeptWhileItIsTied) {
  std::vector<Contender> round = {{"B=1", 1.000e-3}, {"B=7", 1.006e-3}, {"B=4", 1.050e-3}};
  std::optional<TieSet> set = TieSetOf(round, "B=7");
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(round[set->chosen].config, "B=7");
  set = TieSetOf(round, "B=4");  // beaten in the same round: not kept
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(round[set->chosen].config, "B=1");
  EXPECT_FALSE(TieSetOf({}).has_value());
}

// A defender whose runs are known to differ by 4% keeps its place 3% behind;
// the same gap without that history, or for another config, is a loss.
TEST(TieSetTest, TheDefendersOwnRunToRunSpreadWidensOnlyItsTie) {
  std::vector<Contender> round = {{"B=1", 1.00e-3}, {"B=7", 1.03e-3}, {"B=4", 1.03e-3}};
  EXPECT_EQ(round[TieSetOf(round, "B=7", 0.04)->chosen].config, "B=7");
  EXPECT_EQ(round[TieSetOf(round, "B=7", 0.0)->chosen].config, "B=1");
  std::optional<TieSet> set = TieSetOf(round, "B=7", 0.04);
  EXPECT_EQ(set->members.size(), 2u);  // B=4 is not widened
  EXPECT_EQ(round[TieSetOf(round, "B=7", 0.02)->chosen].config, "B=1");
}

}  // namespace
}  // namespace tunefleet::server
