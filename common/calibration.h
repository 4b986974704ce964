// The time configs are compared by (docs/measurement.md, "Calibration").
//
// Every measurement carries its device's calibration: the time a fixed piece
// of work took on that device when the measurement was taken (on a GPU a
// million SM cycles at the clocks its samples ran at; on a CPU the backend's
// calibration kernel). Two measurements taken on different devices, in
// different runs or at different clocks are compared by their calibrated
// times, median / calibration. Within one tuning key every row is
// calibrated or none is (a backend calibrates every run, and the
// measurement protocol's version separates keys measured before
// calibration existed); a pair with one side uncalibrated compares raw
// medians.
#ifndef TUNEFLEET_COMMON_CALIBRATION_H_
#define TUNEFLEET_COMMON_CALIBRATION_H_

#include <cmath>

#include "tunefleet/v1/types.pb.h"

namespace tunefleet {

// Whether `calibration_seconds` is a calibration: finite and positive (0, as
// a worker that did not calibrate reports it, is none).
inline bool Calibrated(double calibration_seconds) {
  return calibration_seconds > 0 && std::isfinite(calibration_seconds);
}

// median / calibration when calibrated, else the median.
inline double CalibratedTime(double median_seconds, double calibration_seconds) {
  return Calibrated(calibration_seconds) ? median_seconds / calibration_seconds
                                         : median_seconds;
}

inline double CalibratedTime(const v1::Measurement& measurement) {
  return CalibratedTime(measurement.median_seconds(), measurement.calibration_seconds());
}

// a's time over b's: calibrated when both are, else raw (0 when b's is 0).
inline double TimeRatio(double a_median, double a_calibration, double b_median,
                        double b_calibration) {
  const bool calibrated = Calibrated(a_calibration) && Calibrated(b_calibration);
  const double a = calibrated ? a_median / a_calibration : a_median;
  const double b = calibrated ? b_median / b_calibration : b_median;
  return b > 0 ? a / b : 0;
}

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_CALIBRATION_H_
