// y = 2x + 1: the reference for flaky_cpu.
#include <cstdint>

extern "C" void flaky_reference(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}
