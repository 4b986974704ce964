#include "server/adaptive_strategy.h"

#include <algorithm>

namespace tunefleet::server {
namespace {

// Draws before rejection sampling (a truncated valid set) gives up.
constexpr int kRejectionTries = 20000;
// Uniform draws of a used config before the draw walks to the next unused.
constexpr int kRedraws = 16;
// Uniform draws that SpreadUnused picks the most spread-out from.
constexpr int kSpreadDraws = 32;

}  // namespace

AdaptiveStrategy::AdaptiveStrategy(ConfigSpace* space, ValidConfigs valid, int64_t budget,
                                   uint64_t seed, std::vector<uint64_t> leading)
    : space_(space),
      valid_(std::move(valid)),
      digits_(space->spec()),
      rng_(seed),
      leading_(std::move(leading)),
      total_(valid_.truncated() ? budget
                                : std::min<int64_t>(budget, static_cast<int64_t>(valid_.count()))),
      covers_space_(!valid_.truncated() && budget >= static_cast<int64_t>(valid_.count())),
      coverage_(digits_) {}

std::vector<uint64_t> AdaptiveStrategy::Propose(int max) {
  std::vector<uint64_t> out;
  auto take = [&](uint64_t ordinal) {
    if (static_cast<int>(out.size()) >= max || proposed_ >= total_ || Used(ordinal)) return;
    Use(ordinal);
    ++proposed_;
    out.push_back(ordinal);
  };
  while (next_leading_ < leading_.size() && static_cast<int>(out.size()) < max &&
         proposed_ < total_) {
    take(leading_[next_leading_++]);
  }
  // The subclass may offer used or invalid configs; ask until the batch is
  // full, with uniform draws when it has nothing new.
  for (int round = 0; static_cast<int>(out.size()) < max && proposed_ < total_ && round < 4;
       ++round) {
    for (uint64_t ordinal : Choose(max - static_cast<int>(out.size()))) {
      if (!Used(ordinal) && IsValid(ordinal)) take(ordinal);
    }
  }
  while (static_cast<int>(out.size()) < max && proposed_ < total_) {
    std::optional<uint64_t> ordinal = RandomUnused();
    if (!ordinal.has_value()) {
      total_ = proposed_;  // nothing valid is left to find
      covers_space_ = true;
      break;
    }
    take(*ordinal);
  }
  return out;
}

void AdaptiveStrategy::Observe(uint64_t ordinal, const v1::TrialResult& result) {
  if (!Used(ordinal)) {  // a restored trial: it counts against the budget
    Use(ordinal);
    ++proposed_;
  }
  Observation observation;
  observation.ordinal = ordinal;
  observation.ok = result.status() == v1::TRIAL_STATUS_OK &&
                   result.measurement().median_seconds() > 0;
  observation.seconds = result.measurement().median_seconds();
  observations_.push_back(observation);
  Learned();
}

void AdaptiveStrategy::Amend(uint64_t ordinal, const std::optional<v1::TrialResult>& trusted) {
  const size_t erased = std::erase_if(
      observations_, [ordinal](const Observation& o) { return o.ordinal == ordinal; });
  if (erased == 0 && !trusted.has_value()) return;
  if (trusted.has_value()) {
    observations_.push_back(Observation{
        ordinal,
        trusted->status() == v1::TRIAL_STATUS_OK && trusted->measurement().median_seconds() > 0,
        trusted->measurement().median_seconds()});
  }
  Relearn();
}

void AdaptiveStrategy::Use(uint64_t ordinal) {
  if (used_.insert(ordinal).second) coverage_.Add(digits_.Digits(ordinal));
}

bool AdaptiveStrategy::IsValid(uint64_t ordinal) {
  if (ordinal >= space_->full_size()) return false;
  space_->Bind(ordinal);
  return space_->Valid();
}

std::optional<uint64_t> AdaptiveStrategy::RandomUnused() {
  if (!valid_.truncated()) {
    const uint64_t count = valid_.count();
    if (used_.size() >= count) return std::nullopt;
    std::uniform_int_distribution<uint64_t> pick(0, count - 1);
    uint64_t index = pick(rng_);
    for (int i = 0; i < kRedraws && Used(valid_.At(index)); ++i) index = pick(rng_);
    // Mostly used up: walk on from the last draw to the next unused config.
    for (uint64_t step = 0; step < count && Used(valid_.At(index)); ++step) {
      index = (index + 1) % count;
    }
    return Used(valid_.At(index)) ? std::nullopt : std::optional<uint64_t>(valid_.At(index));
  }
  std::uniform_int_distribution<uint64_t> pick(0, space_->full_size() - 1);
  for (int i = 0; i < kRejectionTries; ++i) {
    const uint64_t ordinal = pick(rng_);
    if (!Used(ordinal) && IsValid(ordinal)) return ordinal;
  }
  return std::nullopt;
}

std::optional<uint64_t> AdaptiveStrategy::SpreadUnused(const std::vector<uint64_t>& also) {
  if (!coverage_.enabled()) return RandomUnused();
  PairCoverage coverage = coverage_;
  for (uint64_t ordinal : also) coverage.Add(digits_.Digits(ordinal));
  std::optional<uint64_t> best;
  int best_new = -1;
  for (int i = 0; i < kSpreadDraws; ++i) {
    std::optional<uint64_t> drawn = RandomUnused();
    if (!drawn.has_value()) break;
    const int uncovered = coverage.Uncovered(digits_.Digits(*drawn));
    if (uncovered > best_new) {
      best_new = uncovered;
      best = drawn;
    }
  }
  return best;
}

std::vector<AdaptiveStrategy::Observation> AdaptiveStrategy::Fastest(size_t n) const {
  std::vector<Observation> ok;
  for (const Observation& o : observations_) {
    if (o.ok) ok.push_back(o);
  }
  const size_t keep = std::min(n, ok.size());
  std::partial_sort(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(keep), ok.end(),
                    [](const Observation& a, const Observation& b) {
                      return a.seconds < b.seconds ||
                             (a.seconds == b.seconds && a.ordinal < b.ordinal);
                    });
  ok.resize(keep);
  return ok;
}

}  // namespace tunefleet::server
