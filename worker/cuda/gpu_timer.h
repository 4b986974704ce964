// The measurement protocol's GPU side (docs/measurement.md, protocol version 5):
//  - warm-up: launches until WarmupSeconds (worker/measurement.h) of GPU time
//    have run: `warmup_seconds` after the device idled, a few milliseconds
//    while it has been measuring without a pause;
//  - the launch time is estimated, and kernels under 20 us are timed in
//    batches of ceil(20 us / estimate) launches per CUDA event pair (the L2
//    flush then precedes the batch, not each launch of it);
//  - before each timed batch the L2 is flushed by a memset of a buffer of
//    twice the device's L2 size;
//  - samples (seconds per launch) are taken until the median is known to
//    `precision` or `budget_seconds` of wall time are spent, at least
//    `min_samples`, at most `max_samples` (WantMoreSamples), unless the
//    early-cut rule (CutEarly, worker/measurement.h) stops them sooner;
//  - each sample's SM clock is measured right after its batch, outside the
//    timed events, by a probe kernel that counts clock64 cycles against
//    %globaltimer nanoseconds for 20 us;
//  - the low-clock rule (LowClockSamples, worker/measurement.h): samples
//    whose clock is under low_clock_fraction x the device's recent maximum
//    (the highest clock of this timer's last kRecentMeasurements
//    measurements and this one) are taken again, once each, within one more
//    budget, unless the first min_samples retakes are all low as well (the
//    kernel holds the clock down); those still low are kept and counted
//    (low_clock_samples);
//  - the result: median, p20, p80 (linear interpolation), the count, the
//    median SM clock of the samples kept, retaken_samples,
//    low_clock_samples, and the clock calibration (ClockCalibration,
//    worker/measurement.h): median / calibration_seconds is the median of
//    the kept samples' megacycles, each sample's time times its clock.
//
// Thread-safety: a GpuTimer belongs to one thread (the benchmark child's).
#ifndef TUNEFLEET_WORKER_CUDA_GPU_TIMER_H_
#define TUNEFLEET_WORKER_CUDA_GPU_TIMER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/types.pb.h"
#include "worker/cuda/cuda_driver.h"

namespace tunefleet::worker::cuda {

// Enqueues one launch of the measured work on the timer's stream.
using LaunchFn = std::function<CUresult()>;

// The outcome of waiting for, or launching, GPU work.
struct GpuResult {
  CUresult error = CUDA_SUCCESS;  // the first failing call's result
  bool timed_out = false;         // the work did not finish by the deadline
  std::string what;               // which call failed
  bool ok() const { return error == CUDA_SUCCESS && !timed_out; }
};

// Median/p20/p80 of `samples` (seconds), which it sorts.
v1::Measurement Summarize(std::vector<double>* samples);

class GpuTimer {
 public:
  // Creates the stream's events, the L2 flush buffer (2 * l2_bytes) and the
  // clock probe. The driver and stream stay owned by the caller.
  static absl::StatusOr<std::unique_ptr<GpuTimer>> Create(const CudaDriver* driver,
                                                          CUstream stream,
                                                          size_t l2_bytes);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  // Waits until the stream's work so far is done, up to `timeout_seconds`.
  GpuResult Sync(double timeout_seconds);

  // Runs the protocol on `launch`. Each wait is bounded by
  // `launch_timeout_seconds` per launch it waits for. `best_seconds` is the
  // job target's best median for the early-cut rule (0: none); a run it
  // cuts sets `*cut_early` (when not null).
  GpuResult Measure(const LaunchFn& launch, const v1::MeasureOptions& options,
                    double launch_timeout_seconds, v1::Measurement* out,
                    double best_seconds = 0, bool* cut_early = nullptr);

  // How long the last Measure spent before its first sample (its timed
  // call and warm-up), in seconds.
  double last_warmup_seconds() const { return last_warmup_seconds_; }

  // The current SM clock in MHz (0 when the probe could not run).
  double ProbeClockMhz();

  // Call when the context is poisoned: the destructor then frees nothing.
  void Abandon() { abandoned_ = true; }

 private:
  GpuTimer(const CudaDriver* driver, CUstream stream) : driver_(driver), stream_(stream) {}
  // Probe slots on the device, read back this many at a time.
  static constexpr int kClockSlots = 256;
  // How many measurements the recent maximum clock looks back over.
  static constexpr size_t kRecentMeasurements = 32;

  // Seconds per launch of `batch` launches after an L2 flush; with
  // clock_slot >= 0, the SM clock is probed into that slot after the batch.
  GpuResult TimeBatch(const LaunchFn& launch, int batch, double timeout_seconds,
                      double* seconds_per_launch, int clock_slot = -1);
  // Enqueues the clock probe writing (cycles, ns) to probe slot `slot`.
  void EnqueueClockProbe(int slot, uint64_t spin_ns);
  // Appends the MHz of probe slots [0, slots) to `mhz` (0 where unknown).
  // The stream must be synchronized.
  void ReadClocks(int slots, std::vector<double>* mhz);
  // The highest clock of the last kRecentMeasurements measurements (0: none).
  double RecentMaxClockMhz() const;
  GpuResult Enqueue(const LaunchFn& launch, int count);

  const CudaDriver* driver_;
  CUstream stream_;
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
  CUevent sync_ = nullptr;
  CUdeviceptr flush_ = 0;
  size_t flush_bytes_ = 0;
  unsigned flush_value_ = 0;
  CUmodule probe_module_ = nullptr;
  CUfunction probe_ = nullptr;
  CUdeviceptr probe_out_ = 0;  // kClockSlots x (cycles, ns)
  std::deque<double> recent_max_mhz_;
  // When the last measurement ended (none yet: the device counts as idle).
  std::optional<std::chrono::steady_clock::time_point> last_measured_;
  double last_warmup_seconds_ = 0;
  bool abandoned_ = false;
};

}  // namespace tunefleet::worker::cuda

#endif  // TUNEFLEET_WORKER_CUDA_GPU_TIMER_H_
