#include "server/tie_set.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tunefleet::server {
namespace {

// The standard error of a finalist's median from its rounds; nullopt when
// fewer than two rounds ran.
std::optional<double> StandardError(const Contender& contender) {
  if (contender.rounds < 2) return std::nullopt;
  return contender.rounds_cv * contender.time() /
         std::sqrt(static_cast<double>(contender.rounds));
}

}  // namespace

bool Tied(const Contender& fastest, const Contender& other) {
  const double gap = other.time() - fastest.time();
  if (gap <= kTieTolerance * fastest.time()) return true;
  std::optional<double> se_fastest = StandardError(fastest);
  std::optional<double> se_other = StandardError(other);
  if (!se_fastest.has_value() || !se_other.has_value()) return false;
  return gap <= 2 * std::sqrt(*se_fastest * *se_fastest + *se_other * *se_other);
}

std::optional<TieSet> TieSetOf(const std::vector<Contender>& round, const std::string& defender,
                               double defender_tolerance) {
  if (round.empty()) return std::nullopt;
  std::vector<size_t> order(round.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double time_a = round[a].time();
    const double time_b = round[b].time();
    return time_a != time_b ? time_a < time_b : round[a].config < round[b].config;
  });
  const Contender& fastest = round[order.front()];
  TieSet set;
  for (size_t i : order) {
    const bool defended =
        !defender.empty() && round[i].config == defender &&
        round[i].time() - fastest.time() <= defender_tolerance * fastest.time();
    if (i == order.front() || Tied(fastest, round[i]) || defended) set.members.push_back(i);
  }
  auto defended = std::find_if(set.members.begin(), set.members.end(),
                               [&](size_t i) { return round[i].config == defender; });
  set.chosen = !defender.empty() && defended != set.members.end() ? *defended
                                                                   : set.members.front();
  set.chosen_gap = fastest.time() > 0 ? round[set.chosen].time() / fastest.time() - 1 : 0;
  return set;
}

}  // namespace tunefleet::server
