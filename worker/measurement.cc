#include "worker/measurement.h"

#include "common/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

namespace tunefleet::worker {
namespace {

double Quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

v1::MeasureOptions WithMeasureDefaults(v1::MeasureOptions options) {
  if (options.warmup_seconds() <= 0) options.set_warmup_seconds(0.02);
  if (options.budget_seconds() <= 0) options.set_budget_seconds(0.2);
  if (options.min_samples() <= 0) options.set_min_samples(5);
  if (options.max_samples() <= 0) options.set_max_samples(1000);
  if (options.cut_factor() == 0) options.set_cut_factor(1.5);
  if (options.low_clock_fraction() == 0) options.set_low_clock_fraction(0.9);
  if (options.precision() == 0) options.set_precision(0.005);
  if (options.calibration_interval_seconds() == 0) options.set_calibration_interval_seconds(0.5);
  if (options.max_samples() < options.min_samples()) {
    options.set_max_samples(options.min_samples());
  }
  return options;
}

std::vector<size_t> LowClockSamples(const v1::MeasureOptions& options,
                                    const std::vector<double>& clock_mhz,
                                    double recent_max_mhz) {
  std::vector<size_t> low;
  if (options.low_clock_fraction() < 0 || recent_max_mhz <= 0) return low;
  const double floor = options.low_clock_fraction() * recent_max_mhz;
  for (size_t i = 0; i < clock_mhz.size(); ++i) {
    if (clock_mhz[i] > 0 && clock_mhz[i] < floor) low.push_back(i);
  }
  return low;
}

double WarmupSeconds(const v1::MeasureOptions& options, double idle_seconds,
                     double call_seconds) {
  if (!(idle_seconds < kHotIdleSeconds)) return options.warmup_seconds();
  return std::min(options.warmup_seconds(), std::max(kHotWarmupSeconds, 3 * call_seconds));
}

bool MedianPrecise(const v1::MeasureOptions& options, const std::vector<double>& sorted) {
  const int n = static_cast<int>(sorted.size());
  if (options.precision() < 0 || n == 0 || n < options.min_samples()) return false;
  const double spread = 0.98 * std::sqrt(static_cast<double>(n));
  const int lo = std::clamp(static_cast<int>(std::floor(n / 2.0 - spread)), 1, n);
  const int hi = std::clamp(static_cast<int>(std::ceil(n / 2.0 + 1 + spread)), 1, n);
  return sorted[hi - 1] - sorted[lo - 1] <= 2 * options.precision() * Quantile(sorted, 0.5);
}

bool WantMoreSamples(const v1::MeasureOptions& options, const std::vector<double>& sorted,
                     double elapsed_seconds) {
  const int samples = static_cast<int>(sorted.size());
  if (samples < options.min_samples()) return true;
  if (MedianPrecise(options, sorted)) return false;
  return samples < options.max_samples() && elapsed_seconds < options.budget_seconds();
}

bool CutEarly(const v1::MeasureOptions& options, double best_seconds,
              const std::vector<double>& sorted) {
  if (best_seconds <= 0 || options.cut_factor() < 0) return false;
  if (sorted.empty() || static_cast<int>(sorted.size()) < options.min_samples()) return false;
  return Quantile(sorted, 0.2) > options.cut_factor() * best_seconds;
}

void InsertSorted(double seconds, std::vector<double>* sorted) {
  sorted->insert(std::upper_bound(sorted->begin(), sorted->end(), seconds), seconds);
}

v1::MeasureOptions FitToDeadline(v1::MeasureOptions options, double call_seconds) {
  const double room = options.run_seconds_limit() / 2;
  if (room <= 0 || call_seconds <= 0) return options;
  const double full = options.warmup_seconds() + call_seconds +
                      std::max(options.budget_seconds(), options.min_samples() * call_seconds);
  if (full <= room) return options;
  const int fit = std::max(1, static_cast<int>(room / call_seconds));
  options.set_warmup_seconds(0);
  options.set_min_samples(std::min(options.min_samples(), fit));
  options.set_max_samples(std::min(options.max_samples(), fit));
  return options;
}

v1::Measurement Summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  v1::Measurement m;
  m.set_median_seconds(Quantile(seconds, 0.5));
  m.set_p20_seconds(Quantile(seconds, 0.2));
  m.set_p80_seconds(Quantile(seconds, 0.8));
  m.set_samples(static_cast<int64_t>(seconds.size()));
  return m;
}

v1::MeasureOptions PerRoundOptions(v1::MeasureOptions options, int rounds) {
  options = WithMeasureDefaults(std::move(options));
  options.set_budget_seconds(options.budget_seconds() / std::max(1, rounds));
  options.set_precision(-1);
  return options;
}

v1::MeasureOptions CalibrationOptions(v1::MeasureOptions options) {
  options = WithMeasureDefaults(std::move(options));
  options.set_budget_seconds(options.budget_seconds() / 4);
  if (options.precision() < 0) options.set_precision(0.005);
  options.set_cut_factor(-1);
  return options;
}

double ClockCalibration(double median_seconds, const std::vector<double>& seconds,
                        const std::vector<double>& mhz) {
  std::vector<double> megacycles;
  megacycles.reserve(seconds.size());
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (!(mhz[i] > 0)) return 0;
    megacycles.push_back(seconds[i] * mhz[i]);
  }
  if (megacycles.empty()) return 0;
  std::sort(megacycles.begin(), megacycles.end());
  const double median = Quantile(megacycles, 0.5);
  return median > 0 ? median_seconds / median : 0;
}

bool Calibration::Due(const v1::MeasureOptions& options, Clock::time_point now) const {
  if (options.calibration_interval_seconds() < 0) return false;
  return !at_.has_value() ||
         std::chrono::duration<double>(now - *at_).count() > options.calibration_interval_seconds();
}

void Calibration::Record(double seconds, Clock::time_point now) {
  seconds_ = seconds;
  at_ = now;
}

v1::Measurement CombineRounds(const std::vector<v1::Measurement>& rounds) {
  auto median_of = [&](double (v1::Measurement::*field)() const) {
    std::vector<double> values;
    values.reserve(rounds.size());
    for (const v1::Measurement& round : rounds) values.push_back((round.*field)());
    std::sort(values.begin(), values.end());
    return Quantile(values, 0.5);
  };
  v1::Measurement m;
  m.set_median_seconds(median_of(&v1::Measurement::median_seconds));
  m.set_p20_seconds(median_of(&v1::Measurement::p20_seconds));
  m.set_p80_seconds(median_of(&v1::Measurement::p80_seconds));
  int64_t samples = 0;
  double clock_mhz = 0;
  for (const v1::Measurement& round : rounds) {
    samples += round.samples();
    clock_mhz += round.clock_mhz();
  }
  m.set_samples(samples);
  m.set_clock_mhz(clock_mhz / static_cast<double>(rounds.size()));
  // Calibrated: the median of the rounds' calibrated times, each round by
  // its own calibration (median / calibration equals it).
  std::vector<double> calibrated;
  for (const v1::Measurement& round : rounds) {
    if (!Calibrated(round.calibration_seconds())) return m;  // a round without: none
    calibrated.push_back(CalibratedTime(round));
  }
  std::sort(calibrated.begin(), calibrated.end());
  const double median_calibrated = Quantile(calibrated, 0.5);
  if (median_calibrated > 0) m.set_calibration_seconds(m.median_seconds() / median_calibrated);
  return m;
}

namespace {

// Sample standard deviation and mean of `values` (at least two).
std::pair<double, double> StdDevAndMean(const std::vector<double>& values) {
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return {std::sqrt(squares / static_cast<double>(values.size() - 1)), mean};
}

}  // namespace

double CoefficientOfVariation(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const auto [stddev, mean] = StdDevAndMean(values);
  return mean == 0 ? 0 : stddev / mean;
}

std::vector<size_t> Unseparated(const std::vector<std::vector<double>>& medians) {
  struct Stats {
    double median = 0;
    double se = 0;  // infinite with fewer than two rounds
  };
  std::vector<std::optional<Stats>> stats(medians.size());
  std::optional<size_t> winner;
  for (size_t i = 0; i < medians.size(); ++i) {
    if (medians[i].empty()) continue;
    std::vector<double> sorted = medians[i];
    std::sort(sorted.begin(), sorted.end());
    Stats s;
    s.median = Quantile(sorted, 0.5);
    s.se = sorted.size() < 2 ? std::numeric_limits<double>::infinity()
                             : StdDevAndMean(sorted).first /
                                   std::sqrt(static_cast<double>(sorted.size()));
    stats[i] = s;
    if (!winner.has_value() || s.median < stats[*winner]->median) winner = i;
  }
  if (!winner.has_value()) return {};
  std::vector<size_t> out = {*winner};
  const Stats& w = *stats[*winner];
  for (size_t i = 0; i < medians.size(); ++i) {
    if (i == *winner || !stats[i].has_value()) continue;
    const Stats& s = *stats[i];
    if (s.median - w.median <= 2 * std::sqrt(s.se * s.se + w.se * w.se)) out.push_back(i);
  }
  if (out.size() < 2) return {};
  return out;
}

}  // namespace tunefleet::worker
