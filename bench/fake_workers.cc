#include "bench/fake_workers.h"

#include <grpcpp/create_channel.h>

#include <atomic>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "bench/call_loop.h"
#include "common/config_space.h"
#include "common/thread_priority.h"
#include "common/tuning_key.h"
#include "common/version.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::bench {
namespace {

// Log-normal around 1 ms, drawn from a generator seeded by the job and the
// config: the same config of the same job always takes the same time.
double MadeUpMedian(const std::string& job_id, const v1::Config& config) {
  const std::string seed = absl::StrCat(job_id, "/", config.SerializeAsString());
  std::mt19937_64 rng(std::hash<std::string>{}(seed));
  std::lognormal_distribution<double> seconds(std::log(1e-3), 0.3);
  return seconds(rng);
}

constexpr absl::Duration kCallTimeout = absl::Seconds(10);  // on top of a long-poll
constexpr absl::Duration kRetryAfter = absl::Milliseconds(200);

v1::RegisterWorkerRequest RegisterRequest(const FakeWorkerOptions& options, int index) {
  v1::RegisterWorkerRequest request;
  request.set_host(absl::StrCat("load-bench-", index));
  request.set_toolkit(options.toolkit);
  request.set_version(kVersion);
  request.set_measurement_protocol(kMeasurementProtocolVersion);
  v1::Device* device = request.add_devices();
  device->set_id("cpu0");
  device->set_model(options.device_model);
  device->set_backend(v1::BACKEND_CPU);
  for (const auto& [name, value] : PlaceholderLimits(v1::BACKEND_CPU)) {
    v1::DeviceLimit* limit = device->add_limits();
    limit->set_name(name);
    limit->set_value(value);
  }
  return request;
}

}  // namespace

void WorkerCounters::Merge(const WorkerCounters& other) {
  leases += other.leases;
  empty_polls += other.empty_polls;
  results += other.results;
  cancelled_reports += other.cancelled_reports;
  reregisters += other.reregisters;
  errors += other.errors;
  if (first_error.empty()) first_error = other.first_error;
  lease.Merge(other.lease);
  report.Merge(other.report);
  heartbeat.Merge(other.heartbeat);
}

// The workers of one CallLoop; everything but `counters` and `registered`
// is touched on the loop thread only.
struct FakeWorkers::Loop {
  const FakeWorkerOptions* options = nullptr;
  std::vector<std::unique_ptr<v1::WorkerService::Stub>> stubs;  // one per connection
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<int> registered{0};
  absl::Mutex mu;
  WorkerCounters counters ABSL_GUARDED_BY(mu);
  CallLoop calls;  // last: its thread stops before the rest goes away

  void Count(const grpc::Status& status) {
    absl::MutexLock lock(&mu);
    ++counters.errors;
    if (counters.first_error.empty()) {
      counters.first_error = absl::StrCat(status.error_code(), ": ", status.error_message());
    }
  }
};

// One simulated worker: a chain of LeaseWork and ReportResults calls (one at
// a time, as the real worker's lease loop) beside a chain of heartbeats.
class FakeWorkers::Worker {
 public:
  Worker(Loop* loop, int index, v1::WorkerService::Stub* stub)
      : loop_(loop), index_(index), stub_(stub) {}

  void Register() {
    loop_->calls.Call<v1::RegisterWorkerResponse>(
        [this](grpc::ClientContext* context, grpc::CompletionQueue* cq) {
          return stub_->PrepareAsyncRegisterWorker(
              context, RegisterRequest(*loop_->options, index_), cq);
        },
        kCallTimeout, [this](CallResult<v1::RegisterWorkerResponse>& call) {
          if (!call.status.ok()) return Retry(call.status, [this] { Register(); });
          id_ = call.response.worker_id();
          heartbeat_interval_ = absl::Milliseconds(call.response.heartbeat_interval_ms());
          loop_->registered.fetch_add(1);
          Lease();
          ScheduleHeartbeat();
        });
  }

  // Ends the long-poll in flight, if any.
  void Cancel() {
    if (work_ != nullptr) work_->TryCancel();
  }

 private:
  void Lease() {
    v1::LeaseWorkRequest request;
    request.set_worker_id(id_);
    request.set_device_id("cpu0");
    request.set_max_trials(loop_->options->max_trials);
    request.set_wait_ms(loop_->options->lease_wait_ms);
    work_ = loop_->calls.Call<v1::LeaseWorkResponse>(
        [this, request](grpc::ClientContext* context, grpc::CompletionQueue* cq) {
          return stub_->PrepareAsyncLeaseWork(context, request, cq);
        },
        kCallTimeout + absl::Milliseconds(loop_->options->lease_wait_ms),
        [this](CallResult<v1::LeaseWorkResponse>& call) { OnLease(call); });
  }

  void OnLease(CallResult<v1::LeaseWorkResponse>& call) {
    work_ = nullptr;
    if (loop_->calls.stopping()) return;
    if (!call.status.ok()) return Retry(call.status, [this] { Lease(); });
    {
      absl::MutexLock lock(&loop_->mu);
      if (!call.response.has_lease()) {
        ++loop_->counters.empty_polls;
      } else {
        ++loop_->counters.leases;
        loop_->counters.lease.Add(call.latency);
      }
    }
    if (!call.response.has_lease()) return Lease();
    Report(call.response.lease());
  }

  // Every trial of the lease at once, OK, with a made-up median near 1 ms.
  // The median is a function of the job and the config, as a real device's
  // would be, so that every principal's spot checks, verifications and
  // referees agree and the load is the fleet's ordinary traffic.
  void Report(const v1::Lease& lease) {
    v1::ReportResultsRequest request;
    request.set_worker_id(id_);
    request.set_lease_id(lease.lease_id());
    request.set_epoch(lease.epoch());
    request.set_receipt(lease.receipt());  // as a worker sends it with every report
    for (const v1::Trial& trial : lease.trials()) {
      v1::ReportedTrial* reported = request.add_trials();
      reported->set_index(trial.index());
      v1::TrialResult* result = reported->mutable_result();
      result->set_status(v1::TRIAL_STATUS_OK);
      result->set_device_id("cpu0");
      const double median = MadeUpMedian(lease.job_id(), trial.config());
      result->mutable_measurement()->set_median_seconds(median);
      result->mutable_measurement()->set_p20_seconds(median * 0.98);
      result->mutable_measurement()->set_p80_seconds(median * 1.02);
      result->mutable_measurement()->set_samples(10);
      result->mutable_measurement()->set_calibration_seconds(1e-4);
    }
    const int64_t trials = request.trials_size();
    work_ = loop_->calls.Call<v1::ReportResultsResponse>(
        [this, request](grpc::ClientContext* context, grpc::CompletionQueue* cq) {
          return stub_->PrepareAsyncReportResults(context, request, cq);
        },
        kCallTimeout, [this, trials](CallResult<v1::ReportResultsResponse>& call) {
          OnReport(call, trials);
        });
  }

  void OnReport(CallResult<v1::ReportResultsResponse>& call, int64_t trials) {
    work_ = nullptr;
    if (loop_->calls.stopping()) return;
    if (!call.status.ok()) return Retry(call.status, [this] { Lease(); });
    {
      absl::MutexLock lock(&loop_->mu);
      loop_->counters.report.Add(call.latency);
      if (call.response.cancelled()) {
        ++loop_->counters.cancelled_reports;
      } else {
        loop_->counters.results += trials;
      }
    }
    Lease();
  }

  void ScheduleHeartbeat() {
    loop_->calls.After(absl::Now() + heartbeat_interval_, [this](bool fired) {
      if (fired) Heartbeat();
    });
  }

  void Heartbeat() {
    v1::HeartbeatRequest request;
    request.set_worker_id(id_);
    loop_->calls.Call<v1::HeartbeatResponse>(
        [this, request](grpc::ClientContext* context, grpc::CompletionQueue* cq) {
          return stub_->PrepareAsyncHeartbeat(context, request, cq);
        },
        kCallTimeout, [this](CallResult<v1::HeartbeatResponse>& call) {
          if (call.status.ok()) {
            absl::MutexLock lock(&loop_->mu);
            loop_->counters.heartbeat.Add(call.latency);
            if (call.response.reregister()) ++loop_->counters.reregisters;
          } else if (!loop_->calls.stopping()) {
            loop_->Count(call.status);
          }
          if (!loop_->calls.stopping()) ScheduleHeartbeat();
        });
  }

  // Counts a failed call and runs `again` a little later.
  void Retry(const grpc::Status& status, std::function<void()> again) {
    if (loop_->calls.stopping()) return;
    loop_->Count(status);
    loop_->calls.After(absl::Now() + kRetryAfter, [again = std::move(again)](bool fired) {
      if (fired) again();
    });
  }

  Loop* const loop_;
  const int index_;
  v1::WorkerService::Stub* const stub_;
  std::string id_;
  absl::Duration heartbeat_interval_ = absl::Seconds(1);
  grpc::ClientContext* work_ = nullptr;  // the LeaseWork or ReportResults in flight
};

FakeWorkers::FakeWorkers(const FakeWorkerOptions& options) : options_(options) {}

absl::StatusOr<std::unique_ptr<FakeWorkers>> FakeWorkers::Start(
    const FakeWorkerOptions& options) {
  std::unique_ptr<FakeWorkers> fleet(new FakeWorkers(options));
  const int loops = std::max(1, options.loops);
  for (int i = 0; i < loops; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->options = &fleet->options_;
    fleet->loops_.push_back(std::move(loop));
  }
  const int connections =
      std::max(loops, options.connections > 0 ? options.connections : options.workers);
  for (int c = 0; c < connections; ++c) {
    // A distinct channel argument keeps gRPC from sharing one connection.
    grpc::ChannelArguments args;
    args.SetInt("tunefleet.load_bench_connection", c);
    fleet->loops_[c % loops]->stubs.push_back(v1::WorkerService::NewStub(
        grpc::CreateCustomChannel(options.address, grpc::InsecureChannelCredentials(), args)));
  }
  for (int w = 0; w < options.workers; ++w) {
    Loop* loop = fleet->loops_[w % loops].get();
    v1::WorkerService::Stub* stub = loop->stubs[(w / loops) % loop->stubs.size()].get();
    loop->workers.push_back(std::make_unique<Worker>(loop, w, stub));
  }
  for (auto& loop : fleet->loops_) {
    Loop* raw = loop.get();
    raw->calls.Post([raw] {
      if (absl::Status lowered = LowerThisThreadPriority(raw->options->nice); !lowered.ok()) {
        std::fprintf(stderr, "fake workers: %s\n", std::string(lowered.message()).c_str());
      }
      for (auto& worker : raw->workers) worker->Register();
    });
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    int registered = 0;
    for (auto& loop : fleet->loops_) registered += loop->registered.load();
    if (registered == options.workers) return fleet;
    absl::SleepFor(absl::Milliseconds(50));
  }
  WorkerCounters counters = fleet->Counters();
  return absl::DeadlineExceededError(absl::StrCat(
      "the fake workers did not all register within 60 s; first error: ",
      counters.first_error));
}

FakeWorkers::~FakeWorkers() { Stop(); }

void FakeWorkers::ResetCounters() {
  for (auto& loop : loops_) {
    absl::MutexLock lock(&loop->mu);
    loop->counters = WorkerCounters();
  }
}

WorkerCounters FakeWorkers::Counters() {
  WorkerCounters total;
  for (auto& loop : loops_) {
    absl::MutexLock lock(&loop->mu);
    total.Merge(loop->counters);
  }
  return total;
}

void FakeWorkers::Stop() {
  for (auto& loop : loops_) {
    Loop* raw = loop.get();
    raw->calls.Stop([raw] {
      for (auto& worker : raw->workers) worker->Cancel();
    });
  }
}

}  // namespace tunefleet::bench
