#include "worker/compile_only.h"

#include <future>
#include <utility>
#include <vector>

#include "common/spec_loader.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {

absl::Status CompileOnlyWorker::Register() {
  v1::RegisterWorkerRequest request;
  request.set_host(options_.host);
  request.set_toolkit(options_.toolkit);
  request.set_version(options_.version);
  request.set_compile_target(options_.target);
  absl::StatusOr<v1::RegisterWorkerResponse> response = coordinator_->RegisterWorker(request);
  if (!response.ok()) return response.status();
  worker_id_ = response->worker_id();
  spdlog::info("registered as compile-only worker {} for {} ({})", worker_id_, options_.target,
               options_.toolkit);
  return absl::OkStatus();
}

absl::StatusOr<v1::GetCompileWorkResponse> CompileOnlyWorker::Ask() {
  if (worker_id_.empty()) {
    if (absl::Status registered = Register(); !registered.ok()) return registered;
  }
  v1::GetCompileWorkRequest request;
  request.set_worker_id(worker_id_);
  request.set_max_configs(options_.max_configs);
  return coordinator_->GetCompileWork(request);
}

void CompileOnlyWorker::Run() {
  bool warned = false;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    absl::StatusOr<v1::GetCompileWorkResponse> work = Ask();
    if (absl::IsNotFound(work.status())) {
      worker_id_.clear();  // the coordinator restarted or forgot this worker
      continue;
    }
    if (!work.ok()) {
      if (!warned) spdlog::warn("compile-only: {}; asking again", work.status().ToString());
      warned = true;
      Pause(options_.retry);
      continue;
    }
    warned = false;
    if (work->work().empty()) {
      Pause(options_.idle_poll);
      continue;
    }
    Compile(*work);
  }
}

void CompileOnlyWorker::Compile(const v1::GetCompileWorkResponse& response) {
  // Each CompileJob points into `sources` and `response`, which outlive
  // every compile (all are waited for below); reserved, so never moved.
  std::vector<std::vector<v1::SourceFile>> sources;
  sources.reserve(response.work_size());
  std::vector<std::shared_future<CompilePool::Result>> compiles;
  for (const v1::CompileWork& work : response.work()) {
    sources.emplace_back(work.sources().begin(), work.sources().end());
    const std::vector<v1::SourceFile>* files = &sources.back();
    // Normalized as a GPU worker's TrialExecutor normalizes them: the same
    // config and shape give the same artifact key.
    absl::StatusOr<v1::Shape> shape = NormalizeShape(work.kernel(), work.shape());
    if (!shape.ok()) continue;
    for (const v1::Config& given : work.configs()) {
      absl::StatusOr<v1::Config> config = NormalizeConfig(work.kernel(), given);
      if (!config.ok()) continue;
      compiles.push_back(pool_->Submit(
          CompileJob{&work.kernel(), files, *config, work.device(), false, *shape, work.job_id()}));
    }
    // A GPU worker compiles the job's reference (the default config) first.
    if (work.kernel().reference().entry().empty() || !references_.insert(work.job_id()).second) {
      continue;
    }
    absl::StatusOr<v1::Config> reference = DefaultConfig(work.kernel());
    if (!reference.ok()) continue;
    compiles.push_back(pool_->Submit(
        CompileJob{&work.kernel(), files, *reference, work.device(), true, *shape, work.job_id()}));
  }
  int64_t done = 0;
  for (const auto& compile : compiles) {
    const CompilePool::Result& result = compile.get();
    if (result.ok() && result->ok) ++done;
  }
  compiled_ += done;
}

void CompileOnlyWorker::Pause(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), wait);
}

void CompileOnlyWorker::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

}  // namespace tunefleet::worker
