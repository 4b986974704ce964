#include "server/profile_manager.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/status_macros.h"
#include "server/source_blobs.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
namespace {

constexpr absl::string_view kLeasePrefix = "profile-";

// The config a stored request row asks for, as Request answered it.
v1::KernelProfile Pending(const ProfileRequestRecord& row) {
  v1::KernelProfile config;
  config.set_config_text(row.config);
  config.set_device_model(row.device_model);
  config.set_tuning_key(row.tuning_key);
  config.set_rank(row.rank);
  config.set_median_seconds(row.median_seconds);
  config.set_pending(true);
  return config;
}

bool Ranks(const TrialRecord& trial) {
  return trial.status == v1::TRIAL_STATUS_OK && !trial.excluded && !trial.cut_early &&
         trial.median_seconds > 0;
}

}  // namespace

// The configs of one job target to profile, and the lease holding them.
struct ProfileManager::Queued {
  std::string job_id;
  std::shared_ptr<const v1::JobSpec> spec;
  std::string tuning_key;
  std::string device_model;
  std::string toolkit;
  std::vector<v1::KernelProfile> configs;  // rank order
  std::vector<bool> done;
  // False while Request writes its rows: nobody may lease, list or count it.
  bool stored = false;
  // Set while a worker holds it.
  std::string lease_id;
  int64_t epoch = 0;
  std::string worker_id;
  absl::Time expires;
  bool leased() const { return !lease_id.empty(); }
};

ProfileManager::ProfileManager(Store* store, JobLookup jobs, WorkerRegistry* workers,
                               Clock clock, absl::Duration lease_ttl,
                               const QuarantineList* quarantine,
                               CoordinatorMetrics* metrics)
    : store_(store),
      jobs_(std::move(jobs)),
      workers_(workers),
      clock_(std::move(clock)),
      lease_ttl_(lease_ttl),
      quarantine_(quarantine),
      metrics_(metrics),
      next_epoch_(absl::ToUnixMillis(clock_())) {}

ProfileManager::~ProfileManager() = default;

void ProfileManager::SetWorkListener(std::function<void()> listener) {
  work_listener_ = std::move(listener);
}

bool ProfileManager::Grants(const std::string& lease_id) const {
  return absl::StartsWith(lease_id, kLeasePrefix);
}

// Configs rank as the job's best does (TargetTrials::EndFinals): the job's
// best first (the served member of its tie set), then the finalists by their
// finalists-round row, ahead of every other config by its search row; a
// finalist whose second run failed is not ranked.
std::vector<v1::KernelProfile> ProfileManager::Fastest(const std::vector<TrialRecord>& trials,
                                                       const v1::Target& target, int top) {
  absl::flat_hash_map<std::string, double> search;
  absl::flat_hash_map<std::string, std::optional<double>> finals;
  for (const TrialRecord& trial : trials) {
    if (trial.tuning_key != target.tuning_key()) continue;
    if (trial.round == TrialRound::kFinalists) {
      std::optional<double>& final = finals[trial.config];
      if (Ranks(trial)) final = trial.median_seconds;
    } else if (Ranks(trial)) {
      auto [it, added] = search.emplace(trial.config, trial.median_seconds);
      if (!added) it->second = std::min(it->second, trial.median_seconds);
    }
  }
  // (finalist first, seconds, config)
  std::vector<std::tuple<bool, double, std::string>> ranked;
  for (const auto& [config, seconds] : finals) {
    if (seconds.has_value()) ranked.emplace_back(false, *seconds, config);
  }
  for (const auto& [config, seconds] : search) {
    if (!finals.contains(config)) ranked.emplace_back(true, seconds, config);
  }
  std::sort(ranked.begin(), ranked.end());
  // The job's best, the served member of its tie set, ranks first.
  auto best = std::find_if(ranked.begin(), ranked.end(), [&](const auto& row) {
    return std::get<2>(row) == target.best().config_text();
  });
  if (best != ranked.end()) std::rotate(ranked.begin(), best, best + 1);
  if (static_cast<int>(ranked.size()) > top) ranked.resize(top);
  std::vector<v1::KernelProfile> configs;
  for (const auto& [searched_only, seconds, config] : ranked) {
    v1::KernelProfile& profile = configs.emplace_back();
    profile.set_config_text(config);
    profile.set_device_model(target.device_model());
    profile.set_tuning_key(target.tuning_key());
    profile.set_rank(static_cast<int32_t>(configs.size()));
    profile.set_median_seconds(seconds);
    profile.set_pending(true);
  }
  return configs;
}

absl::StatusOr<std::vector<v1::KernelProfile>> ProfileManager::Request(
    const std::string& job_id, int top) {
  if (top < 1 || top > kMaxProfileTop) {
    return absl::InvalidArgumentError(
        absl::StrCat("top must be 1..", kMaxProfileTop, ", not ", top));
  }
  ASSIGN_OR_RETURN(v1::Job job, jobs_(job_id));
  if (job.state() != v1::JOB_STATE_SUCCEEDED) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is ", v1::JobState_Name(job.state()),
                     ": only a SUCCEEDED job's configs can be profiled"));
  }
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Queued>> queued, Plan(job, top));
  if (queued.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " measured no config of its own to profile"));
  }
  std::vector<ProfileRequestRecord> rows = RequestRows(queued, absl::ToUnixMillis(clock_()));
  ASSIGN_OR_RETURN(std::vector<v1::KernelProfile> answer, Reserve(job_id, std::move(queued)));
  const absl::Status written = store_->PutProfileRequests(rows);
  Settle(job_id, written.ok());
  RETURN_IF_ERROR(written);
  if (work_listener_) work_listener_();
  return answer;
}

absl::StatusOr<std::vector<std::unique_ptr<ProfileManager::Queued>>> ProfileManager::Plan(
    const v1::Job& job, int top) {
  ASSIGN_OR_RETURN(JobRecord record, store_->GetJob(job.id()));
  v1::JobSpec spec;
  if (!spec.ParseFromString(record.spec)) {
    return absl::InternalError(absl::StrCat("job ", job.id(), ": its stored spec is unreadable"));
  }
  ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_->ListTrials(job.id()));
  std::shared_ptr<const v1::JobSpec> shared = WithoutContents(std::move(spec));
  std::vector<std::unique_ptr<Queued>> queued;
  for (const v1::Target& target : job.targets()) {
    std::vector<v1::KernelProfile> configs = Fastest(trials, target, top);
    if (configs.empty()) continue;
    auto request = std::make_unique<Queued>();
    request->job_id = job.id();
    request->spec = shared;
    request->tuning_key = target.tuning_key();
    request->device_model = target.device_model();
    request->toolkit = target.toolkit();
    request->done.assign(configs.size(), false);
    request->configs = std::move(configs);
    queued.push_back(std::move(request));
  }
  return queued;
}

std::vector<ProfileRequestRecord> ProfileManager::RequestRows(
    const std::vector<std::unique_ptr<Queued>>& queued, int64_t now_unix_ms) {
  std::vector<ProfileRequestRecord> rows;
  for (const auto& request : queued) {
    for (const v1::KernelProfile& config : request->configs) {
      rows.push_back(ProfileRequestRecord{request->job_id, request->tuning_key,
                                          request->device_model, request->toolkit,
                                          config.config_text(), config.rank(),
                                          config.median_seconds(), now_unix_ms});
    }
  }
  return rows;
}

absl::StatusOr<std::vector<v1::KernelProfile>> ProfileManager::Reserve(
    const std::string& job_id, std::vector<std::unique_ptr<Queued>> queued) {
  absl::MutexLock lock(&mu_);
  if (requests_.size() + queued.size() > kMaxPendingProfiles) {
    return absl::ResourceExhaustedError(absl::StrCat(
        kMaxPendingProfiles, " profiles are pending already: wait for workers to take them"));
  }
  for (const auto& request : requests_) {
    if (request->job_id == job_id) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " is being profiled already"));
    }
  }
  std::vector<v1::KernelProfile> answer;
  for (auto& request : queued) {
    answer.insert(answer.end(), request->configs.begin(), request->configs.end());
    requests_.push_back(std::move(request));
  }
  return answer;
}

void ProfileManager::Settle(const std::string& job_id, bool written) {
  absl::MutexLock lock(&mu_);
  if (written) {
    for (auto& request : requests_) {
      if (request->job_id == job_id) request->stored = true;
    }
  } else {
    std::erase_if(requests_, [&](const auto& r) { return r->job_id == job_id && !r->stored; });
  }
  PublishPending();
}

absl::Status ProfileManager::Recover() {
  ASSIGN_OR_RETURN(std::vector<ProfileRequestRecord> rows, store_->ListProfileRequests());
  std::vector<std::unique_ptr<Queued>> recovered;
  for (size_t first = 0; first < rows.size();) {
    size_t end = first;
    while (end < rows.size() && rows[end].job_id == rows[first].job_id) ++end;
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Queued>> job,
                     Rebuild({rows.begin() + first, rows.begin() + end}));
    for (auto& request : job) recovered.push_back(std::move(request));
    first = end;
  }
  absl::MutexLock lock(&mu_);
  for (auto& request : recovered) requests_.push_back(std::move(request));
  PublishPending();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<ProfileManager::Queued>>> ProfileManager::Rebuild(
    const std::vector<ProfileRequestRecord>& rows) {
  const std::string& job_id = rows.front().job_id;
  absl::StatusOr<JobRecord> job = store_->GetJob(job_id);
  v1::JobSpec spec;
  if (absl::IsNotFound(job.status()) || (job.ok() && !spec.ParseFromString(job->spec))) {
    spdlog::warn("profile requests of job {} skipped: {}", job_id,
                 job.ok() ? "its stored spec is unreadable" : std::string(job.status().message()));
    return std::vector<std::unique_ptr<Queued>>();
  }
  RETURN_IF_ERROR(job.status());
  std::shared_ptr<const v1::JobSpec> shared = WithoutContents(std::move(spec));
  std::vector<std::unique_ptr<Queued>> queued;
  for (const ProfileRequestRecord& row : rows) {
    if (queued.empty() || queued.back()->tuning_key != row.tuning_key) {
      auto request = std::make_unique<Queued>();
      request->job_id = job_id;
      request->spec = shared;
      request->tuning_key = row.tuning_key;
      request->device_model = row.device_model;
      request->toolkit = row.toolkit;
      request->stored = true;
      queued.push_back(std::move(request));
    }
    queued.back()->configs.push_back(Pending(row));
    queued.back()->done.push_back(false);
  }
  return queued;
}

void ProfileManager::PublishPending() {
  if (metrics_ == nullptr) return;
  int64_t pending = 0;
  for (const auto& request : requests_) {
    if (request->stored) pending += std::count(request->done.begin(), request->done.end(), false);
  }
  metrics_->ProfilesPending(pending);
}

absl::StatusOr<std::vector<v1::KernelProfile>> ProfileManager::List(const std::string& job_id) {
  ASSIGN_OR_RETURN(std::vector<ProfileRecord> rows, store_->ListProfiles(job_id));
  std::vector<v1::KernelProfile> profiles;
  for (const ProfileRecord& row : rows) {
    v1::KernelProfile& profile = profiles.emplace_back();
    if (!profile.ParseFromString(row.profile)) {
      profile.Clear();
      profile.set_config_text(row.config);
      profile.set_tuning_key(row.tuning_key);
      profile.set_unavailable("the stored profile is unreadable");
    }
  }
  std::stable_sort(profiles.begin(), profiles.end(),
                   [](const v1::KernelProfile& a, const v1::KernelProfile& b) {
                     if (a.tuning_key() != b.tuning_key()) return a.tuning_key() < b.tuning_key();
                     return a.rank() < b.rank();
                   });
  absl::MutexLock lock(&mu_);
  for (const auto& request : requests_) {
    if (request->job_id != job_id || !request->stored) continue;
    for (size_t i = 0; i < request->configs.size(); ++i) {
      if (!request->done[i]) profiles.push_back(request->configs[i]);
    }
  }
  return profiles;
}

absl::StatusOr<std::optional<LeaseGrant>> ProfileManager::TryLease(const LeaseQuery& query) {
  absl::StatusOr<WorkerRegistry::ModelOf> device =
      workers_->TouchDevice(query.worker_id, query.device_id);
  if (!device.ok()) return std::nullopt;
  if (quarantine_ != nullptr && quarantine_->Contains(device->principal)) return std::nullopt;
  absl::MutexLock lock(&mu_);
  for (auto& request : requests_) {
    if (!request->stored || request->leased() || request->device_model != device->model ||
        request->toolkit != device->toolkit) {
      continue;
    }
    request->lease_id = absl::StrCat(kLeasePrefix, next_id_++);
    request->epoch = next_epoch_++;
    request->worker_id = query.worker_id;
    request->expires = clock_() + lease_ttl_;
    LeaseGrant grant;
    grant.lease_id = request->lease_id;
    grant.epoch = request->epoch;
    grant.expires = request->expires;
    grant.job_id = request->job_id;
    grant.spec = request->spec;
    grant.tuning_key = request->tuning_key;
    grant.kind = v1::LEASE_KIND_PROFILE;
    for (size_t i = 0; i < request->configs.size(); ++i) {
      if (request->done[i]) continue;
      absl::StatusOr<v1::Config> config = ParseConfig(request->configs[i].config_text());
      if (config.ok()) grant.trials.emplace_back(i, *std::move(config));
    }
    return grant;
  }
  return std::nullopt;
}

ProfileManager::Queued* ProfileManager::FindLease(const std::string& lease_id, int64_t epoch,
                                                   const std::string& worker_id) {
  for (auto& request : requests_) {
    if (request->lease_id == lease_id && request->epoch == epoch &&
        request->worker_id == worker_id) {
      return request.get();
    }
  }
  return nullptr;
}

// What the coordinator knows of a config wins over what the worker says of
// it; the worker adds the metrics and its device.
v1::KernelProfile ProfileManager::Stamped(const Queued& request, const v1::TrialResult& result,
                                          const v1::KernelProfile& asked,
                                          const std::string& worker_id, int64_t now_unix_ms) {
  v1::KernelProfile profile = result.profile();
  profile.set_config_text(asked.config_text());
  profile.set_device_model(request.device_model);
  profile.set_tuning_key(request.tuning_key);
  profile.set_rank(asked.rank());
  profile.set_median_seconds(asked.median_seconds());
  profile.set_worker_id(worker_id);
  profile.set_pending(false);
  if (profile.device_id().empty()) profile.set_device_id(result.device_id());
  if (profile.profiled_unix_ms() == 0) profile.set_profiled_unix_ms(now_unix_ms);
  return profile;
}

std::optional<std::vector<ProfileManager::Row>> ProfileManager::RowsOf(
    const ResultReport& report) {
  absl::MutexLock lock(&mu_);
  Queued* request = FindLease(report.lease_id, report.epoch, report.worker_id);
  if (request == nullptr) return std::nullopt;
  request->expires = clock_() + lease_ttl_;
  std::vector<Row> rows;
  for (const auto& [ordinal, result] : report.trials) {
    if (ordinal >= request->configs.size() || request->done[ordinal]) continue;
    v1::KernelProfile profile = Stamped(*request, result, request->configs[ordinal],
                                        report.worker_id, absl::ToUnixMillis(clock_()));
    rows.push_back(Row{ordinal,
                       ProfileRecord{request->job_id, request->tuning_key, profile.config_text(),
                                     profile.SerializeAsString(), profile.profiled_unix_ms()},
                       profile.unavailable().empty()});
  }
  return rows;
}

// A request ends with its last config; a released lease goes back to the
// queue with what is left.
ReportAck ProfileManager::MarkDone(const ResultReport& report, const std::vector<Row>& rows) {
  absl::MutexLock lock(&mu_);
  Queued* request = FindLease(report.lease_id, report.epoch, report.worker_id);
  if (request == nullptr) return ReportAck::Cancelled();
  for (const Row& row : rows) request->done[row.ordinal] = true;
  const bool all_done = std::all_of(request->done.begin(), request->done.end(),
                                    [](bool done) { return done; });
  if (all_done) {
    std::erase_if(requests_, [&](const auto& r) { return r.get() == request; });
  } else if (report.release) {
    request->lease_id.clear();
  }
  PublishPending();
  if (all_done || report.release) return ReportAck::Cancelled();
  ReportAck ack;
  ack.expires = request->expires;
  return ack;
}

absl::StatusOr<ReportAck> ProfileManager::Report(const ResultReport& report) {
  std::optional<std::vector<Row>> rows = RowsOf(report);
  if (!rows.has_value()) return ReportAck::Cancelled();
  for (const Row& row : *rows) {
    RETURN_IF_ERROR(store_->PutProfile(row.record));
    if (metrics_ != nullptr) metrics_->ProfileStored(row.read);
  }
  return MarkDone(report, *rows);
}

absl::Status ProfileManager::CheckBlobLeased(const std::string& worker_id,
                                             const std::string& digest) {
  absl::MutexLock lock(&mu_);
  for (const auto& request : requests_) {
    if (!request->leased() || request->worker_id != worker_id) continue;
    for (const v1::SourceFile& file : request->spec->sources()) {
      if (file.digest() == digest) return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "blob ", digest, " belongs to no profile lease worker ", worker_id, " holds"));
}

absl::Status ProfileManager::CheckArtifactLeased(const std::string& worker_id,
                                                 const std::string& job_id, const v1::Config&,
                                                 bool) {
  absl::MutexLock lock(&mu_);
  for (const auto& request : requests_) {
    if (request->leased() && request->worker_id == worker_id && request->job_id == job_id) {
      return absl::OkStatus();
    }
  }
  return absl::PermissionDeniedError(absl::StrCat("worker ", worker_id,
                                                  " holds no profile lease of job ", job_id));
}

void ProfileManager::RenewLeases(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  for (auto& request : requests_) {
    if (request->leased() && request->worker_id == worker_id) {
      request->expires = clock_() + lease_ttl_;
    }
  }
}

void ProfileManager::Tick() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_();
  for (auto& request : requests_) {
    if (request->leased() && request->expires < now) request->lease_id.clear();
  }
}

}  // namespace tunefleet::server
