#include "bench/local_fleet.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace tunefleet::bench {

std::string Fleet::BinPath(const std::string& name) const {
  return options_.bin_dir + "/" + name;
}

std::string Fleet::database_url() const {
  if (!options_.database.empty()) return options_.database;
  return absl::StrCat("sqlite://", options_.data_dir, "/tunefleet.db");
}

std::vector<std::string> Fleet::TunectlFlags() const {
  if (!secure()) return {"--insecure"};
  return {"--ca-file", ca_file(), "--token-file", admin_token_file()};
}

absl::StatusOr<std::vector<std::string>> Fleet::WorkerCertificateFlags(
    const std::string& name) const {
  const std::string dir = options_.data_dir + "/ca";
  ASSIGN_OR_RETURN(RunResult made,
                   RunProgram({options_.dev_ca_script, dir, "worker", name}, absl::Seconds(30)));
  if (!made.exit.success()) {
    return absl::InternalError(absl::StrCat("dev-ca.sh worker ", name, ": ", made.exit.ToString()));
  }
  return std::vector<std::string>{"--tls-ca", ca_file(), "--tls-cert",
                                  absl::StrCat(dir, "/worker-", name, ".crt"), "--tls-key",
                                  absl::StrCat(dir, "/worker-", name, ".key")};
}

absl::Status Fleet::SecurityFlags(std::vector<std::string>* argv) {
  if (!secure()) {
    argv->push_back("--insecure");
    return absl::OkStatus();
  }
  const std::string dir = options_.data_dir + "/ca";
  ASSIGN_OR_RETURN(RunResult made,
                   RunProgram({options_.dev_ca_script, dir, "coordinator"}, absl::Seconds(30)));
  if (!made.exit.success()) {
    return absl::InternalError(absl::StrCat("dev-ca.sh coordinator: ", made.exit.ToString()));
  }
  argv->insert(argv->end(), {"--tls-cert", dir + "/coordinator.crt", "--tls-key",
                             dir + "/coordinator.key", "--tls-client-ca", ca_file(),
                             "--admin-token-file", admin_token_file()});
  return absl::OkStatus();
}

absl::Status Fleet::StartCoordinator() {
  const std::string address_file =
      absl::StrCat(options_.data_dir, "/address-", restarts_++);
  SubprocessOptions options;
  options.argv = {BinPath("tunefleet-coordinator"),
                  "--listen", listen_,
                  "--data-dir", options_.data_dir,
                  "--address-file", address_file,
                  "--lease-ttl-ms", std::to_string(options_.lease_ttl_ms),
                  "--heartbeat-ms", std::to_string(options_.heartbeat_ms),
                  "--batch-size", std::to_string(options_.batch_size),
                  "--metrics-listen", "127.0.0.1:0",
                  "--metrics-address-file", address_file + ".metrics",
                  "--finalists", std::to_string(options_.finalists)};
  // The URL travels in the environment, as a password should; set even when
  // empty (the default store), so that the caller's own does not leak in.
  options.env.emplace_back("TUNEFLEET_DATABASE", options_.database);
  RETURN_IF_ERROR(SecurityFlags(&options.argv));
  options.argv.insert(options.argv.end(), options_.coordinator_flags.begin(),
                      options_.coordinator_flags.end());
  if (options_.coordinator_cpu >= 0) {
    // taskset execs the coordinator in its own process: the pid stays the
    // coordinator's, and every thread it starts inherits the affinity.
    options.argv.insert(options.argv.begin(),
                        {"taskset", "-c", std::to_string(options_.coordinator_cpu)});
  }
  options.stdout_mode = SubprocessOptions::Output::kNull;
  ASSIGN_OR_RETURN(coordinator_, Subprocess::Start(options));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    std::ifstream in(address_file);
    std::string address;
    if (in >> address) {
      address_ = address;
      std::ifstream(address_file + ".metrics") >> metrics_address_;  // written first
      return absl::OkStatus();
    }
    if (std::optional<ExitInfo> exit = coordinator_->Poll()) {
      return absl::InternalError(absl::StrCat("coordinator ended: ", exit->ToString()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError("the coordinator did not start in 30 s");
}

absl::StatusOr<ExitInfo> Fleet::StopCoordinator() {
  coordinator_->Kill(SIGTERM);
  return coordinator_->Wait(absl::Seconds(30));
}

absl::Status Fleet::RestartCoordinator(int signal, absl::Duration down) {
  coordinator_->Kill(signal);
  RETURN_IF_ERROR(coordinator_->Wait(absl::Seconds(30)).status());
  absl::SleepFor(down);
  listen_ = address_;
  const absl::Status started = StartCoordinator();
  listen_ = "127.0.0.1:0";
  return started;
}

absl::StatusOr<int> Fleet::StartWorker() {
  return StartWorker(absl::StrCat("test-worker-", workers_.size()));
}

absl::StatusOr<int> Fleet::StartWorker(const std::string& name,
                                       const std::vector<std::string>& extra_flags,
                                       int compile_threads, const WorkerPlacement& placement) {
  const int index = static_cast<int>(workers_.size());
  SubprocessOptions options;
  options.argv = {BinPath("tunefleet-worker"),
                  "--coordinator", worker_target_.empty() ? address_ : worker_target_,
                  "--cache-dir", absl::StrCat(options_.data_dir, "/worker-cache-", index),
                  "--name", name,
                  "--measure-budget", absl::StrCat(options_.measure_budget),
                  "--compile-threads",
                  std::to_string(compile_threads >= 0 ? compile_threads : options_.compile_threads),
                  "--backend", options_.backend,
                  "--metrics-port", "0",
                  "--metrics-host", "127.0.0.1",
                  "--metrics-address-file", WorkerMetricsFile(index)};
  if (secure()) {
    ASSIGN_OR_RETURN(std::vector<std::string> certificate,
                     WorkerCertificateFlags(name));
    options.argv.insert(options.argv.end(), certificate.begin(), certificate.end());
  } else {
    options.argv.push_back("--insecure");
  }
  options.argv.insert(options.argv.end(), options_.worker_flags.begin(),
                      options_.worker_flags.end());
  options.argv.insert(options.argv.end(), extra_flags.begin(), extra_flags.end());
  if (!placement.cpus.empty()) {
    // taskset execs the worker: its pool sizes and children follow the mask.
    options.argv.insert(options.argv.begin(), {"taskset", "-c", placement.cpus});
  }
  if (!placement.gpus.empty()) options.env.emplace_back("CUDA_VISIBLE_DEVICES", placement.gpus);
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> worker, Subprocess::Start(options));
  workers_.push_back(std::move(worker));
  return index;
}

std::string Fleet::WorkerMetricsFile(int index) const {
  return absl::StrCat(options_.data_dir, "/worker-", index, ".metrics");
}

absl::StatusOr<std::string> Fleet::WorkerMetricsAddress(int index) const {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    std::string address;
    if (std::ifstream(WorkerMetricsFile(index)) >> address) return address;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("worker ", index, " did not serve /metrics in 30 s"));
}

absl::StatusOr<RunResult> RunProgram(const std::vector<std::string>& argv,
                                     absl::Duration timeout) {
  SubprocessOptions options;
  options.argv = argv;
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> process, Subprocess::Start(options));
  RunResult result;
  // Read on this thread; a watchdog kills the program at the deadline so
  // the read ends.
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const absl::Time deadline = absl::Now() + timeout;
    while (!finished.load() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
    if (!finished.load()) process->Kill(SIGKILL);
  });
  absl::StatusOr<std::string> out = ReadAll(process->stdout_fd());
  absl::StatusOr<ExitInfo> exit = process->Wait();
  finished.store(true);
  watchdog.join();
  RETURN_IF_ERROR(out.status());
  RETURN_IF_ERROR(exit.status());
  result.out = *std::move(out);
  result.exit = *exit;
  return result;
}

}  // namespace tunefleet::bench
