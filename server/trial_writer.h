// TrialWriter: trial rows on their way to the store, written in batches. Rows
// that arrive while a write is in flight wait and go together in the next
// transaction (group commit), so many workers reporting at once cost one
// transaction per round trip to the database, not one per report.
#ifndef TUNEFLEET_SERVER_TRIAL_WRITER_H_
#define TUNEFLEET_SERVER_TRIAL_WRITER_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/metrics.h"
#include "server/store/store.h"

namespace tunefleet::server {

struct TrialWriterOptions {
  // Most rows in one transaction. Default 2048.
  int max_batch_rows = 2048;
  // A batch the store refuses is tried this many times in all, waiting
  // `backoff` (doubling) in between, while the store answers Unavailable or
  // Aborted. Default 3, 50 ms.
  int attempts = 3;
  absl::Duration backoff = absl::Milliseconds(50);
};

// Thread-safety: safe for concurrent use. There is no thread of its own: the
// first caller that finds no write in flight writes for everyone waiting
// (and for itself), without holding the lock across the store call.
class TrialWriter {
 public:
  // `metrics` may be null; `store` and `metrics` must outlive the writer.
  TrialWriter(Store* store, const TrialWriterOptions& options,
              CoordinatorMetrics* metrics = nullptr);

  // Returns once `rows` are stored, or with the store's error when the
  // batch they went in was refused after its retries (nothing of it was
  // stored: InsertTrials is all-or-nothing).
  absl::Status Write(std::vector<TrialRecord> rows);

  // Rows gathered for the next write, not yet taken by a writer.
  size_t waiting_rows();

 private:
  struct Batch {
    std::vector<TrialRecord> rows;
    bool done = false;
    absl::Status status;
  };
  absl::Status WriteWithRetries(const std::vector<TrialRecord>& rows);

  Store* const store_;
  const TrialWriterOptions options_;
  NullMetrics null_metrics_;
  CoordinatorMetrics* const metrics_;

  absl::Mutex mu_;
  // The batch still gathering rows, and whether a write is in flight.
  std::shared_ptr<Batch> open_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TRIAL_WRITER_H_
