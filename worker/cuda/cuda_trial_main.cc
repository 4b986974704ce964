// tunefleet-cuda-trial: compiles, checks and times configs of one CUDA kernel
// spec on this host's first GPU, in this process (no daemon, no coordinator).
// For kernel development, the GPU tests' crash cases, and quick comparisons
// with the reference (cuBLAS).
//
//   tunefleet-cuda-trial --kernel kernels/cuda/gemm_f16 --shape M=4096,N=4096,K=4096
//       [--config "BLOCK_M=128,..."]... [--set tune] [--all [--limit N]] [--reference]
//
// Prints one "RESULT ..." line per config as it finishes, then a table
// sorted by the first metric. A config that poisons the context (CRASHED,
// TIMEOUT) ends the process with exit code 3 right after its line: run the
// remaining configs in a new process.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/usable_cpus.h"
#include "worker/cuda/cuda_runner.h"
#include "worker/cuda/nvrtc_compiler.h"

namespace tunefleet::worker::cuda {
namespace {

constexpr int kExitPoisoned = 3;

struct Flags {
  std::string kernel_dir;
  std::string shape;
  std::vector<std::string> configs;
  std::string config_set;
  bool all = false;
  int limit = 0;
  bool reference = false;
  std::string cache_dir = "/tmp/tunefleet-cuda-trial-cache";
  double budget = 0.2;
  double warmup = 0.02;
  double launch_timeout = 10;
  double compile_timeout = 120;
  bool no_resource_check = false;
  uint64_t seed = 1;
  int jobs = 0;
};

struct Trial {
  v1::Config config;
  CompileOutcome compiled;
  std::string compile_error;  // infrastructure failure
  v1::TrialResult result;
  v1::TrialPhases phases;  // where its Run's time went
  double metric = 0;
};

absl::StatusOr<std::vector<v1::Config>> SelectConfigs(const Flags& flags,
                                                      const v1::KernelSpec& spec,
                                                      ConfigSpace* space) {
  std::vector<std::string> texts = flags.configs;
  for (const v1::ConfigSet& set : spec.config_sets()) {
    if (set.name() == flags.config_set) texts.insert(texts.end(), set.configs().begin(),
                                                     set.configs().end());
  }
  std::vector<v1::Config> configs;
  for (const std::string& text : texts) {
    ASSIGN_OR_RETURN(v1::Config parsed, ParseConfig(text));
    ASSIGN_OR_RETURN(v1::Config config, NormalizeConfig(spec, parsed));
    configs.push_back(config);
  }
  if (flags.all) {
    ConfigEnumerator enumerator(space);
    uint64_t ordinal = 0;
    while (enumerator.Next(&ordinal) &&
           (flags.limit <= 0 || static_cast<int>(configs.size()) < flags.limit)) {
      configs.push_back(space->ConfigAt(ordinal));
    }
  }
  if (configs.empty()) {
    ASSIGN_OR_RETURN(v1::Config config, DefaultConfig(spec));
    configs.push_back(config);
  }
  return configs;
}

void CompileAll(NvrtcCompiler* compiler, const KernelBundle& bundle, const v1::Shape& shape,
                const v1::Device& device, int jobs, std::vector<Trial>* trials) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < trials->size(); i = next++) {
      Trial& trial = (*trials)[i];
      CompileJob job{&bundle.spec, &bundle.sources, trial.config, device, /*reference=*/false,
                     shape};
      absl::StatusOr<CompileOutcome> outcome = compiler->Compile(job);
      if (outcome.ok()) {
        trial.compiled = *outcome;
      } else {
        trial.compile_error = outcome.status().ToString();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t) threads.emplace_back(work);
  for (std::thread& thread : threads) thread.join();
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) : line;
}

void PrintResult(const Trial& trial, const std::string& metric_name) {
  const v1::Measurement& m = trial.result.measurement();
  const v1::TrialPhases& p = trial.phases;
  std::printf("RESULT %-14s median_us=%.3f p20_us=%.3f p80_us=%.3f n=%lld clock_mhz=%.0f %s=%.2f "
              "compile_s=%.2f load_ms=%.2f check_ms=%.2f warmup_ms=%.2f samples_ms=%.2f "
              "config=%s%s%s\n",
              TrialStatus_Name(trial.result.status()).substr(13).c_str(),
              m.median_seconds() * 1e6, m.p20_seconds() * 1e6, m.p80_seconds() * 1e6,
              static_cast<long long>(m.samples()), m.clock_mhz(), metric_name.c_str(),
              trial.metric, trial.compiled.seconds, p.load_seconds() * 1e3,
              p.check_seconds() * 1e3, p.warmup_seconds() * 1e3, p.sampling_seconds() * 1e3,
              ConfigToString(trial.config).c_str(),
              trial.result.error().empty() ? "" : " error=",
              FirstLine(trial.result.error()).c_str());
  std::fflush(stdout);
}

int Main(const Flags& flags) {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(flags.kernel_dir);
  if (!bundle.ok()) {
    std::fprintf(stderr, "%s\n", bundle.status().ToString().c_str());
    return 2;
  }
  CudaRunnerOptions runner_options;
  runner_options.launch_timeout_seconds = flags.launch_timeout;
  runner_options.check_resources = !flags.no_resource_check;
  absl::StatusOr<std::unique_ptr<CudaRunner>> runner = CudaRunner::Create(runner_options);
  if (!runner.ok()) {
    std::fprintf(stderr, "no GPU: %s\n", runner.status().ToString().c_str());
    return 4;
  }
  const v1::Device& device = (*runner)->device();
  std::printf("DEVICE %s %s driver=%s\n", device.model().c_str(), device.id().c_str(),
              device.driver().c_str());

  absl::StatusOr<v1::Shape> parsed_shape = ParseShape(flags.shape);
  absl::StatusOr<v1::Shape> shape =
      parsed_shape.ok() ? NormalizeShape(bundle->spec, *parsed_shape) : parsed_shape;
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
      shape.ok() ? ConfigSpace::Create(bundle->spec, *shape, LimitsFromDevice(device))
                 : absl::StatusOr<std::unique_ptr<ConfigSpace>>(shape.status());
  absl::StatusOr<std::vector<v1::Config>> configs =
      space.ok() ? SelectConfigs(flags, bundle->spec, space->get())
                 : absl::StatusOr<std::vector<v1::Config>>(space.status());
  if (!configs.ok()) {
    std::fprintf(stderr, "%s\n", configs.status().ToString().c_str());
    return 2;
  }

  NvrtcCompilerOptions compiler_options;
  compiler_options.cache_dir = flags.cache_dir;
  compiler_options.helper_path = DefaultNvrtcHelperPath();
  compiler_options.timeout_seconds = flags.compile_timeout;
  absl::StatusOr<std::unique_ptr<NvrtcCompiler>> compiler =
      NvrtcCompiler::Create(compiler_options);
  if (!compiler.ok()) {
    std::fprintf(stderr, "%s\n", compiler.status().ToString().c_str());
    return 4;
  }

  v1::PrepareRequest prepare;
  *prepare.mutable_kernel() = bundle->spec;
  *prepare.mutable_shape() = *shape;
  prepare.set_seed(flags.seed);
  prepare.mutable_measure()->set_budget_seconds(flags.budget);
  prepare.mutable_measure()->set_warmup_seconds(flags.warmup);
  if (!bundle->spec.reference().entry().empty() && bundle->spec.reference().library().empty()) {
    CompileJob job{&bundle->spec, &bundle->sources, DefaultConfig(bundle->spec).value(), device,
                   /*reference=*/true, *shape};
    absl::StatusOr<CompileOutcome> outcome = (*compiler)->Compile(job);
    if (!outcome.ok() || !outcome->ok) {
      std::fprintf(stderr, "reference does not compile: %s\n",
                   outcome.ok() ? outcome->log.c_str() : outcome.status().ToString().c_str());
      return 2;
    }
    prepare.set_reference_artifact(outcome->artifact);
  }

  std::vector<Trial> trials(configs->size());
  for (size_t i = 0; i < trials.size(); ++i) trials[i].config = (*configs)[i];
  const int jobs = flags.jobs > 0 ? flags.jobs
                                  : UsableCpus();
  CompileAll(compiler->get(), *bundle, *shape, device, jobs, &trials);

  if (absl::Status prepared = (*runner)->Prepare(prepare); !prepared.ok()) {
    std::fprintf(stderr, "prepare: %s\n", prepared.ToString().c_str());
    return (*runner)->poisoned() ? kExitPoisoned : 2;
  }
  const std::string metric_name =
      bundle->spec.metrics_size() > 0 ? bundle->spec.metrics(0).name() : "metric";
  if (flags.reference) {
    absl::StatusOr<v1::Measurement> m = (*runner)->MeasureReference();
    if (m.ok()) {
      double metric = space->get()->Metric(0, m->median_seconds()).value_or(0);
      std::printf("REFERENCE median_us=%.3f p20_us=%.3f p80_us=%.3f n=%lld clock_mhz=%.0f %s=%.2f\n",
                  m->median_seconds() * 1e6, m->p20_seconds() * 1e6, m->p80_seconds() * 1e6,
                  static_cast<long long>(m->samples()), m->clock_mhz(), metric_name.c_str(),
                  metric);
    } else {
      std::printf("REFERENCE error=%s\n", m.status().ToString().c_str());
    }
  }

  for (Trial& trial : trials) {
    *trial.result.mutable_config() = trial.config;
    if (!trial.compile_error.empty()) {
      trial.result.set_status(v1::TRIAL_STATUS_COMPILE_ERROR);
      trial.result.set_error(trial.compile_error);
    } else if (!trial.compiled.ok) {
      trial.result.set_status(trial.compiled.timed_out ? v1::TRIAL_STATUS_TIMEOUT
                                                       : v1::TRIAL_STATUS_COMPILE_ERROR);
      trial.result.set_error(trial.compiled.log);
    } else {
      v1::RunRequest run;
      *run.mutable_config() = trial.config;
      run.set_artifact(trial.compiled.artifact);
      trial.result = (*runner)->Run(run);
      trial.phases = (*runner)->last_phases();
    }
    if (trial.result.status() == v1::TRIAL_STATUS_OK) {
      (void)space->get()->Bind(trial.config);
      trial.metric = space->get()->Metric(0, trial.result.measurement().median_seconds())
                         .value_or(0);
    }
    PrintResult(trial, metric_name);
    if ((*runner)->poisoned()) _exit(kExitPoisoned);
  }

  std::sort(trials.begin(), trials.end(),
            [](const Trial& a, const Trial& b) { return a.metric > b.metric; });
  std::printf("\n%-10s %-16s %12s %10s  %s\n", metric_name.c_str(), "status", "median_us", "clock",
              "config");
  for (const Trial& trial : trials) {
    std::printf("%-10.2f %-16s %12.3f %10.0f  %s\n", trial.metric,
                TrialStatus_Name(trial.result.status()).substr(13).c_str(),
                trial.result.measurement().median_seconds() * 1e6,
                trial.result.measurement().clock_mhz(), ConfigToString(trial.config).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tunefleet::worker::cuda

int main(int argc, char** argv) {
  tunefleet::worker::cuda::Flags flags;
  CLI::App app("Compile, check and time CUDA kernel configs on this host's first GPU");
  app.add_option("--kernel", flags.kernel_dir, "kernel directory (kernel.textproto)")->required();
  app.add_option("--shape", flags.shape, "problem shape, e.g. M=4096,N=4096,K=4096")->required();
  app.add_option("--config", flags.configs, "a config in short form (repeatable)");
  app.add_option("--set", flags.config_set, "a config set of the spec");
  app.add_flag("--all", flags.all, "every valid config of the space");
  app.add_option("--limit", flags.limit, "at most this many configs from --all");
  app.add_flag("--reference", flags.reference, "also time the reference");
  app.add_option("--cache", flags.cache_dir, "cubin cache directory");
  app.add_option("--budget", flags.budget, "measurement budget per config, seconds");
  app.add_option("--warmup", flags.warmup, "warm-up per config, seconds");
  app.add_option("--launch-timeout", flags.launch_timeout, "seconds before a launch is hung");
  app.add_option("--compile-timeout", flags.compile_timeout, "seconds before a compile is killed");
  app.add_flag("--no-resource-check", flags.no_resource_check,
               "launch without the cuFuncGetAttribute checks");
  app.add_option("--seed", flags.seed, "input seed");
  app.add_option("--jobs", flags.jobs, "parallel compiles (default: cores)");
  CLI11_PARSE(app, argc, argv);
  return tunefleet::worker::cuda::Main(flags);
}
