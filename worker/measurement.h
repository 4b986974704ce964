// The measurement protocol's arithmetic, shared by every backend's runner:
// option defaults, the sampling loop's stop rule, and the summary statistics
// (docs/measurement.md).
#ifndef TUNEFLEET_WORKER_MEASUREMENT_H_
#define TUNEFLEET_WORKER_MEASUREMENT_H_

#include <vector>

#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// `options` with every unset (zero) field at its default: warm-up 0.02 s,
// budget 0.2 s, min 5 samples, max 1000 samples.
v1::MeasureOptions WithMeasureDefaults(v1::MeasureOptions options);

// True while the sampling loop should take another sample: fewer than
// min_samples, or budget left and fewer than max_samples.
bool WantMoreSamples(const v1::MeasureOptions& options, int samples,
                     double elapsed_seconds);

// `options` fitted to a kernel whose one call takes `call_seconds`, so that
// warm-up plus sampling end within half of run_seconds_limit (which leaves
// the other half for the checked run and slack): when the full protocol does
// not fit, no warm-up (the checked run warmed up) and as many samples as fit,
// at least 1. Unchanged when run_seconds_limit is 0.
v1::MeasureOptions FitToDeadline(v1::MeasureOptions options, double call_seconds);

// Median, p20, p80 (linear interpolation between order statistics) and the
// count of `seconds`. REQUIRES: non-empty.
v1::Measurement Summarize(std::vector<double> seconds);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_MEASUREMENT_H_
