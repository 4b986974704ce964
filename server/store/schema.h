// The column lists both stores read and write, one per table, in the order
// every INSERT binds and every Read* function reads them. The tables
// themselves are created by each store's migrations (the column types differ
// between SQLite and PostgreSQL; the names and order do not).
//
// String-literal macros so that queries stay compile-time constants. Private
// to the store library: include only from sqlite_store.cc and
// postgres_store.cc.
#ifndef TUNEFLEET_SERVER_STORE_SCHEMA_H_
#define TUNEFLEET_SERVER_STORE_SCHEMA_H_

#include <chrono>
#include <cstdint>

namespace tunefleet::server::schema {

// One numbered migration of a store's schema, applied in order, each exactly
// once per database. Never edit one that has shipped: append a new one.
struct Migration {
  int version;
  const char* sql;
};

// Milliseconds since the Unix epoch, as the stores stamp rows.
inline int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tunefleet::server::schema

// jobs: JobRecord, keyed by id.
#define TF_JOB_COLUMNS                                               \
  "id, kernel_name, state, reason, spec, targets, created_unix_ms, " \
  "updated_unix_ms, owner, replace_best, sweep_id"

// trials: TrialRecord, unique on (job_id, tuning_key, config, round), read
// back in insertion order (the store's own sequence column, not listed here).
// TF_TRIAL_COLUMNS are the ones INSERT binds; `excluded` is only ever set by
// ExcludeTrials, and read back after them (TF_TRIAL_READ_COLUMNS).
#define TF_TRIAL_COLUMNS                                                 \
  "job_id, tuning_key, config, status, median_seconds, p20_seconds, "    \
  "p80_seconds, samples, compile_seconds, worker_id, device_id, error, " \
  "finished_unix_ms, principal, clock_mhz, round, cut_early, rounds, "   \
  "rounds_cv, retaken_samples, low_clock_samples, calibration_seconds"
#define TF_TRIAL_COUNT 22
#define TF_TRIAL_READ_COLUMNS TF_TRIAL_COLUMNS ", excluded"

// quarantine: QuarantineRecord, keyed by principal.
#define TF_QUARANTINE_COLUMNS "principal, reason, since_unix_ms"

// best_configs: BestRecord, keyed by tuning_key.
#define TF_BEST_COLUMNS                                             \
  "tuning_key, kernel_name, shape, device_model, toolkit, config, " \
  "median_seconds, job_id, updated_unix_ms, imported, origin, evidence"

// blobs: BlobRecord, keyed by digest.
#define TF_BLOB_COLUMNS "digest, content"

// kernels: KernelRecord, keyed by name.
#define TF_KERNEL_COLUMNS "name, spec, updated_unix_ms"

// tokens: TokenRecord, keyed by id.
#define TF_TOKEN_COLUMNS \
  "id, name, role, secret_hash, created_unix_ms, revoked_unix_ms"

// profiles: ProfileRecord, keyed by (job_id, tuning_key, config).
#define TF_PROFILE_COLUMNS "job_id, tuning_key, config, profile, profiled_unix_ms"

// profile_requests: ProfileRequestRecord, keyed by (job_id, tuning_key,
// config).
#define TF_PROFILE_REQUEST_COLUMNS                            \
  "job_id, tuning_key, device_model, toolkit, config, rank, " \
  "median_seconds, requested_unix_ms"

#endif  // TUNEFLEET_SERVER_STORE_SCHEMA_H_
