#include "server/job_repository.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunefleet::server {
namespace {

JobRecord ToRecord(const JobSnapshot& snapshot) {
  const v1::Job& view = snapshot.stored.last_view();
  JobRecord record;
  record.id = view.id();
  record.kernel_name = snapshot.spec.kernel().name();
  record.state = view.state();
  record.reason = view.reason();
  record.spec = snapshot.spec.SerializeAsString();
  record.targets = snapshot.stored.SerializeAsString();
  record.created_unix_ms = view.created_unix_ms();
  record.updated_unix_ms = view.updated_unix_ms();
  record.owner = view.owner();
  record.replace_best = snapshot.spec.replace_best();
  record.sweep_id = view.sweep_id();
  return record;
}

// An older coordinator kept the client view in `targets`.
v1::StoredJob FromLegacyView(const v1::Job& view) {
  v1::StoredJob stored;
  for (const v1::Target& info : view.targets()) {
    v1::StoredTarget* target = stored.add_targets();
    target->set_device_model(info.device_model());
    target->set_toolkit(info.toolkit());
    *target->mutable_limits() = info.limits();
    target->set_tuning_key(info.tuning_key());
    target->set_cached(info.cached());
    if (info.cached()) *target->mutable_cached_best() = info.best();
  }
  *stored.mutable_last_view() = view;
  return stored;
}

}  // namespace

bool IsFinal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

v1::StopReason StopReasonOfState(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_CANCELLED: return v1::STOP_REASON_CANCELLED;
    case v1::JOB_STATE_FAILED: return v1::STOP_REASON_FAILED;
    default: return v1::STOP_REASON_UNSPECIFIED;
  }
}

void MarkFinal(JobSnapshot* snapshot, v1::JobState state, std::string reason, absl::Time now) {
  v1::Job* view = snapshot->stored.mutable_last_view();
  view->set_state(state);
  if (v1::StopReason stop = StopReasonOfState(state); stop != v1::STOP_REASON_UNSPECIFIED) {
    view->set_stop_reason(stop);
  }
  view->set_reason(std::move(reason));
  view->set_updated_unix_ms(absl::ToUnixMillis(now));
  ++snapshot->version;
}

JobRepository::JobRepository(Store* store) : store_(store) {}

absl::Status JobRepository::Save(const JobSnapshot& snapshot,
                                 const std::function<bool()>& still_current) {
  absl::MutexLock lock(&mu_);
  auto it = written_.find(snapshot.id());
  if (it != written_.end() && it->second > snapshot.version) return absl::OkStatus();
  if (still_current != nullptr && !still_current()) return absl::OkStatus();
  RETURN_IF_ERROR(store_->PutJob(ToRecord(snapshot)));
  if (IsFinal(snapshot.state())) {
    written_.erase(snapshot.id());
  } else {
    written_[snapshot.id()] = snapshot.version;
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSnapshot> JobRepository::FromRecord(const JobRecord& record) {
  JobSnapshot snapshot;
  if (!snapshot.spec.ParseFromString(record.spec) ||
      !snapshot.stored.ParseFromString(record.targets)) {
    return absl::DataLossError(absl::StrCat("job ", record.id, " cannot be parsed"));
  }
  if (!snapshot.stored.has_last_view()) {
    v1::Job legacy;
    if (!legacy.ParseFromString(record.targets)) {
      return absl::DataLossError(absl::StrCat("job ", record.id, " cannot be parsed"));
    }
    snapshot.stored = FromLegacyView(legacy);
  }
  // The row's own columns are the truth; the snapshot may be older.
  v1::Job* view = snapshot.stored.mutable_last_view();
  view->set_id(record.id);
  view->set_state(static_cast<v1::JobState>(record.state));
  view->set_reason(record.reason);
  view->set_created_unix_ms(record.created_unix_ms);
  view->set_updated_unix_ms(record.updated_unix_ms);
  return snapshot;
}

absl::StatusOr<JobSnapshot> JobRepository::Load(const std::string& id) {
  ASSIGN_OR_RETURN(JobRecord record, store_->GetJob(id));
  return FromRecord(record);
}

absl::StatusOr<JobRepository::Unfinished> JobRepository::LoadUnfinished() {
  ASSIGN_OR_RETURN(std::vector<JobRecord> records,
                   store_->ListJobs(/*unfinished_only=*/true, /*limit=*/0));
  Unfinished out;
  // ListJobs is newest first; jobs resume in submission order.
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    absl::StatusOr<JobSnapshot> snapshot = FromRecord(*it);
    if (snapshot.ok()) {
      out.jobs.push_back(*std::move(snapshot));
    } else {
      out.failures.emplace_back(*it, std::string(snapshot.status().message()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<v1::Job>> JobRepository::ListViews(const JobQuery& query) {
  ASSIGN_OR_RETURN(std::vector<JobRecord> records, store_->QueryJobs(query));
  std::vector<v1::Job> views;
  views.reserve(records.size());
  for (const JobRecord& record : records) {
    absl::StatusOr<JobSnapshot> snapshot = FromRecord(record);
    if (!snapshot.ok()) continue;  // shown by neither; Recover fails it
    views.push_back(snapshot->stored.last_view());
  }
  return views;
}

}  // namespace tunefleet::server
