// Tie sets: which measured configs of one round cannot be told apart from
// the fastest, and which of them is served. docs/measurement.md ("Tie sets")
// gives the rule; the coordinator applies it where a job ranks its finalists
// (TargetTrials) and where the served best is derived from stored rows
// (DeriveBest), so both name the same config.
#ifndef TUNEFLEET_SERVER_TIE_SET_H_
#define TUNEFLEET_SERVER_TIE_SET_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/calibration.h"

namespace tunefleet::server {

// Configs whose medians are this close (a fraction of the fastest's) are tied
// whatever their noise: run-to-run and device-to-device differences of one
// config are of this size (docs/measurement.md).
inline constexpr double kTieTolerance = 0.01;

// The most a defender's own run-to-run spread widens its tie (a fraction):
// a config whose runs differ by more than this is not kept on that account.
inline constexpr double kMaxDefenderTolerance = 0.05;

// One measured config of a round.
struct Contender {
  std::string config;  // short form, as stored
  double median_seconds = 0;
  // The finalists round's repeatability (Measurement.rounds, rounds_cv);
  // fewer than two rounds: the median's own noise is unknown.
  int rounds = 0;
  double rounds_cv = 0;
  // The device's calibration at the measurement (0: none).
  double calibration_seconds = 0;

  // What the rules compare: the calibrated time (common/calibration.h).
  // A round's contenders are all calibrated or none is.
  double time() const { return CalibratedTime(median_seconds, calibration_seconds); }
};

// Whether `other` cannot be told apart from `fastest` (REQUIRES: fastest is
// not slower): the gap between their times (Contender::time) is at most
// kTieTolerance of the fastest's, or, when both ran at least two finalist
// rounds, at most two standard errors of the difference (the worker's
// separation rule, worker/measurement.h Unseparated, with
// se = rounds_cv * time / sqrt(rounds)).
bool Tied(const Contender& fastest, const Contender& other);

struct TieSet {
  // Indices into the round: the fastest first, then every contender tied
  // with it, fastest first.
  std::vector<size_t> members;
  // The member served: `defender` (the config served before the round) when
  // it is a member, else the fastest. Re-tunes and replicas of a key serve
  // the same config because the served one defends its place while it stays
  // tied; taking the first member by name instead served a truly slower
  // config up to 9 times as often in replays of the exhaustive datasets
  // (docs/benchmarks.md, "Tie rules replayed").
  size_t chosen = 0;
  // The chosen member's gap to the fastest, a fraction of the fastest's
  // time (0 when the fastest is chosen).
  double chosen_gap = 0;
};

// The tie set of `round`; nullopt for an empty round. Equal times order by
// config (byte order of the short form), so the fastest is one config
// whatever the round's order. The defender is a member too when its
// gap is at most `defender_tolerance` (a fraction of the fastest's time):
// its own run-to-run spread, measured over earlier jobs (DefenderTolerance,
// best_derivation.h), which one round's noise does not show.
std::optional<TieSet> TieSetOf(const std::vector<Contender>& round,
                               const std::string& defender = "",
                               double defender_tolerance = 0);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TIE_SET_H_
