#include "worker/measurement.h"

#include <algorithm>
#include <cmath>

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
  if (options.max_samples() < options.min_samples()) {
    options.set_max_samples(options.min_samples());
  }
  return options;
}

bool WantMoreSamples(const v1::MeasureOptions& options, int samples,
                     double elapsed_seconds) {
  if (samples < options.min_samples()) return true;
  return samples < options.max_samples() && elapsed_seconds < options.budget_seconds();
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

}  // namespace tunefleet::worker
