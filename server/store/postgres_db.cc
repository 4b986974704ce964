#include "server/store/postgres_db.h"

#include <cstdint>
#include <exception>

#include "absl/strings/str_cat.h"
#include "server/store/schema.h"

namespace tunefleet::server::postgres {
namespace {

// Numbered migrations (schema::Migration): never edit one that has shipped.
// Free-form fields (reason, spec, targets, error) are BYTEA: TEXT would
// reject bytes that are not UTF-8, and NUL bytes.
constexpr schema::Migration kPostgresMigrations[] = {
    {1, R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  state INTEGER NOT NULL,
  reason BYTEA NOT NULL,
  spec BYTEA NOT NULL,
  targets BYTEA NOT NULL,
  created_unix_ms BIGINT NOT NULL,
  updated_unix_ms BIGINT NOT NULL);
CREATE INDEX jobs_by_created ON jobs (created_unix_ms DESC, id DESC);
CREATE TABLE trials (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  status INTEGER NOT NULL,
  median_seconds DOUBLE PRECISION NOT NULL,
  p20_seconds DOUBLE PRECISION NOT NULL,
  p80_seconds DOUBLE PRECISION NOT NULL,
  samples BIGINT NOT NULL,
  compile_seconds DOUBLE PRECISION NOT NULL,
  worker_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  error BYTEA NOT NULL,
  finished_unix_ms BIGINT NOT NULL,
  UNIQUE (job_id, tuning_key, config));
CREATE TABLE best_configs (
  tuning_key TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  shape TEXT NOT NULL,
  device_model TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  config TEXT NOT NULL,
  median_seconds DOUBLE PRECISION NOT NULL,
  job_id TEXT NOT NULL,
  updated_unix_ms BIGINT NOT NULL);
CREATE INDEX best_configs_by_kernel ON best_configs (kernel_name);
)sql"},
    {2, R"sql(
CREATE TABLE blobs (
  digest TEXT PRIMARY KEY,
  content BYTEA NOT NULL);
CREATE TABLE kernels (
  name TEXT PRIMARY KEY,
  spec BYTEA NOT NULL,
  updated_unix_ms BIGINT NOT NULL);
)sql"},
    // Provenance and exclusion of trials, the measurement round in the
    // natural key, quarantined principals.
    {3, R"sql(
ALTER TABLE trials ADD COLUMN principal TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN clock_mhz DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN excluded BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE trials DROP CONSTRAINT trials_job_id_tuning_key_config_key;
ALTER TABLE trials ADD CONSTRAINT trials_job_id_tuning_key_config_round_key
  UNIQUE (job_id, tuning_key, config, round);
CREATE INDEX trials_by_key ON trials (tuning_key);
CREATE TABLE quarantine (
  principal TEXT PRIMARY KEY,
  reason BYTEA NOT NULL,
  since_unix_ms BIGINT NOT NULL);
)sql"},
    // Bearer tokens of clients, kept only hashed.
    {4, R"sql(
CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  role TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  created_unix_ms BIGINT NOT NULL,
  revoked_unix_ms BIGINT NOT NULL);
)sql"},
    // A trial whose sampling stopped early under the early-cut rule
    // (docs/measurement.md): its measurement is partial, it is never best.
    {5, R"sql(
ALTER TABLE trials ADD COLUMN cut_early BOOLEAN NOT NULL DEFAULT FALSE;
)sql"},
    // Listing jobs by owner, kernel and state; imported best rows.
    {6, R"sql(
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_kernel ON jobs (kernel_name, created_unix_ms DESC, id DESC);
CREATE INDEX trials_by_job ON trials (job_id, seq);
ALTER TABLE best_configs ADD COLUMN imported BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE best_configs ADD COLUMN origin TEXT NOT NULL DEFAULT '';
)sql"},
    // Repeatability: finalist rounds and their CV, low-clock samples.
    {7, R"sql(
ALTER TABLE trials ADD COLUMN rounds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN rounds_cv DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN retaken_samples BIGINT NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN low_clock_samples BIGINT NOT NULL DEFAULT 0;
)sql"},
    // Nsight Compute profiles of a job's fastest configs.
    {8, R"sql(
CREATE TABLE profiles (
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  profile BYTEA NOT NULL,
  profiled_unix_ms BIGINT NOT NULL,
  PRIMARY KEY (job_id, tuning_key, config));
)sql"},
    // Profile requests not yet profiled, so that a restart keeps them.
    {9, R"sql(
CREATE TABLE profile_requests (
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  device_model TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  config TEXT NOT NULL,
  rank INTEGER NOT NULL,
  median_seconds DOUBLE PRECISION NOT NULL,
  requested_unix_ms BIGINT NOT NULL,
  PRIMARY KEY (job_id, tuning_key, config));
)sql"},
    // Jobs submitted with replace_best: they set the floor a key's best is
    // derived from (best_derivation.h).
    {10, R"sql(
ALTER TABLE jobs ADD COLUMN replace_best BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX jobs_replacing ON jobs (id) WHERE replace_best;
)sql"},
    // Sweeps: the jobs of one submission over many shapes.
    {11, R"sql(
ALTER TABLE jobs ADD COLUMN sweep_id TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_sweep ON jobs (sweep_id, created_unix_ms DESC, id DESC);
)sql"},
    // How sure a best is: its tie set and the measurements behind it.
    {12, R"sql(
ALTER TABLE best_configs ADD COLUMN evidence BYTEA NOT NULL DEFAULT '';
)sql"},
    // Calibration: the reference's time on the device near each measurement.
    {13, R"sql(
ALTER TABLE trials ADD COLUMN calibration_seconds DOUBLE PRECISION NOT NULL DEFAULT 0;
)sql"},
    // The coordinator that leads the database, and its fencing epoch
    // (leadership.h): every write of a fenced store checks it.
    {14, R"sql(
CREATE TABLE coordinator_leader (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch BIGINT NOT NULL,
  holder TEXT NOT NULL,
  since_unix_ms BIGINT NOT NULL);
INSERT INTO coordinator_leader VALUES (1, 0, '', 0);
)sql"},
    // Secrets the coordinators of one database share (Store::Secret).
    {15, R"sql(
CREATE TABLE coordinator_secrets (
  name TEXT PRIMARY KEY,
  secret BYTEA NOT NULL,
  created_unix_ms BIGINT NOT NULL);
)sql"},
};

// Advisory lock key that serializes migrations of one database ("tunefleet"
// in ASCII). Advisory locks are per database, so other databases never wait.
constexpr int64_t kMigrationLockKey = 0x74756e65666c6565;

}  // namespace

Failure ClassifyCurrentException(absl::string_view what) {
  auto message = [&](const std::exception& e) {
    return absl::StrCat("postgres: ", what, ": ", e.what());
  };
  try {
    throw;
  } catch (const pqxx::in_doubt_error& e) {
    return {.status = absl::InternalError(message(e)), .connection_lost = true};
  } catch (const pqxx::broken_connection& e) {
    return {.status = absl::UnavailableError(message(e)),
            .retry = true,
            .connection_lost = true};
  } catch (const pqxx::serialization_failure& e) {
    return {.status = absl::AbortedError(message(e)), .retry = true};
  } catch (const pqxx::deadlock_detected& e) {
    return {.status = absl::AbortedError(message(e)), .retry = true};
  } catch (const FencedOut& e) {
    return {.status = absl::FailedPreconditionError(message(e))};
  } catch (const pqxx::data_exception& e) {
    return {.status = absl::InvalidArgumentError(message(e))};
  } catch (const std::exception& e) {
    return {.status = absl::InternalError(message(e))};
  } catch (...) {
    return {.status = absl::InternalError(
                absl::StrCat("postgres: ", what, ": unknown exception"))};
  }
}


void CheckFence(pqxx::work& txn, int64_t epoch) {
  const pqxx::result row =
      txn.exec("SELECT epoch, holder FROM coordinator_leader WHERE id = 1 FOR SHARE");
  const int64_t leader = row.empty() ? 0 : row[0][0].as<int64_t>();
  if (epoch != 0 && leader == epoch) return;
  throw FencedOut(absl::StrCat(
      "this coordinator does not lead the database: ",
      epoch == 0 ? std::string("it leads no epoch")
                 : absl::StrCat("it led epoch ", epoch, ", and ",
                                row.empty() ? std::string("?") : row[0][1].as<std::string>(),
                                " leads epoch ", leader, " now"),
      "; nothing was written"));
}

void ApplyPendingMigrations(pqxx::work& txn) {
  txn.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
  txn.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      "version INTEGER PRIMARY KEY, applied_unix_ms BIGINT NOT NULL)");
  auto applied =
      txn.exec1("SELECT coalesce(max(version), 0) FROM schema_migrations")[0]
          .as<int>();
  for (const schema::Migration& migration : kPostgresMigrations) {
    if (migration.version <= applied) continue;
    txn.exec(migration.sql);
    txn.exec_params(
        "INSERT INTO schema_migrations (version, applied_unix_ms) "
        "VALUES ($1, $2)",
        migration.version, schema::NowUnixMs());
  }
}

}  // namespace tunefleet::server::postgres
