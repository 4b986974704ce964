// tune_bench: tunes one kernel end to end on a loopback fleet (a coordinator
// with SQLite and N workers, real processes) and prints, per run: wall time
// from submit to best, configs per second, compile and measured time, the
// best config and its metric, the speed-up over the default, the configs cut
// early, and how long the workers' compile pools and devices stood idle while
// they held leases (their --stats-dir files). With
// --repeat K the same space is tuned K times (force_retune) and the spread of
// the winners is printed last.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/local_fleet.h"
#include "bench/search_dataset.h"
#include "common/calibration.h"
#include "common/status_macros.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "server/store/store.h"
#include "tunefleet/client.h"
#include "tunefleet/v1/job_record.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::bench {
namespace {

struct Flags {
  std::string kernel_dir;
  std::vector<std::string> shapes;
  std::string shape;  // the one being tuned
  std::string strategy = "exhaustive";
  std::string config_set;
  int64_t budget = 0;
  int workers = 1;
  int repeat = 1;
  std::string backend = "cpu";
  double measure_budget = 0.1;
  int finalists = 5;
  int compile_threads = 0;
  std::string bin_dir;
  bool print_trials = false;
  std::string dataset_dir;  // write each shape's first run here (search_dataset.h)
  std::vector<std::string> worker_flags;  // appended to each worker's command line
  double settle_seconds = 0;  // idle time between the workers' registration and the first job
  // Before each run after the first, every worker is replaced by a new
  // process of the same name (principal) with an empty cache: what it does
  // not compile it fetches from the coordinator's shared artifacts.
  bool fresh_workers = false;
  // Compile-only workers (named builder-<i>, trusted as builders) compiling
  // for --builder-target ahead of the workers.
  int builders = 0;
  std::string builder_target = "sm_90";
  int builder_threads = 0;  // each builder's compile threads; 0: the host's cores
  // A fleet of single-GPU hosts on one host: this many workers, worker i on
  // the i-th GPU alone and the i-th equal slice of the bench's CPUs (0: the
  // --workers share every GPU and CPU).
  int worker_per_gpu = 0;
  // Submit every --shape at once as one sweep (SubmitSweep) and time it as a
  // whole, instead of tuning the shapes one job after another.
  bool sweep = false;
};

constexpr std::array<const char*, 5> kPhaseNames = {"load", "check", "warmup", "sampling",
                                                     "outside"};

// The sums of the workers' stats files (tunefleet-worker --stats-dir,
// WriteIdleStats) under a directory, or their change over a run.
struct WorkerTotals {
  // Idle while the workers held leases: compile-pool thread-seconds and
  // device-seconds.
  double pool_idle = 0;
  double device_idle = 0;
  // The devices' busy seconds (a trial in the child) and how many devices:
  // idle against devices x wall counts devices left without any lease too.
  double device_busy = 0;
  double devices = 0;
  // Where the measured trials' time went (TrialPhaseTotals): how many
  // trials, and seconds per phase in kPhaseNames' order.
  double phased_trials = 0;
  std::array<double, 5> phases{};

  // The change from `before` to these sums (the number of devices: these).
  WorkerTotals Since(const WorkerTotals& before) const {
    WorkerTotals change = *this;
    change.pool_idle -= before.pool_idle;
    change.device_idle -= before.device_idle;
    change.device_busy -= before.device_busy;
    change.phased_trials -= before.phased_trials;
    for (size_t i = 0; i < phases.size(); ++i) change.phases[i] -= before.phases[i];
    return change;
  }
};

struct Run {
  Job job;
  std::vector<server::TrialRecord> records;
  double wall_seconds = 0;
  double compile_seconds = 0;
  double measured_seconds = 0;  // samples x median over every trial
  int64_t trials = 0;
  int64_t ok = 0;
  int64_t cut = 0;  // OK trials cut early (docs/measurement.md)
  WorkerTotals workers;  // over the run
  BestConfig served;  // GetBestConfig after the run
};

WorkerTotals ReadTotals(const std::string& dir) {
  WorkerTotals totals;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() != ".stats") continue;
    std::ifstream in(entry.path());
    std::string name;
    double value = 0;
    while (in >> name >> value) {
      if (name == "compile_pool_idle_seconds") totals.pool_idle += value;
      if (name == "device_idle_seconds") totals.device_idle += value;
      if (name == "device_busy_seconds") totals.device_busy += value;
      if (name == "devices") totals.devices += value;
      if (name == "trials_phased") totals.phased_trials += value;
      for (size_t i = 0; i < kPhaseNames.size(); ++i) {
        if (name == absl::StrCat("trial_", kPhaseNames[i], "_seconds")) totals.phases[i] += value;
      }
    }
  }
  return totals;
}

std::string DefaultBinDir(const char* argv0) {
  return std::filesystem::absolute(argv0).parent_path().string();
}

// What to tune, as the flags say (the shape: flags.shape).
SubmitRequest RequestOf(const Flags& flags) {
  SubmitRequest request;
  request.kernel_dir = flags.kernel_dir;
  request.shape = flags.shape;
  request.strategy = flags.strategy;
  request.budget = flags.budget;
  request.config_set = flags.config_set;
  return request;
}

absl::StatusOr<Run> TuneOnce(Client* client, Fleet* fleet, const Flags& flags, bool force,
                             const std::string& stats_dir) {
  SubmitRequest request = RequestOf(flags);
  request.force_retune = force;
  Run run;
  const WorkerTotals before = ReadTotals(stats_dir);
  const absl::Time start = absl::Now();
  absl::StatusOr<Job> job = client->Submit(request);
  if (!job.ok()) return job.status();
  absl::StatusOr<Job> done = client->Watch(job->id, [](const Job&) {});
  if (!done.ok()) return done.status();
  run.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  run.job = *done;
  // The workers rewrite their files every 200 ms; the last lease's share is
  // in after the next write.
  absl::SleepFor(absl::Milliseconds(500));
  run.workers = ReadTotals(stats_dir).Since(before);
  absl::StatusOr<std::unique_ptr<server::Store>> store = server::OpenStore(fleet->database_url());
  if (!store.ok()) return store.status();
  absl::StatusOr<std::vector<server::TrialRecord>> trials = (*store)->ListTrials(done->id);
  if (!trials.ok()) return trials.status();
  run.records = *trials;
  for (const server::TrialRecord& trial : *trials) {
    ++run.trials;
    run.compile_seconds += trial.compile_seconds;
    if (trial.status == 1) {
      ++run.ok;
      if (trial.cut_early) ++run.cut;
      run.measured_seconds += trial.median_seconds * static_cast<double>(trial.samples);
    }
  }
  return run;
}

// Submits every shape as one sweep, follows each job to its end and prints
// a row per shape (when it finished, counted from the submission) and the
// sweep's wall time and device idle time.
int TuneSweep(const Flags& flags, Client* client, const std::string& stats_dir) {
  const SubmitRequest request = RequestOf(flags);
  const WorkerTotals before = ReadTotals(stats_dir);
  const absl::Time start = absl::Now();
  absl::StatusOr<Sweep> sweep = client->SubmitSweep(request, flags.shapes);
  if (!sweep.ok()) {
    std::cerr << "tune_bench: " << sweep.status() << "\n";
    return 1;
  }
  std::printf("sweep %s: %zu shapes, strategy %s, measure budget %.3g s\n\n"
              "| shape | state | done at s | ok/trials | best config | best ms |\n"
              "|---|---|---|---|---|---|\n",
              sweep->id.c_str(), sweep->jobs.size(),
              flags.config_set.empty() ? flags.strategy.c_str() : flags.config_set.c_str(),
              flags.measure_budget);
  std::vector<std::pair<double, Job>> finished;
  for (const Job& job : sweep->jobs) {
    absl::StatusOr<Job> done = client->Watch(job.id, [](const Job&) {});
    if (!done.ok()) {
      std::cerr << "tune_bench: " << done.status() << "\n";
      return 1;
    }
    finished.emplace_back(absl::ToDoubleSeconds(absl::Now() - start), *done);
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  absl::SleepFor(absl::Milliseconds(500));  // the workers' last idle-file write
  const WorkerTotals workers = ReadTotals(stats_dir).Since(before);
  for (const auto& [at, job] : finished) {
    const JobTarget* target = job.targets.empty() ? nullptr : &job.targets.front();
    const int64_t ok = job.outcomes.count("OK") > 0 ? job.outcomes.at("OK") : 0;
    std::printf("| %s | %s | %.2f | %lld/%lld | %s | %.4g |\n", job.shape.c_str(),
                JobStateName(job.state), at, static_cast<long long>(ok),
                static_cast<long long>(job.trials_done),
                target != nullptr ? target->best_config.c_str() : "-",
                target != nullptr ? target->best_seconds * 1e3 : 0.0);
  }
  std::printf("\nsweep wall %.2f s, device idle %.2f s, compile pool idle %.2f thread-s\n\n", wall,
              workers.device_idle, workers.pool_idle);
  return 0;
}

// The spec's first metric for the best time, e.g. TFLOP/s.
std::string MetricText(const KernelBundle& bundle, const std::string& shape, double seconds) {
  if (bundle.spec.metrics().empty() || seconds <= 0) return "-";
  absl::StatusOr<v1::Shape> parsed = ParseShape(shape);
  if (!parsed.ok()) return "-";
  absl::StatusOr<v1::Shape> normalized = NormalizeShape(bundle.spec, *parsed);
  if (!normalized.ok()) return "-";
  auto space = ConfigSpace::Create(bundle.spec, *normalized, PlaceholderLimits(bundle.spec.backend()));
  if (!space.ok()) return "-";
  (*space)->Bind(0);
  absl::StatusOr<double> value = (*space)->Metric(0, seconds);
  if (!value.ok()) return "-";
  return absl::StrFormat("%.2f %s", *value, bundle.spec.metrics(0).unit());
}

void PrintRun(int index, const Run& run, const KernelBundle& bundle, const Flags& flags) {
  const JobTarget* target = run.job.targets.empty() ? nullptr : &run.job.targets[0];
  const double best = target ? target->best_seconds : 0;
  const double def = target ? target->default_seconds : 0;
  // Devices x wall against the devices' busy seconds: the idle of devices
  // without a lease counts too (the "device idle s" column counts only
  // devices that hold work).
  const double device_wall = run.workers.devices * run.wall_seconds;
  const std::string idle_of_wall =
      device_wall > 0
          ? absl::StrFormat("%.1f%%", 100 * std::max(0.0, 1 - run.workers.device_busy / device_wall))
          : "-";
  std::printf("| %d | %s | %.2f | %lld/%lld | %lld | %.1f | %.2f | %.2f | %.2f | %.2f | %s | %.4g "
              "| %s | %s | %s |\n",
              index, JobStateName(run.job.state), run.wall_seconds,
              static_cast<long long>(run.ok), static_cast<long long>(run.trials),
              static_cast<long long>(run.cut), run.trials / std::max(run.wall_seconds, 1e-9),
              run.compile_seconds, run.measured_seconds, run.workers.pool_idle,
              run.workers.device_idle, target ? target->best_config.c_str() : "-", best * 1e3,
              MetricText(bundle, flags.shape, best).c_str(),
              def > 0 && best > 0 ? absl::StrFormat("%.2fx", def / best).c_str() : "-",
              idle_of_wall.c_str());
}

// Where each run's trials spent their time, per trial: the benchmark
// child's phases and the worker's wait beyond them. "samples x median" is
// the stored trials' samples times their medians over the same trials: the
// kernel's time in sampling where each sample is one launch (kernels under
// 20 us are timed in batches, a sample per batch, and count less); the rest
// of sampling is the flushes, leads and synchronisations.
void PrintPhases(const std::vector<Run>& runs) {
  std::printf("\n| run | trials | load ms | check ms | warm-up ms | sampling ms | samples x median ms "
              "| outside the child ms |\n|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const WorkerTotals& w = runs[i].workers;
    if (w.phased_trials <= 0) continue;  // a backend whose child keeps no phases
    const double per = 1e3 / w.phased_trials;
    std::printf("| %zu | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", i + 1,
                w.phased_trials, w.phases[0] * per, w.phases[1] * per, w.phases[2] * per,
                w.phases[3] * per, runs[i].measured_seconds * per, w.phases[4] * per);
  }
}

// Every trial of a run: config, outcome, time, the first line of its error.
void PrintTrials(const Run& run) {
  std::printf("\n| config | outcome | median ms | samples | error |\n|---|---|---|---|---|\n");
  for (const server::TrialRecord& trial : run.records) {
    std::string error = trial.error.substr(0, trial.error.find('\n'));
    if (error.size() > 100) error = error.substr(0, 100) + "...";
    std::printf("| %s | %s | %.4g | %lld | %s |\n", trial.config.c_str(),
                v1::TrialStatus_Name(trial.status).c_str() + std::strlen("TRIAL_STATUS_"),
                trial.median_seconds * 1e3, static_cast<long long>(trial.samples), error.c_str());
  }
  // The spread of the space: the fastest and slowest fully measured config.
  double fastest = HUGE_VAL, slowest = 0;
  for (const server::TrialRecord& trial : run.records) {
    if (trial.status != v1::TRIAL_STATUS_OK || trial.cut_early ||
        trial.round != server::TrialRound::kSearch) {
      continue;
    }
    fastest = std::min(fastest, trial.median_seconds);
    slowest = std::max(slowest, trial.median_seconds);
  }
  if (slowest > 0) {
    std::printf("\nfastest %.4g ms, slowest %.4g ms of the OK configs measured in full: %.1fx\n",
                fastest * 1e3, slowest * 1e3, slowest / fastest);
  }
  std::printf("\n");
}

// The first run's search trials as a replay dataset; the device limits come
// from the job's stored target.
absl::Status WriteRunDataset(const Run& run, Fleet* fleet, const Flags& flags) {
  ASSIGN_OR_RETURN(std::unique_ptr<server::Store> store,
                   server::OpenStore(fleet->database_url()));
  ASSIGN_OR_RETURN(server::JobRecord record, store->GetJob(run.job.id));
  v1::StoredJob stored;
  if (!stored.ParseFromString(record.targets) || stored.targets_size() == 0) {
    return absl::DataLossError("the job's stored targets do not parse");
  }
  SearchDataset dataset;
  dataset.kernel_dir = flags.kernel_dir;
  dataset.shape = flags.shape;
  dataset.device = stored.targets(0).device_model();
  for (const v1::DeviceLimit& limit : stored.targets(0).limits()) {
    dataset.limits[limit.name()] = limit.value();
  }
  for (const server::TrialRecord& trial : run.records) {
    if (trial.round != server::TrialRound::kSearch) continue;
    DatasetRow row;
    row.config = trial.config;
    row.status = static_cast<v1::TrialStatus>(trial.status);
    row.median_seconds = row.status == v1::TRIAL_STATUS_OK ? trial.median_seconds : 0;
    dataset.rows.push_back(std::move(row));
  }
  std::string name = absl::StrCat(flags.dataset_dir, "/",
                                  std::filesystem::path(flags.kernel_dir).filename().string(), "-",
                                  flags.shape, ".csv.gz");
  // Letters, digits, '.', '_' and '-' only: M=16,N=4096 -> M16_N4096.
  auto tail = name.begin() + static_cast<std::ptrdiff_t>(flags.dataset_dir.size());
  std::replace(tail, name.end(), ',', '_');
  name.erase(std::remove(tail, name.end(), '='), name.end());
  std::error_code error;
  std::filesystem::create_directories(flags.dataset_dir, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", flags.dataset_dir, ": ", error.message()));
  }
  std::printf("dataset: %s (%zu configs)\n", name.c_str(), dataset.rows.size());
  return WriteDataset(dataset, name);
}

// The served answer's calibrated time: its median over its calibration
// (docs/measurement.md; 0 when uncalibrated).
double CalibratedOf(const BestConfig& served) {
  return Calibrated(served.calibration_seconds)
             ? CalibratedTime(served.median_seconds, served.calibration_seconds)
             : 0;
}

// The served answer after each run: its config, what the run did to it, its
// tie set (docs/measurement.md, "Tie sets"), and the deciding round's
// fastest config, which the rule of serving the smallest median would serve.
void PrintServed(const std::vector<Run>& runs) {
  std::printf("\n| run | served config | served ms | calibration ms | calibrated | outcome "
              "| tie set | widest gap | rounds | CV | in run 1's tie set | round's fastest |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const BestConfig& first = runs.front().served;
  auto fastest = [](const BestConfig& served) {
    return served.tie_set.empty() ? served.config : served.tie_set.front().config;
  };
  int same = 0;
  int in_first = 0;
  int same_fastest = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const BestConfig& served = runs[i].served;
    const bool member = std::any_of(first.tie_set.begin(), first.tie_set.end(),
                                    [&](const auto& m) { return m.config == served.config; });
    same += served.config == first.config;
    in_first += member;
    same_fastest += fastest(served) == fastest(first);
    const std::string outcome =
        runs[i].job.targets.empty() ? "-" : runs[i].job.targets[0].retune;
    std::printf("| %zu | %s | %.4g | %.4g | %.4f | %s | %zu of %d | %.2f%% | %d | %.2f%% | %s "
                "| %s |\n",
                i + 1, served.config.c_str(), served.median_seconds * 1e3,
                served.calibration_seconds * 1e3, CalibratedOf(served), outcome.c_str(),
                served.tie_set.size(), served.configs_in_round,
                served.tie_set.empty() ? 0.0 : 100 * served.tie_set.back().gap, served.rounds,
                100 * served.rounds_cv, member ? "yes" : "no",
                fastest(served) == served.config ? "(served)" : fastest(served).c_str());
  }
  std::printf("\nserved run 1's config after %d of %zu runs, a member of run 1's tie set after "
              "%d; the round's fastest was run 1's in %d of %zu\n",
              same, runs.size(), in_first, same_fastest, runs.size());
  for (const BestConfig::TieMember& member : first.tie_set) {
    std::printf("  run 1 tie set: %s %.4g ms (+%.2f%%)\n", member.config.c_str(),
                member.median_seconds * 1e3, 100 * member.gap);
  }
}

void PrintSpread(const std::vector<Run>& runs) {
  if (!runs.empty()) PrintServed(runs);
  // The served answer's times over the runs, raw and calibrated
  // (docs/measurement.md, "Calibration").
  std::vector<double> raw;
  std::vector<double> calibrated;
  for (const Run& run : runs) {
    if (run.served.median_seconds <= 0) continue;
    raw.push_back(run.served.median_seconds);
    if (run.served.calibration_seconds > 0) calibrated.push_back(CalibratedOf(run.served));
  }
  auto spread = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return 100.0 * (values.back() - values.front()) / values.front();
  };
  if (raw.size() >= 2) {
    std::printf("\nserved time over %zu runs: raw spread %.2f%%", raw.size(), spread(raw));
    if (calibrated.size() == raw.size()) {
      std::printf(", calibrated spread %.2f%% (%.4f to %.4f)",
                  spread(calibrated), *std::min_element(calibrated.begin(), calibrated.end()),
                  *std::max_element(calibrated.begin(), calibrated.end()));
    }
    std::printf("\n");
  }
  std::map<std::string, int> winners;
  std::vector<double> best;
  for (const Run& run : runs) {
    if (run.job.targets.empty() || run.job.targets[0].best_seconds <= 0) continue;
    ++winners[run.job.targets[0].best_config];
    best.push_back(run.job.targets[0].best_seconds);
  }
  if (best.size() < 2) return;
  std::sort(best.begin(), best.end());
  std::printf("\nwinner latency over %zu runs: min %.4g ms, median %.4g ms, max %.4g ms "
              "(spread %.1f%%)\n",
              best.size(), best.front() * 1e3, best[best.size() / 2] * 1e3, best.back() * 1e3,
              100.0 * (best.back() - best.front()) / best.front());
  for (const auto& [config, count] : winners) std::printf("  won %d x  %s\n", count, config.c_str());
}

// The name (principal) of worker `i`: the same for its replacements.
std::string WorkerName(int i) { return absl::StrCat("test-worker-", i); }

// Where worker `i` of the fleet runs (Flags::worker_per_gpu): the i-th GPU
// the bench may use (its CUDA_VISIBLE_DEVICES, else GPU i) and the i-th of
// equal slices of the CPUs it may run on; nowhere in particular otherwise.
WorkerPlacement PlacementOf(const Flags& flags, int i) {
  if (flags.worker_per_gpu <= 0) return {};
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  const size_t per = std::max<size_t>(1, cpus.size() / flags.worker_per_gpu);
  std::vector<int> slice;
  for (size_t c = i * per; c < std::min(cpus.size(), (i + 1) * per); ++c) slice.push_back(cpus[c]);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> gpus =
      visible != nullptr && *visible != '\0'
          ? std::vector<std::string>(absl::StrSplit(visible, ','))
          : std::vector<std::string>{};
  WorkerPlacement placement;
  placement.cpus = absl::StrJoin(slice, ",");
  placement.gpus = i < static_cast<int>(gpus.size()) ? gpus[i] : std::to_string(i);
  return placement;
}

absl::Status StartWorker(Fleet* fleet, const Flags& flags, int i) {
  return fleet->StartWorker(WorkerName(i), {}, /*compile_threads=*/-1, PlacementOf(flags, i))
      .status();
}

// A live worker with devices (not a compile-only builder).
bool AliveWithDevices(const WorkerInfo& worker) {
  return worker.alive && !worker.devices.empty();
}

// Waits until `count` workers with devices are registered and alive (a
// worker that finds no device of its backend exits instead).
absl::Status WaitForWorkers(Client* client, int count) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::vector<WorkerInfo>> workers = client->ListWorkers();
    if (workers.ok() &&
        std::count_if(workers->begin(), workers->end(), AliveWithDevices) >= count) {
      return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("fewer than ", count, " workers registered within 60 s"));
}

// Stops the fleet's workers, waits until the coordinator no longer counts
// them alive, then starts as many new ones with the same names and empty
// caches (Flags::fresh_workers).
absl::Status ReplaceWorkers(Client* client, Fleet* fleet, const Flags& flags) {
  const int first = fleet->worker_count() - flags.workers;
  for (int i = first; i < fleet->worker_count(); ++i) fleet->worker(i)->KillAndWait();
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (;;) {
    absl::StatusOr<std::vector<WorkerInfo>> workers = client->ListWorkers();
    if (workers.ok() && std::none_of(workers->begin(), workers->end(), AliveWithDevices)) {
      break;
    }
    if (absl::Now() > deadline) return absl::DeadlineExceededError("stopped workers stay alive");
    absl::SleepFor(absl::Milliseconds(200));
  }
  for (int i = 0; i < flags.workers; ++i) RETURN_IF_ERROR(StartWorker(fleet, flags, i));
  RETURN_IF_ERROR(WaitForWorkers(client, flags.workers));
  absl::SleepFor(absl::Seconds(flags.settle_seconds));
  return absl::OkStatus();
}

// Tunes flags.shape `repeat` times and prints the table.
int TuneShape(const Flags& flags, const KernelBundle& bundle, Client* client, Fleet* fleet,
              const std::string& stats_dir) {
  std::printf("kernel %s, shape %s, strategy %s, %d %s worker(s)%s, measure budget %.3g s\n\n",
              bundle.spec.name().c_str(), flags.shape.c_str(),
              flags.config_set.empty() ? flags.strategy.c_str() : flags.config_set.c_str(),
              flags.workers, flags.backend.c_str(),
              flags.worker_per_gpu > 0 ? " (one per GPU, each on its own CPUs)" : "",
              flags.measure_budget);
  std::printf("| run | state | wall s | ok/trials | cut early | configs/s | compile s | measured s "
              "| pool idle thread-s | device idle s | best config | best ms | best metric "
              "| vs default | devices idle of wall |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<Run> runs;
  for (int i = 0; i < flags.repeat; ++i) {
    if (i > 0 && flags.fresh_workers) {
      if (absl::Status replaced = ReplaceWorkers(client, fleet, flags); !replaced.ok()) {
        std::cerr << "tune_bench: " << replaced << "\n";
        return 1;
      }
    }
    absl::StatusOr<Run> run = TuneOnce(client, fleet, flags, /*force=*/i > 0, stats_dir);
    if (!run.ok()) {
      std::cerr << "tune_bench: run " << i + 1 << ": " << run.status() << "\n";
      return 1;
    }
    if (!run->job.targets.empty()) {
      const JobTarget& target = run->job.targets[0];
      absl::StatusOr<BestConfig> served = client->GetBestConfig(
          bundle.spec.name(), flags.shape, target.device_model, target.toolkit);
      if (served.ok()) run->served = *std::move(served);
    }
    PrintRun(i + 1, *run, bundle, flags);
    if (flags.print_trials) PrintTrials(*run);
    if (i == 0 && !flags.dataset_dir.empty()) {
      if (absl::Status written = WriteRunDataset(*run, fleet, flags); !written.ok()) {
        std::cerr << "tune_bench: " << written << "\n";
        return 1;
      }
    }
    std::fflush(stdout);
    runs.push_back(*std::move(run));
  }
  PrintSpread(runs);
  PrintPhases(runs);
  std::printf("\n");
  return 0;
}

int Main(const Flags& flags) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(flags.kernel_dir);
  if (!bundle.ok()) {
    std::cerr << "tune_bench: " << bundle.status() << "\n";
    return 2;
  }
  char pattern[] = "/tmp/tunefleet-bench-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  FleetOptions options;
  options.bin_dir = flags.bin_dir;
  options.data_dir = dir;
  options.lease_ttl_ms = 30000;
  options.heartbeat_ms = 1000;
  options.batch_size = 8;
  options.measure_budget = flags.measure_budget;
  options.finalists = flags.finalists;
  options.backend = flags.backend;
  options.compile_threads = flags.compile_threads;
  const std::string stats_dir = dir + "/stats";
  std::filesystem::create_directories(stats_dir);
  options.worker_flags = {"--stats-dir", stats_dir};
  options.worker_flags.insert(options.worker_flags.end(), flags.worker_flags.begin(),
                              flags.worker_flags.end());
  if (flags.builders > 0) {
    std::vector<std::string> builders;
    for (int i = 0; i < flags.builders; ++i) builders.push_back(absl::StrCat("host:builder-", i));
    options.coordinator_flags.push_back(
        absl::StrCat("--artifact-builders=", absl::StrJoin(builders, ",")));
  }
  Fleet fleet(options);
  absl::Status started = fleet.StartCoordinator();
  for (int i = 0; started.ok() && i < flags.builders; ++i) {
    started = fleet
                  .StartWorker(absl::StrCat("builder-", i),
                               {"--compile-only", "--target", flags.builder_target},
                               flags.builder_threads)
                  .status();
  }
  for (int i = 0; started.ok() && i < flags.workers; ++i) started = StartWorker(&fleet, flags, i);
  ClientOptions client_options;
  client_options.target = fleet.address();
  client_options.deadline = std::chrono::seconds(30);
  client_options.insecure = true;  // the loopback fleet runs plaintext
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
  if (started.ok() && client.ok()) started = WaitForWorkers(client->get(), flags.workers);
  if (!started.ok() || !client.ok()) {
    std::cerr << "tune_bench: " << (started.ok() ? client.status() : started) << "\n";
    return 1;
  }
  // A fleet that has been up a while: the workers' spare benchmark children
  // are started (the first job of a just-registered worker may still wait
  // for its child's start-up).
  absl::SleepFor(absl::Seconds(flags.settle_seconds));
  if (flags.sweep) {
    const int failed = TuneSweep(flags, client->get(), stats_dir);
    if (failed == 0) std::filesystem::remove_all(dir);
    return failed;
  }
  for (const std::string& shape : flags.shapes) {
    Flags one = flags;
    one.shape = shape;
    if (int failed = TuneShape(one, *bundle, client->get(), &fleet, stats_dir); failed != 0) return failed;
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace tunefleet::bench

int main(int argc, char** argv) {
  CLI::App app{"tune_bench: tune a kernel end to end on a loopback fleet and print a table"};
  tunefleet::bench::Flags flags;
  flags.bin_dir = tunefleet::bench::DefaultBinDir(argv[0]);
  app.add_option("--kernel", flags.kernel_dir, "kernel directory")->required();
  app.add_option("--shape", flags.shapes,
                 "problem shape, M=..,N=.. (repeat the flag to tune several in turn, on the "
                 "same fleet and caches)")
      ->required();
  app.add_option("--strategy", flags.strategy, "exhaustive, random, model, evolutionary or coordinate")
      ->capture_default_str();
  app.add_option("--budget", flags.budget, "random, model, evolutionary: configs to try");
  app.add_option("--config-set", flags.config_set, "tune only this named set");
  app.add_option("--workers", flags.workers, "worker processes")->capture_default_str();
  app.add_option("--repeat", flags.repeat, "tune the space this many times")->capture_default_str();
  app.add_option("--builders", flags.builders,
                 "compile-only workers compiling ahead for --builder-target (trusted builders)")
      ->capture_default_str();
  app.add_option("--builder-target", flags.builder_target, "the builders' CUDA arch")
      ->capture_default_str();
  app.add_option("--builder-threads", flags.builder_threads,
                 "each builder's compile threads (0: the host's cores)")
      ->capture_default_str();
  app.add_flag("--fresh-workers", flags.fresh_workers,
               "before each run after the first, replace every worker by a new process of "
               "the same principal with an empty cache (it fetches what the first compiled)");
  app.add_option("--settle-seconds", flags.settle_seconds,
                 "wait this long after the workers registered before the first job (a fleet "
                 "that has been up a while)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--backend", flags.backend, "cpu, cuda or python")->capture_default_str();
  app.add_option("--measure-budget", flags.measure_budget, "seconds of timing per config")
      ->capture_default_str();
  app.add_option("--finalists", flags.finalists, "configs in the finalists round")
      ->capture_default_str();
  app.add_option("--compile-threads", flags.compile_threads, "per worker (0 = cores)")
      ->capture_default_str();
  app.add_option("--bin-dir", flags.bin_dir, "where the tunefleet binaries are");
  app.add_flag("--trials", flags.print_trials, "print every trial of every run");
  app.add_option("--worker-flag", flags.worker_flags,
                 "a flag passed on to each worker, e.g. --worker-flag=--lookahead-trials=4 "
                 "(repeat the option for several)")
      ->allow_extra_args(false);
  app.add_option("--dataset-dir", flags.dataset_dir,
                 "write each shape's first run as a search dataset "
                 "(DIR/KERNEL-SHAPE.csv.gz) for search_bench");
  app.add_flag("--sweep", flags.sweep,
               "submit every --shape at once as one sweep and time it as a whole (default: "
               "one job per shape, one after another)");
  app.add_option("--worker-per-gpu", flags.worker_per_gpu,
                 "start this many workers, each on one GPU alone (of CUDA_VISIBLE_DEVICES) "
                 "and an equal slice of the bench's CPUs: a fleet of single-GPU hosts; "
                 "replaces --workers")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (flags.worker_per_gpu > 0) flags.workers = flags.worker_per_gpu;
  return tunefleet::bench::Main(flags);
}
