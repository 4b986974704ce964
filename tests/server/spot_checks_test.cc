#include "server/spot_checks.h"

#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

using Kind = SpotChecks::Verdict::Kind;

v1::TrialResult Ran(double seconds, double calibration = 1e-3) {
  v1::TrialResult result;
  result.set_status(v1::TRIAL_STATUS_OK);
  result.mutable_measurement()->set_median_seconds(seconds);
  result.mutable_measurement()->set_calibration_seconds(calibration);
  return result;
}

v1::TrialResult Failed(v1::TrialStatus status = v1::TRIAL_STATUS_WRONG_RESULT) {
  v1::TrialResult result;
  result.set_status(status);
  return result;
}

constexpr double kTolerance = 1.0;

// a's claim of config 1 (sampled at once), checked by b: the verdict.
SpotChecks::Verdict ClaimedAndChecked(SpotChecks* checks, const v1::TrialResult& claimed,
                                      const v1::TrialResult& checked) {
  checks->Claim(1, "a", claimed, false, 1, 0);
  checks->Queued(1);
  return checks->Checked(1, "b", checked, kTolerance);
}

// The time a verdict ranks its config at (-1 for none).
double RankOf(const SpotChecks::Verdict& verdict) {
  return verdict.rank.has_value() ? verdict.rank->result.measurement().median_seconds() : -1;
}

TEST(ResultsAgreeTest, WithinTheFactorEitherWayOrBothFailedForGood) {
  EXPECT_TRUE(ResultsAgree(Ran(1.0), Ran(1.9), kTolerance));
  EXPECT_TRUE(ResultsAgree(Ran(1.9), Ran(1.0), kTolerance));
  EXPECT_FALSE(ResultsAgree(Ran(1.0), Ran(2.1), kTolerance));
  EXPECT_FALSE(ResultsAgree(Ran(2.1), Ran(1.0), kTolerance));
  EXPECT_TRUE(ResultsAgree(Failed(), Failed(v1::TRIAL_STATUS_COMPILE_ERROR), kTolerance));
  EXPECT_FALSE(ResultsAgree(Failed(), Ran(1.0), kTolerance));
}

TEST(ResultsAgreeTest, ComparesCalibratedTimes) {
  // A device twice as slow measures the calibration twice as long too.
  EXPECT_TRUE(ResultsAgree(Ran(1.0, 1e-3), Ran(3.0, 2e-3), kTolerance));
  EXPECT_FALSE(ResultsAgree(Ran(1.0, 1e-3), Ran(3.0, 1e-3), kTolerance));
}

TEST(EvidenceTest, FailuresAnotherHostMayNotSeeAreTransientAndALostWorkerSaysNothing) {
  EXPECT_EQ(EvidenceOf(Ran(1)), Evidence::kRan);
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_COMPILE_ERROR)), Evidence::kFailed);
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_WRONG_RESULT)), Evidence::kFailed);
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_TIMEOUT)), Evidence::kTransient);
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_CRASHED)), Evidence::kTransient);
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_WORKER_LOST)), Evidence::kNone);
}

TEST(SpotChecksTest, SamplesEachPrincipalsFirstResultNewBestsSuspectsAndTheRateOfTheRest) {
  SpotChecks checks;
  EXPECT_TRUE(checks.Claim(1, "a", Ran(1), false, 0.1, 0.99));   // a's first
  EXPECT_FALSE(checks.Claim(2, "a", Ran(1), false, 0.1, 0.99));  // above the rate
  EXPECT_TRUE(checks.Claim(3, "a", Ran(1), false, 0.1, 0.05));   // drawn below it
  EXPECT_TRUE(checks.Claim(4, "a", Ran(1), true, 0.1, 0.99));    // a new best
  EXPECT_TRUE(checks.Claim(5, "b", Failed(v1::TRIAL_STATUS_CRASHED), false, 0.1, 0.99));
  checks.MarkSuspect("b");
  EXPECT_TRUE(checks.Claim(6, "b", Ran(1), false, 0.1, 0.99));
  EXPECT_FALSE(checks.Claim(6, "b", Ran(1), true, 0.1, 0.0));  // claimed once
  EXPECT_FALSE(checks.Claim(7, "c", Ran(1), true, 0.0, 0.0));  // off
  EXPECT_FALSE(checks.Claim(8, "a", Failed(v1::TRIAL_STATUS_WORKER_LOST), true, 0.1, 0.0));
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(SpotChecksTest, AnAgreeingCheckLeavesTheClaimsRankAndVouchesForIt) {
  SpotChecks checks;
  checks.Claim(1, "a", Ran(1.0), false, 1, 0);
  checks.Queued(1);
  EXPECT_EQ(checks.Checked(1, "a", Ran(9.0), kTolerance).kind, Kind::kNone);  // never its own
  const SpotChecks::Verdict agreed = checks.Checked(1, "b", Ran(0.6), kTolerance);
  EXPECT_EQ(agreed.kind, Kind::kAgreed);
  EXPECT_TRUE(agreed.vouches);
  EXPECT_FALSE(agreed.rank.has_value());  // neither raised nor buried
  EXPECT_EQ(checks.Checked(1, "c", Ran(9.0), kTolerance).kind, Kind::kNone);  // checked once
}

TEST(SpotChecksTest, ADisputeRanksAtTheFasterAndARefereeOverrulesTheSideFarFromIt) {
  SpotChecks hidden;  // a claims a fast config slow; the referee sides with b
  const SpotChecks::Verdict disputed = ClaimedAndChecked(&hidden, Ran(5.0), Ran(0.25));
  ASSERT_EQ(disputed.kind, Kind::kDisputed);
  EXPECT_EQ(disputed.principals, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(RankOf(disputed), 0.25);  // the hidden config is back in the ranking
  EXPECT_FALSE(disputed.vouches);
  EXPECT_EQ(hidden.Checked(1, "b", Ran(0.25), kTolerance).kind, Kind::kNone);  // not a referee
  const SpotChecks::Verdict settled = hidden.Checked(1, "c", Ran(0.3), kTolerance);
  EXPECT_EQ(settled.kind, Kind::kOverruled);
  EXPECT_EQ(settled.principals, std::vector<std::string>{"a"});
  EXPECT_EQ(RankOf(settled), 0.25);  // the faster of the two that agree
  EXPECT_TRUE(hidden.IsSuspect("a"));

  SpotChecks slandered;  // b checks a's honest claim slow; the referee sides with a
  ASSERT_EQ(ClaimedAndChecked(&slandered, Ran(0.25), Ran(5.0)).kind, Kind::kDisputed);
  const SpotChecks::Verdict overruled = slandered.Checked(1, "c", Ran(0.26), kTolerance);
  EXPECT_EQ(overruled.kind, Kind::kOverruled);
  EXPECT_EQ(overruled.principals, std::vector<std::string>{"b"});
  EXPECT_FALSE(slandered.IsSuspect("a"));

  SpotChecks faked;  // a claims 3x too fast: the referee sides with b
  ASSERT_EQ(ClaimedAndChecked(&faked, Ran(0.1), Ran(0.3)).kind, Kind::kDisputed);
  const SpotChecks::Verdict near = faked.Checked(1, "c", Ran(0.3), kTolerance);
  EXPECT_EQ(near.kind, Kind::kUnsettled);  // not far enough to quarantine: suspected
  EXPECT_EQ(near.principals, std::vector<std::string>{"a"});  // the faster side, here
  EXPECT_TRUE(faked.IsSuspect("a"));
  EXPECT_FALSE(faked.IsSuspect("b"));
}

TEST(SpotChecksTest, AFailureClaimedForAConfigThatRunsIsADisputeThatSuspectsAndNeverQuarantines) {
  SpotChecks checks;
  const SpotChecks::Verdict disputed =
      ClaimedAndChecked(&checks, Failed(v1::TRIAL_STATUS_WRONG_RESULT), Ran(0.2));
  ASSERT_EQ(disputed.kind, Kind::kDisputed);
  EXPECT_EQ(RankOf(disputed), 0.2);
  // A wrong result can be a race in the kernel or a flaky device.
  const SpotChecks::Verdict settled = checks.Checked(1, "c", Ran(0.2), kTolerance);
  EXPECT_EQ(settled.kind, Kind::kUnsettled);
  EXPECT_EQ(settled.principals, std::vector<std::string>{"a"});
  EXPECT_TRUE(checks.IsSuspect("a"));
}

TEST(SpotChecksTest, NoOnePrincipalsNumberQuarantines) {
  // Honest a and c, 2.2x apart on busy hosts; referee m reports 4.2: near c,
  // far from a. But c is not far from a: a is suspected, not quarantined.
  SpotChecks checks;
  checks.Claim(1, "a", Ran(1.0), false, 1, 0);
  checks.Queued(1);
  ASSERT_EQ(checks.Checked(1, "c", Ran(2.2), kTolerance).kind, Kind::kDisputed);
  const SpotChecks::Verdict verdict = checks.Checked(1, "m", Ran(4.2), kTolerance);
  EXPECT_EQ(verdict.kind, Kind::kUnsettled);
  EXPECT_EQ(verdict.principals, std::vector<std::string>{"a"});

  SpotChecks crashed;  // a referee whose own run crashed says nothing: no strikes
  crashed.Claim(1, "a", Ran(1.0), false, 1, 0);
  crashed.Claim(2, "a", Ran(1.0), false, 1, 0);
  for (uint64_t ordinal : {1, 2}) {
    crashed.Queued(ordinal);
    ASSERT_EQ(crashed.Checked(ordinal, "c", Ran(5.0), kTolerance).kind, Kind::kDisputed);
    const SpotChecks::Verdict none =
        crashed.Checked(ordinal, "m", Failed(v1::TRIAL_STATUS_CRASHED), kTolerance);
    EXPECT_EQ(none.kind, Kind::kUnsettled);
    EXPECT_TRUE(none.principals.empty());
  }
  EXPECT_FALSE(crashed.IsSuspect("a"));
  EXPECT_FALSE(crashed.IsSuspect("c"));
}

TEST(SpotChecksTest, ATransientFailureBlamesNobodyAndARunRanksTheConfig) {
  SpotChecks crashed;  // a's run crashed (or was said to): b's run ranks it
  const SpotChecks::Verdict ran =
      ClaimedAndChecked(&crashed, Failed(v1::TRIAL_STATUS_TIMEOUT), Ran(0.2));
  EXPECT_EQ(ran.kind, Kind::kNone);
  EXPECT_EQ(RankOf(ran), 0.2);
  EXPECT_TRUE(ran.vouches);
  EXPECT_FALSE(crashed.IsSuspect("a"));

  SpotChecks flaky;  // b's check crashed: a's run stands
  flaky.Claim(1, "a", Ran(0.2), false, 1, 0);
  flaky.Queued(1);
  const SpotChecks::Verdict none = flaky.Checked(1, "b", Failed(v1::TRIAL_STATUS_CRASHED),
                                                 kTolerance);
  EXPECT_EQ(none.kind, Kind::kNone);
  EXPECT_FALSE(none.rank.has_value());
  EXPECT_FALSE(flaky.IsSuspect("b"));
}

TEST(SpotChecksTest, EachSideOfDisputesNobodySettlesIsASuspectAtItsSecond) {
  SpotChecks checks;  // no referee came, twice
  checks.Claim(1, "a", Ran(5.0), false, 1, 0);
  checks.Claim(2, "a", Ran(5.0), false, 1, 0);
  checks.Queued(1);
  checks.Queued(2);
  ASSERT_EQ(checks.Checked(1, "b", Ran(0.25), kTolerance).kind, Kind::kDisputed);
  const SpotChecks::Verdict first = checks.Dropped(1);
  EXPECT_EQ(first.kind, Kind::kUnsettled);
  EXPECT_TRUE(first.principals.empty());  // one host's noise may do that once
  EXPECT_FALSE(first.rank.has_value());   // it keeps the faster rank
  EXPECT_FALSE(checks.IsSuspect("a"));
  ASSERT_EQ(checks.Checked(2, "b", Ran(0.25), kTolerance).kind, Kind::kDisputed);
  const SpotChecks::Verdict second = checks.Dropped(2);
  EXPECT_EQ(second.principals, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(checks.IsSuspect("a"));
  EXPECT_TRUE(checks.IsSuspect("b"));

  SpotChecks split;  // the referee agrees with neither side: a strike each
  ASSERT_EQ(ClaimedAndChecked(&split, Ran(0.1), Ran(1.0)).kind, Kind::kDisputed);
  const SpotChecks::Verdict neither = split.Checked(1, "c", Ran(10.0), kTolerance);
  EXPECT_EQ(neither.kind, Kind::kUnsettled);
  EXPECT_TRUE(neither.principals.empty());
}

TEST(SpotChecksTest, ADroppedCheckIsNotQueuedAgainAndALostWorkersCheckIs) {
  SpotChecks checks;
  checks.Claim(1, "a", Ran(1), false, 1, 0);
  checks.Claim(2, "a", Ran(1), false, 0, 0.5);
  checks.Queued(1);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{2}));
  EXPECT_EQ(checks.Dropped(1).kind, Kind::kNone);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{2}));
  checks.Queued(2);  // a lost worker's check says nothing: it may be queued again
  EXPECT_EQ(checks.Checked(2, "b", Failed(v1::TRIAL_STATUS_WORKER_LOST), kTolerance).kind,
            Kind::kNone);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{2}));
}

TEST(SpotChecksTest, AnOverruledPrincipalsClaimsAreReMeasuredWithoutAVerdict) {
  SpotChecks checks;
  checks.Claim(1, "a", Ran(5.0), false, 1, 0);
  checks.Claim(2, "a", Ran(5.0), false, 0, 0.5);
  checks.MarkOverruled("a");
  EXPECT_TRUE(checks.IsSuspect("a"));
  EXPECT_TRUE(checks.IsOverruled("a"));
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{1, 2}));
  checks.Queued(1);
  const SpotChecks::Verdict remeasured = checks.Checked(1, "b", Ran(0.25), kTolerance);
  EXPECT_EQ(remeasured.kind, Kind::kNone);
  EXPECT_EQ(RankOf(remeasured), 0.25);  // in the claim's place
  EXPECT_TRUE(remeasured.vouches);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{2}));
  EXPECT_FALSE(checks.IsSuspect("b"));  // no dispute with an overruled claim
}

TEST(SpotChecksTest, AConfigLeavesTheRankingOfAnOverruledPrincipalForWhatAnotherMeasured) {
  SpotChecks checks;
  checks.Claim(1, "h", Ran(1.0), false, 1, 0);  // h's claim, checked by p
  checks.Queued(1);
  ASSERT_EQ(checks.Checked(1, "p", Ran(1.5), kTolerance).kind, Kind::kAgreed);
  checks.Claim(2, "p", Ran(2.0), false, 1, 0);  // p's claim, checked by h
  checks.Queued(2);
  ASSERT_EQ(checks.Checked(2, "h", Ran(2.5), kTolerance).kind, Kind::kAgreed);
  checks.Claim(3, "p", Ran(3.0), false, 0, 0.5);  // p's claim, unchecked
  checks.MarkOverruled("p");
  ASSERT_TRUE(checks.TrustedRank(1).has_value());
  EXPECT_EQ(checks.TrustedRank(1)->principal, "h");  // its claim
  ASSERT_TRUE(checks.TrustedRank(2).has_value());
  EXPECT_EQ(checks.TrustedRank(2)->principal, "h");  // its check
  EXPECT_FALSE(checks.TrustedRank(3).has_value());   // measured again
  // A checked claim of the overruled principal may be measured again too.
  checks.Queued(2);
  const SpotChecks::Verdict again = checks.Checked(2, "c", Ran(2.2), kTolerance);
  EXPECT_EQ(RankOf(again), 2.2);
}

}  // namespace
}  // namespace tunefleet::server
