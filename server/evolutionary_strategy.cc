// The evolutionary strategy (adaptive_strategy.h).
#include <algorithm>
#include <memory>

#include "server/adaptive_strategy.h"

namespace tunefleet::server {
namespace {

constexpr size_t kPopulation = 16;  // the fastest results breed
constexpr size_t kMinParents = 4;   // before that many, configs are drawn uniformly
constexpr int kTournament = 3;
constexpr int kChildTries = 32;     // children bred before a uniform draw instead
constexpr double kExplore = 0.1;    // share of uniform draws once breeding
constexpr double kNeighbourMove = 0.7;  // a mutation moves to an adjacent value

class EvolutionaryStrategy : public AdaptiveStrategy {
 public:
  EvolutionaryStrategy(ConfigSpace* space, ValidConfigs valid, int64_t budget, uint64_t seed,
                       std::vector<uint64_t> leading)
      : AdaptiveStrategy(space, std::move(valid), budget, seed, std::move(leading)) {}

 protected:
  std::vector<uint64_t> Choose(int max) override {
    std::vector<Observation> population = Fastest(kPopulation);
    std::vector<uint64_t> out;
    std::uniform_real_distribution<double> coin(0, 1);
    for (int i = 0; i < max; ++i) {
      std::optional<uint64_t> pick;
      if (population.size() >= kMinParents && coin(rng()) >= kExplore) {
        pick = Child(population, out);
      }
      if (!pick.has_value()) pick = RandomUnused();
      if (!pick.has_value()) break;
      out.push_back(*pick);
    }
    return out;
  }

 private:
  const Observation& Tournament(const std::vector<Observation>& population) {
    std::uniform_int_distribution<size_t> pick(0, population.size() - 1);
    size_t best = pick(rng());
    for (int i = 1; i < kTournament; ++i) best = std::min(best, pick(rng()));  // fastest first
    return population[best];
  }

  void Mutate(std::vector<int>* genes) {
    const int params = digits().params();
    std::uniform_real_distribution<double> coin(0, 1);
    std::uniform_int_distribution<int> which(0, params - 1);
    bool mutated = false;
    for (int p = 0; p < params; ++p) {
      if (coin(rng()) * params < 1) mutated |= MutateOne(p, genes);
    }
    for (int tries = 0; !mutated && tries < 4 * params; ++tries) mutated = MutateOne(which(rng()), genes);
  }

  // Moves param `p` to another value; false when it has only one.
  bool MutateOne(int p, std::vector<int>* genes) {
    const int radix = digits().radix(p);
    if (radix < 2) return false;
    std::uniform_real_distribution<double> coin(0, 1);
    int& gene = (*genes)[p];
    if (coin(rng()) < kNeighbourMove) {
      const int step = (gene == 0) ? 1 : (gene == radix - 1) ? -1 : (coin(rng()) < 0.5 ? -1 : 1);
      gene += step;
    } else {
      std::uniform_int_distribution<int> any(0, radix - 2);
      const int value = any(rng());
      gene = value >= gene ? value + 1 : value;  // any other value
    }
    return true;
  }

  std::optional<uint64_t> Child(const std::vector<Observation>& population,
                                const std::vector<uint64_t>& batch) {
    std::uniform_int_distribution<int> bit(0, 1);
    for (int tries = 0; tries < kChildTries; ++tries) {
      std::vector<int> mother = digits().Digits(Tournament(population).ordinal);
      const std::vector<int> father = digits().Digits(Tournament(population).ordinal);
      for (size_t p = 0; p < mother.size(); ++p) {
        if (bit(rng())) mother[p] = father[p];
      }
      Mutate(&mother);
      const uint64_t ordinal = digits().Ordinal(mother);
      if (Used(ordinal) || std::find(batch.begin(), batch.end(), ordinal) != batch.end()) continue;
      if (IsValid(ordinal)) return ordinal;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeEvolutionaryStrategy(ConfigSpace* space, ValidConfigs valid,
                                                         int64_t budget, uint64_t seed,
                                                         std::vector<uint64_t> leading) {
  return std::make_unique<EvolutionaryStrategy>(space, std::move(valid), budget, seed, std::move(leading));
}

}  // namespace tunefleet::server
