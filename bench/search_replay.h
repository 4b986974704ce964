// Replaying a search strategy against a dataset of an exhaustive run
// (search_dataset.h) instead of measuring: the strategy proposes, the
// dataset answers with the time it recorded. What bench/search_bench and
// the replay tests share.
#ifndef TUNEFLEET_BENCH_SEARCH_REPLAY_H_
#define TUNEFLEET_BENCH_SEARCH_REPLAY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "bench/search_dataset.h"
#include "common/config_space.h"
#include "server/search_strategy.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::bench {

// A dataset with the config space it was measured over rebuilt.
struct Loaded {
  SearchDataset data;
  v1::KernelSpec spec;
  std::unique_ptr<ConfigSpace> space;
  absl::flat_hash_map<uint64_t, const DatasetRow*> by_ordinal;
  std::optional<uint64_t> default_ordinal;
  double optimum = 0;           // the fastest OK median
  std::string optimum_config;   // its config, short form
  int64_t valid = 0;            // valid configs of the space
};

// Reads the dataset at `path`; its kernel directory is taken relative to
// `source_dir` unless absolute. The errors of ReadDataset, of loading the
// kernel, and InvalidArgument for a config the space does not hold.
absl::StatusOr<Loaded> LoadDataset(const std::string& path, const std::string& source_dir);

// The dataset's result for a config; a config it lacks (the space of the
// replay is a little larger than the measured one) is INVALID_CONFIG.
v1::TrialResult ResultOf(const Loaded& loaded, uint64_t ordinal);

// What a replay starts from besides the dataset's default config.
struct ReplayStart {
  std::vector<uint64_t> warm_start;            // measured first, after the default
  std::vector<server::PriorResult> history;    // other shapes' trials (model only)
  std::vector<server::PriorShape> history_shapes;  // where each was measured
};

// Called with each config the strategy proposed and the dataset's result
// for it, in proposal order; returns false to end the replay.
using ReplayObserver = std::function<bool(uint64_t ordinal, const v1::TrialResult& result)>;

// Replays `strategy` (MakeStrategy's names) seeded with `seed` with a
// budget of the whole dataset, `batch` configs per Propose: each proposal
// is answered from the dataset, observed by the strategy, then by
// `observer`. Ends when the strategy is exhausted or `observer` returns
// false. The errors of MakeStrategy.
absl::Status ReplayStrategy(const Loaded& loaded, const std::string& strategy, uint64_t seed,
                            int batch, const ReplayStart& start, const ReplayObserver& observer);

// One strategy replayed to its end with a budget of the whole dataset.
struct ReplayOutcome {
  std::string best_config;  // short form, as the space prints it; empty when none passed
  double best_seconds = 0;
  int64_t evaluations = 0;             // configs proposed in all
  int64_t evaluations_to_optimum = -1;  // when the optimum was first measured; -1: never
};

// Proposes `batch` configs at a time from `strategy` (MakeStrategy's names)
// seeded with `seed`, with the dataset's default measured first, until it is
// exhausted. The errors of MakeStrategy.
absl::StatusOr<ReplayOutcome> ReplayToEnd(const Loaded& loaded, const std::string& strategy,
                                          uint64_t seed, int batch);

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_SEARCH_REPLAY_H_
