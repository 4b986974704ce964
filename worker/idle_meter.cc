#include "worker/idle_meter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

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

absl::Status WriteIdleStats(const std::string& path, IdleMeter* pool,
                            const std::vector<IdleMeter*>& devices) {
  double device_idle = 0;
  double device_busy = 0;
  for (IdleMeter* device : devices) {
    if (device == nullptr) continue;
    device_idle += device->idle_seconds();
    device_busy += device->busy_seconds();
  }
  const std::string text = absl::StrCat(
      "compile_pool_threads ", pool ? pool->units() : 0, "\n",
      "compile_pool_idle_seconds ", pool ? pool->idle_seconds() : 0, "\n",
      "compile_pool_busy_seconds ", pool ? pool->busy_seconds() : 0, "\n",
      "held_seconds ", pool ? pool->held_seconds() : 0, "\n",
      "devices ", devices.size(), "\n",
      "device_idle_seconds ", device_idle, "\n",
      "device_busy_seconds ", device_busy, "\n");
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
                                 std::vector<IdleMeter*> devices)
    : path_(dir.empty() ? "" : absl::StrCat(dir, "/worker-", getpid(), ".stats")),
      pool_(pool),
      devices_(std::move(devices)) {
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
  absl::Status written = WriteIdleStats(path_, pool_, devices_);
  if (!written.ok()) spdlog::warn("{}", written.ToString());
}

}  // namespace tunefleet::worker
