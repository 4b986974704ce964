// search_bench: replays search strategies against datasets of exhaustive runs
// (bench/search_dataset.h, bench/data/) instead of measuring, so strategies
// are compared offline, without a device, over many seeds. Per dataset and
// strategy it prints the evaluations needed to come within 3 % and 1 % of the
// exhaustive optimum (median and p90 over seeds) and the best found after 2,
// 5, 10 and 20 % of the space (median over seeds, as a ratio to the optimum).
// Then the warm start: each shape held out, the best configs of the others
// (nearest shapes first) measured first, and for `model` also with their rows
// as its history (training rows, as a coordinator gives it): the others
// tuned exhaustively on the same device, each tuned at 2 % of its space,
// and the held shape's device held out entirely (PrintWarmStart). Last, the
// time to propose a batch of 64 from a 10^6-config space.
//
//   search_bench [--seeds 20] [--strategies random,evolutionary,model]
//                [--held-out-only] [--hold-out NAME] [DATASET...]
//   (no DATASET: every bench/data/**/*.csv.gz)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/search_dataset.h"
#include "server/fleet_history.h"
#include "bench/search_replay.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "server/search_strategy.h"
#include "server/tuned_shapes.h"

namespace tunefleet::bench {
namespace {

struct Flags {
  int seeds = 20;
  int batch = 8;
  std::string strategies = "random,evolutionary,model";
  bool held_out_only = false;
  std::string hold_out;  // hold out only the datasets whose file name contains it
  std::vector<std::string> datasets;
};

// One replay: when the best came within 3 % and 1 % (evaluations; -1 when it
// never did), and the best after each checkpoint, relative to the optimum.
struct Replay {
  int64_t to3 = -1;
  int64_t to1 = -1;
  std::vector<double> best_at;  // per checkpoint
};

constexpr double kCheckpoints[] = {0.02, 0.05, 0.10, 0.20};

// The p-quantile (0 < p <= 1) of `values`: the smallest value with at least
// that share of the values at or below it.
double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

absl::StatusOr<Replay> ReplayOnce(const Loaded& loaded, const std::string& strategy_name,
                                  uint64_t seed, int batch, const ReplayStart& start) {
  const int64_t space = static_cast<int64_t>(loaded.by_ordinal.size());
  Replay replay;
  double best = HUGE_VAL;
  int64_t evaluated = 0;
  size_t checkpoint = 0;
  const int64_t last_checkpoint =
      static_cast<int64_t>(std::ceil(kCheckpoints[std::size(kCheckpoints) - 1] * space));
  auto observe = [&](uint64_t, const v1::TrialResult& result) {
    ++evaluated;
    if (result.status() == v1::TRIAL_STATUS_OK) {
      best = std::min(best, result.measurement().median_seconds());
    }
    if (replay.to3 < 0 && best <= loaded.optimum * 1.03) replay.to3 = evaluated;
    if (replay.to1 < 0 && best <= loaded.optimum * 1.01) replay.to1 = evaluated;
    while (checkpoint < std::size(kCheckpoints) &&
           evaluated >= static_cast<int64_t>(std::ceil(kCheckpoints[checkpoint] * space))) {
      replay.best_at.push_back(best / loaded.optimum);
      ++checkpoint;
    }
    return replay.to1 < 0 || evaluated < last_checkpoint;  // else nothing more to learn
  };
  RETURN_IF_ERROR(ReplayStrategy(loaded, strategy_name, seed, batch, start, observe));
  while (replay.best_at.size() < std::size(kCheckpoints)) replay.best_at.push_back(best / loaded.optimum);
  if (replay.to3 < 0) replay.to3 = evaluated + 1;  // never: counted as past the end
  if (replay.to1 < 0) replay.to1 = evaluated + 1;
  return replay;
}

// One strategy replayed over seeds 1..flags.seeds: the evaluations to 3 %
// and 1 % and the best at each checkpoint, one entry per seed.
struct Replays {
  std::vector<double> to3, to1;
  std::vector<std::vector<double>> best_at = std::vector<std::vector<double>>(
      std::size(kCheckpoints));
};

absl::StatusOr<Replays> ReplaySeeds(const Loaded& loaded, const std::string& strategy,
                                    const ReplayStart& start, const Flags& flags) {
  Replays replays;
  for (int seed = 1; seed <= flags.seeds; ++seed) {
    ASSIGN_OR_RETURN(Replay replay,
                     ReplayOnce(loaded, strategy, seed, flags.batch, start));
    replays.to3.push_back(static_cast<double>(replay.to3));
    replays.to1.push_back(static_cast<double>(replay.to1));
    for (size_t c = 0; c < std::size(kCheckpoints); ++c) {
      replays.best_at[c].push_back(replay.best_at[c]);
    }
  }
  return replays;
}

// "median (p90) | % of space" for evaluations to 3 %, then to 1 %.
std::string EvaluationCells(const Replays& replays, const Loaded& loaded) {
  const double space = static_cast<double>(loaded.by_ordinal.size());
  const double m3 = Percentile(replays.to3, 0.5), m1 = Percentile(replays.to1, 0.5);
  return absl::StrFormat("%.0f (%.0f) | %.1f%% | %.0f (%.0f) | %.1f%%", m3,
                         Percentile(replays.to3, 0.9), 100 * m3 / space, m1,
                         Percentile(replays.to1, 0.9), 100 * m1 / space);
}

// How the held-out replays see the other datasets.
enum class Neighbours {
  kSameDevice,    // the other shapes of the kernel on the held shape's device
  kSmallBudget,   // the same, each as `model` at 2 % of its space found it
  kOtherDevices,  // the held shape's device held out entirely: other models' shapes
};

constexpr double kSmallBudget = 0.02;

// What a neighbour dataset gives the fleet: the rows it measured (all, or
// those a small-budget `model` run measured) and the best of them.
struct Tuned {
  const Loaded* loaded = nullptr;
  std::vector<const DatasetRow*> rows;
  const DatasetRow* best = nullptr;
};

// `other` as `model` at kSmallBudget of its space, with no history, finds it
// (seed 1, batches of `batch`): the rows it measured.
Tuned TunedWithSmallBudget(const Loaded& other, int batch) {
  Tuned tuned{&other, {}, nullptr};
  const int64_t budget = static_cast<int64_t>(
      std::ceil(kSmallBudget * static_cast<double>(other.by_ordinal.size())));
  auto observe = [&](uint64_t ordinal, const v1::TrialResult&) {
    auto it = other.by_ordinal.find(ordinal);
    if (it != other.by_ordinal.end()) tuned.rows.push_back(it->second);
    return static_cast<int64_t>(tuned.rows.size()) < budget;
  };
  (void)ReplayStrategy(other, "model", 1, batch, {}, observe);
  return tuned;
}

Tuned TunedInFull(const Loaded& other) {
  Tuned tuned{&other, {}, nullptr};
  for (const DatasetRow& row : other.data.rows) tuned.rows.push_back(&row);
  return tuned;
}

// What a job tuning `held` gets from the fleet when the other datasets of
// its kernel (`neighbours` says which) are tuned shapes: the warm start
// (their best configs, nearest shape first as the coordinator ranks tuned
// shapes, TunedShapes; up to 8, as the coordinator's default) and the
// model's history (their OK rows, nearest shape first, under the
// coordinator's default FleetHistoryLimits, fleet_history.h; with other
// models, those of the held device's architecture family first; a dataset
// has no times of day, so its rows keep the file's order), as configs of
// `held`'s space, with where each shape was measured.
struct FromFleet {
  std::vector<uint64_t> warm;
  std::vector<server::PriorResult> history;
  std::vector<server::PriorShape> shapes;
};
FromFleet FleetOf(const Loaded& held, const std::vector<std::pair<std::string, Loaded>>& all,
                  Neighbours neighbours, int batch) {
  auto normalized = [&](const std::string& text) -> std::optional<v1::Shape> {
    absl::StatusOr<v1::Shape> parsed = ParseShape(text);
    if (!parsed.ok()) return std::nullopt;
    absl::StatusOr<v1::Shape> shape = NormalizeShape(held.spec, *parsed);
    return shape.ok() ? std::optional<v1::Shape>(*shape) : std::nullopt;
  };
  auto point = [&](const std::string& text) -> std::optional<std::vector<int64_t>> {
    std::optional<v1::Shape> shape = normalized(text);
    if (!shape.has_value()) return std::nullopt;
    std::vector<int64_t> values;
    for (const v1::DimValue& dim : shape->dims()) values.push_back(dim.value());
    return values;
  };
  const std::optional<std::vector<int64_t>> query = point(held.data.shape);
  if (!query.has_value()) return {};
  const std::string family = server::ArchitectureFamily(held.data.device);
  // Nearest first within a group; the groups in the coordinator's order.
  std::map<std::string, server::TunedShapes> groups;  // device -> its shapes
  std::map<std::string, Tuned> tuned_of;               // key (the dataset's path)
  for (const auto& [path, other] : all) {
    if (&other == &held || other.data.kernel_dir != held.data.kernel_dir) continue;
    const bool same_device = other.data.device == held.data.device;
    if (same_device != (neighbours != Neighbours::kOtherDevices)) continue;
    std::optional<std::vector<int64_t>> values = point(other.data.shape);
    if (!values.has_value()) continue;
    Tuned tuned = neighbours == Neighbours::kSmallBudget ? TunedWithSmallBudget(other, batch)
                                                         : TunedInFull(other);
    for (const DatasetRow* row : tuned.rows) {
      if (row->status == v1::TRIAL_STATUS_OK &&
          (!tuned.best || row->median_seconds < tuned.best->median_seconds)) {
        tuned.best = row;
      }
    }
    if (tuned.best == nullptr) continue;
    groups.try_emplace(other.data.device, query->size()).first->second.Put(path, *values);
    tuned_of[path] = std::move(tuned);
  }
  std::vector<std::string> devices;
  for (const auto& [device, shapes] : groups) devices.push_back(device);
  std::stable_partition(devices.begin(), devices.end(), [&](const std::string& device) {
    return !family.empty() && server::ArchitectureFamily(device) == family;
  });
  auto ordinal_of = [&](const std::string& text) -> std::optional<uint64_t> {
    absl::StatusOr<uint64_t> ordinal = OrdinalOfShortForm(*held.space, text);
    return ordinal.ok() ? std::optional<uint64_t>(*ordinal) : std::nullopt;
  };
  FromFleet fleet;
  const server::FleetHistoryLimits limits;  // the coordinator's defaults
  for (const std::string& device : devices) {
    for (const server::ShapeMatch& match :
         groups.at(device).NearestK(server::ShapeQuery(*query), 8)) {
      const Tuned& tuned = tuned_of.at(*match.tuning_key);
      std::optional<uint64_t> ordinal = ordinal_of(tuned.best->config);
      if (ordinal.has_value() && fleet.warm.size() < 8 &&
          std::find(fleet.warm.begin(), fleet.warm.end(), *ordinal) == fleet.warm.end()) {
        fleet.warm.push_back(*ordinal);
      }
      if (match.distance > limits.max_distance || fleet.shapes.size() >= limits.shapes) {
        continue;
      }
      const int shape = static_cast<int>(fleet.shapes.size());
      DeviceLimits device_limits = PlaceholderLimits(tuned.loaded->spec.backend());
      for (const auto& [name, value] : tuned.loaded->data.limits) device_limits[name] = value;
      fleet.shapes.push_back(server::PriorShape{*normalized(tuned.loaded->data.shape),
                                                device_limits,
                                                static_cast<int64_t>(tuned.rows.size())});
      for (const DatasetRow* row : tuned.rows) {
        if (fleet.history.size() >= limits.rows) break;
        if (row->status != v1::TRIAL_STATUS_OK || !(row->median_seconds > 0)) continue;
        // Rows whose config is not one of `held`'s space are kept out, as
        // the coordinator keeps them out.
        if (std::optional<uint64_t> config = ordinal_of(row->config)) {
          fleet.history.push_back(server::PriorResult{*config, row->median_seconds, shape});
        }
      }
    }
  }
  return fleet;
}

// Hold each shape out, and replay it as a new shape of a fleet that tuned
// the kernel's other shapes: on the same device in full (warm start alone
// for every strategy, and `model` with the history too), on the same device
// each found by `model` at 2 % of its space, and on the other device models
// only (the held shape's device never tuned). Per row, the evaluations to
// 3 % and 1 % of the optimum and the best after 2 % of the space.
void PrintWarmStart(const std::vector<std::pair<std::string, Loaded>>& all, const Flags& flags) {
  std::printf("\n### Warm start: each shape held out, the other shapes of its kernel as history"
              "\n\n| held out | device | neighbours | strategy | warm configs | history rows | "
              "to 3%%: median (p90) | %% of space | to 1%%: median (p90) | %% of space "
              "| best at 2%% |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  const std::pair<Neighbours, const char*> kinds[] = {
      {Neighbours::kSameDevice, "same device, exhaustive"},
      {Neighbours::kSmallBudget, "same device, each at 2%"},
      {Neighbours::kOtherDevices, "other devices only"}};
  for (const auto& [path, held] : all) {
    const std::string label = std::filesystem::path(path).filename().string();
    if (!absl::StrContains(label, flags.hold_out)) continue;
    for (const auto& [kind, kind_name] : kinds) {
      const FromFleet fleet = FleetOf(held, all, kind, flags.batch);
      if (fleet.warm.empty()) continue;
      for (absl::string_view name : absl::StrSplit(flags.strategies, ',', absl::SkipEmpty())) {
        for (bool with_history : {false, true}) {
          if (with_history && (name != "model" || fleet.history.empty())) continue;
          // Beyond the first kind, `model` with its history alone.
          if (kind != Neighbours::kSameDevice && !(name == "model" && with_history)) continue;
          ReplayStart start;
          start.warm_start = fleet.warm;
          if (with_history) {
            start.history = fleet.history;
            start.history_shapes = fleet.shapes;
          }
          absl::StatusOr<Replays> replays = ReplaySeeds(held, std::string(name), start, flags);
          if (!replays.ok()) continue;
          std::printf("| %s | %s | %s | %s | %zu | %zu | %s | %.3f |\n", label.c_str(),
                      held.data.device.c_str(), kind_name, std::string(name).c_str(),
                      fleet.warm.size(), start.history.size(),
                      EvaluationCells(*replays, held).c_str(),
                      Percentile(replays->best_at[0], 0.5));
          std::fflush(stdout);
        }
      }
    }
  }
}

void PrintDataset(const std::string& path, const Loaded& loaded, const Flags& flags) {
  const int64_t space = static_cast<int64_t>(loaded.by_ordinal.size());
  std::printf("\n### %s\n\n%s %s on %s: %lld configs measured (%lld valid in the replayed space), "
              "optimum %.4g ms, %d seeds, batches of %d\n\n",
              std::filesystem::path(path).filename().c_str(), loaded.spec.name().c_str(),
              loaded.data.shape.c_str(), loaded.data.device.c_str(),
              static_cast<long long>(space), static_cast<long long>(loaded.valid),
              loaded.optimum * 1e3, flags.seeds, flags.batch);
  std::printf("| strategy | to 3%%: median (p90) | %% of space | to 1%%: median (p90) | %% of space "
              "| best at 2%% | at 5%% | at 10%% | at 20%% |\n|---|---|---|---|---|---|---|---|---|\n");
  for (absl::string_view name : absl::StrSplit(flags.strategies, ',', absl::SkipEmpty())) {
    absl::StatusOr<Replays> replays = ReplaySeeds(loaded, std::string(name), {}, flags);
    if (!replays.ok()) {
      std::printf("| %s | %s |\n", std::string(name).c_str(), replays.status().ToString().c_str());
      continue;
    }
    std::printf("| %s | %s | %.3f | %.3f | %.3f | %.3f |\n", std::string(name).c_str(),
                EvaluationCells(*replays, loaded).c_str(), Percentile(replays->best_at[0], 0.5),
                Percentile(replays->best_at[1], 0.5), Percentile(replays->best_at[2], 0.5),
                Percentile(replays->best_at[3], 0.5));
    std::fflush(stdout);
  }
}

// A 10^6-point space (6 params of 10 values) with a constraint and a smooth
// landscape: the model strategy's Propose(64) after 64 results.
void PrintProposeTime() {
  v1::KernelSpec spec;
  spec.set_name("synthetic");
  spec.set_backend(v1::BACKEND_CPU);
  spec.add_problem()->set_name("N");
  std::string default_config;
  for (int p = 0; p < 6; ++p) {
    v1::Parameter* param = spec.add_params();
    param->set_name(absl::StrCat("P", p));
    for (int v = 1; v <= 10; ++v) param->add_values(v);
    absl::StrAppend(&default_config, p ? "," : "", "P", p, "=1");
  }
  spec.add_constraints()->set_expr("P0 * P1 <= 60");
  spec.set_default_config(default_config);
  auto shape = NormalizeShape(spec, *ParseShape("N=1"));
  auto space = ConfigSpace::Create(spec, *shape, PlaceholderLimits(v1::BACKEND_CPU));
  if (!space.ok()) {
    std::cerr << "search_bench: " << space.status() << "\n";
    return;
  }
  std::printf("\n### Propose(64) from a 10^6-point space (%llu points)\n\n"
              "| strategy | build s | Propose(64) ms, after 64 results (median of 5) |\n|---|---|---|\n",
              static_cast<unsigned long long>((*space)->full_size()));
  for (const char* name : {"random", "evolutionary", "model"}) {
    const auto start = std::chrono::steady_clock::now();
    server::StrategyOptions options;
    options.name = name;
    options.budget = 2000;
    options.seed = 1;
    auto strategy = server::MakeStrategy(space->get(), options);
    if (!strategy.ok()) continue;
    const double build =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<double> times;
    for (int round = 0; round < 6; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<uint64_t> proposed = (*strategy)->Propose(64);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (round > 0) times.push_back(ms);
      for (uint64_t ordinal : proposed) {
        std::vector<double> values;
        v1::Config config = (*space)->ConfigAt(ordinal);
        double seconds = 1e-3;
        for (int p = 0; p < config.values_size(); ++p) {
          seconds += 1e-4 * std::pow(static_cast<double>(config.values(p).value()) - 3 - p % 4, 2);
        }
        v1::TrialResult result;
        result.set_status(v1::TRIAL_STATUS_OK);
        result.mutable_measurement()->set_median_seconds(seconds);
        (*strategy)->Observe(ordinal, result);
      }
    }
    std::printf("| %s | %.3f | %.2f |\n", name, build, Percentile(times, 0.5));
  }
}

int Main(const Flags& flags) {
  std::vector<std::string> paths = flags.datasets;
  if (paths.empty()) {
    const std::string dir = std::string(TUNEFLEET_SOURCE_DIR) + "/bench/data";
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (absl::EndsWith(entry.path().string(), ".csv.gz")) paths.push_back(entry.path().string());
    }
    std::sort(paths.begin(), paths.end());
  }
  std::vector<std::pair<std::string, Loaded>> all;
  for (const std::string& path : paths) {
    absl::StatusOr<Loaded> loaded = LoadDataset(path, TUNEFLEET_SOURCE_DIR);
    if (!loaded.ok()) {
      std::cerr << "search_bench: " << path << ": " << loaded.status() << "\n";
      return 1;
    }
    if (!flags.held_out_only) PrintDataset(path, *loaded, flags);
    all.emplace_back(path, *std::move(loaded));
  }
  PrintWarmStart(all, flags);
  if (!flags.held_out_only) PrintProposeTime();
  return 0;
}

}  // namespace
}  // namespace tunefleet::bench

int main(int argc, char** argv) {
  CLI::App app{"search_bench: replay search strategies against exhaustive datasets"};
  tunefleet::bench::Flags flags;
  app.add_option("--seeds", flags.seeds, "seeds per strategy")->capture_default_str();
  app.add_option("--batch", flags.batch, "configs per Propose (a lease)")->capture_default_str();
  app.add_option("--strategies", flags.strategies, "comma-separated")->capture_default_str();
  app.add_flag("--held-out-only", flags.held_out_only,
               "print the held-out table alone (no per-dataset tables, no Propose timing)");
  app.add_option("--hold-out", flags.hold_out,
                 "hold out only the datasets whose file name contains this (the others are "
                 "still their neighbours)");
  app.add_option("DATASET", flags.datasets, "datasets (default: bench/data/**/*.csv.gz)");
  CLI11_PARSE(app, argc, argv);
  return tunefleet::bench::Main(flags);
}
