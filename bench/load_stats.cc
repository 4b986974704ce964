#include "bench/load_stats.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace tunefleet::bench {

void LatencySamples::Add(absl::Duration latency) {
  ++count_;
  if (micros_.size() >= kMaxSamples) return;
  micros_.push_back(static_cast<float>(absl::ToDoubleMicroseconds(latency)));
  sorted_ = false;
}

void LatencySamples::Merge(const LatencySamples& other) {
  count_ += other.count_;
  const size_t room = kMaxSamples - std::min(kMaxSamples, micros_.size());
  const size_t take = std::min(room, other.micros_.size());
  micros_.insert(micros_.end(), other.micros_.begin(), other.micros_.begin() + take);
  sorted_ = false;
}

double LatencySamples::QuantileMs(double p) {
  if (micros_.empty()) return 0;
  if (!sorted_) std::sort(micros_.begin(), micros_.end());
  sorted_ = true;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(micros_.size())));
  return micros_[std::clamp<size_t>(rank, 1, micros_.size()) - 1] / 1000.0;
}

absl::StatusOr<ProcessSample> SampleProcess(pid_t pid) {
  ProcessSample sample;
  sample.at = absl::Now();
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name may hold spaces; the fields after it are plain.
  const size_t paren = text.rfind(')');
  if (!stat || paren == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("no process ", pid));
  }
  std::vector<std::string> fields = absl::StrSplit(text.substr(paren + 2), ' ');
  int64_t utime = 0, stime = 0;  // fields 14 and 15 of stat(5); 3 is fields[0]
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InternalError(absl::StrCat("cannot parse /proc/", pid, "/stat"));
  }
  sample.cpu_seconds = static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "VmRSS:") in >> sample.rss_kib;
    if (key == "Threads:") in >> sample.threads;
  }
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), error)) {
    std::ifstream task_status(task.path() / "status");
    for (std::string line; std::getline(task_status, line);) {
      if (!absl::StartsWith(line, "voluntary_ctxt_switches:")) continue;
      int64_t switches = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)),
                           &switches)) {
        sample.blocked += switches;
      }
    }
  }
  return sample;
}

double BlockedPer(const ProcessSample& from, const ProcessSample& to, int64_t events) {
  return events > 0 ? static_cast<double>(to.blocked - from.blocked) / events : 0;
}

double CpuPercent(const ProcessSample& from, const ProcessSample& to) {
  const double wall = absl::ToDoubleSeconds(to.at - from.at);
  return wall > 0 ? 100.0 * (to.cpu_seconds - from.cpu_seconds) / wall : 0;
}

void Table::Print() const {
  // A column of numbers reads right-aligned, any other left-aligned.
  std::vector<bool> numeric(header_.size(), true);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < numeric.size(); ++c) {
      double unused = 0;
      if (row[c] != "-" && !absl::SimpleAtod(row[c], &unused)) numeric[c] = false;
    }
  }
  std::vector<size_t> width(header_.size(), 3);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = std::max(width[c], header_[c].size());
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line = "|";
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      line += numeric[c] ? absl::StrFormat(" %*s |", width[c], cell)
                         : absl::StrFormat(" %-*s |", width[c], cell);
    }
    std::printf("%s\n", line.c_str());
  };
  print_row(header_);
  std::string rule = "|";
  for (size_t c = 0; c < width.size(); ++c) {
    rule += numeric[c] ? std::string(width[c] + 1, '-') + ":|"
                       : std::string(width[c] + 2, '-') + "|";
  }
  std::printf("%s\n", rule.c_str());
  for (const auto& row : rows_) print_row(row);
  std::printf("\n");
  std::fflush(stdout);
}

std::string FormatMs(double ms, int64_t count) {
  if (count == 0) return "-";
  return ms < 10 ? absl::StrFormat("%.3f", ms) : absl::StrFormat("%.1f", ms);
}

std::string FormatMib(int64_t kib) { return absl::StrFormat("%.1f", kib / 1024.0); }

}  // namespace tunefleet::bench
