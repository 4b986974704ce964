#include "worker/ncu_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tunefleet::worker {
namespace {

constexpr char kDuration[] = "gpu__time_duration.sum";
constexpr char kCycles[] = "sm__cycles_elapsed.max";
constexpr char kRegisters[] = "launch__registers_per_thread";
constexpr char kStaticSmem[] = "launch__shared_mem_per_block_static";
constexpr char kDynamicSmem[] = "launch__shared_mem_per_block_dynamic";
constexpr char kOccupancy[] = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr char kL2Hit[] = "lts__t_sector_hit_rate.pct";
constexpr char kDramRate[] = "dram__bytes.sum.per_second";
constexpr char kDramPct[] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

// The fields of one CSV line: quoted ("" is a quote inside) or bare.
std::vector<std::string> CsvFields(absl::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

// The factor of an SI prefix before a unit word ("nsecond", "Kbyte").
std::optional<double> Prefix(char c) {
  switch (c) {
    case 'n': return 1e-9;
    case 'u': return 1e-6;
    case 'm': return 1e-3;
    case 'K': case 'k': return 1e3;
    case 'M': return 1e6;
    case 'G': return 1e9;
    case 'T': return 1e12;
    case 'P': return 1e15;
    default: return std::nullopt;
  }
}

// The factor of one unit word: 1 for a base unit, its prefix's for a
// prefixed one ("msecond" and "ms": 1e-3). "Mhz" and "MHz" alike. ncu
// 2025.3 writes "ns" and "byte/s"; earlier versions "nsecond" and
// "byte/second".
double WordScale(absl::string_view word) {
  static constexpr absl::string_view kBases[] = {"second", "s",    "byte",   "cycle",  "hz",
                                                 "inst",   "warp", "sector", "request"};
  const std::string lower = absl::AsciiStrToLower(word);
  for (absl::string_view base : kBases) {
    if (lower == base || lower == absl::StrCat(base, "s")) return 1;
  }
  if (word.size() < 2) return 1;
  const std::string rest = absl::AsciiStrToLower(word.substr(1));
  for (absl::string_view base : kBases) {
    if (rest == base || rest == absl::StrCat(base, "s")) return Prefix(word[0]).value_or(1);
  }
  return 1;
}

// What a value in `unit` is multiplied by to be in base units.
double UnitScale(absl::string_view unit) {
  std::vector<absl::string_view> parts = absl::StrSplit(unit, '/');
  double scale = WordScale(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) scale /= WordScale(parts[i]);
  return scale;
}

std::optional<double> Number(absl::string_view text) {
  std::string digits = absl::StrReplaceAll(absl::StripAsciiWhitespace(text), {{",", ""}});
  double value = 0;
  if (digits.empty() || !absl::SimpleAtod(digits, &value) || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

double Get(const NcuMetrics& metrics, const char* name) {
  auto it = metrics.find(name);
  return it == metrics.end() ? 0 : it->second;
}

}  // namespace

const std::vector<std::string>& NcuMetricNames() {
  static const std::vector<std::string> names = {kDuration,    kCycles,     kRegisters,
                                                 kStaticSmem,  kDynamicSmem, kOccupancy,
                                                 kL2Hit,       kDramRate,   kDramPct};
  return names;
}

std::vector<std::string> NcuArgv(const std::string& ncu, const std::string& entry,
                                 const std::string& log_file,
                                 const std::vector<std::string>& child_argv) {
  std::vector<std::string> argv = {ncu,
                                   "--csv",
                                   "--page",
                                   "raw",
                                   "--print-units",
                                   "base",
                                   "--clock-control",
                                   "none",
                                   "--target-processes",
                                   "all",
                                   "--kernel-name",
                                   absl::StrCat("regex:^", entry, "$"),
                                   "--launch-count",
                                   "1",
                                   "--metrics",
                                   absl::StrJoin(NcuMetricNames(), ","),
                                   "--log-file",
                                   log_file};
  argv.insert(argv.end(), child_argv.begin(), child_argv.end());
  return argv;
}

absl::StatusOr<NcuMetrics> ParseNcuCsv(absl::string_view text) {
  std::vector<std::string> header;
  std::vector<std::string> units;
  std::vector<std::string> last;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "\"")) continue;  // ==PROF== lines, the child's output
    std::vector<std::string> fields = CsvFields(line);
    if (header.empty()) {
      if (fields[0] == "ID") header = std::move(fields);
    } else if (units.empty() && fields[0].empty()) {
      units = std::move(fields);
    } else if (fields.size() == header.size()) {
      last = std::move(fields);
    }
  }
  if (header.empty()) return absl::InvalidArgumentError("ncu's report has no header row");
  if (last.empty()) {
    return absl::InvalidArgumentError(
        "ncu profiled no launch (no kernel matched the spec's entry)");
  }
  NcuMetrics metrics;
  for (size_t i = 0; i < header.size(); ++i) {
    std::optional<double> value = Number(last[i]);
    if (!value.has_value() || header[i].find("__") == std::string::npos) continue;
    const double scale = i < units.size() ? UnitScale(units[i]) : 1;
    metrics[header[i]] = *value * scale;
  }
  return metrics;
}

std::optional<std::string> NcuRefusal(absl::string_view text) {
  static constexpr absl::string_view kSigns[] = {
      "ERR_NVGPUCTRPERM", "Failed to initialize the profiler", "Failed to profile",
      "not supported on this device"};
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    for (absl::string_view sign : kSigns) {
      if (!absl::StrContains(line, sign)) continue;
      absl::string_view said = absl::StripAsciiWhitespace(line);
      absl::ConsumePrefix(&said, "==ERROR== ");
      if (sign == kSigns[0]) {
        return absl::StrCat("ncu cannot read the GPU's performance counters (no permission): ",
                            said);
      }
      return absl::StrCat("ncu cannot read the GPU's performance counters: ", said);
    }
  }
  return std::nullopt;
}

std::optional<std::string> CannotProfile(v1::Backend backend, const std::string& ncu,
                                         const std::vector<v1::Backend>& profiled) {
  if (std::find(profiled.begin(), profiled.end(), backend) == profiled.end()) {
    const std::string lower = absl::AsciiStrToLower(v1::Backend_Name(backend));
    absl::string_view name = lower;
    absl::ConsumePrefix(&name, "backend_");
    return absl::StrCat("profiling is not supported for the ", name, " backend");
  }
  if (ncu.empty()) return "ncu not found on this host";
  return std::nullopt;
}

std::string NcuVersion(absl::string_view version_output) {
  std::string version;
  for (absl::string_view line : absl::StrSplit(version_output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "Version ")) version = std::string(line);
  }
  return version;
}

void FillProfile(const NcuMetrics& metrics, v1::KernelProfile* profile) {
  profile->set_duration_seconds(Get(metrics, kDuration));
  profile->set_cycles(Get(metrics, kCycles));
  profile->set_registers_per_thread(static_cast<int32_t>(std::lround(Get(metrics, kRegisters))));
  profile->set_shared_memory_bytes(
      std::llround(Get(metrics, kStaticSmem) + Get(metrics, kDynamicSmem)));
  profile->set_achieved_occupancy_pct(Get(metrics, kOccupancy));
  profile->set_l2_hit_rate_pct(Get(metrics, kL2Hit));
  profile->set_dram_bytes_per_second(Get(metrics, kDramRate));
  profile->set_dram_throughput_pct(Get(metrics, kDramPct));
}

}  // namespace tunefleet::worker
