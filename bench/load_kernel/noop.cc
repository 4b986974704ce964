// load_bench_noop: leaves its argument as it is (see kernel.textproto).
#include <cstdint>

extern "C" void noop(float* x, int64_t n) { (void)x, (void)n; }
extern "C" void noop_reference(float* x, int64_t n) { (void)x, (void)n; }
