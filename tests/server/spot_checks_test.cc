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

v1::TrialResult Failed(v1::TrialStatus status = v1::TRIAL_STATUS_CRASHED) {
  v1::TrialResult result;
  result.set_status(status);
  return result;
}

constexpr double kTolerance = 1.0;

TEST(ResultsAgreeTest, WithinTheFactorEitherWayOrBothFailed) {
  EXPECT_TRUE(ResultsAgree(Ran(1.0), Ran(1.9), kTolerance));
  EXPECT_TRUE(ResultsAgree(Ran(1.9), Ran(1.0), kTolerance));
  EXPECT_FALSE(ResultsAgree(Ran(1.0), Ran(2.1), kTolerance));
  EXPECT_FALSE(ResultsAgree(Ran(2.1), Ran(1.0), kTolerance));
  EXPECT_TRUE(ResultsAgree(Failed(), Failed(v1::TRIAL_STATUS_WRONG_RESULT), kTolerance));
  EXPECT_FALSE(ResultsAgree(Failed(v1::TRIAL_STATUS_TIMEOUT), Ran(1.0), kTolerance));
}

TEST(ResultsAgreeTest, ComparesCalibratedTimes) {
  // A device twice as slow measures the calibration twice as long too.
  EXPECT_TRUE(ResultsAgree(Ran(1.0, 1e-3), Ran(3.0, 2e-3), kTolerance));
  EXPECT_FALSE(ResultsAgree(Ran(1.0, 1e-3), Ran(3.0, 1e-3), kTolerance));
}

TEST(EvidenceTest, ALostWorkerSaysNothing) {
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_WORKER_LOST)), Evidence::kNone);
  EXPECT_EQ(EvidenceOf(Failed(v1::TRIAL_STATUS_COMPILE_ERROR)), Evidence::kFailed);
  EXPECT_EQ(EvidenceOf(Ran(1)), Evidence::kRan);
}

TEST(SpotChecksTest, SamplesEachPrincipalsFirstResultNewBestsSuspectsAndTheRateOfTheRest) {
  SpotChecks checks;
  EXPECT_TRUE(checks.Claim(1, "a", Ran(1), false, 0.1, 0.99));   // a's first
  EXPECT_FALSE(checks.Claim(2, "a", Ran(1), false, 0.1, 0.99));  // above the rate
  EXPECT_TRUE(checks.Claim(3, "a", Ran(1), false, 0.1, 0.05));   // drawn below it
  EXPECT_TRUE(checks.Claim(4, "a", Ran(1), true, 0.1, 0.99));    // a new best
  EXPECT_TRUE(checks.Claim(5, "b", Ran(1), false, 0.1, 0.99));   // b's first
  checks.MarkSuspect("b");
  EXPECT_TRUE(checks.Claim(6, "b", Ran(1), false, 0.1, 0.99));
  EXPECT_FALSE(checks.Claim(6, "b", Ran(1), true, 0.1, 0.0));   // claimed once
  EXPECT_FALSE(checks.Claim(7, "c", Ran(1), true, 0.0, 0.0));   // off
  EXPECT_FALSE(checks.Claim(8, "a", Failed(v1::TRIAL_STATUS_WORKER_LOST), true, 0.1, 0.0));
  EXPECT_EQ(checks.ClaimantOf(6), "b");
}

TEST(SpotChecksTest, AnAgreeingCheckLeavesTheClaimStanding) {
  SpotChecks checks;
  checks.Claim(1, "a", Ran(1.0), false, 1, 0);
  checks.Queued(1);
  EXPECT_EQ(checks.Checked(1, "a", Ran(9.0), kTolerance).kind, Kind::kNone);  // never its own
  EXPECT_EQ(checks.Checked(1, "b", Ran(1.5), kTolerance).kind, Kind::kAgreed);
  EXPECT_EQ(checks.Checked(1, "c", Ran(9.0), kTolerance).kind, Kind::kNone);  // checked once
  EXPECT_EQ(checks.checks(), 1);
  EXPECT_EQ(checks.disputes(), 0);
}

TEST(SpotChecksTest, ARefereeOverrulesTheSideItDisagreesWith) {
  SpotChecks hidden;  // a claims a fast config slow; the referee sides with b
  hidden.Claim(1, "a", Ran(5.0), false, 1, 0);
  hidden.Queued(1);
  SpotChecks::Verdict disputed = hidden.Checked(1, "b", Ran(0.25), kTolerance);
  ASSERT_EQ(disputed.kind, Kind::kDisputed);
  EXPECT_EQ(disputed.sides, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(hidden.Checked(1, "b", Ran(0.25), kTolerance).kind, Kind::kNone);  // not a referee
  SpotChecks::Verdict settled = hidden.Checked(1, "c", Ran(0.3), kTolerance);
  EXPECT_EQ(settled.kind, Kind::kOverruled);
  EXPECT_EQ(settled.principal, "a");
  EXPECT_TRUE(hidden.IsSuspect("a"));

  SpotChecks slandered;  // b checks a's honest claim slow; the referee sides with a
  slandered.Claim(1, "a", Ran(0.25), false, 1, 0);
  slandered.Queued(1);
  ASSERT_EQ(slandered.Checked(1, "b", Ran(5.0), kTolerance).kind, Kind::kDisputed);
  SpotChecks::Verdict overruled = slandered.Checked(1, "c", Ran(0.26), kTolerance);
  EXPECT_EQ(overruled.kind, Kind::kOverruled);
  EXPECT_EQ(overruled.principal, "b");
  EXPECT_FALSE(slandered.IsSuspect("a"));
}

TEST(SpotChecksTest, AFailureClaimedForAConfigThatRunsIsADispute) {
  SpotChecks checks;
  checks.Claim(1, "a", Failed(v1::TRIAL_STATUS_WRONG_RESULT), false, 1, 0);
  checks.Queued(1);
  ASSERT_EQ(checks.Checked(1, "b", Ran(0.2), kTolerance).kind, Kind::kDisputed);
  SpotChecks::Verdict settled = checks.Checked(1, "c", Ran(0.2), kTolerance);
  EXPECT_EQ(settled.kind, Kind::kOverruled);
  EXPECT_EQ(settled.principal, "a");
}

TEST(SpotChecksTest, AnUnsettledDisputeMakesTheSlowerSideASuspect) {
  SpotChecks dropped;  // no referee came
  dropped.Claim(1, "a", Ran(5.0), false, 1, 0);
  dropped.Queued(1);
  ASSERT_EQ(dropped.Checked(1, "b", Ran(0.25), kTolerance).kind, Kind::kDisputed);
  SpotChecks::Verdict unsettled = dropped.Dropped(1);
  EXPECT_EQ(unsettled.kind, Kind::kUnsettled);
  EXPECT_EQ(unsettled.principal, "a");
  EXPECT_TRUE(dropped.IsSuspect("a"));
  EXPECT_FALSE(dropped.IsSuspect("b"));

  SpotChecks near;  // the referee agrees with a, but b is not far from it
  near.Claim(1, "a", Ran(1.0), false, 1, 0);
  near.Queued(1);
  ASSERT_EQ(near.Checked(1, "b", Ran(2.5), kTolerance).kind, Kind::kDisputed);
  SpotChecks::Verdict noisy = near.Checked(1, "c", Ran(1.1), kTolerance);
  EXPECT_EQ(noisy.kind, Kind::kUnsettled);  // re-measured, not quarantined
  EXPECT_EQ(noisy.principal, "b");

  SpotChecks split;  // the referee agrees with neither side
  split.Claim(1, "a", Ran(0.1), false, 1, 0);
  split.Queued(1);
  ASSERT_EQ(split.Checked(1, "b", Ran(1.0), kTolerance).kind, Kind::kDisputed);
  SpotChecks::Verdict neither = split.Checked(1, "c", Ran(10.0), kTolerance);
  EXPECT_EQ(neither.kind, Kind::kUnsettled);
  EXPECT_EQ(neither.principal, "b");  // b reported slower than a
}

TEST(SpotChecksTest, ADroppedCheckLeavesTheClaimUncheckedForAnotherTry) {
  SpotChecks checks;
  checks.Claim(1, "a", Ran(1), false, 1, 0);
  checks.Claim(2, "a", Ran(1), false, 0, 0.5);
  checks.Claim(3, "b", Ran(1), false, 1, 0);
  checks.Queued(1);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{2}));
  EXPECT_EQ(checks.Dropped(1).kind, Kind::kNone);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{1, 2}));
  checks.Queued(1);  // a lost worker's check says nothing either
  EXPECT_EQ(checks.Checked(1, "b", Failed(v1::TRIAL_STATUS_WORKER_LOST), kTolerance).kind,
            Kind::kNone);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{1, 2}));
}

TEST(SpotChecksTest, AnOverruledPrincipalsClaimsAreReMeasuredWithoutAVerdict) {
  SpotChecks checks;
  checks.Claim(1, "a", Ran(5.0), false, 1, 0);
  checks.Claim(2, "a", Ran(5.0), false, 0, 0.5);
  checks.MarkOverruled("a");
  EXPECT_TRUE(checks.IsSuspect("a"));
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{1, 2}));
  checks.Queued(1);
  EXPECT_EQ(checks.Checked(1, "b", Ran(0.25), kTolerance).kind, Kind::kNone);
  EXPECT_EQ(checks.Unchecked("a"), (std::vector<uint64_t>{2}));
  EXPECT_EQ(checks.disputes(), 0);
}

}  // namespace
}  // namespace tunefleet::server
