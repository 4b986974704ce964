// What load_bench measures and how it prints it: call latencies, a process's
// CPU time, memory and threads from /proc, and aligned tables.
#ifndef TUNEFLEET_BENCH_LOAD_STATS_H_
#define TUNEFLEET_BENCH_LOAD_STATS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tunefleet::bench {

// The latencies of one kind of call. Keeps the first kMaxSamples exactly
// (enough for a minute at 100,000 calls/s) and only counts the rest.
// Not thread-safe.
class LatencySamples {
 public:
  static constexpr size_t kMaxSamples = 8'000'000;

  void Add(absl::Duration latency);
  void Merge(const LatencySamples& other);
  int64_t count() const { return count_; }
  // The p-quantile (0 < p < 1) in milliseconds; 0 when empty.
  double QuantileMs(double p);

 private:
  std::vector<float> micros_;
  bool sorted_ = true;
  int64_t count_ = 0;
};

// A process as /proc shows it at one moment.
struct ProcessSample {
  absl::Time at;
  double cpu_seconds = 0;  // utime + stime of every thread
  int64_t rss_kib = 0;     // VmRSS
  int threads = 0;
  // Voluntary context switches of the threads alive now, summed: each is a
  // thread that blocked (a contended lock, a condition, a socket). A thread
  // that exits between two samples takes its count along, so a process whose
  // threads come and go reads low.
  int64_t blocked = 0;
};

// NotFound when the process is gone.
absl::StatusOr<ProcessSample> SampleProcess(pid_t pid);

// Voluntary context switches between two samples, per `events` (results).
double BlockedPer(const ProcessSample& from, const ProcessSample& to, int64_t events);

// CPU use between two samples, in percent of one core.
double CpuPercent(const ProcessSample& from, const ProcessSample& to);

// Rows of cells printed as a Markdown table with padded columns, so that it
// reads aligned on a terminal and pastes into docs as it is. Columns of
// numbers are right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Writes the table to stdout, with a blank line after it.
  void Print() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "12.3" for milliseconds, "-" when nothing was measured.
std::string FormatMs(double ms, int64_t count);
std::string FormatMib(int64_t kib);

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_LOAD_STATS_H_
