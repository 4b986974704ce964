// The coordinator's log of job lifecycles and leases: one line per event,
// at a level an operator can filter on (info for the normal course, warn
// for what loses work or waits on the fleet). One free function per event,
// so that each event's wording and level live in one place.
#ifndef TUNEFLEET_SERVER_JOB_LOG_H_
#define TUNEFLEET_SERVER_JOB_LOG_H_

#include <string>

#include "absl/status/status.h"
#include "server/lease_book.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server::job_log {

// A job was accepted (`cached`: answered from the store, already final).
void Submitted(const v1::Job& job, const v1::JobSpec& spec, bool cached);
// A submission was refused with `status`.
void Refused(const v1::JobSpec& spec, const absl::Status& status);
// A job's first lease went out: it is RUNNING.
void Started(const v1::Job& job, const Lease& lease);
// A lease expired before its trials were reported; they are queued again.
void LeaseExpired(const Lease& lease);
// A job's remaining work has no live worker (`reason` non-empty), or has
// one again (`reason` empty).
void Stalled(const std::string& job_id, const std::string& reason);
// A job ended (SUCCEEDED, FAILED or CANCELLED), with its strategy, trial
// counts (and budget) and why its search stopped.
void Finished(const v1::Job& job);
// What a finished job did to the served best of `target`'s key (its
// retune is set): a warning with both medians when the job's best was slower
// and the best served before is kept, the reason of a replace_best job.
void Retuned(const v1::Job& job, const v1::Target& target);
// "time budget" for STOP_REASON_TIME_BUDGET; "-" for UNSPECIFIED.
std::string StopReasonLabel(v1::StopReason reason);
// Workers silent past their expiry were forgotten.
void WorkersForgotten(int count);

}  // namespace tunefleet::server::job_log

#endif  // TUNEFLEET_SERVER_JOB_LOG_H_
