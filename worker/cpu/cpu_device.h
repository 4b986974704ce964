// Discovery of the host CPU as a tunefleet device: its model (part of the
// tuning key) and the limits that kernel specs use by name.
#ifndef TUNEFLEET_WORKER_CPU_CPU_DEVICE_H_
#define TUNEFLEET_WORKER_CPU_CPU_DEVICE_H_

#include <string>

#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// The CPU device "cpu0": model "<model name from /proc/cpuinfo> x<cores>"
// (cores = UsableCpus(): its affinity bounded by its cgroup quota), limits `cores`, `l1d_bytes`,
// `l2_bytes`, `l3_bytes` (per-core L1d/L2, shared L3; from sysfs, else the
// placeholder values), driver = the kernel release (provenance only).
v1::Device DiscoverCpuDevice();

// 16 hex digits of the SHA-256 of the instruction-set features this host's
// CPU reports (the first `flags` line of /proc/cpuinfo): what code built
// with -march=native may use. Two hosts of one CPU model may differ here
// (a hypervisor can hide features).
std::string CpuFeatureDigest();

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_CPU_CPU_DEVICE_H_
