// The model strategy (adaptive_strategy.h).
#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "server/adaptive_strategy.h"
#include "server/cost_model.h"

namespace tunefleet::server {
namespace {

constexpr size_t kMinResults = 8;       // spread-out draws (or by priority) until then
constexpr uint64_t kScoreEveryUpTo = 4096;  // spaces this small are ranked whole
constexpr int kSampled = 2048;          // else: a uniform sample of this many ...
constexpr size_t kNeighboursOf = 8;     // ... plus the neighbours of the fastest
constexpr int kExploreEvery = 5;        // one pick in five is a spread-out draw,
constexpr int kLocalEvery = 2;          // else every other the best-predicted unused
constexpr size_t kLocalOf = 2;          // neighbour of the two fastest results,
constexpr size_t kLocalAfter = 16;      // once there are this many results (the
                                        // first two batches of 8: inside 2% of a
                                        // space of a thousand)
constexpr int kClimbSweeps = 4;         // priority: sweeps over the params
constexpr double kFailurePenalty = std::log(2.0);  // a failure: twice the slowest
constexpr double kLeastHistoryWeight = 0.25;  // a shape that saw little of its space

// Where a training row was measured: the space that evaluates its derived
// values and priority (nullptr: the job's), its context features, and how
// much the model trusts it.
struct Place {
  ConfigSpace* space = nullptr;
  std::vector<float> context;
  bool own = true;
  float weight = 1.0f;
};

class ModelStrategy : public AdaptiveStrategy {
 public:
  ModelStrategy(ConfigSpace* space, ValidConfigs valid, int64_t budget, uint64_t seed,
                std::vector<uint64_t> leading, const std::vector<PriorResult>& history,
                const std::vector<PriorShape>& shapes)
      : AdaptiveStrategy(space, std::move(valid), budget, seed, std::move(leading)),
        model_(CostModelOptions{.seed = seed}) {
    KeepHistory(history);
    features_ = digits().params() + space->derived_count() + (space->has_priority() ? 1 : 0);
    if (!history_.empty()) {
      own_ = Where(space, space->shape(), space->limits(), /*own=*/true);
      history_own_ = Where(space, space->shape(), space->limits(), /*own=*/false);
      for (const PriorShape& shape : shapes) places_.push_back(PlaceOf(shape));
      features_ += static_cast<int>(own_.context.size()) + 1;
    }
  }

 protected:
  // Refits once the results grew by a fifth (at least 8) since the last fit:
  // a fit costs milliseconds per hundred results, under the job's lock.
  void Learned() override {
    const size_t seen = observations().size();
    if (seen >= fitted_on_ + std::max<size_t>(kMinResults, fitted_on_ / 5)) stale_ = true;
  }
  // A result it was fitted on may be a lie: fitted again before the next pick.
  void Relearn() override { stale_ = true; }

  std::vector<uint64_t> Choose(int max) override {
    size_t ok = 0;
    for (const Observation& o : observations()) ok += o.ok;
    // The spec's priority knows the shape and the history does not: with a
    // priority, the history waits for the job's own first results.
    if (ok < kMinResults && (space()->has_priority() || ok + history_.size() < kMinResults)) {
      return Unlearned(max);
    }
    if ((stale_ || !model_.fitted()) && Fit()) {
      stale_ = false;
      fitted_on_ = observations().size();
    }
    if (!model_.fitted()) return Unlearned(max);

    std::vector<uint64_t> candidates = Candidates();
    if (candidates.empty()) return {};
    std::vector<float> rows;
    rows.reserve(candidates.size() * features_);
    for (uint64_t ordinal : candidates) AppendFeatures(ordinal, own_, &rows);
    absl::StatusOr<std::vector<float>> predicted = model_.Predict(rows, features_);
    if (!predicted.ok()) return Unlearned(max);
    std::vector<size_t> order(candidates.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return (*predicted)[a] < (*predicted)[b]; });
    const bool search_locally = observations().size() >= kLocalAfter;
    const std::vector<uint64_t> local =
        search_locally ? Local(candidates, *predicted) : std::vector<uint64_t>();
    std::vector<uint64_t> out;
    absl::flat_hash_set<uint64_t> taken;
    size_t next = 0, next_local = 0;
    while (static_cast<int>(out.size()) < max && next < order.size()) {
      ++picks_;
      std::optional<uint64_t> pick;
      if (picks_ % kExploreEvery == 0) pick = SpreadUnused(out);
      if (!pick.has_value() && search_locally && picks_ % kLocalEvery == 0) {
        while (next_local < local.size() && taken.contains(local[next_local])) ++next_local;
        if (next_local < local.size()) pick = local[next_local++];
      }
      if (!pick.has_value()) pick = candidates[order[next++]];
      if (taken.insert(*pick).second) out.push_back(*pick);
    }
    return out;
  }

 private:
  // The candidates one param away from the kLocalOf fastest results, best
  // predicted first: the search around what is known to be fast, which a
  // model fitted to few results ranks too low where params interact.
  std::vector<uint64_t> Local(const std::vector<uint64_t>& candidates,
                              const std::vector<float>& predicted) {
    absl::flat_hash_map<uint64_t, float> score;
    for (size_t i = 0; i < candidates.size(); ++i) score[candidates[i]] = predicted[i];
    std::vector<std::pair<float, uint64_t>> ranked;
    for (const Observation& best : Fastest(kLocalOf)) {
      std::vector<int> genes = digits().Digits(best.ordinal);
      for (int p = 0; p < digits().params(); ++p) {
        const int kept = genes[p];
        for (int v = 0; v < digits().radix(p); ++v) {
          if (v == kept) continue;
          genes[p] = v;
          auto it = score.find(digits().Ordinal(genes));
          if (it != score.end()) {
            ranked.emplace_back(it->second, it->first);
            score.erase(it);  // once, however many of the fastest it neighbours
          }
        }
        genes[p] = kept;
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<uint64_t> out;
    for (const auto& entry : ranked) out.push_back(entry.second);
    return out;
  }

  // The valid configs of `history`, each time as its log relative to the
  // fastest of its shape; the fastest few kept apart, fastest first.
  void KeepHistory(const std::vector<PriorResult>& history) {
    absl::flat_hash_map<int, double> fastest;  // log-seconds per shape
    std::vector<const PriorResult*> valid_rows;
    for (const PriorResult& row : history) {
      if (!(row.seconds > 0) || row.ordinal >= space()->full_size() || !IsValid(row.ordinal)) {
        continue;
      }
      valid_rows.push_back(&row);
      auto [it, inserted] = fastest.emplace(row.shape, std::log(row.seconds));
      if (!inserted) it->second = std::min(it->second, std::log(row.seconds));
    }
    for (const PriorResult* row : valid_rows) {
      history_.push_back(
          {row->ordinal, std::log(row->seconds) - fastest[row->shape], row->shape});
    }
    std::vector<Prior> ranked = history_;
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Prior& a, const Prior& b) { return a.relative < b.relative; });
    for (size_t i = 0; i < std::min(kNeighboursOf, ranked.size()); ++i) {
      history_fastest_.push_back(ranked[i].ordinal);
    }
  }

  // Before the model has enough to learn from: the best by priority of a
  // uniform sample, or spread-out draws (SpreadUnused).
  std::vector<uint64_t> Unlearned(int max) {
    std::vector<uint64_t> out;
    if (!space()->has_priority()) {
      for (int i = 0; i < max; ++i) {
        std::optional<uint64_t> ordinal = SpreadUnused(out);
        if (!ordinal.has_value()) break;
        out.push_back(*ordinal);
      }
      return out;
    }
    std::vector<uint64_t> candidates = Candidates();
    absl::flat_hash_set<uint64_t> pool(candidates.begin(), candidates.end());
    // Climb from the best of the pool: each param in turn set to the value
    // of highest priority, while that still changes anything.
    std::vector<uint64_t> ranked = ByPriority(candidates);
    for (size_t i = 0; i < std::min(kNeighboursOf, ranked.size()); ++i) {
      std::vector<int> genes = digits().Digits(ranked[i]);
      for (int sweep = 0; sweep < kClimbSweeps; ++sweep) {
        bool moved = false;
        for (int p = 0; p < digits().params(); ++p) {
          double best = PriorityOf(digits().Ordinal(genes));
          for (int v = 0; v < digits().radix(p); ++v) {
            std::vector<int> trial = genes;
            trial[p] = v;
            const uint64_t ordinal = digits().Ordinal(trial);
            if (Used(ordinal) || !IsValid(ordinal)) continue;
            const double priority = PriorityOf(ordinal);
            if (priority > best) {
              best = priority;
              genes = trial;
              moved = true;
            }
          }
          const uint64_t reached = digits().Ordinal(genes);
          if (!Used(reached) && IsValid(reached) && pool.insert(reached).second) {
            candidates.push_back(reached);
          }
        }
        if (!moved) break;
      }
    }
    ranked = ByPriority(candidates);
    for (size_t i = 0; i < ranked.size() && static_cast<int>(out.size()) < max; ++i) {
      out.push_back(ranked[i]);
    }
    return out;
  }

  // Binds the space: the priority of a config, -inf where it is NaN.
  double PriorityOf(uint64_t ordinal) {
    space()->Bind(ordinal);
    const double priority = space()->Priority();
    return std::isnan(priority) ? -HUGE_VAL : priority;
  }

  // Highest priority first; ties in ordinal order.
  std::vector<uint64_t> ByPriority(const std::vector<uint64_t>& ordinals) {
    std::vector<std::pair<double, uint64_t>> ranked;
    for (uint64_t ordinal : ordinals) ranked.emplace_back(-PriorityOf(ordinal), ordinal);
    std::sort(ranked.begin(), ranked.end());
    std::vector<uint64_t> out;
    for (const auto& entry : ranked) out.push_back(entry.second);
    return out;
  }

  // Unused valid configs to rank: all of a small space, else a sample and the
  // neighbours of the fastest results.
  std::vector<uint64_t> Candidates() {
    std::vector<uint64_t> out;
    if (!valid().truncated() && valid().count() <= kScoreEveryUpTo) {
      for (const OrdinalRun& run : valid().runs()) {
        for (uint64_t ordinal = run.first; ordinal < run.first + run.count; ++ordinal) {
          if (!Used(ordinal)) out.push_back(ordinal);
        }
      }
      return out;
    }
    absl::flat_hash_set<uint64_t> seen;
    for (int i = 0; i < kSampled; ++i) {
      std::optional<uint64_t> ordinal = RandomUnused();
      if (!ordinal.has_value()) break;
      if (seen.insert(*ordinal).second) out.push_back(*ordinal);
    }
    // The fastest of the job and of the history, and their neighbours.
    std::vector<uint64_t> seeds;
    for (const Observation& best : Fastest(kNeighboursOf)) seeds.push_back(best.ordinal);
    seeds.insert(seeds.end(), history_fastest_.begin(), history_fastest_.end());
    for (uint64_t seed : seeds) {
      if (!Used(seed) && !seen.contains(seed)) {  // history configs are valid
        seen.insert(seed);
        out.push_back(seed);
      }
      std::vector<int> genes = digits().Digits(seed);
      for (int p = 0; p < digits().params(); ++p) {
        const int kept = genes[p];
        for (int v = 0; v < digits().radix(p); ++v) {
          if (v == kept) continue;
          genes[p] = v;
          const uint64_t ordinal = digits().Ordinal(genes);
          if (!Used(ordinal) && !seen.contains(ordinal) && IsValid(ordinal)) {
            seen.insert(ordinal);
            out.push_back(ordinal);
          }
        }
        genes[p] = kept;
      }
    }
    return out;
  }

  // A config's features where it was measured: its param values, then its
  // derived values and priority at that shape and device; with a history,
  // the place's context (the problem's dims, log2, and the device's limits)
  // and whether the row is the job's own (1) or the history's (0): where the
  // job's results disagree with the history, the trees can tell them apart.
  void AppendFeatures(uint64_t ordinal, const Place& place, std::vector<float>* rows) {
    for (double value : digits().Values(ordinal)) rows->push_back(static_cast<float>(value));
    ConfigSpace* at = place.space != nullptr ? place.space : space();
    at->Bind(ordinal);
    for (int i = 0; i < at->derived_count(); ++i) {
      rows->push_back(static_cast<float>(at->DerivedValue(i)));
    }
    if (at->has_priority()) rows->push_back(static_cast<float>(at->Priority()));
    if (!history_.empty()) {
      rows->insert(rows->end(), place.context.begin(), place.context.end());
      rows->push_back(place.own ? 1.0f : 0.0f);
    }
  }

  // The place of the job's own space, or of a history shape measured at
  // `shape` on a device of `limits` (its own space when it has one).
  Place Where(ConfigSpace* at, const v1::Shape& shape, const DeviceLimits& limits, bool own) {
    Place place;
    place.space = at;
    place.own = own;
    for (const v1::DimValue& dim : space()->shape().dims()) {
      float value = NAN;
      for (const v1::DimValue& theirs : shape.dims()) {
        if (theirs.name() == dim.name() && theirs.value() > 0) {
          value = static_cast<float>(std::log2(static_cast<double>(theirs.value())));
        }
      }
      place.context.push_back(value);
    }
    for (const auto& [name, value] : space()->limits()) {
      auto it = limits.find(name);
      place.context.push_back(it != limits.end() ? static_cast<float>(it->second) : NAN);
    }
    return place;
  }

  // A history shape's place: a space of its own shape and device (the job's
  // device when its limits are unknown), or, where the spec cannot make one
  // there, the job's space with the shape's dims as context.
  Place PlaceOf(const PriorShape& prior) {
    const DeviceLimits& limits = prior.limits.empty() ? space()->limits() : prior.limits;
    absl::StatusOr<std::unique_ptr<ConfigSpace>> made =
        ConfigSpace::Create(space()->spec(), prior.shape, limits);
    ConfigSpace* at = nullptr;
    if (made.ok()) {
      at = made->get();
      owned_spaces_.push_back(*std::move(made));
    }
    Place place = Where(at, prior.shape, limits, /*own=*/false);
    // How much of its space the shape's tuning measured: an exhaustive
    // shape's rows count fully, a small budget's (whose times are relative
    // to a best that may be far from its optimum) down to a quarter.
    if (prior.measured > 0 && valid().count() > 0) {
      const double seen = std::min(
          1.0, static_cast<double>(prior.measured) / static_cast<double>(valid().count()));
      place.weight = static_cast<float>(std::max(kLeastHistoryWeight, std::sqrt(seen)));
    }
    return place;
  }

  const Place& PlaceOfShape(int shape) const {
    return shape >= 0 && static_cast<size_t>(shape) < places_.size() ? places_[shape] : history_own_;
  }

  // Targets: log-times relative to the fastest of their shape (the job's
  // own: its fastest so far), so that shapes of different sizes agree.
  bool Fit() {
    double fastest = HUGE_VAL, slowest = -HUGE_VAL;
    for (const Observation& o : observations()) {
      if (!o.ok) continue;
      fastest = std::min(fastest, std::log(o.seconds));
      slowest = std::max(slowest, std::log(o.seconds));
    }
    std::vector<float> rows, targets, weights;
    for (const Observation& o : observations()) {
      if (!o.ok && slowest == -HUGE_VAL) continue;  // nothing to compare a failure to
      AppendFeatures(o.ordinal, own_, &rows);
      targets.push_back(static_cast<float>(
          (o.ok ? std::log(o.seconds) : slowest + kFailurePenalty) - fastest));
      weights.push_back(1.0f);
    }
    for (const Prior& prior : history_) {
      const Place& place = PlaceOfShape(prior.shape);
      AppendFeatures(prior.ordinal, place, &rows);
      targets.push_back(static_cast<float>(prior.relative));
      weights.push_back(place.weight);
    }
    if (targets.empty()) return false;
    return model_.Fit(rows, features_, targets, weights).ok();
  }

  struct Prior {
    uint64_t ordinal = 0;
    double relative = 0;  // log-seconds over the fastest of its shape
    int shape = 0;        // PriorResult::shape
  };

  CostModel model_;
  Place own_;                  // the job's own results'
  Place history_own_;          // a history row of no known place: the job's
  std::vector<Place> places_;  // by PriorResult::shape
  std::vector<std::unique_ptr<ConfigSpace>> owned_spaces_;
  std::vector<Prior> history_;
  std::vector<uint64_t> history_fastest_;  // the history's fastest, for candidates
  int features_ = 0;
  bool stale_ = true;
  size_t fitted_on_ = 0;  // results the model was last fitted to
  int64_t picks_ = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeModelStrategy(ConfigSpace* space, ValidConfigs valid,
                                                  int64_t budget, uint64_t seed,
                                                  std::vector<uint64_t> leading,
                                                  std::vector<PriorResult> history,
                                                  std::vector<PriorShape> history_shapes) {
  return std::make_unique<ModelStrategy>(space, std::move(valid), budget, seed, std::move(leading),
                                         history, history_shapes);
}

}  // namespace tunefleet::server
