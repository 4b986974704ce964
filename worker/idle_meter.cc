#include "worker/idle_meter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "worker/measurement.h"

namespace tunefleet::worker {

IdleMeter::IdleMeter(int units, Clock clock)
    : units_(std::max(units, 1)), clock_(std::move(clock)), last_(clock_()) {}

void IdleMeter::Advance() {
  const absl::Time now = clock_();
  const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - last_));
  last_ = now;
  busy_time_ += elapsed * busy_;
  if (held_ <= 0) return;
  held_time_ += elapsed;
  idle_ += elapsed * std::max(0, units_ - busy_);
}

void IdleMeter::Hold(int delta) {
  absl::MutexLock lock(&mu_);
  Advance();
  held_ += delta;
}

void IdleMeter::Busy(int delta) {
  absl::MutexLock lock(&mu_);
  Advance();
  busy_ += delta;
}

double IdleMeter::idle_seconds() {
  absl::MutexLock lock(&mu_);
  Advance();
  return idle_;
}

double IdleMeter::held_seconds() {
  absl::MutexLock lock(&mu_);
  Advance();
  return held_time_;
}

double IdleMeter::busy_seconds() {
  absl::MutexLock lock(&mu_);
  Advance();
  return busy_time_;
}

void TrialPhaseTotals::Add(const v1::TrialPhases& phases, absl::Duration elapsed) {
  if (phases.ByteSizeLong() == 0) return;
  const double outside = OutsideSeconds(phases, absl::ToDoubleSeconds(elapsed));
  absl::MutexLock lock(&mu_);
  ++sums_.trials;
  v1::TrialPhases& sum = sums_.phases;
  sum.set_load_seconds(sum.load_seconds() + phases.load_seconds());
  sum.set_check_seconds(sum.check_seconds() + phases.check_seconds());
  sum.set_warmup_seconds(sum.warmup_seconds() + phases.warmup_seconds());
  sum.set_sampling_seconds(sum.sampling_seconds() + phases.sampling_seconds());
  sums_.outside_seconds += outside;
}

TrialPhaseTotals::Sums TrialPhaseTotals::sums() const {
  absl::MutexLock lock(&mu_);
  return sums_;
}

absl::Status WriteIdleStats(const std::string& path, IdleMeter* pool,
                            const std::vector<IdleMeter*>& devices,
                            const TrialPhaseTotals* phases) {
  double device_idle = 0;
  double device_busy = 0;
  for (IdleMeter* device : devices) {
    if (device == nullptr) continue;
    device_idle += device->idle_seconds();
    device_busy += device->busy_seconds();
  }
  std::string text = absl::StrCat(
      "compile_pool_threads ", pool ? pool->units() : 0, "\n",
      "compile_pool_idle_seconds ", pool ? pool->idle_seconds() : 0, "\n",
      "compile_pool_busy_seconds ", pool ? pool->busy_seconds() : 0, "\n",
      "held_seconds ", pool ? pool->held_seconds() : 0, "\n",
      "devices ", devices.size(), "\n",
      "device_idle_seconds ", device_idle, "\n",
      "device_busy_seconds ", device_busy, "\n");
  if (phases != nullptr) {
    const TrialPhaseTotals::Sums sums = phases->sums();
    absl::StrAppend(&text, "trials_phased ", sums.trials, "\n",
                    "trial_load_seconds ", sums.phases.load_seconds(), "\n",
                    "trial_check_seconds ", sums.phases.check_seconds(), "\n",
                    "trial_warmup_seconds ", sums.phases.warmup_seconds(), "\n",
                    "trial_sampling_seconds ", sums.phases.sampling_seconds(), "\n",
                    "trial_outside_seconds ", sums.outside_seconds, "\n");
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out.flush()) return absl::UnavailableError(absl::StrCat("cannot write ", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", temporary, " to ", path));
  }
  return absl::OkStatus();
}

IdleStatsWriter::IdleStatsWriter(const std::string& dir, IdleMeter* pool,
                                 std::vector<IdleMeter*> devices,
                                 const TrialPhaseTotals* phases)
    : path_(dir.empty() ? "" : absl::StrCat(dir, "/worker-", getpid(), ".stats")),
      pool_(pool),
      devices_(std::move(devices)),
      phases_(phases) {
  if (path_.empty()) return;
  thread_ = std::thread([this] {
    absl::MutexLock lock(&mu_);
    while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(200))) {
      Write();
    }
  });
}

IdleStatsWriter::~IdleStatsWriter() { Stop(); }

void IdleStatsWriter::Stop() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  Write();
}

void IdleStatsWriter::Write() {
  absl::Status written = WriteIdleStats(path_, pool_, devices_, phases_);
  if (!written.ok()) spdlog::warn("{}", written.ToString());
}

}  // namespace tunefleet::worker
