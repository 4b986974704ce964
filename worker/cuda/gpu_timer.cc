#include "worker/cuda/gpu_timer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/measurement.h"

namespace tunefleet::worker::cuda {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kBatchTargetSeconds = 20e-6;
constexpr int kMaxBatch = 10000;
constexpr int kMaxWarmupLaunches = 100000;
constexpr uint64_t kProbeSpinNs = 1000000;  // 1 ms
// The per-sample probe's spin: long enough against %globaltimer's update
// interval, short next to a sample (at least 20 us of kernel time).
constexpr uint64_t kSampleProbeSpinNs = 20000;  // 20 us

// Spins `spin_ns` nanoseconds of %globaltimer on one thread and stores the
// clock64 cycles and nanoseconds that passed. JIT-compiled by the driver.
constexpr char kClockProbePtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry tf_clock_probe(.param .u64 out_ptr, .param .u64 spin_ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out_ptr];
  ld.param.u64 %rd2, [spin_ns];
  mov.u64 %rd3, %globaltimer;
  mov.u64 %rd4, %clock64;
$L_spin:
  mov.u64 %rd5, %globaltimer;
  sub.u64 %rd6, %rd5, %rd3;
  setp.lt.u64 %p1, %rd6, %rd2;
  @%p1 bra $L_spin;
  mov.u64 %rd7, %clock64;
  sub.u64 %rd8, %rd7, %rd4;
  cvta.to.global.u64 %rd9, %rd1;
  st.global.u64 [%rd9], %rd8;
  st.global.u64 [%rd9+8], %rd6;
  ret;
}
)";

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double position = q * static_cast<double>(sorted.size() - 1);
  size_t low = static_cast<size_t>(std::floor(position));
  size_t high = std::min(low + 1, sorted.size() - 1);
  double fraction = position - static_cast<double>(low);
  return sorted[low] + (sorted[high] - sorted[low]) * fraction;
}

}  // namespace

v1::Measurement Summarize(std::vector<double>* samples) {
  std::sort(samples->begin(), samples->end());
  v1::Measurement m;
  m.set_median_seconds(Percentile(*samples, 0.5));
  m.set_p20_seconds(Percentile(*samples, 0.2));
  m.set_p80_seconds(Percentile(*samples, 0.8));
  m.set_samples(static_cast<int64_t>(samples->size()));
  return m;
}

absl::StatusOr<std::unique_ptr<GpuTimer>> GpuTimer::Create(const CudaDriver* driver,
                                                           CUstream stream,
                                                           size_t l2_bytes) {
  std::unique_ptr<GpuTimer> timer(new GpuTimer(driver, stream));
  RETURN_IF_ERROR(driver->Check(driver->EventCreate(&timer->start_, CU_EVENT_DEFAULT),
                                "cuEventCreate"));
  RETURN_IF_ERROR(driver->Check(driver->EventCreate(&timer->stop_, CU_EVENT_DEFAULT),
                                "cuEventCreate"));
  RETURN_IF_ERROR(driver->Check(
      driver->EventCreate(&timer->sync_, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  timer->flush_bytes_ = std::max<size_t>(2 * l2_bytes, 1 << 20) & ~size_t{3};
  RETURN_IF_ERROR(driver->Check(driver->MemAlloc(&timer->flush_, timer->flush_bytes_),
                                "cuMemAlloc(L2 flush buffer)"));
  // The clock probe is optional: without it clock_mhz reads 0.
  if (driver->ModuleLoadData(&timer->probe_module_, kClockProbePtx) == CUDA_SUCCESS &&
      driver->ModuleGetFunction(&timer->probe_, timer->probe_module_, "tf_clock_probe") ==
          CUDA_SUCCESS &&
      driver->MemAlloc(&timer->probe_out_, kClockSlots * 2 * sizeof(uint64_t)) == CUDA_SUCCESS) {
    return timer;
  }
  timer->probe_ = nullptr;
  return timer;
}

GpuTimer::~GpuTimer() {
  if (abandoned_) return;
  if (probe_out_ != 0) driver_->MemFree(probe_out_);
  if (probe_module_ != nullptr) driver_->ModuleUnload(probe_module_);
  if (flush_ != 0) driver_->MemFree(flush_);
  for (CUevent event : {start_, stop_, sync_}) {
    if (event != nullptr) driver_->EventDestroy(event);
  }
}

GpuResult GpuTimer::Sync(double timeout_seconds) {
  GpuResult result;
  result.error = driver_->EventRecord(sync_, stream_);
  if (result.error != CUDA_SUCCESS) {
    result.what = "cuEventRecord";
    return result;
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (int polls = 0;; ++polls) {
    CUresult query = driver_->EventQuery(sync_);
    if (query == CUDA_SUCCESS) return result;
    if (query != CUDA_ERROR_NOT_READY) {
      result.error = query;
      result.what = "kernel execution";
      return result;
    }
    if (Clock::now() >= deadline) {
      result.timed_out = true;
      result.what = absl::StrCat("not finished after ", timeout_seconds, " s");
      return result;
    }
    if (polls < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 2000 ? 20 : 500));
    }
  }
}

GpuResult GpuTimer::Enqueue(const LaunchFn& launch, int count) {
  GpuResult result;
  for (int i = 0; i < count; ++i) {
    result.error = launch();
    if (result.error != CUDA_SUCCESS) {
      result.what = "launch";
      return result;
    }
  }
  return result;
}

void GpuTimer::EnqueueClockProbe(int slot, uint64_t spin_ns) {
  CUdeviceptr out = probe_out_ + static_cast<CUdeviceptr>(slot) * 2 * sizeof(uint64_t);
  void* args[] = {&out, &spin_ns};
  if (driver_->LaunchKernel(probe_, 1, 1, 1, 1, 1, 1, 0, stream_, args, nullptr) !=
      CUDA_SUCCESS) {
    // A probe that does not launch leaves its slot's old values: they are
    // zeroed first, so the sample reads as clock unknown.
    driver_->MemsetD32Async(out, 0, 4, stream_);
  }
}

void GpuTimer::ReadClocks(int slots, std::vector<double>* mhz) {
  if (slots <= 0) return;
  std::vector<uint64_t> values(static_cast<size_t>(slots) * 2, 0);
  if (driver_->MemcpyDtoH(values.data(), probe_out_, values.size() * sizeof(uint64_t)) !=
      CUDA_SUCCESS) {
    values.assign(values.size(), 0);
  }
  for (int i = 0; i < slots; ++i) {
    const uint64_t cycles = values[2 * i];
    const uint64_t ns = values[2 * i + 1];
    mhz->push_back(ns == 0 ? 0 : static_cast<double>(cycles) / static_cast<double>(ns) * 1e3);
  }
}

double GpuTimer::RecentMaxClockMhz() const {
  double max = 0;
  for (double mhz : recent_max_mhz_) max = std::max(max, mhz);
  return max;
}

GpuResult GpuTimer::TimeBatch(const LaunchFn& launch, int batch, double timeout_seconds,
                              double* seconds_per_launch, int clock_slot) {
  GpuResult result;
  result.error = driver_->MemsetD32Async(flush_, flush_value_++, flush_bytes_ / 4, stream_);
  if (result.error == CUDA_SUCCESS) result.error = driver_->EventRecord(start_, stream_);
  if (result.error != CUDA_SUCCESS) {
    result.what = "L2 flush / cuEventRecord";
    return result;
  }
  result = Enqueue(launch, batch);
  if (!result.ok()) return result;
  result.error = driver_->EventRecord(stop_, stream_);
  if (result.error != CUDA_SUCCESS) {
    result.what = "cuEventRecord";
    return result;
  }
  if (clock_slot >= 0 && probe_ != nullptr) EnqueueClockProbe(clock_slot, kSampleProbeSpinNs);
  result = Sync(timeout_seconds);
  if (!result.ok()) return result;
  float ms = 0;
  result.error = driver_->EventElapsedTime(&ms, start_, stop_);
  if (result.error != CUDA_SUCCESS) {
    result.what = "cuEventElapsedTime";
    return result;
  }
  *seconds_per_launch = ms * 1e-3 / batch;
  return result;
}

GpuResult GpuTimer::Measure(const LaunchFn& launch, const v1::MeasureOptions& options,
                            double launch_timeout_seconds, v1::Measurement* out,
                            double best_seconds, bool* cut_early) {
  const v1::MeasureOptions opts = WithMeasureDefaults(options);
  const auto began = Clock::now();
  last_warmup_seconds_ = 0;
  double estimate = 0;
  GpuResult result = TimeBatch(launch, 1, launch_timeout_seconds, &estimate);
  if (!result.ok()) return result;
  const double idle_seconds =
      last_measured_.has_value()
          ? std::chrono::duration<double>(Clock::now() - *last_measured_).count()
          : std::numeric_limits<double>::infinity();
  const int warmup = static_cast<int>(
      std::clamp(std::ceil(WarmupSeconds(opts, idle_seconds, estimate) / std::max(estimate, 1e-7)),
                 1.0, static_cast<double>(kMaxWarmupLaunches)));
  result = Enqueue(launch, warmup);
  if (result.ok()) result = Sync(launch_timeout_seconds * warmup);
  if (result.ok()) result = TimeBatch(launch, 1, launch_timeout_seconds, &estimate);
  if (!result.ok()) return result;
  const int batch = estimate >= kBatchTargetSeconds
                        ? 1
                        : static_cast<int>(std::min<double>(
                              kMaxBatch, std::ceil(kBatchTargetSeconds / std::max(estimate, 1e-8))));

  // Each sample's SM clock is probed right after its batch into a device
  // slot; the slots are read back kClockSlots at a time and at the end, so
  // the host waits for no copy between samples.
  std::vector<double> taken;   // seconds per launch, in the order taken
  std::vector<double> clocks;  // their SM clocks (MHz, 0 = unknown)
  int pending_clocks = 0;      // probed into slots [0, pending_clocks), not read yet
  auto take_sample = [&](double* seconds) {
    GpuResult r = TimeBatch(launch, batch, launch_timeout_seconds * batch, seconds,
                            probe_ != nullptr ? pending_clocks : -1);
    if (!r.ok()) return r;
    taken.push_back(*seconds);
    if (probe_ == nullptr) {
      clocks.push_back(0);
    } else if (++pending_clocks == kClockSlots) {
      ReadClocks(pending_clocks, &clocks);
      pending_clocks = 0;
    }
    return r;
  };
  auto read_pending_clocks = [&] {
    ReadClocks(pending_clocks, &clocks);
    pending_clocks = 0;
  };

  std::vector<double> samples;  // ascending
  auto start = Clock::now();
  last_warmup_seconds_ = std::chrono::duration<double>(start - began).count();
  auto spent = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  bool cut = false;
  while (!cut && WantMoreSamples(opts, samples, spent())) {
    double seconds = 0;
    result = take_sample(&seconds);
    if (!result.ok()) return result;
    InsertSorted(seconds, &samples);
    cut = CutEarly(opts, best_seconds, samples);
  }
  read_pending_clocks();

  // The low-clock rule: samples taken while the SM clock was well under the
  // device's recent maximum are taken again, once each, within one more
  // budget; what is still low after that is kept and counted. When the first
  // min_samples retakes are all low too, the kernel itself holds the clock
  // down (power-bound): retaking stops there.
  double recent_max = RecentMaxClockMhz();
  for (double mhz : clocks) recent_max = std::max(recent_max, mhz);
  std::vector<size_t> low = LowClockSamples(opts, clocks, recent_max);
  std::vector<bool> dropped(taken.size(), false);
  int64_t retaken = 0;
  if (!cut && !low.empty()) {
    const size_t first_retake = taken.size();
    start = Clock::now();
    for (size_t i : low) {
      if (retaken > 0 && spent() >= opts.budget_seconds()) break;
      if (retaken == opts.min_samples()) {
        read_pending_clocks();
        const std::vector<double> retakes(clocks.begin() + first_retake, clocks.end());
        if (LowClockSamples(opts, retakes, recent_max).size() == retakes.size()) break;
      }
      double seconds = 0;
      result = take_sample(&seconds);
      if (!result.ok()) return result;
      samples.erase(std::lower_bound(samples.begin(), samples.end(), taken[i]));
      dropped[i] = true;
      InsertSorted(seconds, &samples);
      ++retaken;
    }
    read_pending_clocks();
    dropped.resize(taken.size(), false);
    for (size_t i = first_retake; i < clocks.size(); ++i) {
      recent_max = std::max(recent_max, clocks[i]);
    }
    low = LowClockSamples(opts, clocks, recent_max);
  }
  int64_t kept_low = 0;
  for (size_t i : low) kept_low += dropped[i] ? 0 : 1;
  std::vector<double> kept_clocks;
  std::vector<double> kept_seconds;  // with every kept sample's clock, for the calibration
  std::vector<double> kept_mhz;
  for (size_t i = 0; i < clocks.size(); ++i) {
    if (dropped[i]) continue;
    if (clocks[i] > 0) kept_clocks.push_back(clocks[i]);
    kept_seconds.push_back(taken[i]);
    kept_mhz.push_back(clocks[i]);
  }
  if (recent_max > 0) {
    recent_max_mhz_.push_back(recent_max);
    if (recent_max_mhz_.size() > kRecentMeasurements) recent_max_mhz_.pop_front();
  }

  last_measured_ = Clock::now();
  if (cut_early != nullptr) *cut_early = cut;
  *out = Summarize(&samples);
  std::sort(kept_clocks.begin(), kept_clocks.end());
  out->set_clock_mhz(kept_clocks.empty() ? ProbeClockMhz() : Percentile(kept_clocks, 0.5));
  out->set_retaken_samples(retaken);
  out->set_low_clock_samples(kept_low);
  out->set_calibration_seconds(ClockCalibration(out->median_seconds(), kept_seconds, kept_mhz));
  return result;
}

double GpuTimer::ProbeClockMhz() {
  if (probe_ == nullptr) return 0;
  uint64_t spin_ns = kProbeSpinNs;
  void* args[] = {&probe_out_, &spin_ns};
  if (driver_->LaunchKernel(probe_, 1, 1, 1, 1, 1, 1, 0, stream_, args, nullptr) !=
      CUDA_SUCCESS) {
    return 0;
  }
  if (!Sync(1.0).ok()) return 0;
  uint64_t values[2] = {0, 0};
  if (driver_->MemcpyDtoH(values, probe_out_, sizeof(values)) != CUDA_SUCCESS ||
      values[1] == 0) {
    return 0;
  }
  return static_cast<double>(values[0]) / static_cast<double>(values[1]) * 1e3;
}

}  // namespace tunefleet::worker::cuda
