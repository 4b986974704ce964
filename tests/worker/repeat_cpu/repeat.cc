// y = 2x + 1, computed REPEAT times over (see kernel.textproto). The empty
// asm with a memory clobber keeps the compiler from folding the repeats.
#include <cstdint>

extern "C" void repeat(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  for (int r = 0; r < REPEAT + 0 * VARIANT; ++r) {
    for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
    asm volatile("" ::: "memory");
  }
}

extern "C" void repeat_reference(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}
