// JobWatches: the WatchJob streams, held as callbacks (gRPC's callback API)
// rather than as parked threads. A stream costs its state and its HTTP/2
// stream, not a thread: one pump thread looks at the JobManager's change
// count every `poll` and writes each watched job's new view to its streams,
// one view per job per pass however many watch it. StreamSlots still bounds
// the streams per principal and in all, since each holds memory.
#ifndef TUNEFLEET_SERVER_JOB_WATCHES_H_
#define TUNEFLEET_SERVER_JOB_WATCHES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/job_manager.h"
#include "server/stream_slots.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. Reactions (gRPC's calls into a
// stream) never wait on the pump, and the pump starts writes outside every
// lock a reaction takes.
class JobWatches {
 public:
  struct Options {
    int max_per_principal = 64;
    int max_total = 1024;
    // How often the pump looks for changes: a watcher sees a change at most
    // this late, and a busy job's views are coalesced to one per `poll`.
    absl::Duration poll = absl::Milliseconds(20);
  };

  // `jobs` must outlive this.
  JobWatches(JobManager* jobs, Options options);
  // Ends every open stream (as Shutdown) and stops the pump.
  ~JobWatches();
  JobWatches(const JobWatches&) = delete;
  JobWatches& operator=(const JobWatches&) = delete;

  // The reactor of one WatchJob call by `principal`: it writes the job's
  // view now and at every change, and finishes OK after the view of a final
  // state. INVALID_ARGUMENT without a job id, RESOURCE_EXHAUSTED over the
  // caps (naming the flag), NOT_FOUND for a job nobody knows, CANCELLED when
  // the client goes away.
  grpc::ServerWriteReactor<v1::WatchJobEvent>* Open(const v1::WatchJobRequest& request,
                                                    const std::string& principal);

  // A call answered at once with `status` (a caller refused before Open).
  static grpc::ServerWriteReactor<v1::WatchJobEvent>* Refuse(grpc::Status status);

  // Ends every open stream with UNAVAILABLE, and refuses new ones so: for a
  // coordinator that stops, so that the server's drain is quick.
  void Shutdown();


 private:
  class Stream;

  void Pump();
  // One pass: the views of the jobs some stream has not seen yet. Returns
  // whether a stream waits on a job that is stored but not yet live.
  bool Pass(const std::vector<std::shared_ptr<Stream>>& streams);
  void Forget(const Stream* stream);

  JobManager* const jobs_;
  const Options options_;
  StreamSlots slots_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<const Stream*, std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  bool fresh_ ABSL_GUARDED_BY(mu_) = false;  // a stream opened since the last pass
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread pump_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_JOB_WATCHES_H_
