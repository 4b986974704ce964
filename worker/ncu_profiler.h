// The Profiler of a profile lease (Lease.profile): runs one config once on
// one device under Nsight Compute and answers what ncu read, or why it read
// nothing (docs/profiling.md). NcuProfiler is the real one: a fresh
// benchmark child per config, started by ncu, which the TrialExecutor
// drives as for any trial (compile, prepare, check, a short measurement);
// ncu profiles the first launch of the spec's entry and, once the child
// exits (its stdin closed), writes its raw CSV page to a log file that
// ParseNcuCsv reads.
#ifndef TUNEFLEET_WORKER_NCU_PROFILER_H_
#define TUNEFLEET_WORKER_NCU_PROFILER_H_

#include <functional>
#include <string>
#include <vector>

#include "tunefleet/v1/types.pb.h"
#include "worker/child_process.h"
#include "worker/compile_pool.h"
#include "worker/trial_executor.h"

namespace tunefleet::worker {

// Thread-safety: not thread-safe; the device's lease loop owns it.
class Profiler {
 public:
  virtual ~Profiler() = default;
  // `trial` of `job`, profiled once on the profiler's device. Never fails:
  // a config that cannot be profiled comes back with `unavailable` set;
  // `device_id` and `ncu_version` are set either way.
  virtual v1::KernelProfile Profile(const JobContext& job, const v1::Trial& trial,
                                    const std::function<bool()>& should_stop) = 0;
};

struct NcuProfilerOptions {
  // The ncu binary; "" when this host has none (every profile then says
  // "ncu not found on this host"). Default "".
  std::string ncu;
  // What `ncu --version` said (NcuVersion). Default "".
  std::string ncu_version;
  // Where ncu's log files go (one per profile, removed after reading).
  // Default "/tmp".
  std::string scratch_dir = "/tmp";
  // The backends whose children ncu can profile; a device of another one
  // answers "profiling is not supported for the <backend> backend".
  // Default: CUDA only (tests put a stand-in ncu before a CPU child).
  std::vector<v1::Backend> backends = {v1::BACKEND_CUDA};
  // The executor of the profiled child: its measure budget should be short
  // (the profile is of one launch; the timing is not kept) and its trial
  // deadline long (ncu replays the kernel once per pass). Default: a 0.05 s
  // budget and a 300 s deadline.
  ExecutorOptions executor;
};

// Thread-safety: as Profiler.
class NcuProfiler final : public Profiler {
 public:
  // `child`: the device's benchmark child, as its TrialExecutor starts it;
  // ncu is put in front of its command. REQUIRES: `pool` outlives it.
  NcuProfiler(CompilePool* pool, v1::Device device, ChildOptions child,
              NcuProfilerOptions options);

  v1::KernelProfile Profile(const JobContext& job, const v1::Trial& trial,
                            const std::function<bool()>& should_stop) override;

  // The defaults NcuProfilerOptions documents, over `options`.
  static NcuProfilerOptions WithDefaults(NcuProfilerOptions options);

 private:
  // Runs the child under ncu; returns the config's trial result (nullopt
  // when none came) and fills `*log` with what ncu wrote.
  std::optional<v1::TrialResult> RunUnderNcu(const JobContext& job, const v1::Trial& trial,
                                             const std::function<bool()>& should_stop,
                                             std::string* log, absl::Status* status);
  // The spec's TFLOP/s metric at `seconds`; 0 when it has none.
  static double Tflops(const JobContext& job, const v1::Trial& trial, const v1::Device& device,
                       double seconds);

  CompilePool* const pool_;
  const v1::Device device_;
  const ChildOptions child_;
  const NcuProfilerOptions options_;
  int next_log_ = 0;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_NCU_PROFILER_H_
