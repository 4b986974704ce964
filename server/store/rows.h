// The one mapping from a stored row to its record, for both stores. Each
// function reads its table's columns in the order of the TF_*_COLUMNS list
// (schema.h) from `row`, a dialect's adapter over one result row with
//
//   std::string Text(int column)   // a TEXT column
//   std::string Bytes(int column)  // a BLOB (SQLite) or BYTEA (PostgreSQL)
//   int64_t Int(int column)
//   double Double(int column)
//   bool Bool(int column)          // an INTEGER 0/1 (SQLite) or BOOLEAN
//
// so that a column added to a table is read in one place. Private to the
// store library, like schema.h: include only from the stores' .cc files.
#ifndef TUNEFLEET_SERVER_STORE_ROWS_H_
#define TUNEFLEET_SERVER_STORE_ROWS_H_

#include <string>

#include "server/store/store.h"

namespace tunefleet::server::rows {

// The first column: an id (ListReplacingJobs).
template <typename Row>
std::string Id(const Row& row) {
  return row.Text(0);
}

// TF_JOB_COLUMNS.
template <typename Row>
JobRecord Job(const Row& row) {
  JobRecord job;
  job.id = row.Text(0);
  job.kernel_name = row.Text(1);
  job.state = static_cast<int>(row.Int(2));
  job.reason = row.Bytes(3);
  job.spec = row.Bytes(4);
  job.targets = row.Bytes(5);
  job.created_unix_ms = row.Int(6);
  job.updated_unix_ms = row.Int(7);
  job.owner = row.Text(8);
  job.replace_best = row.Bool(9);
  job.sweep_id = row.Text(10);
  return job;
}

// TF_TRIAL_READ_COLUMNS.
template <typename Row>
TrialRecord Trial(const Row& row) {
  TrialRecord trial;
  trial.job_id = row.Text(0);
  trial.tuning_key = row.Text(1);
  trial.config = row.Text(2);
  trial.status = static_cast<int>(row.Int(3));
  trial.median_seconds = row.Double(4);
  trial.p20_seconds = row.Double(5);
  trial.p80_seconds = row.Double(6);
  trial.samples = row.Int(7);
  trial.compile_seconds = row.Double(8);
  trial.worker_id = row.Text(9);
  trial.device_id = row.Text(10);
  trial.error = row.Bytes(11);
  trial.finished_unix_ms = row.Int(12);
  trial.principal = row.Text(13);
  trial.clock_mhz = row.Double(14);
  trial.round = static_cast<TrialRound>(row.Int(15));
  trial.cut_early = row.Bool(16);
  trial.rounds = static_cast<int>(row.Int(17));
  trial.rounds_cv = row.Double(18);
  trial.retaken_samples = row.Int(19);
  trial.low_clock_samples = row.Int(20);
  trial.calibration_seconds = row.Double(21);
  trial.excluded = row.Bool(22);
  return trial;
}

// TF_QUARANTINE_COLUMNS.
template <typename Row>
QuarantineRecord Quarantine(const Row& row) {
  return QuarantineRecord{row.Text(0), row.Bytes(1), row.Int(2)};
}

// TF_BEST_COLUMNS.
template <typename Row>
BestRecord Best(const Row& row) {
  BestRecord best;
  best.tuning_key = row.Text(0);
  best.kernel_name = row.Text(1);
  best.shape = row.Text(2);
  best.device_model = row.Text(3);
  best.toolkit = row.Text(4);
  best.config = row.Text(5);
  best.median_seconds = row.Double(6);
  best.job_id = row.Text(7);
  best.updated_unix_ms = row.Int(8);
  best.imported = row.Bool(9);
  best.origin = row.Text(10);
  best.evidence = row.Bytes(11);
  return best;
}

// TF_KERNEL_COLUMNS.
template <typename Row>
KernelRecord Kernel(const Row& row) {
  KernelRecord kernel;
  kernel.name = row.Text(0);
  kernel.spec = row.Bytes(1);
  kernel.updated_unix_ms = row.Int(2);
  return kernel;
}

// TF_TOKEN_COLUMNS.
template <typename Row>
TokenRecord Token(const Row& row) {
  TokenRecord token;
  token.id = row.Text(0);
  token.name = row.Text(1);
  token.role = row.Text(2);
  token.secret_hash = row.Text(3);
  token.created_unix_ms = row.Int(4);
  token.revoked_unix_ms = row.Int(5);
  return token;
}

// TF_PROFILE_COLUMNS.
template <typename Row>
ProfileRecord Profile(const Row& row) {
  ProfileRecord profile;
  profile.job_id = row.Text(0);
  profile.tuning_key = row.Text(1);
  profile.config = row.Text(2);
  profile.profile = row.Bytes(3);
  profile.profiled_unix_ms = row.Int(4);
  return profile;
}

// TF_PROFILE_REQUEST_COLUMNS.
template <typename Row>
ProfileRequestRecord ProfileRequest(const Row& row) {
  ProfileRequestRecord request;
  request.job_id = row.Text(0);
  request.tuning_key = row.Text(1);
  request.device_model = row.Text(2);
  request.toolkit = row.Text(3);
  request.config = row.Text(4);
  request.rank = static_cast<int>(row.Int(5));
  request.median_seconds = row.Double(6);
  request.requested_unix_ms = row.Int(7);
  return request;
}

}  // namespace tunefleet::server::rows

#endif  // TUNEFLEET_SERVER_STORE_ROWS_H_
