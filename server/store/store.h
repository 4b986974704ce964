// The Store: every job, every trial, the best config per tuning key, source
// files by digest and the newest spec of each kernel, kept in a database. Two implementations share one contract test suite: SQLite
// (embedded default) and PostgreSQL (fleet-wide).
#ifndef TUNEFLEET_SERVER_STORE_STORE_H_
#define TUNEFLEET_SERVER_STORE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunefleet::server {

class LeaderFence;

// One job row. `spec` is the serialized v1::JobSpec as submitted;
// `state` is the v1::JobState number; `targets` the serialized job targets.
struct JobRecord {
  std::string id;
  std::string kernel_name;
  int state = 0;
  std::string reason;
  std::string spec;     // bytes of v1::JobSpec
  std::string targets;  // bytes of a v1::Job carrying only its targets
  int64_t created_unix_ms = 0;
  int64_t updated_unix_ms = 0;
  std::string owner;  // the submitting principal; "" when anonymous
  // The spec's replace_best, kept in a column of its own so that
  // ListReplacingJobs need not parse specs.
  bool replace_best = false;
  std::string sweep_id;  // the sweep it belongs to (SubmitSweep); "" when none
};

// Which jobs QueryJobs returns: those matching every set field, newest first
// (created_unix_ms, then id, descending), starting after the cursor.
struct JobQuery {
  int state = 0;            // a v1::JobState number; 0: any
  std::string kernel_name;  // "": any
  std::string owner;        // "": any
  std::string sweep_id;     // "": any
  // Keyset cursor: only jobs strictly after (before in time) this job.
  // Empty `after_id`: from the newest.
  int64_t after_created_unix_ms = 0;
  std::string after_id;
  int limit = 100;  // REQUIRES: > 0
};

// Which trials of a job QueryTrials returns, in insertion order.
struct TrialQuery {
  std::string job_id;
  int status = 0;         // a v1::TrialStatus number; 0: any
  int64_t after_seq = 0;  // only rows after this position (0: from the first)
  int limit = 1000;       // REQUIRES: > 0
};

// Which measurement of a config a trial row holds.
enum class TrialRound {
  kSearch = 0,     // the search: one row per config of a job target
  kFinalists = 1,  // the finalists round: the fastest configs again, interleaved
  kVerify = 2,     // a re-measurement by another worker before a best is served
  kReferee = 3,    // a third principal's, settling a dispute over a kVerify round
  // Spot checks (server/spot_checks.h): a search result re-measured by
  // another principal, and a third principal's settling a dispute over one.
  // They count as the search round's measurements of the config.
  kSpotCheck = 4,
  kSpotReferee = 5,
};

// One measured (or failed) config. The natural key is
// (job_id, tuning_key, config, round): writing it twice keeps the first row.
struct TrialRecord {
  std::string job_id;
  std::string tuning_key;
  std::string config;  // short form, params in spec order
  int status = 0;      // v1::TrialStatus number
  double median_seconds = 0;
  double p20_seconds = 0;
  double p80_seconds = 0;
  int64_t samples = 0;
  double compile_seconds = 0;
  std::string worker_id;
  std::string device_id;
  std::string error;
  int64_t finished_unix_ms = 0;
  // Provenance: who measured (the worker's principal), and the device's SM
  // clock during the measurement (0 when unknown).
  std::string principal;
  double clock_mhz = 0;
  TrialRound round = TrialRound::kSearch;
  // Sampling stopped under the early-cut rule (docs/measurement.md): the
  // measurement is partial and the row is never a best.
  bool cut_early = false;
  // Repeatability (docs/measurement.md): for a finalist, the rounds it was
  // measured in and the coefficient of variation of their medians; samples
  // taken again at a low SM clock, and low-clock samples kept.
  int rounds = 0;
  double rounds_cv = 0;
  int64_t retaken_samples = 0;
  int64_t low_clock_samples = 0;
  // The device's calibration at the measurement (docs/measurement.md);
  // 0 when not calibrated.
  double calibration_seconds = 0;
  // Set by ExcludeTrials (never by InsertTrials): the row is kept for audit
  // but no best is derived from it.
  bool excluded = false;
};

// One page of QueryTrials: `next_seq` is the position to pass as the next
// query's `after_seq`, 0 when no row follows.
struct TrialPage {
  std::vector<TrialRecord> trials;
  int64_t next_seq = 0;
};

// Which trial rows ExcludeTrials marks: those matching every non-empty field.
// `worker` matches the row's principal or its worker id.
struct TrialFilter {
  std::string worker;
  std::string tuning_key;
  std::string job_id;
};

// What ExcludeTrials changed: rows newly excluded, their tuning keys and who
// measured them.
struct Exclusion {
  int64_t trials = 0;
  std::vector<std::string> tuning_keys;  // sorted, distinct
  std::vector<std::string> principals;   // sorted, distinct; "" where unknown left out
};

// A worker principal whose results are no longer accepted.
struct QuarantineRecord {
  std::string principal;
  std::string reason;
  int64_t since_unix_ms = 0;
};

// One source file, addressed by the SHA-256 hex digest of its content.
struct BlobRecord {
  std::string digest;
  std::string content;
};

// The newest submitted spec of a kernel: what GetBestConfig needs to check
// stored keys against the current code and to answer with its default.
// `spec` is the serialized v1::JobSpec with source digests but no contents.
struct KernelRecord {
  std::string name;
  std::string spec;
  int64_t updated_unix_ms = 0;
};

// tokens: a client's bearer token, kept only as a hash. Keyed by `id`.
struct TokenRecord {
  std::string id;           // public: shown in listings, names the token to revoke
  std::string name;         // the principal the token authenticates
  std::string role;         // "read", "submit" or "admin"
  std::string secret_hash;  // lowercase hex SHA-256 of the whole token
  int64_t created_unix_ms = 0;
  int64_t revoked_unix_ms = 0;  // 0 while the token is valid
};

// profiles: the Nsight Compute profile of one config of a job target,
// keyed by (job_id, tuning_key, config). `profile` is the serialized
// v1::KernelProfile (the metrics, or why none could be read).
struct ProfileRecord {
  std::string job_id;
  std::string tuning_key;
  std::string config;   // short form
  std::string profile;  // bytes of v1::KernelProfile
  int64_t profiled_unix_ms = 0;
};

// profile_requests: one config of a profile request not yet profiled (its
// ProfileRecord not yet stored), keyed by (job_id, tuning_key, config); what
// a restarted coordinator queues again.
struct ProfileRequestRecord {
  std::string job_id;
  std::string tuning_key;
  std::string device_model;  // the target's: who may take it
  std::string toolkit;
  std::string config;  // short form
  int rank = 0;        // 1: the target's fastest config
  double median_seconds = 0;
  int64_t requested_unix_ms = 0;
};

// The best config of one tuning key. A row is measured (by a job of this
// coordinator: `job_id`) or imported (ImportBest: `job_id` and the times are
// the exporting fleet's, `origin` names where it came from).
struct BestRecord {
  std::string tuning_key;
  std::string kernel_name;
  std::string shape;  // short form, dims in spec order
  std::string device_model;
  std::string toolkit;
  std::string config;  // short form
  double median_seconds = 0;
  std::string job_id;
  int64_t updated_unix_ms = 0;
  bool imported = false;
  std::string origin;  // imported rows: their source as the importer named it
  // Bytes of a v1::BestEvidence: the tie set and the measurements behind the
  // row (EvidenceOf, best_derivation.h); "" for rows stored before it.
  std::string evidence;
};

// Thread-safety: every method may be called from any thread concurrently.
// Errors: Unavailable when the database cannot be reached or is locked, or
// (SQLite) its file is lost, read-only or full (retry later, or see
// CheckHealth), Aborted when a transaction conflict persisted through the
// store's own retry, Internal for anything else the database reports.
// Every such message names its store ("postgres: ...", "sqlite: ...", "the
// SQLite database ..."): IsStoreError (common/public_status.h) relies on it
// to keep SQL, hosts and paths out of what clients see.
// Strings are stored verbatim (parameterized SQL only). Free-form fields
// (JobRecord::reason, spec, targets; TrialRecord::error; BlobRecord::content;
// KernelRecord::spec) may hold any bytes.
// REQUIRES: every other string field is valid UTF-8 without NUL bytes
// (PostgreSQL TEXT; the PostgreSQL store answers InvalidArgument otherwise).
class Store {
 public:
  virtual ~Store() = default;

  // Inserts the job or replaces every field of the job with the same id.
  virtual absl::Status PutJob(const JobRecord& job) = 0;
  // NotFound when no job has that id.
  virtual absl::StatusOr<JobRecord> GetJob(const std::string& id) = 0;
  // Newest first (by created_unix_ms, then id descending); `unfinished_only`
  // keeps QUEUED and RUNNING jobs (states 1, 2); at most `limit` jobs, every
  // job when `limit` <= 0.
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobs(bool unfinished_only,
                                                          int limit) = 0;

  // The jobs `query` selects, at most query.limit of them.
  virtual absl::StatusOr<std::vector<JobRecord>> QueryJobs(const JobQuery& query) = 0;

  // Inserts `trials` in one transaction: all of them or none. Returns, per
  // trial in order, true when the row was new, false when (job_id,
  // tuning_key, config) was already stored (the stored row is left
  // unchanged; a duplicate inside `trials` keeps the first). An empty
  // `trials` returns an empty vector.
  virtual absl::StatusOr<std::vector<bool>> InsertTrials(
      const std::vector<TrialRecord>& trials) = 0;
  // One trial: InsertTrials of one row.
  absl::StatusOr<bool> InsertTrial(const TrialRecord& trial);
  // Every trial of a job, in insertion order.
  virtual absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      const std::string& job_id) = 0;

  // At most query.limit trials of a job matching query.status, after
  // query.after_seq, in insertion order.
  virtual absl::StatusOr<TrialPage> QueryTrials(const TrialQuery& query) = 0;

  // Every OK, not excluded trial of a tuning key (every job and round), in
  // insertion order: what the key's best is derived from.
  virtual absl::StatusOr<std::vector<TrialRecord>> ListKeyTrials(
      const std::string& tuning_key) = 0;
  // The ids of the jobs stored with replace_best that have a trial row of
  // `tuning_key` (any status, excluded or not), by id.
  virtual absl::StatusOr<std::vector<std::string>> ListReplacingJobs(
      const std::string& tuning_key) = 0;
  // Marks the not yet excluded trials matching `filter` as excluded, in one
  // transaction. InvalidArgument when every field of `filter` is empty.
  virtual absl::StatusOr<Exclusion> ExcludeTrials(const TrialFilter& filter) = 0;

  // Keep-faster upsert: writes `best` when its key has no row or the stored
  // median is larger. Returns true when the row was written.
  virtual absl::StatusOr<bool> UpsertBest(const BestRecord& best) = 0;
  // Writes `best` whatever the stored row holds (a derived best replaces).
  virtual absl::Status PutBest(const BestRecord& best) = 0;
  // Writes an imported `best` (REQUIRES: best.imported) when its key has no
  // row, or an imported one, or `overwrite`; a measured row is kept
  // otherwise. Returns true when the row was written.
  virtual absl::StatusOr<bool> ImportBest(const BestRecord& best, bool overwrite) = 0;
  // Removes the key's best; true when there was one.
  virtual absl::StatusOr<bool> DeleteBest(const std::string& tuning_key) = 0;

  // Inserts or replaces the quarantine of `record.principal`.
  virtual absl::Status PutQuarantine(const QuarantineRecord& record) = 0;
  // Lifts a quarantine; true when there was one.
  virtual absl::StatusOr<bool> DeleteQuarantine(const std::string& principal) = 0;
  // Every quarantined principal, by principal.
  virtual absl::StatusOr<std::vector<QuarantineRecord>> ListQuarantine() = 0;
  // NotFound when the key was never tuned.
  virtual absl::StatusOr<BestRecord> GetBest(const std::string& tuning_key) = 0;
  // Every best row of a kernel, by tuning_key; empty kernel_name,
  // device_model or toolkit match any.
  virtual absl::StatusOr<std::vector<BestRecord>> ListBest(
      const std::string& kernel_name, const std::string& device_model,
      const std::string& toolkit) = 0;

  // Stores source files by digest in one transaction; a digest already
  // stored is left unchanged (contents are addressed by their digest).
  virtual absl::Status PutBlobs(const std::vector<BlobRecord>& blobs) = 0;
  // NotFound when no blob has that digest.
  virtual absl::StatusOr<std::string> GetBlob(const std::string& digest) = 0;

  // Inserts the kernel or replaces the row with the same name.
  virtual absl::Status PutKernel(const KernelRecord& kernel) = 0;
  // Every kernel, by name.
  virtual absl::StatusOr<std::vector<KernelRecord>> ListKernels() = 0;

  // Inserts the token, or replaces the one with the same id.
  virtual absl::Status PutToken(const TokenRecord& token) = 0;
  // Every token, revoked ones included, by id.
  virtual absl::StatusOr<std::vector<TokenRecord>> ListTokens() = 0;

  // Inserts the profile, or replaces the one with the same (job_id,
  // tuning_key, config): profiling a config again keeps the newest. In the
  // same transaction, removes the profile request row of that key (if any):
  // the config is no longer pending.
  virtual absl::Status PutProfile(const ProfileRecord& profile) = 0;
  // The profiles of `job_id`, by tuning key and config; empty when none.
  virtual absl::StatusOr<std::vector<ProfileRecord>> ListProfiles(const std::string& job_id) = 0;
  // Inserts `requests` in one transaction: all of them or none. A row with
  // the key of a stored one replaces it.
  virtual absl::Status PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) = 0;
  // Every profile request row, by job_id, tuning_key and rank.
  virtual absl::StatusOr<std::vector<ProfileRequestRecord>> ListProfileRequests() = 0;

  // The secret stored under `name` (table coordinator_secrets), storing
  // `fresh` first when there is none: the first caller's stands, so that the
  // coordinators of one database share it (the lease receipts' key).
  // InvalidArgument for an empty `fresh`.
  virtual absl::StatusOr<std::string> Secret(const std::string& name,
                                             const std::string& fresh) = 0;

  // OK while the store can read and write. Unavailable, with a message an
  // operator can act on, when it cannot: the database cannot be reached,
  // or (SQLite) its file was deleted or replaced, or is read-only, or the
  // disk is full. Cheap enough to call every second.
  virtual absl::Status CheckHealth() = 0;
};

// InvalidArgument when every field of `filter` is empty (a filter that
// would exclude every trial is refused).
absl::Status CheckFilter(const TrialFilter& filter);

// Opens the database named by `url` and applies pending migrations:
//   sqlite:///abs/path/to/file.db   (created when missing, as are its
//                                    parent directories)
//   sqlite://:memory:               (a private in-memory database: tests,
//   sqlite://file:NAME?mode=memory&cache=shared   throwaway coordinators;
//                                    the named one is shared in the process)
//   postgresql://user:pass@host:port/db  (or postgres://, or a libpq
//   key=value string prefixed with "postgresql:")
// InvalidArgument for an unknown scheme, Unavailable when it cannot connect.
// With a `fence` (leadership.h), a PostgreSQL store refuses every write with
// FailedPrecondition unless the fence's epoch is the database's leader epoch
// (a SQLite file is fenced by its lock file instead).
absl::StatusOr<std::unique_ptr<Store>> OpenStore(
    const std::string& url, std::shared_ptr<const LeaderFence> fence = nullptr);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_STORE_H_
