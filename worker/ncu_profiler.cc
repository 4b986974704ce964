#include "worker/ncu_profiler.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config_space.h"
#include "common/file_util.h"
#include "common/spec_loader.h"
#include "spdlog/spdlog.h"
#include "worker/ncu_report.h"

namespace tunefleet::worker {
namespace {

constexpr char kNvidiaToolsDir[] = "/opt/nvidia";

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

NcuProfilerOptions NcuProfiler::WithDefaults(NcuProfilerOptions options) {
  if (options.scratch_dir.empty()) options.scratch_dir = "/tmp";
  if (options.executor.measure.budget_seconds() <= 0) {
    options.executor.measure.set_budget_seconds(0.05);
  }
  if (options.executor.trial_deadline <= absl::ZeroDuration()) {
    options.executor.trial_deadline = absl::Seconds(300);
  }
  options.executor.kills_to_quarantine = 1 << 20;  // a profile never quarantines
  return options;
}

NcuProfiler::NcuProfiler(CompilePool* pool, v1::Device device, ChildOptions child,
                         NcuProfilerOptions options)
    : pool_(pool),
      device_(std::move(device)),
      child_(std::move(child)),
      options_(WithDefaults(std::move(options))) {}

// ncu runs where the child would (in its sandbox, when there is one): it
// needs its own directory to read and the log's to write.
std::optional<v1::TrialResult> NcuProfiler::RunUnderNcu(
    const JobContext& job, const v1::Trial& trial, const std::function<bool()>& should_stop,
    std::string* log, absl::Status* status) {
  const std::string log_file = absl::StrCat(options_.scratch_dir, "/tunefleet-ncu-", getpid(),
                                            "-", device_.id(), "-", next_log_++, ".csv");
  std::remove(log_file.c_str());
  ChildOptions child = child_;
  child.argv = NcuArgv(options_.ncu, job.spec.entry(), log_file, child_.argv);
  // CUDA's bin/ncu is a launcher that looks for Nsight Compute in the CUDA
  // prefix and then under /opt/nvidia: both are readable in the sandbox.
  std::error_code error;
  const std::filesystem::path ncu = std::filesystem::canonical(options_.ncu, error);
  if (!error) child.policy.read_only.push_back(ncu.parent_path().parent_path().string());
  if (std::filesystem::is_directory(kNvidiaToolsDir, error)) {
    child.policy.read_only.push_back(kNvidiaToolsDir);
  }
  child.policy.writable.push_back(options_.scratch_dir);
  std::optional<v1::TrialResult> result;
  {
    TrialExecutor executor(pool_, device_, std::move(child), options_.executor);
    *status = executor.Run(
        job, {trial}, [&](int64_t, const v1::TrialResult& r) { result = r; }, should_stop);
    // ncu writes its report after the child exits: give it time to.
    executor.Shutdown(/*grace=*/absl::Seconds(120));
  }
  *log = ReadFile(log_file).value_or("");
  std::remove(log_file.c_str());
  return result;
}

double NcuProfiler::Tflops(const JobContext& job, const v1::Trial& trial,
                           const v1::Device& device, double seconds) {
  int index = -1;
  for (int i = 0; i < job.spec.metrics_size(); ++i) {
    if (job.spec.metrics(i).unit() == "TFLOP/s") index = i;
  }
  if (index < 0 || seconds <= 0) return 0;
  absl::StatusOr<v1::Shape> shape = NormalizeShape(job.spec, job.shape);
  if (!shape.ok()) return 0;
  auto space = ConfigSpace::Create(job.spec, *shape, LimitsFromDevice(device));
  if (!space.ok()) return 0;
  absl::StatusOr<v1::Config> config = NormalizeConfig(job.spec, trial.config());
  if (!config.ok() || !(*space)->Bind(*config).ok()) return 0;
  return (*space)->Metric(index, seconds).value_or(0);
}

v1::KernelProfile NcuProfiler::Profile(const JobContext& job, const v1::Trial& trial,
                                       const std::function<bool()>& should_stop) {
  v1::KernelProfile profile;
  profile.set_device_id(device_.id());
  profile.set_ncu_version(options_.ncu_version);
  if (std::optional<std::string> why = CannotProfile(device_.backend(), options_.ncu, options_.backends)) {
    profile.set_unavailable(*why);
    return profile;
  }
  std::string log;
  absl::Status status;
  std::optional<v1::TrialResult> result = RunUnderNcu(job, trial, should_stop, &log, &status);
  if (std::optional<std::string> refusal = NcuRefusal(log)) {
    profile.set_unavailable(*refusal);
  } else if (!status.ok()) {
    profile.set_unavailable(absl::StrCat("the worker could not run the config under ncu: ",
                                         status.message()));
  } else if (!result.has_value()) {
    profile.set_unavailable("the profile was interrupted");
  } else if (result->status() != v1::TRIAL_STATUS_OK) {
    profile.set_unavailable(absl::StrCat("the config failed under ncu: ",
                                         v1::TrialStatus_Name(result->status()), ": ",
                                         FirstLine(result->error())));
  } else if (absl::StatusOr<NcuMetrics> metrics = ParseNcuCsv(log); !metrics.ok()) {
    profile.set_unavailable(absl::StrCat("ncu's report could not be read: ",
                                         metrics.status().message()));
  } else {
    FillProfile(*metrics, &profile);
    profile.set_tflops(Tflops(job, trial, device_, profile.duration_seconds()));
  }
  if (!profile.unavailable().empty()) spdlog::warn("profile: {}", profile.unavailable());
  return profile;
}

}  // namespace tunefleet::worker
