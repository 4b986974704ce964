#include "worker/bench_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "spdlog/spdlog.h"
#include "worker/backends.h"
#include "worker/child_protocol.h"

namespace tunefleet::worker {

namespace {

// `request` without its measure options: what a job's inputs and expected
// outputs are made from, the reference file's version included (one built
// again where it was is another reference).
v1::PrepareRequest JobOf(const v1::PrepareRequest& request) {
  v1::PrepareRequest job = request;
  job.clear_measure();
  if (!request.reference_artifact().empty()) {
    job.set_reference_artifact(absl::StrCat(request.reference_artifact(), "@",
                                            FileVersion(request.reference_artifact()).value_or("")));
  }
  return job;
}

}  // namespace

int ServeBenchChild(KernelRunner* runner, int in_fd, int out_fd) {
  MessageReader reader(in_fd);
  // JobOf the last successful Prepare, while every run since was OK: a
  // config that failed may have written past its outputs into the job's
  // inputs or expected outputs, so the job is not kept past a failure.
  std::optional<v1::PrepareRequest> prepared;
  while (true) {
    v1::ChildRequest request;
    absl::Status read = reader.Read(&request);
    if (absl::IsUnavailable(read)) return kChildExitOk;
    if (!read.ok()) {
      spdlog::error("bench child: {}", read.ToString());
      return kChildExitProtocol;
    }
    v1::ChildResponse response;
    if (request.has_prepare()) {
      v1::PrepareRequest job = JobOf(request.prepare());
      const bool same_job = prepared.has_value() &&
                            google::protobuf::util::MessageDifferencer::Equals(job, *prepared);
      if (!same_job || !runner->Remeasure(request.prepare().measure())) {
        prepared.reset();
        absl::Status status = runner->Prepare(request.prepare());
        if (status.ok()) {
          prepared = std::move(job);
        } else {
          response.set_error(status.ToString());
        }
      }
    } else if (request.has_run()) {
      response.set_index(request.run().index());
      *response.mutable_result() = runner->Run(request.run());
      const v1::TrialPhases& phases = runner->last_phases();
      if (phases.ByteSizeLong() > 0) *response.mutable_phases() = phases;
      const v1::TrialStatus status = response.result().status();
      if (status != v1::TRIAL_STATUS_OK) prepared.reset();
      response.set_exiting(status == v1::TRIAL_STATUS_CRASHED ||
                           status == v1::TRIAL_STATUS_TIMEOUT);
    } else {
      response.set_error("empty request");
    }
    // A context broken while preparing (a reference that faulted or hung)
    // must not serve the next job: a fresh child gets a fresh context.
    if (runner->poisoned()) response.set_exiting(true);
    if (!WriteMessage(out_fd, response).ok()) return kChildExitOk;  // daemon gone
    if (response.exiting()) return kChildExitPoisoned;
  }
}

int BenchChildMain(v1::Backend backend) {
  // Die with the daemon, even one killed by SIGKILL, rather than linger.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return kChildExitOk;
  const int protocol_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (protocol_out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    return kChildExitProtocol;
  }
  absl::StatusOr<std::unique_ptr<KernelRunner>> runner = CreateKernelRunner(backend);
  if (!runner.ok()) {
    spdlog::error("bench child: {}", runner.status().ToString());
    return kChildExitNoBackend;
  }
  return ServeBenchChild(runner->get(), STDIN_FILENO, protocol_out);
}

std::vector<std::string> BenchChildCommand(const std::string& worker_binary,
                                           v1::Backend backend,
                                           const std::string& log_format) {
  return {worker_binary, "--child", "--backend", BackendName(backend), "--log-format",
          log_format};
}

}  // namespace tunefleet::worker
