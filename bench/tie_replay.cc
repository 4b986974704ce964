// tie_replay: replays re-tunes of the exhaustive datasets (bench/data/) under
// measurement noise, without a device, and compares two rules for the
// served config: the fastest finalist of the newest job, and the
// coordinator's own DeriveBest (tie sets and the defender,
// docs/measurement.md "Tie sets"). The dataset's medians are taken as the
// truth; the true tie set is every config within 1% of the true optimum.
//
// One sequence: `--retunes` jobs of one key, oldest first. Each job has a
// device factor d (normal, mean 1, sd `noise`: the clock and the device,
// common to the job's measurements) and measures
//   the search:     every OK config once, true x d x (1 + e), e ~ N(0, noise);
//   the finalists:  the `--finalists` fastest of its search and the config
//                   served before it (as the coordinator adds it), each in
//                   `--rounds` rounds of true x d x (1 + e), combined as the
//                   worker does (median of the rounds, and their CV).
// After each job the served config is read with each rule. Printed per
// dataset and noise: how often each rule served a config outside the true
// tie set, how often the served config changed from one re-tune to the
// next, and the served config's mean true time over the optimum's.
//
//   tie_replay [--seeds 200] [--retunes 10] [--noise 0.005,0.01,0.02]
//              [--finalists 5] [--rounds 3] [DATASET...]
//   (no DATASET: every bench/data/*.csv.gz)
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/search_dataset.h"
#include "server/best_derivation.h"
#include "server/store/store.h"
#include "worker/measurement.h"

namespace tunefleet::bench {
namespace {

struct Flags {
  int seeds = 200;
  int retunes = 10;
  std::vector<double> noise = {0.005, 0.01, 0.02};
  int finalists = 5;
  int rounds = 3;
  std::vector<std::string> datasets;
};

// How one rule fared over every sequence.
struct Tally {
  int served = 0;       // re-tunes read
  int outside = 0;      // served outside the true tie set
  int changes = 0;      // served config differs from the re-tune before
  double slowdown = 0;  // sum of served true time / optimum - 1
  void Add(double truth, double optimum, bool changed) {
    ++served;
    outside += truth > optimum * (1 + server::kTieTolerance);
    changes += changed;
    slowdown += truth / optimum - 1;
  }
};

struct Replay {
  std::vector<std::string> configs;  // OK rows of the dataset
  std::vector<double> truth;
  double optimum = 0;
  int true_ties = 0;  // configs within 1% of the optimum
};

Replay Load(const SearchDataset& dataset) {
  Replay replay;
  for (const DatasetRow& row : dataset.rows) {
    if (row.status != v1::TRIAL_STATUS_OK || !(row.median_seconds > 0)) continue;
    replay.configs.push_back(row.config);
    replay.truth.push_back(row.median_seconds);
  }
  replay.optimum = *std::min_element(replay.truth.begin(), replay.truth.end());
  for (double t : replay.truth) replay.true_ties += t <= replay.optimum * (1 + server::kTieTolerance);
  return replay;
}

// One sequence of re-tunes; adds each rule's reading after every job.
void Sequence(const Replay& replay, const Flags& flags, double noise, uint64_t seed,
              Tally* fastest_rule, Tally* tie_rule) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> error(0, noise);
  std::vector<server::TrialRecord> rows;
  int served_fastest = -1;
  int served_tie = -1;
  for (int job = 0; job < flags.retunes; ++job) {
    const double device = 1 + error(random);
    std::vector<size_t> order(replay.truth.size());
    std::vector<double> searched(replay.truth.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
      searched[i] = replay.truth[i] * device * (1 + error(random));
    }
    const size_t n = std::min<size_t>(flags.finalists, order.size());
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](size_t a, size_t b) { return searched[a] < searched[b]; });
    std::vector<size_t> finalists(order.begin(), order.begin() + n);
    if (served_tie >= 0 &&
        std::find(finalists.begin(), finalists.end(), served_tie) == finalists.end()) {
      finalists.push_back(served_tie);  // the defender is measured again
    }
    int fastest = -1;
    double fastest_median = 0;
    for (size_t i : finalists) {
      std::vector<v1::Measurement> measured(flags.rounds);
      std::vector<double> medians;
      for (v1::Measurement& round : measured) {
        round.set_median_seconds(replay.truth[i] * device * (1 + error(random)));
        medians.push_back(round.median_seconds());
      }
      const v1::Measurement combined = worker::CombineRounds(measured);
      server::TrialRecord row;
      row.job_id = absl::StrCat("job-", job);
      row.tuning_key = "key";
      row.config = replay.configs[i];
      row.status = v1::TRIAL_STATUS_OK;
      row.median_seconds = combined.median_seconds();
      row.rounds = flags.rounds;
      row.rounds_cv = worker::CoefficientOfVariation(medians);
      row.round = server::TrialRound::kFinalists;
      row.finished_unix_ms = job + 1;
      rows.push_back(row);
      if (fastest < 0 || row.median_seconds < fastest_median) {
        fastest = static_cast<int>(i);
        fastest_median = row.median_seconds;
      }
    }
    fastest_rule->Add(replay.truth[fastest], replay.optimum,
                      served_fastest >= 0 && fastest != served_fastest);
    served_fastest = fastest;

    const std::optional<server::TrialRecord> best = server::DeriveBest(rows, {}, {});
    const int index = static_cast<int>(
        std::find(replay.configs.begin(), replay.configs.end(), best->config) -
        replay.configs.begin());
    tie_rule->Add(replay.truth[index], replay.optimum, served_tie >= 0 && index != served_tie);
    served_tie = index;
  }
}

void Print(const std::string& name, const char* rule, double noise, const Tally& tally) {
  std::printf("| %s | %.1f%% | %s | %.1f%% | %.2f | %.2f%% |\n", name.c_str(), 100 * noise, rule,
              100.0 * tally.outside / tally.served,
              static_cast<double>(tally.changes) / (tally.served / 10.0),
              100 * tally.slowdown / tally.served);
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"replays re-tunes of exhaustive datasets under noise: the served config by two rules"};
  app.add_option("--seeds", flags.seeds, "sequences per dataset and noise")->check(CLI::PositiveNumber);
  app.add_option("--retunes", flags.retunes, "jobs per sequence")->check(CLI::PositiveNumber);
  app.add_option("--noise", flags.noise, "measurement noise (sd, a fraction)")->delimiter(',');
  app.add_option("--finalists", flags.finalists, "finalists per job")->check(CLI::PositiveNumber);
  app.add_option("--rounds", flags.rounds, "finalist rounds")->check(CLI::PositiveNumber);
  app.add_option("DATASET", flags.datasets, "datasets (default: bench/data/*.csv.gz)");
  CLI11_PARSE(app, argc, argv);
  if (flags.datasets.empty()) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(TUNEFLEET_SOURCE_DIR) + "/bench/data")) {
      if (absl::EndsWith(entry.path().string(), ".csv.gz")) {
        flags.datasets.push_back(entry.path().string());
      }
    }
    std::sort(flags.datasets.begin(), flags.datasets.end());
  }
  std::printf("%d sequences of %d re-tunes per dataset and noise; %d finalists, %d rounds\n\n",
              flags.seeds, flags.retunes, flags.finalists, flags.rounds);
  std::printf("| dataset | noise | rule | served outside the true tie set | changes per 10 "
              "re-tunes | served over the optimum |\n|---|---|---|---|---|---|\n");
  for (const std::string& path : flags.datasets) {
    absl::StatusOr<SearchDataset> dataset = ReadDataset(path);
    if (!dataset.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), dataset.status().ToString().c_str());
      return 1;
    }
    const Replay replay = Load(*dataset);
    if (replay.configs.empty()) continue;
    const std::string name = absl::StrCat(std::filesystem::path(path).filename().string(), " (",
                                          replay.true_ties, " tied)");
    for (double noise : flags.noise) {
      Tally fastest_rule;
      Tally tie_rule;
      for (int seed = 0; seed < flags.seeds; ++seed) {
        Sequence(replay, flags, noise, static_cast<uint64_t>(seed), &fastest_rule, &tie_rule);
      }
      Print(name, "fastest finalist", noise, fastest_rule);
      Print(name, "tie set + defender", noise, tie_rule);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tunefleet::bench

int main(int argc, char** argv) { return tunefleet::bench::Main(argc, argv); }
