// The trials of one job target (one device model and toolkit): which configs
// wait, which are leased (by which lease and epoch), which are done, and the
// fastest results so far.
#ifndef TUNEFLEET_SERVER_TARGET_TRIALS_H_
#define TUNEFLEET_SERVER_TARGET_TRIALS_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/config_space.h"
#include "server/search_strategy.h"
#include "server/stop_rules.h"
#include "tunefleet/v1/tuning_service.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::server {

// A finished trial as kept for summaries.
struct TrialOutcome {
  uint64_t ordinal = 0;
  v1::TrialResult result;
  std::string principal;  // who measured it ("" where unknown)
};

// Who takes or gives back configs, for the loss rule (TargetTrials::Take,
// Release): a config one principal lost goes to another principal first,
// and is recorded WORKER_LOST only once no live principal that has not lost
// it remains, so that one certificate that leases and vanishes cannot empty
// a job. The default (no principal) takes part in no such rule.
struct Holder {
  std::string principal;
  // Whether a live principal with a device of the target's model and
  // toolkit is not in `besides` (JobManager::AnyActivePrincipal): the loss
  // rule asks only that. Unset: none lives.
  std::function<bool(const std::vector<std::string>& besides)> any_live_besides;

  bool AnyLiveBesides(const std::vector<std::string>& besides) const {
    return any_live_besides && any_live_besides(besides);
  }
};

// Thread-safety: not thread-safe; owned and locked by the JobManager.
class TargetTrials {
 public:
  // `max_attempts`: leases a config may lose (expiry) before it is recorded
  // as WORKER_LOST, so that a config that kills workers cannot stall a job;
  // with the loss rule (Holder), and only once every live principal has
  // lost it.
  // `finalists`: when the search is over, the fastest `finalists` OK configs
  // (if at least two) are measured again in one finalists lease, and the
  // winner comes from that round; 0 or 1 turns the round off.
  // `plateau_batches`: the plateau rule (stop_rules.h); 0 turns it off.
  TargetTrials(std::unique_ptr<ConfigSpace> space,
               std::unique_ptr<SearchStrategy> strategy, int max_attempts,
               std::optional<uint64_t> default_ordinal, int finalists,
               int plateau_batches = 0);

  // Makes `ordinal` (the config served for the key before this job) a
  // finalist, measured side by side with the job's fastest configs even when
  // the search did not find it among them; the tie rule keeps it first while
  // it is tied with the fastest, or within `tolerance` of it (its measured
  // run-to-run spread, DefenderTolerance; server/tie_set.h). Ignored when
  // the config is not valid in the space, or the finalists round is off.
  void Defend(uint64_t ordinal, double tolerance = 0);

  // Hands out up to `max` configs to (lease_id, epoch): re-queued configs
  // first (but those `holder`'s principal lost while a live principal that
  // has not lost them remains), then new proposals of the strategy; once the
  // search is over, the finalists (all of them, whatever `max`, and the
  // defender), with `*finalists` set (under the same rule for a finalists
  // lease the principal lost).
  std::vector<uint64_t> Take(int max, const std::string& lease_id,
                             int64_t epoch, bool* finalists, const Holder& holder = {});

  // Hands configs of a lease that another coordinator process granted
  // (server/lease_receipts.h) to (lease_id, epoch), as far as each is still
  // to be measured: one queued again, proposed ahead, or never handed out
  // here (while the strategy still proposes); and, when `in_hand(ordinal)`
  // (its result came with the receipt), also one leased now under another
  // lease, whose later report of it is then stale. One queued again that
  // `holder`'s principal lost is left to others, as Take leaves it. Returns
  // those taken: none once the finalists round is out or over.
  std::vector<uint64_t> Adopt(const std::vector<uint64_t>& ordinals,
                              const std::function<bool(uint64_t)>& in_hand,
                              const std::string& lease_id, int64_t epoch,
                              const Holder& holder = {});

  // Proposes up to `max` configs before any device asks for them, so that
  // compile-only workers compile them first (docs/architecture.md, "Compile
  // once for the fleet"). Returns only configs never returned here before;
  // they wait, and Take hands them out after the configs queued again, in
  // the order proposed (the plateau rule counts them then). At most `limit`
  // configs wait proposed ahead; none are proposed once the search is over.
  // A learning strategy proposes them from the results it has now.
  std::vector<uint64_t> ProposeAhead(int max, int limit);
  // Configs proposed ahead and not yet handed out.
  int64_t ahead() const { return static_cast<int64_t>(ahead_.size()); }

  // Records `result` when `ordinal` is still held by (lease_id, epoch).
  // Returns false, changing nothing, for a stale or duplicate report.
  // `principal` measured it.
  bool Complete(uint64_t ordinal, const std::string& lease_id, int64_t epoch,
                const v1::TrialResult& result, const std::string& principal = "");

  // Re-measurements of configs the search measured already (spot checks,
  // server/spot_checks.h): `ordinal` waits until `deadline` for a lease of
  // a principal not in `not_by`; the caller ranks its result (Rerank). The
  // finalists round (or, without one, the end of the search) waits for
  // every recheck. False, queueing nothing, once the finalists round was
  // leased or the target given up, once a time budget stopped the search
  // (but for a referee's), for a config not measured, or for one queued
  // already.
  bool Recheck(uint64_t ordinal, bool referee, std::vector<std::string> not_by,
               absl::Time deadline);
  // Up to `max` queued rechecks that `principal` may take, all of one stage
  // (`*referee` says which), handed to (lease_id, epoch). Looks at no more
  // than a few hundred waiting ones.
  std::vector<uint64_t> TakeRechecks(int max, const std::string& principal,
                                     const std::string& lease_id, int64_t epoch, bool* referee);
  // Whether a recheck waits that `principal` may take (as TakeRechecks).
  bool HasRecheckFor(const std::string& principal) const;
  bool HoldsRecheck(uint64_t ordinal, const std::string& lease_id, int64_t epoch) const;
  // The recheck of `ordinal` was measured: it leaves the queue. The
  // finalists round may start only at RechecksSettled.
  // REQUIRES: HoldsRecheck(ordinal, ...).
  void EndRecheck(uint64_t ordinal);
  // The recheck's lease (lease_id, epoch) of `principal` ended without its
  // result: it waits again, until `deadline`, for another principal.
  // (Release is for search and finalists leases only.)
  void ReleaseRecheck(uint64_t ordinal, const std::string& lease_id, int64_t epoch,
                      const std::string& principal, absl::Time deadline);
  // Ranks `ordinal` at `result` measured by `principal`, whatever its rank
  // was (a result that is not an OK run measured in full takes it out of
  // the ranking); the strategy learns `result` in place of what it observed
  // (SearchStrategy::Amend).
  void Rerank(uint64_t ordinal, const v1::TrialResult& result, const std::string& principal);
  // After EndRecheck and Rerank: starts the finalists round (or ends the
  // search) when nothing else is left.
  void RechecksSettled() { MaybeStartFinals(); }
  // Drops the waiting rechecks whose deadline passed, or that no principal
  // taking part may take (`takeable(not_by)` false); returns them, with
  // whether each was a referee's.
  std::vector<std::pair<uint64_t, bool>> DropStaleRechecks(
      absl::Time now, const std::function<bool(const std::vector<std::string>&)>& takeable);
  // Takes `principal`'s measurements out of the ranking (a quarantined
  // principal's); returns their configs, which rank again once re-measured.
  std::vector<uint64_t> Unrank(const std::string& principal);
  // The strategy forgets what it observed of `ordinal` (a quarantined
  // principal's result) and learns `trusted` instead, when there is one.
  void Amend(uint64_t ordinal, const std::optional<v1::TrialResult>& trusted);
  // Rechecks queued or leased.
  int64_t rechecks() const { return static_cast<int64_t>(rechecks_.size()); }

  // Gives back a config held by (lease_id, epoch), lost by `holder`'s
  // principal when `expired`. When the config has lost `max_attempts`
  // leases and no live principal has yet to lose it (`holder.AnyLiveBesides`), it is
  // completed as WORKER_LOST and that result is returned so the caller can
  // store it. A lost finalists lease is offered again until it too has lost
  // `max_attempts` leases; then the first round's results stand.
  std::optional<v1::TrialResult> Release(uint64_t ordinal,
                                         const std::string& lease_id,
                                         int64_t epoch, bool expired,
                                         const Holder& holder = {});

  // Puts every config leased under a lease for which `held` is false back in
  // the queue (the finalists lease back to waiting), as if the lease had been
  // returned; no lease is counted as lost. Returns how many configs moved.
  // For repairs: a lease that vanished without being returned.
  int64_t ReclaimOrphans(const std::function<bool(const std::string& lease_id)>& held);

  // Marks a config done from a stored trial (coordinator restart), measured
  // by `principal`.
  void Restore(uint64_t ordinal, const v1::TrialResult& result,
               const std::string& principal = "");

  // Ends the search for `reason` (a stop rule): the strategy is asked for
  // nothing more; configs leased or queued again finish (those proposed
  // ahead and never handed out are dropped), then the finalists round runs
  // as after any search. The first reason stands; a search that
  // ended on its own is not changed.
  // REQUIRES: `reason` is TIME_BUDGET or PLATEAU.
  void StopSearch(v1::StopReason reason);
  // Gives the target up (no worker of its device model is left): configs
  // queued, proposed ahead or leased are dropped (a late report of a lease
  // is stale), the search stops for `reason` and the finalists round is
  // skipped; results recorded so far stand. Finished() afterwards.
  void Abandon(v1::StopReason reason);
  // Why the search ended: the rule that stopped it, else (once the strategy
  // is exhausted) SPACE_EXHAUSTED or TRIAL_BUDGET (SearchStrategy::
  // covers_space); UNSPECIFIED while it still proposes.
  v1::StopReason stop_reason() const;
  int batches_without_improvement() const { return plateau_.batches_without_improvement(); }

  // Nothing waits, nothing is leased, and the strategy has nothing more.
  bool Finished() const;
  bool HasWork() const;
  int64_t total() const;
  int64_t done() const { return done_; }
  // Configs neither done nor leased: what is left to hand out.
  int64_t queued() const { return std::max<int64_t>(total() - done_ - leased_, 0); }
  // True while the finalists lease is out or waiting.
  bool in_finals() const { return finals_ == Finals::kWaiting || finals_ == Finals::kLeased; }
  // Fastest OK results by calibrated time (common/calibration.h), fastest
  // first (at most `n`); after the finalists
  // round, the finalists ranked by their final measurement come first, the
  // member of their tie set that is served (TieSetOf) ahead of them; without
  // a finalists round, the search's served member leads once it is over. A
  // trial cut early (TrialResult.cut_early) is never among them, so it is
  // never a finalist nor a best.
  std::vector<TrialOutcome> Fastest(size_t n) const;
  // The raw median of the fastest OK trial so far (a trial cut early never
  // counts), for the early-cut rule, which compares raw samples with it;
  // nullopt before the first.
  std::optional<double> best_seconds() const;
  std::optional<double> default_seconds() const { return default_seconds_; }
  const absl::flat_hash_map<int, int64_t>& outcome_counts() const {
    return outcome_counts_;
  }
  // The first error of a non-OK trial, for a job that found no good config
  // (a wrong result: its status alone, as the reason reaches every reader).
  const std::string& first_error() const { return first_error_; }
  ConfigSpace* space() { return space_.get(); }
  // The same space, for building configs (ConfigAt: const, pure) without the
  // job's lock; it lives as long as its last holder, past the job's end.
  std::shared_ptr<const ConfigSpace> shared_space() const { return space_; }

 private:
  enum class SlotState { kWaiting, kLeased, kDone };
  struct Slot {
    SlotState state = SlotState::kWaiting;
    std::string lease_id;
    int64_t epoch = 0;
    int lost_leases = 0;
    std::vector<std::string> lost_by;  // principals that lost a lease of it
  };
  // Notes that `holder` lost a lease of what `lost_by` belongs to.
  static void NoteLoss(const Holder& holder, std::vector<std::string>* lost_by);
  // Whether `holder` should leave what `lost_by` belongs to for another
  // principal: it lost it, and a live principal that has not is there.
  static bool LeaveToOthers(const Holder& holder, const std::vector<std::string>& lost_by);
  enum class Finals { kNotYet, kWaiting, kLeased, kDone };
  struct QueuedRecheck {
    bool referee = false;
    std::vector<std::string> not_by;
    absl::Time deadline;
    std::string lease_id;  // empty while it waits
    int64_t epoch = 0;
  };
  bool MayTake(const QueuedRecheck& queued, const std::string& principal) const;
  void Record(uint64_t ordinal, const v1::TrialResult& result, const std::string& principal);
  // Ranks the result among the fastest (one entry per config: its
  // fastest); copies it only when it is kept.
  void Rank(uint64_t ordinal, const v1::TrialResult& result, const std::string& principal);
  // Appends the strategy's next proposals to `into` until it holds `max`
  // configs or the strategy has none; skips configs measured already (a
  // restored target) and any `into` holds.
  void ProposeNew(int max, std::vector<uint64_t>* into);
  // The strategy proposes nothing more: exhausted, or stopped by a rule.
  bool ProposalsOver() const;
  bool SearchOver() const;
  void MaybeStartFinals();
  // Moves the member of `ranked`'s tie set that is served (TieSetOf, with
  // the defender) to the front; `ranked` is one round, fastest first. The
  // search round's tie set is taken from the kFastestKept fastest configs.
  void ServedFirst(std::vector<TrialOutcome>* ranked) const;
  bool CompleteFinalist(uint64_t ordinal, const v1::TrialResult& result);
  void EndFinals();

  std::shared_ptr<ConfigSpace> space_;
  std::unique_ptr<SearchStrategy> strategy_;
  int max_attempts_;
  std::optional<uint64_t> default_ordinal_;
  std::optional<uint64_t> defender_;
  double defender_tolerance_ = 0;
  absl::flat_hash_map<uint64_t, Slot> slots_;
  std::deque<uint64_t> requeued_;
  std::deque<uint64_t> ahead_;  // proposed before a lease asked (ProposeAhead)
  absl::flat_hash_map<uint64_t, QueuedRecheck> rechecks_;  // queued or leased
  // The waiting rechecks in the order they began to wait (entries leased or
  // gone since are skipped, and dropped when met), and how many wait.
  std::deque<uint64_t> waiting_rechecks_;
  int64_t rechecks_waiting_ = 0;
  int64_t leased_ = 0;
  int64_t done_ = 0;
  std::vector<TrialOutcome> fastest_;  // sorted, capped
  absl::flat_hash_map<int, int64_t> outcome_counts_;
  std::optional<double> default_seconds_;
  std::string first_error_;
  PlateauRule plateau_;
  v1::StopReason stopped_ = v1::STOP_REASON_UNSPECIFIED;  // by a rule

  const int finalists_;
  Finals finals_ = Finals::kNotYet;
  bool finals_closed_ = false;  // leased once, or given up: no more rechecks
  std::vector<uint64_t> finalist_ordinals_;
  std::string finals_lease_;
  int64_t finals_epoch_ = 0;
  int finals_lost_ = 0;
  std::vector<std::string> finals_lost_by_;
  absl::flat_hash_map<uint64_t, v1::TrialResult> finals_results_;
  std::string finals_principal_;  // who measured the finalists round
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TARGET_TRIALS_H_
