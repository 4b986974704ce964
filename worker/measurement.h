// The measurement protocol's arithmetic, shared by every backend's runner:
// option defaults, the sampling loop's stop rule, and the summary statistics
// (docs/measurement.md).
#ifndef TUNEFLEET_WORKER_MEASUREMENT_H_
#define TUNEFLEET_WORKER_MEASUREMENT_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// `options` with every unset (zero) field at its default: warm-up 0.02 s,
// budget 0.2 s, min 5 samples, max 1000 samples, cut factor 1.5, low-clock
// fraction 0.9, precision 0.005, calibration interval 0.5 s.
v1::MeasureOptions WithMeasureDefaults(v1::MeasureOptions options);

// The low-clock rule: the indices of the samples whose SM clock
// (`clock_mhz[i]`, 0 = unknown) is under options.low_clock_fraction x
// `recent_max_mhz`, the highest clock the device showed recently. None when
// the fraction is negative or recent_max_mhz is 0. REQUIRES: options with
// defaults.
std::vector<size_t> LowClockSamples(const v1::MeasureOptions& options,
                                    const std::vector<double>& clock_mhz,
                                    double recent_max_mhz);

// The warm-up a run takes before sampling (a GPU's, a CPU core's):
// options.warmup_seconds when the device idled, but once it has been busy
// measuring until moments ago (`idle_seconds`, since its previous
// measurement ended, under kHotIdleSeconds) it runs at its clocks already and needs only enough
// calls to load the kernel's code and fill its caches: max(kHotWarmupSeconds,
// 3 x `call_seconds`, one call's estimated time), never more than
// warmup_seconds. REQUIRES: options with defaults.
inline constexpr double kHotIdleSeconds = 0.1;
inline constexpr double kHotWarmupSeconds = 0.002;
double WarmupSeconds(const v1::MeasureOptions& options, double idle_seconds,
                     double call_seconds);

// The precision rule ("sample to a confidence, not to a clock"): true when
// `sorted` (ascending) holds at least options.min_samples samples and the
// distribution-free 95% confidence interval of their median lies within
// +/- options.precision of it. With n samples the interval runs from the
// order statistic of 1-based rank floor(n/2 - 0.98 sqrt(n)) to that of rank
// ceil(n/2 + 1 + 0.98 sqrt(n)), both clamped to [1, n] (the normal
// approximation of the binomial count of samples under the median), and
// the rule asks hi - lo <= 2 x precision x median. Up to 10 samples the
// interval is their whole range. Never true for a negative precision.
// REQUIRES: options with defaults.
bool MedianPrecise(const v1::MeasureOptions& options, const std::vector<double>& sorted);

// True while the sampling loop should take another sample, given the
// samples so far (`sorted`, ascending): fewer than min_samples; else not once
// the median is precise (MedianPrecise), max_samples were taken or the
// budget is spent. REQUIRES: options with defaults.
bool WantMoreSamples(const v1::MeasureOptions& options, const std::vector<double>& sorted,
                     double elapsed_seconds);

// The early-cut rule: true when a run should stop sampling because its
// samples so far (`sorted`, ascending) show the config clearly slower than
// `best_seconds`, the fastest median of its job target: at least
// options.min_samples samples, and their p20 > options.cut_factor x
// best_seconds. Never true when best_seconds <= 0 (no best known) or
// cut_factor < 0 (cutting off). REQUIRES: options with defaults.
bool CutEarly(const v1::MeasureOptions& options, double best_seconds,
              const std::vector<double>& sorted);

// Inserts `seconds` into the ascending `sorted` (O(n), no re-sort), so that
// CutEarly can be asked after every sample.
void InsertSorted(double seconds, std::vector<double>* sorted);

// `options` fitted to a kernel whose one call takes `call_seconds`, so that
// warm-up plus sampling end within half of run_seconds_limit (which leaves
// the other half for the checked run and slack): when the full protocol does
// not fit, no warm-up (the checked run warmed up) and as many samples as fit,
// at least 1. Unchanged when run_seconds_limit is 0.
v1::MeasureOptions FitToDeadline(v1::MeasureOptions options, double call_seconds);

// Median, p20, p80 (linear interpolation between order statistics) and the
// count of `seconds`. REQUIRES: non-empty.
v1::Measurement Summarize(std::vector<double> seconds);

// The finalists round (docs/measurement.md): the options of one of `rounds`
// runs of a config, i.e. `options` with defaults and budget_seconds divided
// by `rounds` (rounds < 1 counts as 1). min_samples, max_samples and the
// warm-up stay per run, so every round still takes at least min_samples.
// Rounds sample their whole budget (no precision rule): the finalists are
// the configs worth every sample.
v1::MeasureOptions PerRoundOptions(v1::MeasureOptions options, int rounds);

// Calibration (docs/measurement.md): the options the reference is timed
// with, `options` with defaults and a quarter of the budget, the precision
// rule always on (at its default where `options` turned it off) and no early
// cut. The reference is overhead: it stops as soon as its median is known.
v1::MeasureOptions CalibrationOptions(v1::MeasureOptions options);

// The clock calibration (CUDA and python backends, docs/measurement.md): the
// calibration of a measurement of median `median_seconds` whose kept samples
// took `seconds[i]` with the device's SM clock at `mhz[i]`: the time a
// million cycles take at the clocks the samples ran at, such that
// median / calibration is the median of the samples' megacycles
// (seconds x MHz). 0 when there is no sample or a sample's clock is unknown
// (0). REQUIRES: seconds and mhz of one size.
double ClockCalibration(double median_seconds, const std::vector<double>& seconds,
                        const std::vector<double>& mhz);

// A benchmark child's calibration for its prepared job where it times a
// calibration kernel (the CPU backend): its latest median on the device,
// and when it was taken.
class Calibration {
 public:
  using Clock = std::chrono::steady_clock;
  // True when the reference should be timed at `now`: calibration is on
  // (options.calibration_interval_seconds >= 0) and it was never timed, or
  // last timed more than the interval ago. REQUIRES: options with defaults.
  bool Due(const v1::MeasureOptions& options, Clock::time_point now) const;
  void Record(double seconds, Clock::time_point now);
  // The latest median (0: never timed), what Measurement.calibration_seconds
  // carries.
  double seconds() const { return seconds_; }

 private:
  double seconds_ = 0;
  std::optional<Clock::time_point> at_;
};

// The rest of `elapsed` (the daemon's wait for one run in the child) beyond
// the child's own `phases`: the request and answer through the pipe, and
// whatever the child did not count; never negative.
inline double OutsideSeconds(const v1::TrialPhases& phases, double elapsed_seconds) {
  return std::max(0.0, elapsed_seconds - phases.load_seconds() - phases.check_seconds() -
                           phases.warmup_seconds() - phases.sampling_seconds());
}

// A stopwatch read in laps, for a trial's TrialPhases: Lap() is the seconds
// since the previous Lap (or since it was made).
class LapClock {
 public:
  using Clock = std::chrono::steady_clock;
  double Lap() {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  Clock::time_point last_ = Clock::now();
};

// One config's finalists-round measurement from its per-round measurements:
// median, p20 and p80 are the medians (as in Summarize: the middle one, or
// the mean of the two middle ones) of the rounds' medians, p20s and p80s;
// samples is the sum; clock_mhz the mean; calibration_seconds is such that
// median / calibration is the median of the rounds' calibrated times, each
// round by its own calibration (0 when a round has none).
// REQUIRES: non-empty.
v1::Measurement CombineRounds(const std::vector<v1::Measurement>& rounds);

// The coefficient of variation of `values` (sample standard deviation over
// the mean); 0 for fewer than two values or a zero mean.
double CoefficientOfVariation(const std::vector<double>& values);

// The finalists round's separation rule (docs/measurement.md). `medians[i]`
// holds finalist i's per-round medians so far (empty: it failed and is out).
// The winner is the finalist with the lowest median of its round medians
// (CombineRounds); finalist i is separated from it when
//   median_i - median_winner > 2 * sqrt(se_i^2 + se_winner^2),
// se being the standard error of a finalist's round medians (sample standard
// deviation / sqrt(rounds)). Returns the finalists that are not separated
// (the winner first), i.e. those another round should measure; empty when
// the winner is separated from every other finalist or fewer than two are
// left. Finalists with fewer than two rounds are never separated.
std::vector<size_t> Unseparated(const std::vector<std::vector<double>>& medians);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_MEASUREMENT_H_
