#include "server/verification.h"

#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

const absl::Time kDeadline = absl::FromUnixSeconds(1'700'000'000);
const Measurer kRogue{"host:rogue", "w1", "cpu0"};

v1::TrialResult Ok(double seconds, double calibration = 0) {
  v1::TrialResult result;
  result.set_status(v1::TRIAL_STATUS_OK);
  result.mutable_measurement()->set_median_seconds(seconds);
  result.mutable_measurement()->set_calibration_seconds(calibration);
  return result;
}

v1::Measurement Claim(double seconds, double calibration = 0) {
  return Ok(seconds, calibration).measurement();
}

TEST(VerificationTest, NeverGoesToTheClaimantsPrincipal) {
  Verification verification(/*candidate=*/7, Claim(1e-9), {kRogue}, /*served=*/3, kDeadline);
  EXPECT_FALSE(verification.CanVerify({"host:rogue", "w9", "cpu1"}, /*other_principal_live=*/true));
  EXPECT_TRUE(verification.CanVerify({"host:honest", "w2", "cpu0"}, true));
  // With no other principal alive, another device of the claimant's host may.
  EXPECT_TRUE(verification.CanVerify({"host:rogue", "w9", "cpu1"}, false));
  EXPECT_FALSE(verification.CanVerify(kRogue, false));
}

TEST(VerificationTest, MeasuresTheCandidateAndTheServedBestThenJudges) {
  Verification verification(7, Claim(1e-9), {kRogue}, 3, kDeadline);
  ASSERT_TRUE(verification.waiting());
  EXPECT_EQ(verification.Take("l1", 1, "host:honest"), (std::vector<uint64_t>{7, 3}));
  EXPECT_FALSE(verification.Complete(7, "l1", /*epoch=*/2, Ok(2e-5), 0.25));  // stale
  EXPECT_TRUE(verification.Complete(7, "l1", 1, Ok(2e-5), 0.25));
  EXPECT_FALSE(verification.Complete(7, "l1", 1, Ok(2e-5), 0.25));  // twice
  EXPECT_FALSE(verification.disputed());
  EXPECT_TRUE(verification.Complete(3, "l1", 1, Ok(1e-5), 0.25));
  // One principal against another: a dispute, for a referee to settle.
  EXPECT_TRUE(verification.disputed());
  EXPECT_TRUE(verification.waiting());
  EXPECT_EQ(verification.verified_seconds(), 2e-5);
  EXPECT_FALSE(verification.FastestVerified().has_value());
  EXPECT_EQ(verification.Take("l2", 2, "host:referee"), (std::vector<uint64_t>{7, 3}));
  EXPECT_TRUE(verification.Complete(7, "l2", 2, Ok(3e-5), 0.25));
  EXPECT_TRUE(verification.Complete(3, "l2", 2, Ok(0.9e-5), 0.25));
  ASSERT_TRUE(verification.done());
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kDisagreed);
  EXPECT_EQ(verification.Overruled(), (std::vector<std::string>{"host:rogue"}));
  EXPECT_EQ(verification.verifiers(), (std::vector<std::string>{"host:honest", "host:referee"}));
  auto fastest = verification.FastestVerified();
  ASSERT_TRUE(fastest.has_value());
  EXPECT_EQ(fastest->first, 3u);
  EXPECT_EQ(fastest->second, 1e-5);  // each config at the slower of the two
}

TEST(VerificationTest, ARefereeIsAThirdPrincipalAndMayOverruleTheVerifier) {
  const Measurer honest{"host:honest", "w1", "cpu0"};
  Verification verification(7, Claim(1e-5), {honest}, std::nullopt, kDeadline);
  verification.Take("l1", 1, "host:rogue");
  verification.Complete(7, "l1", 1, Ok(0.5), 0.25);
  ASSERT_TRUE(verification.disputed());
  // Neither side referees, and the claimant's other devices no longer may.
  EXPECT_FALSE(verification.CanVerify({"host:rogue", "w2", "cpu0"}, true));
  EXPECT_FALSE(verification.CanVerify({"host:honest", "w9", "cpu1"}, false));
  EXPECT_TRUE(verification.CanVerify({"host:referee", "w3", "cpu0"}, true));
  verification.Take("l2", 2, "host:referee");
  verification.Complete(7, "l2", 2, Ok(1.1e-5), 0.25);
  ASSERT_TRUE(verification.done());
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kAgreed);
  EXPECT_EQ(verification.Overruled(), (std::vector<std::string>{"host:rogue"}));
  auto fastest = verification.FastestVerified();
  ASSERT_TRUE(fastest.has_value());
  EXPECT_EQ(fastest->second, 1.1e-5);  // the referee's round, not the overruled one
}

TEST(VerificationTest, ARefereeAgreeingWithNeitherSideOverrulesNobody) {
  // An honest claim measured fast on a noisy host, a rogue verifier's 0.5 s,
  // and an honest referee twice the claim: it agrees with neither side.
  const Measurer honest{"host:honest", "w1", "cpu0"};
  Verification verification(7, Claim(0.75e-4), {honest}, std::nullopt, kDeadline);
  verification.Take("l1", 1, "host:rogue");
  verification.Complete(7, "l1", 1, Ok(0.5), 0.25);
  verification.Take("l2", 2, "host:referee");
  verification.Complete(7, "l2", 2, Ok(1.5e-4), 0.25);
  ASSERT_TRUE(verification.done());
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kDisputed);
  EXPECT_TRUE(verification.Overruled().empty());
  EXPECT_EQ(verification.verifiers(), (std::vector<std::string>{"host:rogue", "host:referee"}));
  auto fastest = verification.FastestVerified();
  ASSERT_TRUE(fastest.has_value());
  EXPECT_EQ(fastest->second, 1.5e-4);  // the middle of three: neither side's number
}

TEST(VerificationTest, ARefereeAgreeingWithBothSidesOverrulesNobody) {
  Verification verification(7, Claim(1.0e-4), {kRogue}, std::nullopt, kDeadline);
  verification.Take("l1", 1, "host:honest");
  verification.Complete(7, "l1", 1, Ok(1.3e-4), 0.25);  // just past the band
  ASSERT_TRUE(verification.disputed());
  verification.Take("l2", 2, "host:referee");
  verification.Complete(7, "l2", 2, Ok(1.15e-4), 0.25);
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kDisputed);
  EXPECT_TRUE(verification.Overruled().empty());
}

TEST(VerificationTest, ALoserNearTheOthersWinsNothingButIsNotQuarantined) {
  // The referee sides with the verifier, but the claim is within the square
  // of the band of both: one host's noise reaches that far, so the claim
  // loses (the best comes from the others) and its principal stays.
  Verification near(7, Claim(0.7e-4), {kRogue}, std::nullopt, kDeadline);
  near.Take("l1", 1, "host:honest");
  near.Complete(7, "l1", 1, Ok(1.0e-4), 0.25);
  near.Take("l2", 2, "host:referee");
  near.Complete(7, "l2", 2, Ok(1.0e-4), 0.25);
  EXPECT_EQ(near.outcome(), Verification::Outcome::kDisagreed);
  EXPECT_TRUE(near.Overruled().empty());
  // Twice as fast as both is far: quarantined.
  Verification far(7, Claim(0.5e-4), {kRogue}, std::nullopt, kDeadline);
  far.Take("l1", 1, "host:honest");
  far.Complete(7, "l1", 1, Ok(1.0e-4), 0.25);
  far.Take("l2", 2, "host:referee");
  far.Complete(7, "l2", 2, Ok(1.0e-4), 0.25);
  EXPECT_EQ(far.outcome(), Verification::Outcome::kDisagreed);
  EXPECT_EQ(far.Overruled(), (std::vector<std::string>{"host:rogue"}));
  // A verifier that failed the candidate, against a claim and a referee that
  // ran it, loses without being quarantined (a race, a flaky device).
  Verification failed(7, Claim(1.0e-4), {kRogue}, std::nullopt, kDeadline);
  failed.Take("l1", 1, "host:honest");
  v1::TrialResult crashed;
  crashed.set_status(v1::TRIAL_STATUS_CRASHED);
  failed.Complete(7, "l1", 1, crashed, 0.25);
  failed.Take("l2", 2, "host:referee");
  failed.Complete(7, "l2", 2, Ok(1.0e-4), 0.25);
  EXPECT_EQ(failed.outcome(), Verification::Outcome::kAgreed);
  EXPECT_TRUE(failed.Overruled().empty());
}

TEST(VerificationTest, ADisputeNoRefereeSettlesOverrulesNobodyAndCountsTheSlowerSide) {
  Verification verification(7, Claim(1e-5), {kRogue}, std::nullopt, kDeadline);
  verification.Take("l1", 1, "host:honest");
  verification.Complete(7, "l1", 1, Ok(1.0), 0.25);
  verification.Take("l2", 2, "host:referee");
  verification.Release("l2", 2);  // the referee's lease lapsed
  EXPECT_TRUE(verification.disputed());
  EXPECT_TRUE(verification.waiting());
  verification.GiveUp();
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kDisputed);
  EXPECT_TRUE(verification.Overruled().empty());
  auto fastest = verification.FastestVerified();
  ASSERT_TRUE(fastest.has_value());
  EXPECT_EQ(fastest->second, 1.0);  // the slower of the claim and the verifier
  EXPECT_EQ(verification.verifiers(), (std::vector<std::string>{"host:honest"}));
}

TEST(VerificationTest, TheClaimantsOwnOtherDeviceDisagreeingOverrulesNobody) {
  Verification verification(7, Claim(1e-9), {kRogue}, std::nullopt, kDeadline);
  ASSERT_TRUE(verification.CanVerify({"host:rogue", "w9", "cpu1"}, false));
  verification.Take("l1", 1, "host:rogue");
  verification.Complete(7, "l1", 1, Ok(2e-5), 0.25);
  ASSERT_TRUE(verification.done());
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kDisagreed);
  EXPECT_TRUE(verification.Overruled().empty());  // a faulty device, not a lying host
}

TEST(VerificationTest, AClaimWithinToleranceAgrees) {
  Verification verification(7, Claim(1e-5), {kRogue}, std::nullopt, kDeadline);
  EXPECT_EQ(verification.Take("l1", 1, "host:honest"), (std::vector<uint64_t>{7}));
  EXPECT_TRUE(verification.Complete(7, "l1", 1, Ok(1.2e-5), 0.25));
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kAgreed);
}

TEST(VerificationTest, ACandidateTheVerifierCannotRunDisagrees) {
  Verification verification(7, Claim(1e-5), {kRogue}, std::nullopt, kDeadline);
  verification.Take("l1", 1, "host:honest");
  v1::TrialResult crashed;
  crashed.set_status(v1::TRIAL_STATUS_CRASHED);
  EXPECT_TRUE(verification.Complete(7, "l1", 1, crashed, 0.25));
  EXPECT_TRUE(verification.disputed());
  verification.Take("l2", 2, "host:referee");
  EXPECT_TRUE(verification.Complete(7, "l2", 2, crashed, 0.25));
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kDisagreed);
  EXPECT_TRUE(verification.Overruled().empty());  // failures against a run: not served, not blamed
  EXPECT_FALSE(verification.FastestVerified().has_value());  // two failures outweigh the claim
}

TEST(VerificationTest, AReleasedLeaseWaitsForAnotherVerifier) {
  Verification verification(7, Claim(1e-5), {kRogue}, 3, kDeadline);
  verification.Take("l1", 1, "host:honest");
  verification.Complete(7, "l1", 1, Ok(1e-5), 0.25);
  verification.Release("l1", 1);
  EXPECT_TRUE(verification.waiting());
  // The principal that let the round go cannot hold it again.
  EXPECT_FALSE(verification.CanVerify({"host:honest", "w2", "cpu0"}, true));
  EXPECT_TRUE(verification.CanVerify({"host:other", "w3", "cpu0"}, true));
  verification.Take("l2", 2, "host:other");
  EXPECT_FALSE(verification.Complete(7, "l1", 1, Ok(1e-5), 0.25));
  verification.GiveUp();
  EXPECT_EQ(verification.outcome(), Verification::Outcome::kUnverified);
}

// Calibration (docs/measurement.md): a claim and a re-measurement taken on
// devices that run the reference at different speeds compare by calibrated
// time: a slower device's slower time agrees, and a raw match that the
// calibrations expose as a claim twice too fast does not.
TEST(VerificationTest, ClaimsAndReMeasurementsCompareByCalibratedTime) {
  Verification slower_device(7, Claim(2e-3, /*calibration=*/4e-3), {kRogue}, std::nullopt,
                             kDeadline);
  slower_device.Take("l1", 1, "host:verifier");
  slower_device.Complete(7, "l1", 1, Ok(1.1e-3, /*calibration=*/2e-3), 0.25);
  EXPECT_EQ(slower_device.outcome(), Verification::Outcome::kAgreed);
  auto fastest = slower_device.FastestVerified();
  ASSERT_TRUE(fastest.has_value());
  // 0.5x ref claimed, 0.55x measured: the upper median is the verifier's,
  // served with its raw time.
  EXPECT_EQ(fastest->second, 1.1e-3);

  Verification too_fast(7, Claim(1e-3, /*calibration=*/4e-3), {kRogue}, std::nullopt, kDeadline);
  too_fast.Take("l1", 1, "host:verifier");
  too_fast.Complete(7, "l1", 1, Ok(1e-3, /*calibration=*/2e-3), 0.25);
  EXPECT_TRUE(too_fast.disputed());  // 0.25x ref claimed, 0.5x measured
}

}  // namespace
}  // namespace tunefleet::server
