// The tunefleet client library: submit kernel-tuning jobs to a coordinator,
// follow them, and ask for the best known config of a kernel.
//
//   auto client = tunefleet::Client::Connect({.target = "tuner:7070"});
//   if (!client.ok()) return ...;
//   absl::StatusOr<tunefleet::BestConfig> best =
//       (*client)->GetBestConfig("matmul", "M=1024,N=1024,K=1024");
//
// This is the only public header of tunefleet; it exposes no protobuf or
// gRPC types. Every fallible call returns an absl::Status with a canonical
// code: UNAVAILABLE (the server cannot be reached; retry), DEADLINE_EXCEEDED,
// NOT_FOUND, INVALID_ARGUMENT (a bad request), CANCELLED (CancelWatches), and
// whatever else the server answers, unchanged.
#ifndef TUNEFLEET_CLIENT_H_
#define TUNEFLEET_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunefleet {

struct ClientOptions {
  // The coordinator's address, "host:port"; or the addresses of the
  // coordinators that share a database, "ip:port,ip:port", of which calls
  // reach the one that leads. Default: "localhost:7070".
  std::string target = "localhost:7070";
  // Time allowed for each call, and for Watch to receive the job's current
  // state (not for the whole watch). Default: 10 seconds.
  std::chrono::milliseconds deadline = std::chrono::seconds(10);
  // Plaintext, without credentials: only for a coordinator started with
  // --insecure. Default false: TLS.
  bool insecure = false;
  // PEM CA bundle that signed the coordinator's certificate. Default empty:
  // the system's trusted roots.
  std::string ca_file;
  // Bearer token sent with every call (never over plaintext). Default empty.
  std::string token;

  // The options tunectl and the Python package would use: from the
  // TUNEFLEET_* variables (SERVER, CA_FILE, TOKEN, TOKEN_FILE, INSECURE,
  // CONFIG, CONTEXT), else the current context of tunectl's config file
  // (~/.config/tunefleet/config), else the defaults above; a token from
  // ~/.config/tunefleet/token when nothing names one. Set fields after it
  // to override. InvalidArgument for a context the file lacks or a bad
  // `timeout`; NotFound/PermissionDenied for an unreadable token file.
  static absl::StatusOr<ClientOptions> FromEnvironment();
};

// What to tune. The kernel is read from disk by Submit.
struct SubmitRequest {
  // A directory holding kernel.textproto and the sources it names.
  std::string kernel_dir;
  // The problem shape as text, "M=1024,N=1024,K=1024". When empty,
  // `shape_dims` is used instead. Default: empty.
  std::string shape;
  std::map<std::string, int64_t> shape_dims;
  // "exhaustive", "random", "model", "evolutionary" or "coordinate".
  // Default: empty, which the server reads as "exhaustive".
  std::string strategy;
  // Random, model, evolutionary: configs to try; coordinate: at most.
  // Default: 0, which the server reads as 64 (coordinate: until it
  // converges).
  int64_t budget = 0;
  // Stop rules, for every strategy. No new configs are proposed once the
  // job has run this many seconds (counted from its start, a coordinator
  // restart included); configs already out finish. Default: 0 (none); at
  // most 30 days.
  int64_t time_budget_seconds = 0;
  // Stop once this many batches in a row improved the best by no more than
  // 1 %. Default: 0 (none); at most 100,000.
  int32_t plateau_batches = 0;
  // Measure even when the tuning key already has a result. Default: false.
  bool force_retune = false;
  // Serve this job's best even when it is slower than the best served now
  // (implies force_retune). Without it a retune replaces the served best
  // only when a config beat it side by side or is faster by more than 1%;
  // a slower one is kept as a record and its job says "regressed".
  // Default: false.
  bool replace_best = false;
  // Why, with replace_best: logged by the coordinator and kept with the
  // job. Default: empty.
  std::string replace_reason;
  // Tune only this named config set of the spec. Default: empty (all).
  std::string config_set;
  // Tune only on this device model. Default: empty (every matching worker).
  std::string device_model;
  // Seed of the random strategy and the input data. Default: 0.
  uint64_t seed = 0;
};

enum class JobState {
  kUnspecified,
  kQueued,
  kRunning,
  kSucceeded,
  kFailed,
  kCancelled
};

// "QUEUED", "RUNNING", ... ("UNSPECIFIED" for kUnspecified).
const char* JobStateName(JobState state);
// True for SUCCEEDED, FAILED and CANCELLED: the job will not change again.
bool IsFinal(JobState state);

// One measured config.
struct TrialSummary {
  std::string config;  // short form, "BLOCK_M=64,BLOCK_N=128"
  double median_seconds = 0;
  std::string status;  // trial status name, e.g. "OK"
  std::string device_model;
};

// The job's progress on one (device model, toolkit).
struct JobTarget {
  std::string device_model;
  std::string toolkit;
  std::string tuning_key;
  bool cached = false;  // answered from the store; nothing measured
  int64_t trials_total = 0;
  int64_t trials_done = 0;
  std::string best_config;     // empty until a trial succeeded
  double best_seconds = 0;     // 0 until a trial succeeded
  double default_seconds = 0;  // the default config's median; 0 if unknown
  std::string stop_reason;     // as Job::stop_reason
  // What the finished job did to the served best of its key: "first" (the
  // key had none), "replaced" (faster than the best served before, or beat
  // it side by side), "confirmed" (re-measured the served config and found
  // it tied with the job's fastest: kept, with the job's time), "regressed"
  // (not faster: the best served before is kept) or "forced"
  // (replace_best: served whether faster or not); empty while it runs and
  // when cached.
  std::string retune;
  std::string served_job_id;  // the best served after the job finished
  double served_seconds = 0;
  std::string previous_job_id;  // the best it was compared with ("" for "first")
  double previous_seconds = 0;
  std::string replace_reason;  // "forced": the reason given
};

struct Job {
  std::string id;
  std::string kernel;
  std::string shape;  // "M=1024,N=1024,K=1024"
  JobState state = JobState::kUnspecified;
  std::string reason;  // why it waits or failed
  std::string strategy;
  int64_t trials_total = 0;
  int64_t trials_done = 0;
  // Trial status name ("OK", "COMPILE_ERROR", "TIMEOUT", ...) to count.
  std::map<std::string, int64_t> outcomes;
  std::vector<JobTarget> targets;
  // The fastest OK trials, fastest first, at most five per target.
  std::vector<TrialSummary> top_trials;
  int64_t created_unix_ms = 0;
  int64_t updated_unix_ms = 0;
  std::string owner;  // the principal that submitted it
  // Why the search stopped: "space_exhausted", "trial_budget",
  // "time_budget", "plateau", "cancelled", "failed" or "cached"; empty while
  // it searches.
  std::string stop_reason;
  int64_t trials_budget = 0;        // per target; 0: none (exhaustive, config set)
  int64_t time_budget_seconds = 0;  // the stop rules as submitted; 0: none
  int32_t plateau_batches = 0;
  int64_t started_unix_ms = 0;  // when it first ran; 0: not yet
  std::string sweep_id;         // the sweep it belongs to; empty: submitted alone
};

// A sweep as submitted (Client::SubmitSweep): its id and one job per shape.
struct Sweep {
  std::string id;
  std::vector<Job> jobs;  // in the order the shapes were given
};

// Which jobs ListJobs returns, newest first: those matching every set field.
struct JobFilter {
  JobState state = JobState::kUnspecified;  // kUnspecified: any
  std::string kernel;                       // empty: any
  std::string owner;                        // empty: any principal
  std::string sweep_id;                     // empty: any; else this sweep's jobs
  // Empty: any; else only jobs with a target on this device model (a page
  // may then hold fewer than `limit` jobs and still be followed by another).
  std::string device_model;
  // Jobs per page; 0 is the server's default (100), at most 1000.
  int32_t limit = 0;
  // JobPage::next_page_token of the previous page; empty: the newest jobs.
  std::string page_token;
};

struct JobPage {
  std::vector<Job> jobs;
  std::string next_page_token;  // empty on the last page
};

// One stored trial of a job: a config as measured, or why it failed.
struct Trial {
  std::string config;  // short form
  std::string status;  // trial status name: "OK", "COMPILE_ERROR", "TIMEOUT", ...
  std::string error;   // the reason of a failure: compiler log, signal, mismatch
  double median_seconds = 0;
  double p20_seconds = 0;
  double p80_seconds = 0;
  int64_t samples = 0;
  double compile_seconds = 0;
  std::string tuning_key;
  std::string device_model;
  std::string worker_id;
  std::string device_id;
  std::string principal;  // who measured it
  double clock_mhz = 0;   // the device's SM clock while measuring; 0 if unknown
  std::string round;  // "search", "finalists", "verify", "referee", "spot" or "spot-referee"
  bool excluded = false;  // an admin excluded it from deriving bests
  int64_t finished_unix_ms = 0;
  bool cut_early = false;  // sampling stopped early: clearly slower than the best
  // Repeatability (docs/measurement.md): a finalist's rounds and the
  // coefficient of variation of their medians; samples taken again at a low
  // SM clock, and low-clock samples kept.
  int rounds = 0;
  double rounds_cv = 0;
  int64_t retaken_samples = 0;
  int64_t low_clock_samples = 0;
  // Calibration (docs/measurement.md): the time a fixed piece of work took on
  // the device at this measurement; configs compare by median / calibration.
  // 0 when not calibrated.
  double calibration_seconds = 0;
};

struct TrialPage {
  std::vector<Trial> trials;
  std::string next_page_token;  // empty on the last page
};

// Nsight Compute's view of one launch of one of a job's fastest configs
// (docs/profiling.md). Times in seconds, sizes in bytes, shares in percent.
struct KernelProfile {
  std::string config;  // short form
  std::string device_model;
  std::string tuning_key;
  int rank = 0;               // 1: the target's fastest config
  double median_seconds = 0;  // the config's tuned median
  bool pending = false;       // requested, not yet profiled
  // Why no metrics were read ("ncu not found on this host", ...); "" when
  // they were (or while pending).
  std::string unavailable;
  double duration_seconds = 0;
  double cycles = 0;
  int registers_per_thread = 0;
  int64_t shared_memory_bytes = 0;  // per block, static + dynamic
  double achieved_occupancy_pct = 0;
  double l2_hit_rate_pct = 0;
  double dram_bytes_per_second = 0;
  double dram_throughput_pct = 0;
  double tflops = 0;  // 0 when the spec has no TFLOP/s metric
  std::string worker_id;
  std::string device_id;
  std::string ncu_version;
  int64_t profiled_unix_ms = 0;
};

// The config an application should use for a kernel and shape.
struct BestConfig {
  enum class Source {
    kUnspecified,
    kExact,         // tuned for this very kernel, shape, device and toolkit
    kNearestShape,  // tuned for another shape of the same kernel and device, valid here
    kDefault,       // nothing tuned fits: the spec's default config
  };
  Source source = Source::kUnspecified;
  std::string config;                     // short form
  std::map<std::string, int64_t> values;  // param name to value
  double median_seconds = 0;              // 0 for kDefault
  std::string tuning_key;
  std::string job_id;
  std::string tuned_shape;  // the shape it was tuned for
  std::string device_model;
  std::string toolkit;

  // How sure the answer is (docs/measurement.md, "Tie sets"); empty and 0
  // for kDefault and for rows stored before evidence was kept.
  struct TieMember {
    std::string config;         // short form
    double median_seconds = 0;  // in the round that decided the row
    double gap = 0;             // slower than that round's fastest, a fraction
  };
  // That round's fastest config and every config tied with it, fastest
  // first; `config` is one of them.
  std::vector<TieMember> tie_set;
  int configs_in_round = 0;  // configs the deciding round measured
  int rounds = 0;            // finalist rounds behind median_seconds (0: one search run)
  double rounds_cv = 0;      // CV of those rounds' medians
  int measurements = 0;      // measurements of `config` for this key, every job and round
  int devices = 0;           // distinct devices that took them
  // The device's calibration when median_seconds was measured
  // (docs/measurement.md, "Calibration"); the rules compared
  // median_seconds / calibration_seconds. 0: uncalibrated.
  double calibration_seconds = 0;
};

// "EXACT", "NEAREST_SHAPE", "DEFAULT" ("UNSPECIFIED" for kUnspecified).
const char* BestConfigSourceName(BestConfig::Source source);

struct DeviceInfo {
  std::string id;
  std::string model;
  std::string backend;  // "CPU" or "CUDA"
};

struct WorkerInfo {
  std::string id;
  std::string host;
  std::string toolkit;
  std::vector<DeviceInfo> devices;
  int64_t last_seen_unix_ms = 0;
  int32_t active_leases = 0;
  bool alive = false;
};

// A bearer token as the coordinator lists it; the secret is never listed.
struct TokenInfo {
  std::string id;    // names the token to revoke
  std::string name;  // the principal it authenticates
  std::string role;  // "read", "submit" or "admin"
  int64_t created_unix_ms = 0;
  int64_t revoked_unix_ms = 0;  // 0 while valid
};

struct IssuedToken {
  TokenInfo info;
  std::string token;  // the secret, shown only once
};

// This library's tunefleet version, e.g. "0.1.0".
const char* ClientVersion();

// A table of best configs exported by a coordinator (`tunectl export`, or
// Client::ExportBest), loaded offline: what an application ships so that it
// needs no coordinator at start-up. The file format is documented in
// docs/best-table-format.md.
//
//   auto table = tunefleet::BestConfigTable::Load("best.json");
//   auto best = table->Lookup("matmul", "M=1024,N=1024,K=1024", "NVIDIA H100");
//
// Thread-safety: a loaded table is immutable; Lookup may be called from any
// thread. Copies share the loaded rows.
class BestConfigTable {
 public:
  // NOT_FOUND when the file cannot be read; INVALID_ARGUMENT when it is not
  // a table of a version this library reads.
  static absl::StatusOr<BestConfigTable> Load(const std::string& path);
  static absl::StatusOr<BestConfigTable> Parse(const std::string& json);

  // The config for `kernel` and `shape`, in the coordinator's tiers: a row
  // tuned for exactly this shape (source kExact), else the row of the
  // nearest tuned shape whose config is valid at `shape` (kNearestShape; the
  // distance is the sum over dims of |log(a/b)|, ties to the smallest tuning
  // key; valid: the spec's constraints, but those on device limits alone,
  // hold at `shape` with the row's config, device limits taking placeholder
  // values since the table carries none), else the kernel's default config
  // (kDefault). A fallback answer is never a config the spec forbids at
  // `shape`. Empty `device_model` or `toolkit` match any. NOT_FOUND when the
  // table carries no spec of the kernel and no row tuned for exactly this
  // shape; INVALID_ARGUMENT when `shape` does not parse.
  absl::StatusOr<BestConfig> Lookup(const std::string& kernel, const std::string& shape,
                                    const std::string& device_model = "",
                                    const std::string& toolkit = "") const;
  // How many rows (tuned configs) the table holds.
  size_t size() const;

 private:
  struct Rows;
  explicit BestConfigTable(std::shared_ptr<const Rows> rows);
  std::shared_ptr<const Rows> rows_;
};

// What ImportBest did.
struct ImportResult {
  int64_t imported = 0;       // rows written
  int64_t kept_measured = 0;  // rows not written: a measured best of the key is kept
  int64_t kernels_added = 0;  // kernels the coordinator did not know
  int64_t not_served = 0;     // written, but tuned with other code than the coordinator's
};

// A connection to one tunefleet coordinator.
//
// Thread-safety: a Client is safe for concurrent use from multiple threads
// without external synchronization.
class Client {
 public:
  // Creates a client for `options.target`, over TLS unless
  // `options.insecure`. Does not contact the server: an unreachable server
  // surfaces as UNAVAILABLE from the first call. INVALID_ARGUMENT when the
  // target is empty or a token would go over plaintext, NOT_FOUND when
  // `ca_file` cannot be read. Calls without a valid token fail
  // UNAUTHENTICATED, calls the token's role may not make PERMISSION_DENIED.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options);

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  // Reads the kernel directory (its spec and every source it names) and
  // submits a tuning job. NOT_FOUND for a missing file, INVALID_ARGUMENT for
  // a bad spec or shape, before anything is sent; NOT_FOUND from the server
  // for a `device_model` no worker has and no stored best config names.
  absl::StatusOr<Job> Submit(const SubmitRequest& request);
  // Submits `request` once per shape of `shapes` ("M=1,N=4096,K=4096", ...;
  // request.shape and shape_dims are ignored) as one sweep: one job per
  // shape, each with its own tuning key and best, made all or none.
  // InvalidArgument names a bad shape; otherwise as Submit.
  absl::StatusOr<Sweep> SubmitSweep(const SubmitRequest& request,
                                    const std::vector<std::string>& shapes);

  // Passes the job's states to `on_update` (called on this thread, first
  // with the current state) until one is final, and returns that one. The
  // current state is fetched under the per-call deadline (so an unreachable
  // server or unknown job fails fast); the stream that follows has none.
  // UNAVAILABLE when the stream breaks before a final state, CANCELLED after
  // CancelWatches.
  absl::StatusOr<Job> Watch(const std::string& job_id,
                            const std::function<void(const Job&)>& on_update);

  // Ends every Watch in progress and makes later ones return CANCELLED at
  // once (for Ctrl-C). Callable from any thread, on_update included; not
  // from a signal handler.
  void CancelWatches();

  absl::StatusOr<Job> GetJob(const std::string& job_id);
  // Asks the server to stop a job and returns its state afterwards.
  absl::StatusOr<Job> CancelJob(const std::string& job_id);
  // The most recent jobs, newest first. `limit` 0 means the server's
  // default (100).
  absl::StatusOr<std::vector<Job>> ListJobs(int32_t limit = 0);
  // One page of the jobs `filter` selects. NOT_FOUND for a filter's kernel
  // or device model the server does not know.
  absl::StatusOr<JobPage> ListJobs(const JobFilter& filter);

  // One page of a job's trials in the order they were stored; `status` (a
  // trial status name, "" for every status) keeps only trials with that
  // outcome. `page_size` 0 is the server's default (1000), at most 10000.
  // NOT_FOUND for an unknown job; INVALID_ARGUMENT for an unknown status.
  absl::StatusOr<TrialPage> ListTrials(const std::string& job_id,
                                       const std::string& status = "",
                                       int32_t page_size = 0,
                                       const std::string& page_token = "");
  // Every trial of the job: ListTrials page after page.
  absl::StatusOr<std::vector<Trial>> ListAllTrials(const std::string& job_id,
                                                   const std::string& status = "");

  // Queues the `top` (1..16) fastest configs of each target of a SUCCEEDED
  // job for profiling with Nsight Compute; returns them, pending.
  // NOT_FOUND for an unknown job, FAILED_PRECONDITION for one not
  // SUCCEEDED (or already being profiled), INVALID_ARGUMENT for `top`.
  absl::StatusOr<std::vector<KernelProfile>> ProfileJob(const std::string& job_id, int top);
  // The job's stored profiles, then those still pending.
  absl::StatusOr<std::vector<KernelProfile>> ListProfiles(const std::string& job_id);

  // The best config of `kernel` for `shape` ("M=1024,N=1024,K=1024").
  // Empty `device_model` or `toolkit` matches any. NOT_FOUND when the server
  // knows no such kernel or device model (its message lists the known names;
  // a known model the kernel was not tuned on gets the default config).
  absl::StatusOr<BestConfig> GetBestConfig(const std::string& kernel,
                                           const std::string& shape,
                                           const std::string& device_model = "",
                                           const std::string& toolkit = "");

  absl::StatusOr<std::vector<WorkerInfo>> ListWorkers();
  // The coordinator's tunefleet version.
  absl::StatusOr<std::string> ServerVersion();

  // The best configs the coordinator serves for `kernel` (empty: every
  // kernel) on `device_model` (empty: every model), as the JSON document
  // BestConfigTable reads. NOT_FOUND for a kernel or device model the
  // coordinator does not know.
  absl::StatusOr<std::string> ExportBest(const std::string& kernel,
                                         const std::string& device_model = "");
  // Admin only. Stores the rows of an exported table (`json`), marked
  // imported and named by `origin` (required); a measured row of the same key
  // is kept unless `overwrite`. INVALID_ARGUMENT for a document that is not
  // a table, before anything is sent.
  absl::StatusOr<ImportResult> ImportBest(const std::string& json, const std::string& origin,
                                          bool overwrite = false);

  // Admin only. A new token for principal `name` with `role` ("read",
  // "submit" or "admin"); its secret is returned only here.
  absl::StatusOr<IssuedToken> CreateToken(const std::string& name, const std::string& role);
  absl::StatusOr<std::vector<TokenInfo>> ListTokens();
  // NOT_FOUND for an unknown id.
  absl::StatusOr<TokenInfo> RevokeToken(const std::string& id);

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunefleet

#endif  // TUNEFLEET_CLIENT_H_
