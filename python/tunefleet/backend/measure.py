"""The measurement protocol's rules (docs/measurement.md), as
worker/measurement.h states them for every backend. The numbers (warm-up,
budget, sample counts, cut factor, deadline) come from the daemon in each
PrepareRequest; this module only applies them, line for line as the C++
functions of the same names do."""

import math


def with_defaults(options):
    """MeasureOptions with every unset (zero) field at its default."""
    out = type(options)()
    out.CopyFrom(options)
    if out.warmup_seconds <= 0:
        out.warmup_seconds = 0.02
    if out.budget_seconds <= 0:
        out.budget_seconds = 0.2
    if out.min_samples <= 0:
        out.min_samples = 5
    if out.max_samples <= 0:
        out.max_samples = 1000
    if out.cut_factor == 0:
        out.cut_factor = 1.5
    if out.low_clock_fraction == 0:
        out.low_clock_fraction = 0.9
    if out.precision == 0:
        out.precision = 0.005
    if out.calibration_interval_seconds == 0:
        out.calibration_interval_seconds = 0.5
    if out.max_samples < out.min_samples:
        out.max_samples = out.min_samples
    return out


def quantile(sorted_values, q):
    pos = q * (len(sorted_values) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


HOT_IDLE_SECONDS = 0.1
HOT_WARMUP_SECONDS = 0.002


def warmup_seconds(options, idle_seconds, call_seconds):
    """The warm-up: options.warmup_seconds after the device idled; a device
    busy measuring until less than HOT_IDLE_SECONDS ago needs only
    max(HOT_WARMUP_SECONDS, 3 calls), never more than warmup_seconds."""
    if not idle_seconds < HOT_IDLE_SECONDS:
        return options.warmup_seconds
    return min(options.warmup_seconds, max(HOT_WARMUP_SECONDS, 3 * call_seconds))


def median_precise(options, sorted_values):
    """The precision rule: the 95% confidence interval of the median (order
    statistics of 1-based ranks floor(n/2 - 0.98 sqrt(n)) and
    ceil(n/2 + 1 + 0.98 sqrt(n)), clamped to [1, n]) within +/- precision."""
    n = len(sorted_values)
    if options.precision < 0 or n == 0 or n < options.min_samples:
        return False
    spread = 0.98 * math.sqrt(n)
    lo = min(max(int(math.floor(n / 2 - spread)), 1), n)
    hi = min(max(int(math.ceil(n / 2 + 1 + spread)), 1), n)
    return (sorted_values[hi - 1] - sorted_values[lo - 1]
            <= 2 * options.precision * quantile(sorted_values, 0.5))


def want_more_samples(options, sorted_values, elapsed_seconds):
    samples = len(sorted_values)
    if samples < options.min_samples:
        return True
    if median_precise(options, sorted_values):
        return False
    return samples < options.max_samples and elapsed_seconds < options.budget_seconds


def cut_early(options, best_seconds, sorted_values):
    if best_seconds <= 0 or options.cut_factor < 0:
        return False
    if not sorted_values or len(sorted_values) < options.min_samples:
        return False
    return quantile(sorted_values, 0.2) > options.cut_factor * best_seconds


def fit_to_deadline(options, call_seconds):
    room = options.run_seconds_limit / 2
    if room <= 0 or call_seconds <= 0:
        return options
    full = (options.warmup_seconds + call_seconds +
            max(options.budget_seconds, options.min_samples * call_seconds))
    if full <= room:
        return options
    fit = max(1, int(room / call_seconds))
    out = type(options)()
    out.CopyFrom(options)
    out.warmup_seconds = 0
    out.min_samples = min(out.min_samples, fit)
    out.max_samples = min(out.max_samples, fit)
    return out


def clock_calibration(median_seconds, seconds, mhz):
    """The clock calibration: the time a million cycles take at the clocks
    the samples ran at, such that median / calibration is the median of the
    samples' megacycles (seconds x MHz); 0 with no sample or a clock unknown."""
    if not seconds or any(not m > 0 for m in mhz):
        return 0.0
    median = quantile(sorted(s * m for s, m in zip(seconds, mhz)), 0.5)
    return median_seconds / median if median > 0 else 0.0


def summarize(seconds, measurement):
    values = sorted(seconds)
    measurement.median_seconds = quantile(values, 0.5)
    measurement.p20_seconds = quantile(values, 0.2)
    measurement.p80_seconds = quantile(values, 0.8)
    measurement.samples = len(values)
