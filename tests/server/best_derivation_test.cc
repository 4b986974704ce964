#include "server/best_derivation.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tunefleet::server {
namespace {

TrialRecord Row(const std::string& job, const std::string& config, double seconds,
                int64_t finished, TrialRound round = TrialRound::kSearch,
                const std::string& principal = "host:a") {
  TrialRecord row;
  row.job_id = job;
  row.tuning_key = "key";
  row.config = config;
  row.status = 1;
  row.median_seconds = seconds;
  row.finished_unix_ms = finished;
  row.round = round;
  row.principal = principal;
  return row;
}

TEST(DeriveBestTest, NoRowsGiveNoBest) {
  EXPECT_FALSE(DeriveBest({}, {}, {}).has_value());
  TrialRecord failed = Row("j1", "A", 1e-3, 1);
  failed.status = 3;
  EXPECT_FALSE(DeriveBest({failed}, {}, {}).has_value());
}

TEST(DeriveBestTest, TheFastestSearchRowWinsWithoutLaterRounds) {
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "A", 3e-3, 1), Row("j1", "B", 1e-3, 2), Row("j1", "C", 2e-3, 3)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
}

TEST(DeriveBestTest, ARowCutEarlyIsNeverTheBest) {
  // A cut row's partial median may even read faster (after an invalidation,
  // say); it is never a best.
  TrialRecord cut = Row("j1", "A", 1e-3, 1);
  cut.cut_early = true;
  EXPECT_FALSE(DeriveBest({cut}, {}, {}).has_value());
  std::optional<TrialRecord> best = DeriveBest({cut, Row("j1", "B", 2e-3, 2)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
}

TEST(DeriveBestTest, TheFinalistsRoundDecidesOverTheSearch) {
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "A", 1e-3, 1), Row("j1", "B", 2e-3, 2),
       Row("j1", "A", 3e-3, 3, TrialRound::kFinalists),
       Row("j1", "B", 2.5e-3, 3, TrialRound::kFinalists)},
      {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
  EXPECT_EQ(best->median_seconds, 2.5e-3);
}

TEST(DeriveBestTest, TheVerificationRoundDecidesOverTheFinalists) {
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "A", 1e-9, 1, TrialRound::kFinalists, "host:rogue"),
       Row("j1", "A", 4e-3, 2, TrialRound::kVerify, "host:honest"),
       Row("j1", "B", 2e-3, 2, TrialRound::kVerify, "host:honest")},
      {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
}

TEST(DeriveBestTest, AVerifierAndARefereeCountEachConfigAtTheSlowerOfTheirTwo) {
  // One verifier cannot make a config look fast where the other measured it
  // slow: A is 1 ns by one and 4 ms by the other, so B wins.
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "A", 1e-9, 2, TrialRound::kVerify, "host:v1"),
       Row("j1", "B", 2.2e-3, 2, TrialRound::kVerify, "host:v1"),
       Row("j1", "A", 4e-3, 3, TrialRound::kReferee, "host:v2"),
       Row("j1", "B", 2e-3, 3, TrialRound::kReferee, "host:v2")},
      {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
  EXPECT_EQ(best->median_seconds, 2.2e-3);
  EXPECT_EQ(best->principal, "host:v1");
}

TEST(DeriveBestTest, AVerifiedConfigCountsAtTheSlowerOfClaimantAndVerifier) {
  // The claimant (host:a) and the verifier (host:b) disagree on A; B was
  // never verified, so the claimant's word alone cannot make it the best.
  std::vector<TrialRecord> rows = {
      Row("j1", "A", 1e-3, 1, TrialRound::kFinalists, "host:a"),
      Row("j1", "B", 1.5e-3, 1, TrialRound::kFinalists, "host:a"),
      Row("j1", "A", 3e-3, 2, TrialRound::kVerify, "host:b")};
  std::optional<TrialRecord> best = DeriveBest(rows, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "A");
  EXPECT_EQ(best->median_seconds, 3e-3);
  // A verifier slower than the claim the other way round: the claim's row.
  rows[2].median_seconds = 0.8e-3;
  best = DeriveBest(rows, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->median_seconds, 1e-3);
  EXPECT_EQ(best->principal, "host:a");
  // Quarantine the claimant: the verifier's rows alone remain.
  best = DeriveBest(rows, {"host:a"}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->median_seconds, 0.8e-3);
}

TEST(DeriveBestTest, AVerifierCannotMakeAConfigReadFasterThanItsClaimEvenWithoutFinalists) {
  // No finalists round: the claim is the search row.
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "A", 1e-3, 1, TrialRound::kSearch, "host:a"),
       Row("j1", "A", 1e-9, 2, TrialRound::kVerify, "host:rogue")},
      {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->median_seconds, 1e-3);
  EXPECT_EQ(best->principal, "host:a");
}

TEST(DeriveBestTest, AConfigTheVerifierCouldNotRunNeverWinsOnTheClaimAlone) {
  TrialRecord crashed = Row("j2", "A", 0, 30, TrialRound::kVerify, "host:b");
  crashed.status = 4;  // CRASHED
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "B", 2e-3, 10, TrialRound::kFinalists, "host:a"),
       Row("j2", "A", 1e-3, 20, TrialRound::kFinalists, "host:a"), crashed},
      {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j1");  // j2 offers nothing: its only verified config failed
  // A referee that ran it: the middle of claim, referee and the failure.
  std::optional<TrialRecord> refereed = DeriveBest(
      {Row("j1", "B", 2e-3, 10, TrialRound::kFinalists, "host:a"),
       Row("j2", "A", 1e-3, 20, TrialRound::kFinalists, "host:a"), crashed,
       Row("j2", "A", 1.1e-3, 31, TrialRound::kReferee, "host:c")},
      {}, {});
  ASSERT_TRUE(refereed.has_value());
  EXPECT_EQ(refereed->job_id, "j2");
  EXPECT_EQ(refereed->median_seconds, 1.1e-3);
}

TEST(DeriveBestTest, QuarantinedAndExcludedRowsDoNotCount) {
  TrialRecord excluded = Row("j3", "C", 1e-4, 30);
  excluded.excluded = true;
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "A", 3e-3, 10), Row("j2", "B", 1e-9, 20, TrialRound::kSearch, "host:rogue"),
       excluded},
      {"host:rogue"}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j1");
  EXPECT_EQ(best->config, "A");
}

TEST(DeriveBestTest, AFasterRetuneReplacesTheBest) {
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "A", 5e-3, 10), Row("j2", "B", 4e-3, 20)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j2");
  EXPECT_EQ(best->config, "B");
}

TEST(DeriveBestTest, ASlowerRetuneKeepsTheBest) {
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "A", 5e-3, 10), Row("j1", "B", 6e-3, 11), Row("j2", "C", 8.4e-3, 20)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j1");
  EXPECT_EQ(best->config, "A");
}

TEST(DeriveBestTest, EachJobOffersItsDecisionRoundsFastestRow) {
  // j1's search row reads faster than any, but its finalists round decides
  // j1; a later job faster than that round replaces it.
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "A", 1e-3, 10), Row("j1", "A", 5e-3, 11, TrialRound::kFinalists),
                  Row("j2", "B", 4e-3, 20)},
                 {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j2");
}

TEST(DeriveBestTest, AReplacingJobIsServedThoughSlower) {
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "A", 5e-3, 10), Row("j2", "B", 8.4e-3, 20)}, {}, {"j2"});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j2");
  EXPECT_EQ(best->config, "B");
}

TEST(DeriveBestTest, JobsAfterAReplacingOneCompeteOnlyWithItAndLaterJobs) {
  const std::vector<TrialRecord> rows = {Row("j1", "A", 1e-3, 10), Row("j2", "B", 8e-3, 20),
                                         Row("j3", "C", 9e-3, 30), Row("j4", "D", 7e-3, 40)};
  std::optional<TrialRecord> best = DeriveBest(rows, {}, {"j2"});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j4");  // j1 is below the floor; j3 is slower than j2
  best = DeriveBest({rows[0], rows[1], rows[2]}, {}, {"j2"});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j2");
}

TEST(DeriveBestTest, ExcludingTheFasterOldJobServesTheRetune) {
  TrialRecord old_best = Row("j1", "A", 5e-3, 10);
  std::optional<TrialRecord> best = DeriveBest({old_best, Row("j2", "B", 8.4e-3, 20)}, {}, {});
  ASSERT_TRUE(best.has_value());
  ASSERT_EQ(best->job_id, "j1");
  old_best.excluded = true;
  best = DeriveBest({old_best, Row("j2", "B", 8.4e-3, 20)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j2");
}

TEST(DeriveBestTest, AReplacingJobWithNoRowLeftSetsNoFloor) {
  TrialRecord replaced = Row("j2", "B", 8e-3, 20);
  replaced.excluded = true;
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "A", 5e-3, 10), replaced, Row("j3", "C", 6e-3, 30)}, {}, {"j2"});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j1");
}

TEST(DeriveBestTest, TiesKeepTheOlderJobWhateverTheOrderOfRows) {
  // Equal medians: the retune is not faster. Jobs are ordered by when they
  // finished, then by id, not by the order rows are listed.
  std::optional<TrialRecord> best =
      DeriveBest({Row("j2", "B", 5e-3, 20), Row("j1", "A", 5e-3, 10)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j1");
  best = DeriveBest({Row("jb", "B", 5e-3, 10), Row("ja", "A", 5e-3, 10)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "ja");  // same finish time: the smaller id is older
}

TEST(DeriveBestTest, TiedRowsOfOneRoundServeTheFastestThenTheDefender) {
  std::optional<TrialRecord> best = DeriveBest(
      {Row("j1", "B", 1.000e-3, 1), Row("j1", "A", 1.005e-3, 2), Row("j1", "C", 1.2e-3, 3)},
      {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
  EXPECT_EQ(best->median_seconds, 1.000e-3);
  // A re-tune that finds A 0.4% ahead, tied: B defends its place.
  best = DeriveBest({Row("j1", "B", 1.000e-3, 1), Row("j1", "A", 1.005e-3, 2),
                     Row("j2", "A", 0.998e-3, 11), Row("j2", "B", 1.002e-3, 12)},
                    {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
  EXPECT_EQ(best->job_id, "j2");
}

TEST(DeriveBestTest, ARetuneWithinTheTieToleranceIsNotFaster) {
  // j2 did not measure A: the runs are compared, and 0.8% is a tie.
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "A", 5e-3, 10), Row("j2", "B", 4.96e-3, 20)}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j1");
  EXPECT_FALSE(FasterThan(Row("j2", "B", 4.96e-3, 20), Row("j1", "A", 5e-3, 10)));
  EXPECT_TRUE(FasterThan(Row("j2", "B", 4.9e-3, 20), Row("j1", "A", 5e-3, 10)));
}

// Calibration (docs/measurement.md): runs on devices or at clocks that run
// the reference at different speeds compare by calibrated time.
TrialRecord Calibrated(TrialRecord row, double calibration) {
  row.calibration_seconds = calibration;
  return row;
}

TEST(DeriveBestTest, RunsOfDifferentJobsCompareByCalibratedTime) {
  // j2's device ran the reference 10% slower: its 5.2 ms is 0.945x the
  // reference against j1's 1.0x, faster beyond the tie tolerance, although
  // its raw median is slower.
  const TrialRecord j1 = Calibrated(Row("j1", "A", 5e-3, 10), 5e-3);
  const TrialRecord j2 = Calibrated(Row("j2", "B", 5.2e-3, 20), 5.5e-3);
  EXPECT_TRUE(FasterThan(j2, j1));
  std::optional<TrialRecord> best = DeriveBest({j1, j2}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
  // Raw 4.9 ms looks 2% faster, but on a device whose reference ran 5%
  // faster it is 0.98 / 0.95 = 1.03x of A's calibrated time: not faster.
  const TrialRecord j3 = Calibrated(Row("j3", "C", 4.9e-3, 30), 4.75e-3);
  EXPECT_FALSE(FasterThan(j3, j1));
  // A side uncalibrated: raw medians.
  EXPECT_TRUE(FasterThan(Row("j3", "C", 4.9e-3, 30), j1));
}

TEST(DeriveBestTest, ATieSetIsTakenOnCalibratedTimesAndItsEvidenceCarriesThem) {
  // Two search rows of one job from two devices: A is 2% slower raw but 0.2%
  // faster calibrated: tied, and A, the fastest by calibrated time, is
  // served, with its calibration.
  const std::vector<TrialRecord> rows = {
      Calibrated(Row("j1", "B", 1.00e-3, 1), 1.000e-3),
      Calibrated(Row("j1", "A", 1.02e-3, 2), 1.022e-3)};
  std::optional<TrialRecord> best = DeriveBest(rows, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "A");
  v1::BestEvidence evidence = EvidenceOf(rows, {}, *best);
  ASSERT_EQ(evidence.tie_set_size(), 2);
  EXPECT_EQ(evidence.tie_set(0).config_text(), "A");
  EXPECT_DOUBLE_EQ(evidence.tie_set(0).median_seconds(), 1.02e-3);  // raw, as measured
  EXPECT_DOUBLE_EQ(evidence.tie_set(0).calibration_seconds(), 1.022e-3);
  EXPECT_EQ(evidence.tie_set(1).config_text(), "B");
  EXPECT_NEAR(evidence.tie_set(1).gap(), 1.022 / 1.02 - 1, 1e-12);
  EXPECT_DOUBLE_EQ(evidence.calibration_seconds(), 1.022e-3);
}

// A retune whose deciding round measured the served config decides side by
// side, whatever the times of other runs say.
TEST(JudgeRetuneTest, ARetuneThatMeasuredTheServedConfigDecidesSideBySide) {
  const TrialRecord served = Row("j1", "A", 5e-3, 10);
  // Slower clocks in j2: A and B tied there, so A stays, with j2's time.
  RetuneVerdict confirmed =
      JudgeRetune({served, Row("j2", "B", 5.98e-3, 20, TrialRound::kFinalists),
                   Row("j2", "A", 6.0e-3, 21, TrialRound::kFinalists)},
                  {}, {}, "j2");
  EXPECT_EQ(confirmed.outcome, RetuneOutcome::kConfirmed);
  EXPECT_EQ(confirmed.served->config, "A");
  EXPECT_EQ(confirmed.served->job_id, "j2");
  EXPECT_EQ(confirmed.served->median_seconds, 6.0e-3);
  EXPECT_EQ(confirmed.previous->job_id, "j1");
  // B beat A in j2's round: served, though no faster than A's old time.
  RetuneVerdict replaced =
      JudgeRetune({served, Row("j2", "B", 5.0e-3, 20, TrialRound::kFinalists),
                   Row("j2", "A", 6.0e-3, 21, TrialRound::kFinalists)},
                  {}, {}, "j2");
  EXPECT_EQ(replaced.outcome, RetuneOutcome::kReplaced);
  EXPECT_EQ(replaced.served->config, "B");
  // Excluding j2 gives j1's A back.
  EXPECT_EQ(replaced.previous->config, "A");
  EXPECT_EQ(replaced.previous->job_id, "j1");
}

TEST(DeriveBestTest, AReplacingJobKeepsTheServedConfigWhenItFoundItTied) {
  std::optional<TrialRecord> best =
      DeriveBest({Row("j1", "B", 5e-3, 10), Row("j2", "A", 7.0e-3, 20), Row("j2", "B", 7.02e-3, 21)},
                 {}, {"j2"});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->job_id, "j2");
  EXPECT_EQ(best->config, "B");  // the defender, not the first by name
}

TEST(JudgeRetuneTest, SaysWhatEachJobDidToTheBest) {
  const std::vector<TrialRecord> rows = {Row("j1", "A", 5e-3, 10), Row("j2", "B", 8.4e-3, 20)};
  RetuneVerdict first = JudgeRetune({rows[0]}, {}, {}, "j1");
  EXPECT_EQ(first.outcome, RetuneOutcome::kFirst);
  EXPECT_FALSE(first.previous.has_value());

  RetuneVerdict regressed = JudgeRetune(rows, {}, {}, "j2");
  EXPECT_EQ(regressed.outcome, RetuneOutcome::kRegressed);
  EXPECT_EQ(regressed.job_best->median_seconds, 8.4e-3);
  EXPECT_EQ(regressed.served->job_id, "j1");
  EXPECT_EQ(regressed.previous->job_id, "j1");

  RetuneVerdict forced = JudgeRetune(rows, {}, {"j2"}, "j2");
  EXPECT_EQ(forced.outcome, RetuneOutcome::kForced);
  EXPECT_EQ(forced.served->job_id, "j2");
  EXPECT_EQ(forced.previous->median_seconds, 5e-3);

  RetuneVerdict replaced = JudgeRetune({rows[0], Row("j3", "C", 4e-3, 30)}, {}, {}, "j3");
  EXPECT_EQ(replaced.outcome, RetuneOutcome::kReplaced);
  EXPECT_EQ(replaced.served->config, "C");

  EXPECT_EQ(JudgeRetune(rows, {"host:a"}, {}, "j2").outcome, RetuneOutcome::kNone);
}

// A measured its runs 3% apart (j1, j2): j3's round, where B is 2.5% ahead
// of it, does not beat it beyond that. Without j2 it does.
TEST(DeriveBestTest, TheDefendersRunToRunSpreadKeepsItAgainstAGapWithinIt) {
  const std::vector<TrialRecord> rows = {
      Row("j1", "A", 1.00e-3, 10), Row("j2", "A", 1.03e-3, 20), Row("j2", "C", 1.2e-3, 21),
      Row("j3", "B", 1.000e-3, 30, TrialRound::kFinalists),
      Row("j3", "A", 1.025e-3, 31, TrialRound::kFinalists)};
  EXPECT_NEAR(DefenderTolerance({rows[0], rows[1]}, {}, "A"), 2 * 0.0212132 / 1.015, 1e-4);
  EXPECT_EQ(DefenderTolerance({rows[0]}, {}, "A"), 0);
  std::optional<TrialRecord> best = DeriveBest(rows, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "A");
  EXPECT_EQ(best->job_id, "j3");
  EXPECT_EQ(EvidenceOf(rows, {}, *best).tie_set_size(), 2);
  best = DeriveBest({rows[0], rows[3], rows[4]}, {}, {});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "B");
}

TEST(EvidenceOfTest, SaysTheTieSetAndTheMeasurementsBehindTheBest) {
  auto finalist = [](const std::string& config, double seconds, const std::string& device) {
    TrialRecord row = Row("j2", config, seconds, 20, TrialRound::kFinalists);
    row.rounds = 5;
    row.rounds_cv = 0.001;
    row.worker_id = "w1";
    row.device_id = device;
    return row;
  };
  TrialRecord old = Row("j1", "A", 5e-3, 10);
  old.worker_id = "w0";
  old.device_id = "0";
  TrialRecord searched = Row("j2", "A", 6e-3, 19);
  searched.worker_id = "w1";
  searched.device_id = "1";
  TrialRecord rogue = Row("j3", "A", 1e-9, 30, TrialRound::kSearch, "host:rogue");
  const std::vector<TrialRecord> rows = {old, searched, finalist("B", 1.000e-3, "0"),
                                         finalist("A", 1.004e-3, "1"), finalist("C", 1.5e-3, "0"),
                                         rogue};
  std::optional<TrialRecord> best = DeriveBest(rows, {"host:rogue"}, {});
  ASSERT_TRUE(best.has_value());
  ASSERT_EQ(best->config, "A");  // tied with B: j1 served it, j2 keeps it
  v1::BestEvidence evidence = EvidenceOf(rows, {"host:rogue"}, *best);
  ASSERT_EQ(evidence.tie_set_size(), 2);
  EXPECT_EQ(evidence.tie_set(0).config_text(), "B");
  EXPECT_EQ(evidence.tie_set(0).gap(), 0);
  EXPECT_EQ(evidence.tie_set(1).config_text(), "A");
  EXPECT_NEAR(evidence.tie_set(1).gap(), 0.004, 1e-9);
  EXPECT_EQ(evidence.configs_in_round(), 3);
  EXPECT_EQ(evidence.rounds(), 5);
  EXPECT_EQ(evidence.rounds_cv(), 0.001);
  EXPECT_EQ(evidence.measurements(), 3);  // j1's, j2's search and finalists rows; not the rogue's
  EXPECT_EQ(evidence.devices(), 2);       // w0's device 0, w1's device 1
}

TEST(ClaimAgreesTest, AClaimWithinTheToleranceAgrees) {
  EXPECT_TRUE(ClaimAgrees(/*claimed_seconds=*/1.0, /*verified_seconds=*/1.2, 0.25));
  EXPECT_TRUE(ClaimAgrees(0.8, 1.0, 0.25));
  EXPECT_FALSE(ClaimAgrees(0.79, 1.0, 0.25));
  EXPECT_FALSE(ClaimAgrees(1e-9, 2e-5, 0.25));
  EXPECT_TRUE(ClaimAgrees(5.0, 1.0, 0.0));  // slower than verified: the verifier's numbers stand
}

// A verifier whose own rounds varied widens the rule by its noise, at most
// doubling the tolerance: an honest claim on a noisy host is not a lie, and
// a claim far faster still is.
TEST(ClaimAgreesTest, TheVerifiersOwnNoiseWidensTheRuleUpToTwiceTheTolerance) {
  v1::Measurement noisy;
  noisy.set_rounds(3);
  noisy.set_rounds_cv(0.23);  // 23% over 3 rounds: two standard errors are 26.6%
  EXPECT_NEAR(VerifierNoise(noisy), 2 * 0.23 / std::sqrt(3.0), 1e-12);
  // Measured on a 2-core VM: the claimant's 1.80 ms, the verifier's 2.50 ms.
  EXPECT_FALSE(ClaimAgrees(1.80e-3, 2.50e-3, 0.25));
  EXPECT_TRUE(ClaimAgrees(1.80e-3, 2.50e-3, 0.25, VerifierNoise(noisy)));
  EXPECT_FALSE(ClaimAgrees(1.60e-3, 2.50e-3, 0.25, VerifierNoise(noisy)));  // beyond 1.5x
  EXPECT_FALSE(ClaimAgrees(1e-9, 2.50e-3, 0.25, 100.0));  // capped at the tolerance
  v1::Measurement once;
  once.set_rounds(1);
  once.set_rounds_cv(0.5);
  EXPECT_EQ(VerifierNoise(once), 0);
}

TEST(NeedsVerificationTest, OnePrincipalOrAWideMarginNeedsIt) {
  EXPECT_TRUE(NeedsVerification(/*claim_principals=*/1, 1.0, std::nullopt, 0.1));
  EXPECT_TRUE(NeedsVerification(0, 1.0, std::nullopt, 0.1));
  EXPECT_FALSE(NeedsVerification(2, 1.0, std::nullopt, 0.1));
  EXPECT_FALSE(NeedsVerification(2, 0.95, 1.0, 0.1));
  EXPECT_TRUE(NeedsVerification(2, 0.5, 1.0, 0.1));
}

}  // namespace
}  // namespace tunefleet::server
