#include "common/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace tunefleet {
namespace {

// The fields of /proc/self/stat after the command name, from field 3
// (state) on: fields[i] is field i + 3 of proc(5).
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const size_t end_of_name = line.rfind(')');  // the name may hold spaces
  std::istringstream rest(end_of_name == std::string::npos ? "" : line.substr(end_of_name + 2));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

double Field(const std::vector<std::string>& fields, int number) {
  const size_t index = static_cast<size_t>(number - 3);
  return index < fields.size() ? std::strtod(fields[index].c_str(), nullptr) : 0;
}

// Seconds since the epoch at which the system booted (btime of /proc/stat).
double BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double seconds = 0;
      in >> seconds;
      return seconds;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

double OpenFds() {
  std::error_code error;
  double count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end;
       !error && it != end; it.increment(error)) {
    ++count;
  }
  return count;
}

prometheus::MetricFamily Family(const std::string& name, const std::string& help,
                                prometheus::MetricType type, double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return prometheus::MetricFamily{name, help, type, {metric}};
}

class ProcessMetrics final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    const std::vector<std::string> stat = StatFields();
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    rlimit fds{};
    getrlimit(RLIMIT_NOFILE, &fds);
    using prometheus::MetricType;
    return {
        Family("process_cpu_seconds_total", "User and system CPU time spent, in seconds",
               MetricType::Counter, (Field(stat, 14) + Field(stat, 15)) / ticks),
        Family("process_resident_memory_bytes", "Resident memory size in bytes",
               MetricType::Gauge, Field(stat, 24) * page),
        Family("process_virtual_memory_bytes", "Virtual memory size in bytes",
               MetricType::Gauge, Field(stat, 23)),
        Family("process_open_fds", "Open file descriptors", MetricType::Gauge, OpenFds()),
        Family("process_max_fds", "Most file descriptors the process may open",
               MetricType::Gauge, static_cast<double>(fds.rlim_cur)),
        Family("process_start_time_seconds",
               "Start time of the process since the epoch, in seconds", MetricType::Gauge,
               boot_time_ + Field(stat, 22) / ticks),
    };
  }

 private:
  const double boot_time_ = BootTime();
};

}  // namespace

std::shared_ptr<prometheus::Collectable> MakeProcessMetrics() {
  return std::make_shared<ProcessMetrics>();
}

}  // namespace tunefleet
