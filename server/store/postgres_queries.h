// The SQL of PostgresStore's prepared statements, each with the name it is
// prepared under (PostgresStore prepares kAllQueries on every connection).
// Column lists come from schema.h, shared with the SQLite store.
#ifndef TUNEFLEET_SERVER_STORE_POSTGRES_QUERIES_H_
#define TUNEFLEET_SERVER_STORE_POSTGRES_QUERIES_H_

#include "server/store/schema.h"

namespace tunefleet::server::postgres {

struct Query {
  const char* name;
  const char* sql;
};

inline constexpr Query kPutJob = {
    "put_job",
    "INSERT INTO jobs (" TF_JOB_COLUMNS
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
    "ON CONFLICT (id) DO UPDATE SET kernel_name = EXCLUDED.kernel_name, "
    "state = EXCLUDED.state, reason = EXCLUDED.reason, spec = EXCLUDED.spec, "
    "targets = EXCLUDED.targets, created_unix_ms = EXCLUDED.created_unix_ms, "
    "updated_unix_ms = EXCLUDED.updated_unix_ms, owner = EXCLUDED.owner, "
    "replace_best = EXCLUDED.replace_best, sweep_id = EXCLUDED.sweep_id"};
inline constexpr Query kGetJob = {"get_job",
                                  "SELECT " TF_JOB_COLUMNS " FROM jobs WHERE id = $1"};
inline constexpr Query kListJobs = {"list_jobs",
                                    "SELECT " TF_JOB_COLUMNS
                                    " FROM jobs WHERE (NOT $1 OR state IN (1, 2)) "
                                    "ORDER BY created_unix_ms DESC, id DESC LIMIT $2"};
inline constexpr Query kQueryJobs = {
    "query_jobs",
    "SELECT " TF_JOB_COLUMNS
    " FROM jobs WHERE ($1 = 0 OR state = $1) AND ($2 = '' OR kernel_name = $2) "
    "AND ($3 = '' OR owner = $3) AND ($7 = '' OR sweep_id = $7) "
    "AND ($5 = '' OR (created_unix_ms, id) < ($4, $5)) "
    "ORDER BY created_unix_ms DESC, id DESC LIMIT $6"};
// One row more than asked, to know whether a page follows.
inline constexpr Query kQueryTrials = {
    "query_trials", "SELECT " TF_TRIAL_READ_COLUMNS
                    ", seq FROM trials WHERE job_id = $1 AND ($2 = 0 OR status = $2) "
                    "AND seq > $3 ORDER BY seq LIMIT $4"};
inline constexpr Query kListTrials = {"list_trials",
                                      "SELECT " TF_TRIAL_READ_COLUMNS
                                      " FROM trials WHERE job_id = $1 ORDER BY seq"};
inline constexpr Query kListKeyTrials = {
    "list_key_trials", "SELECT " TF_TRIAL_READ_COLUMNS
                       " FROM trials WHERE tuning_key = $1 AND status = 1 "
                       "AND NOT excluded ORDER BY seq"};
inline constexpr Query kListReplacingJobs = {
    "list_replacing_jobs",
    "SELECT id FROM jobs WHERE replace_best AND EXISTS "
    "(SELECT 1 FROM trials WHERE trials.job_id = jobs.id AND trials.tuning_key = $1) "
    "ORDER BY id"};
inline constexpr Query kExcludeTrials = {
    "exclude_trials",
    "UPDATE trials SET excluded = TRUE WHERE NOT excluded "
    "AND ($1 = '' OR principal = $1 OR worker_id = $1) "
    "AND ($2 = '' OR tuning_key = $2) AND ($3 = '' OR job_id = $3) "
    "RETURNING tuning_key, principal"};
inline constexpr Query kPutBest = {
    "put_best",
    "INSERT INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
    "ON CONFLICT (tuning_key) DO UPDATE SET kernel_name = EXCLUDED.kernel_name, "
    "shape = EXCLUDED.shape, device_model = EXCLUDED.device_model, "
    "toolkit = EXCLUDED.toolkit, config = EXCLUDED.config, "
    "median_seconds = EXCLUDED.median_seconds, job_id = EXCLUDED.job_id, "
    "updated_unix_ms = EXCLUDED.updated_unix_ms, imported = EXCLUDED.imported, "
    "origin = EXCLUDED.origin, evidence = EXCLUDED.evidence"};
inline constexpr Query kImportBest = {
    "import_best",
    "INSERT INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
    "ON CONFLICT (tuning_key) DO UPDATE SET kernel_name = EXCLUDED.kernel_name, "
    "shape = EXCLUDED.shape, device_model = EXCLUDED.device_model, "
    "toolkit = EXCLUDED.toolkit, config = EXCLUDED.config, "
    "median_seconds = EXCLUDED.median_seconds, job_id = EXCLUDED.job_id, "
    "updated_unix_ms = EXCLUDED.updated_unix_ms, imported = EXCLUDED.imported, "
    "origin = EXCLUDED.origin, evidence = EXCLUDED.evidence "
    "WHERE best_configs.imported OR $13"};
inline constexpr Query kDeleteBest = {"delete_best",
                                      "DELETE FROM best_configs WHERE tuning_key = $1"};
inline constexpr Query kPutQuarantine = {
    "put_quarantine", "INSERT INTO quarantine (" TF_QUARANTINE_COLUMNS
                      ") VALUES ($1, $2, $3) ON CONFLICT (principal) DO UPDATE "
                      "SET reason = EXCLUDED.reason, since_unix_ms = EXCLUDED.since_unix_ms"};
inline constexpr Query kDeleteQuarantine = {"delete_quarantine",
                                            "DELETE FROM quarantine WHERE principal = $1"};
inline constexpr Query kListQuarantine = {
    "list_quarantine", "SELECT " TF_QUARANTINE_COLUMNS " FROM quarantine ORDER BY principal"};
inline constexpr Query kUpsertBest = {
    "upsert_best",
    "INSERT INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES "
    "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
    "ON CONFLICT (tuning_key) DO UPDATE SET kernel_name = "
    "EXCLUDED.kernel_name, "
    "shape = EXCLUDED.shape, device_model = EXCLUDED.device_model, "
    "toolkit = EXCLUDED.toolkit, config = EXCLUDED.config, "
    "median_seconds = EXCLUDED.median_seconds, job_id = EXCLUDED.job_id, "
    "updated_unix_ms = EXCLUDED.updated_unix_ms, imported = EXCLUDED.imported, "
    "origin = EXCLUDED.origin, evidence = EXCLUDED.evidence "
    "WHERE best_configs.median_seconds > EXCLUDED.median_seconds"};
inline constexpr Query kGetBest = {"get_best",
                                   "SELECT " TF_BEST_COLUMNS
                                   " FROM best_configs WHERE tuning_key = $1"};
inline constexpr Query kListBest = {
    "list_best",
    "SELECT " TF_BEST_COLUMNS
    " FROM best_configs WHERE ($1 = '' OR kernel_name = $1) "
    "AND ($2 = '' OR device_model = $2) AND ($3 = '' OR toolkit = $3) "
    "ORDER BY tuning_key"};
inline constexpr Query kPutBlob = {"put_blob", "INSERT INTO blobs (" TF_BLOB_COLUMNS
                                               ") VALUES ($1, $2) "
                                               "ON CONFLICT (digest) DO NOTHING"};
inline constexpr Query kGetBlob = {"get_blob",
                                   "SELECT content FROM blobs WHERE digest = $1"};
inline constexpr Query kPutKernel = {
    "put_kernel", "INSERT INTO kernels (" TF_KERNEL_COLUMNS
                  ") VALUES ($1, $2, $3) "
                  "ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, "
                  "updated_unix_ms = EXCLUDED.updated_unix_ms"};
inline constexpr Query kListKernels = {
    "list_kernels", "SELECT " TF_KERNEL_COLUMNS " FROM kernels ORDER BY name"};

inline constexpr Query kPutToken = {
    "put_token", "INSERT INTO tokens (" TF_TOKEN_COLUMNS
                 ") VALUES ($1, $2, $3, $4, $5, $6) "
                 "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, "
                 "role = EXCLUDED.role, secret_hash = EXCLUDED.secret_hash, "
                 "created_unix_ms = EXCLUDED.created_unix_ms, "
                 "revoked_unix_ms = EXCLUDED.revoked_unix_ms"};
inline constexpr Query kListTokens = {
    "list_tokens", "SELECT " TF_TOKEN_COLUMNS " FROM tokens ORDER BY id"};

inline constexpr Query kPutProfile = {
    "put_profile", "INSERT INTO profiles (" TF_PROFILE_COLUMNS
                   ") VALUES ($1, $2, $3, $4, $5) "
                   "ON CONFLICT (job_id, tuning_key, config) DO UPDATE SET "
                   "profile = EXCLUDED.profile, profiled_unix_ms = EXCLUDED.profiled_unix_ms"};
inline constexpr Query kListProfiles = {
    "list_profiles", "SELECT " TF_PROFILE_COLUMNS
                     " FROM profiles WHERE job_id = $1 ORDER BY tuning_key, config"};
inline constexpr Query kPutProfileRequest = {
    "put_profile_request",
    "INSERT INTO profile_requests (" TF_PROFILE_REQUEST_COLUMNS
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
    "ON CONFLICT (job_id, tuning_key, config) DO UPDATE SET "
    "device_model = EXCLUDED.device_model, toolkit = EXCLUDED.toolkit, rank = EXCLUDED.rank, "
    "median_seconds = EXCLUDED.median_seconds, requested_unix_ms = EXCLUDED.requested_unix_ms"};
inline constexpr Query kListProfileRequests = {
    "list_profile_requests", "SELECT " TF_PROFILE_REQUEST_COLUMNS
                             " FROM profile_requests ORDER BY job_id, tuning_key, rank"};
inline constexpr Query kDeleteProfileRequest = {
    "delete_profile_request",
    "DELETE FROM profile_requests WHERE job_id = $1 AND tuning_key = $2 AND config = $3"};

inline constexpr Query kPutSecret = {
    "put_secret",
    "INSERT INTO coordinator_secrets (name, secret, created_unix_ms) VALUES ($1, $2, $3) "
    "ON CONFLICT (name) DO NOTHING"};
inline constexpr Query kGetSecret = {"get_secret",
                                     "SELECT secret FROM coordinator_secrets WHERE name = $1"};

// Every statement above, prepared on each new connection.
inline constexpr Query kAllQueries[] = {
    kPutJob, kGetJob, kListJobs, kQueryJobs, kListTrials, kQueryTrials, kUpsertBest, kImportBest,
    kGetBest, kListBest, kPutBlob, kGetBlob, kPutKernel, kListKernels, kListKeyTrials,
    kListReplacingJobs, kExcludeTrials, kPutBest, kDeleteBest, kPutQuarantine, kDeleteQuarantine,
    kListQuarantine, kPutToken, kListTokens, kPutProfile, kListProfiles, kPutProfileRequest,
    kListProfileRequests, kDeleteProfileRequest, kPutSecret, kGetSecret};

}  // namespace tunefleet::server::postgres

#endif  // TUNEFLEET_SERVER_STORE_POSTGRES_QUERIES_H_
