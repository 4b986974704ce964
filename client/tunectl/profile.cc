#include "client/tunectl/profile.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/format.h"
#include "client/tunectl/trials.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

// A metric cell: "-" where no metrics were read.
std::string Cell(const KernelProfile& profile, const char* format, double value) {
  if (profile.pending || !profile.unavailable.empty()) return "-";
  return absl::StrFormat(format, value);
}

std::string Note(const KernelProfile& profile) {
  if (profile.pending) return "pending";
  return profile.unavailable.empty() ? "" : ReasonSummary(profile.unavailable, 80);
}

Json ProfileToJson(const KernelProfile& p) {
  return {{"config", p.config},
          {"device_model", p.device_model},
          {"tuning_key", p.tuning_key},
          {"rank", p.rank},
          {"median_seconds", p.median_seconds},
          {"pending", p.pending},
          {"unavailable", p.unavailable},
          {"duration_seconds", p.duration_seconds},
          {"cycles", p.cycles},
          {"registers_per_thread", p.registers_per_thread},
          {"shared_memory_bytes", p.shared_memory_bytes},
          {"achieved_occupancy_pct", p.achieved_occupancy_pct},
          {"l2_hit_rate_pct", p.l2_hit_rate_pct},
          {"dram_bytes_per_second", p.dram_bytes_per_second},
          {"dram_throughput_pct", p.dram_throughput_pct},
          {"tflops", p.tflops},
          {"worker_id", p.worker_id},
          {"device_id", p.device_id},
          {"ncu_version", p.ncu_version},
          {"profiled_unix_ms", p.profiled_unix_ms}};
}

void Print(const std::string& job_id, const std::vector<KernelProfile>& profiles,
           const Console& console) {
  switch (console.format) {
    case OutputFormat::kJson:
      *console.out << ProfilesJson(job_id, profiles);
      break;
    case OutputFormat::kCsv:
      *console.out << ProfilesCsv(profiles);
      break;
    default:
      *console.out << ProfilesTable(profiles, console.format == OutputFormat::kWide);
  }
}

bool AnyPending(const std::vector<KernelProfile>& profiles) {
  return std::any_of(profiles.begin(), profiles.end(),
                     [](const KernelProfile& p) { return p.pending; });
}

}  // namespace

std::string ProfilesTable(const std::vector<KernelProfile>& profiles, bool wide) {
  Row header = {"CONFIG",      "DURATION µs", "CYCLES",   "REGS/THREAD", "SMEM KiB",
                "OCCUPANCY %", "L2 HIT %",    "DRAM GB/s", "DRAM %",      "TFLOP/s", "NOTE"};
  if (wide) {
    header.insert(header.begin(), {"DEVICE MODEL", "RANK", "TUNED µs"});
    for (const char* column : {"WORKER", "DEVICE", "NCU"}) header.push_back(column);
  }
  std::vector<Row> rows;
  for (const KernelProfile& p : profiles) {
    Row row = {Printable(p.config),
               Cell(p, "%.2f", p.duration_seconds * 1e6),
               Cell(p, "%.0f", p.cycles),
               Cell(p, "%.0f", p.registers_per_thread),
               Cell(p, "%.1f", static_cast<double>(p.shared_memory_bytes) / 1024),
               Cell(p, "%.1f", p.achieved_occupancy_pct),
               Cell(p, "%.1f", p.l2_hit_rate_pct),
               Cell(p, "%.1f", p.dram_bytes_per_second / 1e9),
               Cell(p, "%.1f", p.dram_throughput_pct),
               p.tflops > 0 ? absl::StrFormat("%.1f", p.tflops) : "-",
               Printable(Note(p))};
    if (wide) {
      row.insert(row.begin(), {Printable(p.device_model), absl::StrCat(p.rank),
                               absl::StrFormat("%.2f", p.median_seconds * 1e6)});
      for (const std::string* field : {&p.worker_id, &p.device_id, &p.ncu_version}) {
        row.push_back(field->empty() ? "-" : Printable(*field));
      }
    }
    rows.push_back(std::move(row));
  }
  return RenderTable(header, rows);
}

std::string ProfilesJson(const std::string& job_id, const std::vector<KernelProfile>& profiles) {
  Json list = Json::array();
  for (const KernelProfile& profile : profiles) list.push_back(ProfileToJson(profile));
  return JsonDocument({{"job_id", job_id}, {"profiles", std::move(list)}});
}

std::string ProfilesCsv(const std::vector<KernelProfile>& profiles) {
  std::string csv =
      "config,device_model,rank,median_seconds,pending,duration_seconds,cycles,"
      "registers_per_thread,shared_memory_bytes,achieved_occupancy_pct,l2_hit_rate_pct,"
      "dram_bytes_per_second,dram_throughput_pct,tflops,worker_id,device_id,ncu_version,"
      "profiled_unix_ms,tuning_key,unavailable\r\n";
  for (const KernelProfile& p : profiles) {
    std::vector<std::string> fields = {
        p.config, p.device_model, absl::StrCat(p.rank), ExactNumber(p.median_seconds),
        p.pending ? "true" : "false", ExactNumber(p.duration_seconds), ExactNumber(p.cycles),
        absl::StrCat(p.registers_per_thread), absl::StrCat(p.shared_memory_bytes),
        ExactNumber(p.achieved_occupancy_pct), ExactNumber(p.l2_hit_rate_pct),
        ExactNumber(p.dram_bytes_per_second), ExactNumber(p.dram_throughput_pct),
        ExactNumber(p.tflops), p.worker_id, p.device_id, p.ncu_version,
        absl::StrCat(p.profiled_unix_ms), p.tuning_key, p.unavailable};
    for (std::string& field : fields) field = CsvField(field);
    absl::StrAppend(&csv, absl::StrJoin(fields, ","), "\r\n");
  }
  return csv;
}

int RunProfile(Client& client, const ProfileFlags& flags, const Console& console) {
  if (!flags.show) {
    absl::StatusOr<std::vector<KernelProfile>> queued = client.ProfileJob(flags.job_id, flags.top);
    if (!queued.ok()) return ReportError(console, queued.status());
    Notes(console) << "profiling " << queued->size() << " config(s) of job "
                   << Printable(flags.job_id) << " with Nsight Compute\n";
    if (flags.no_wait) {
      Print(flags.job_id, *queued, console);
      return kExitOk;
    }
  }
  const absl::Time deadline = console.now() + flags.wait;
  while (true) {
    absl::StatusOr<std::vector<KernelProfile>> profiles = client.ListProfiles(flags.job_id);
    if (!profiles.ok()) return ReportError(console, profiles.status());
    const bool waiting = !flags.show && AnyPending(*profiles);
    if (!waiting || console.now() >= deadline) {
      Print(flags.job_id, *profiles, console);
      if (!waiting) return kExitOk;
      *console.err << "tunectl: profiles still pending after "
                   << absl::FormatDuration(flags.wait)
                   << " (is a worker of the job's device model running?); see them later with: "
                      "tunectl profile --show "
                   << Printable(flags.job_id) << "\n";
      return kExitUnavailable;
    }
    absl::SleepFor(flags.poll);
  }
}

}  // namespace tunefleet::tunectl
