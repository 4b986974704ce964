// The trial executor: runs the trials of one job on one device — checks each
// config against the space, compiles it in the compile pool (pipelined ahead
// of the child), measures it in the device's benchmark child, and classifies
// every failure as a trial status. The daemon never dies because of a kernel.
#ifndef TUNEFLEET_WORKER_TRIAL_EXECUTOR_H_
#define TUNEFLEET_WORKER_TRIAL_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/worker_service.pb.h"
#include "worker/child_process.h"
#include "worker/compile_pool.h"
#include "worker/failed_prepares.h"
#include "worker/idle_meter.h"

namespace tunefleet::worker {

// The least deadline of a trial for `backend`'s children: 30 s for CUDA,
// whose runner reports a hung launch itself after 10 s (the daemon's kill is
// the backstop behind it, so it must come later), and for Python, whose
// first launch of a config may compile it (when the compile step could not
// warm it); 10 s otherwise.
absl::Duration MinTrialDeadline(v1::Backend backend);

struct ExecutorOptions {
  // The measurement settings sent to the child (zero fields: defaults, see
  // WithMeasureDefaults).
  v1::MeasureOptions measure;
  // A child that has not answered a Run by then is SIGKILLed: TIMEOUT.
  // Zero (the default) means max(min_trial_deadline, 20 x the measure
  // budget).
  absl::Duration trial_deadline = absl::ZeroDuration();
  // The least deadline of a Run when trial_deadline is zero: 10 s by
  // default; MinTrialDeadline(backend) for a backend's children.
  absl::Duration min_trial_deadline = absl::Seconds(10);
  // Deadline of a Prepare (input generation and the reference run).
  // Longer than a runner's own reference timeout (120 s), so the runner can
  // report a hung reference itself before the daemon kills the child.
  absl::Duration prepare_deadline = absl::Seconds(180);
  // A config that kills the child this often (crash or timeout) is
  // QUARANTINED and never run again by this executor. Default 2.
  int kills_to_quarantine = 2;
  // The finalists round (RunFinalists): how many rounds every finalist is
  // measured in, each round with budget_seconds / finalist_rounds (see
  // PerRoundOptions). Default 3; values below 1 count as 1.
  int finalist_rounds = 3;
  // After those rounds, more rounds measure the winner and the finalists
  // not yet separated from it (Unseparated, worker/measurement.h), up to
  // this many rounds in all. Default 9; values below finalist_rounds count
  // as finalist_rounds (no extra rounds).
  int finalist_max_rounds = 9;
  // Called after every step of a finalists round, in run order, with the
  // round (0-based), the trial index and that step's own result (failures
  // included), before the combined results go to `on_result`. For tests and
  // logs; runs on the executor's thread. Default: none.
  std::function<void(int round, int64_t index, const v1::TrialResult& result)>
      on_finalist_step;
  // Called after every run of a config in the benchmark child (correctness
  // check, warm-up and timing), with its result, how long the daemon waited
  // for the child and where the child says that time went (empty where it
  // keeps none, and for a child that died or was killed; a child that
  // answers CRASHED or TIMEOUT itself may fill them). For
  // metrics; runs on the executor's thread. Default: none.
  std::function<void(const v1::TrialResult& result, absl::Duration elapsed,
                     const v1::TrialPhases& phases)>
      on_measured;
  // Counts the device busy while its child runs a trial, for the idle time
  // the worker reports (tunefleet-worker --stats-dir). Default: null.
  std::shared_ptr<IdleMeter> device_meter;
  // Where failed Prepares are remembered; share one among the executors of
  // a worker's devices. Default: null, the executor keeps its own.
  std::shared_ptr<FailedPrepares> failed_prepares;
};

// One job's kernel and problem, as trials need it.
struct JobContext {
  std::string job_id;
  v1::KernelSpec spec;
  std::vector<v1::SourceFile> sources;  // every file the spec names, with content
  v1::Shape shape;
  uint64_t seed = 0;
  // Compile every config here (v1::Lease.own_build; CompileJob.own_build).
  bool own_build = false;
};

// Thread-safety: Plan and Interrupt may be called from any thread; the rest
// is not thread-safe: one thread (the device's lease loop) owns an executor.
// Owns the device's benchmark child.
class TrialExecutor {
 private:
  struct Batch;

 public:
  // The trials of one lease with their compiles under way in the pool (see
  // Plan). Destroying it cancels the compiles not yet started and waits for
  // those running.
  class Planned {
   public:
    ~Planned();
    Planned(const Planned&) = delete;
    Planned& operator=(const Planned&) = delete;

   private:
    friend class TrialExecutor;
    explicit Planned(JobContext job);
    JobContext job_;
    std::unique_ptr<Batch> batch_;
  };

  using ResultCallback = std::function<void(int64_t index, const v1::TrialResult&)>;
  using StopPredicate = std::function<bool()>;
  // The job target's best median as the coordinator knows it now (seconds;
  // 0 when none is known), for the early-cut rule.
  using BestSeconds = std::function<double()>;

  // REQUIRES: `pool` outlives the executor.
  TrialExecutor(CompilePool* pool, v1::Device device, ChildOptions child,
                ExecutorOptions options);

  // Runs `trials` of `job` and calls `on_result` with each outcome as soon
  // as it is known (failed trials included: an OK return carries every trial
  // status). The child is prepared for the job first, while the pool
  // compiles; trials then run in the order their compiles finish (lease
  // order among those ready), so one slow compile holds no device back. Checks `should_stop` before each trial and returns
  // early, leaving the rest unreported, when it says so. Non-OK only when
  // the infrastructure fails (the child binary cannot be started, the
  // compiler cannot be run). Each trial is measured under the early-cut rule
  // against the faster of `best` (asked before each trial; null: none) and
  // the fastest uncut OK median this call measured so far.
  absl::Status Run(const JobContext& job, const std::vector<v1::Trial>& trials,
                   const ResultCallback& on_result, const StopPredicate& should_stop,
                   const BestSeconds& best = nullptr);

  // The first half of Run, for a lease held ahead of the one running:
  // validates `trials` and queues their compiles (and the reference's) now,
  // so that the pool works on them while the child measures other trials.
  // Thread-safe.
  std::unique_ptr<Planned> Plan(JobContext job, const std::vector<v1::Trial>& trials);
  // The second half: runs the planned trials as Run does. REQUIRES: `planned`
  // came from this executor's Plan and was not run before.
  absl::Status Run(Planned* planned, const ResultCallback& on_result,
                   const StopPredicate& should_stop, const BestSeconds& best = nullptr);

  // The finalists round (a lease with `finalists` set): measures `trials`
  // again, interleaved on this one device: the child is prepared once, then
  // options.finalist_rounds rounds each run every finalist once, in order
  // (A B C, A B C, ...), with a per-round share of the budget; then, while
  // the winner is not separated from a runner-up and fewer than
  // options.finalist_max_rounds rounds ran, another round runs the winner and
  // the unseparated ones (A B, A B, ...). A finalist
  // that fails in any round is not run again and is reported with that
  // round's failure; the others are reported with CombineRounds of their
  // rounds. `on_result` is called once per trial, in order, after the last
  // round. When `should_stop` says so (checked before every step) it returns
  // with nothing reported: a partial round measures nothing. Non-OK as Run
  // (then nothing is reported either).
  absl::Status RunFinalists(const JobContext& job, const std::vector<v1::Trial>& trials,
                            const ResultCallback& on_result,
                            const StopPredicate& should_stop);

  const v1::Device& device() const { return device_; }
  IdleMeter* device_meter() const { return options_.device_meter.get(); }
  // Starts a benchmark child that serves no job yet, when none runs: the
  // first job this executor serves adopts it, so its start-up (seconds for
  // a Python child importing torch and initializing CUDA) is paid while the
  // worker waits for work rather than by that job. A start that fails is
  // logged and left to the first Call.
  void StartSpareChild();
  // Benchmark children started so far (1 + respawns).
  int child_starts() const { return child_.starts(); }
  // Stops the benchmark child: closes its stdin, waits up to `grace` for it
  // to exit, then kills it.
  void Shutdown(absl::Duration grace = absl::Seconds(2)) { child_.Stop(grace); }
  // Kills the benchmark child now, even in the middle of a Prepare or a
  // trial; the Run in progress, and every later one, returns Cancelled with
  // the interrupted trial unreported. For a daemon whose drain time is over.
  // Thread-safe (may be called from any thread, unlike the rest).
  void Interrupt() { child_.Interrupt(); }

 private:
  struct PendingTrial;

  absl::Duration TrialDeadline() const;
  // Normalizes the shape and queues the reference compile; the child is
  // prepared with `measure`.
  void StartBatch(const JobContext& job, const v1::MeasureOptions& measure, Batch* batch);
  // Waits for the compiles still queued for `batch` (they point into its
  // job), cancelling them first.
  static void FinishBatch(Batch* batch);
  // Validates and queues every trial's compile; fills batch->pending.
  void PlanTrials(Batch* batch, const std::vector<v1::Trial>& trials);
  // Compiles the reference and prepares the child when it is not prepared
  // for this job and these measure options. A non-OK TrialResult status in
  // `*failure` fails every remaining trial with that status. A Prepare that
  // timed out is not tried again, and a job whose Prepare failed is not
  // prepared again by this executor (nor by those sharing its
  // FailedPrepares): later leases of it get the same failure at once, so one
  // job never costs the prepare deadline twice.
  absl::Status EnsurePrepared(Batch* batch, v1::TrialResult* failure);
  // EnsurePrepared before any compile is waited for, unless every trial is
  // decided already; a Prepare failure becomes the batch's job_failure.
  absl::Status PrepareAhead(Batch* batch);
  // The index of the next trial of `batch` to run among those not `ran`:
  // the first, in lease order, that needs no compile or whose compile is
  // done; else waits for one. REQUIRES: some trial not ran.
  static size_t NextReady(const Batch& batch, const std::vector<bool>& ran);
  // Starts a child for `batch`'s code when none serves it (stopping one that
  // serves other code), before its first compile is done: the child's
  // start-up overlaps with the compiles instead of following them. Nothing
  // when every trial of the batch is already decided (quarantined, or the
  // job failed). A start that fails is left to the first Call to report.
  void StartChildFor(const Batch& batch);
  // A child serves one kernel's code (KernelDigest: its sources, options,
  // dims, args): another kernel's code never shares its process (nor its
  // artifact inbox), while the jobs of one kernel (a sweep's shapes, a
  // retune) keep the process and only prepare again. Stops the child when
  // it serves other code; a spare child (StartSpareChild) that served none
  // is kept.
  void ServeCode(const std::string& code);
  // The job, kernel and seed part of the key FailedPrepares remembers a
  // failed Prepare under (the reference's artifact completes it).
  static std::string JobPrepareKey(const Batch& batch);
  // Sends the child a Prepare for `batch`; a failure as EnsurePrepared.
  absl::Status Prepare(const Batch& batch, const std::string& reference_artifact,
                       v1::TrialResult* failure);
  absl::StatusOr<v1::TrialResult> Measure(Batch* batch, const v1::Trial& trial,
                                          const std::string& artifact, double best_seconds);
  // One trial's outcome; non-OK only for an infrastructure failure.
  // `best_seconds` for the early-cut rule (0: none, never cut).
  absl::StatusOr<v1::TrialResult> RunOne(Batch* batch, const PendingTrial& p,
                                         double best_seconds = 0);
  // What a config is quarantined under: kernel digest, shape, config.
  static std::string ConfigKey(const Batch& batch, const v1::Config& config);
  // Counts a kill of the child by `config_key`; true when it is now
  // quarantined.
  bool CountKill(const std::string& config_key);

  CompilePool* const pool_;
  const v1::Device device_;
  const ExecutorOptions options_;
  BenchChildProcess child_;
  // What the child was last prepared for, and which child (by starts()).
  std::string prepared_for_;
  int prepared_in_ = 0;
  // The kernel code the running child serves; other code gets a new child.
  std::string served_code_;
  // Kills of the child per (kernel digest, shape, config); Plan reads them
  // from any thread.
  absl::Mutex kills_mu_;
  absl::flat_hash_map<std::string, int> kills_ ABSL_GUARDED_BY(kills_mu_);
  // The failed Prepare of each job (by job, kernel, seed and reference).
  const std::shared_ptr<FailedPrepares> failed_prepares_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_TRIAL_EXECUTOR_H_
