// y = 2x + 1, broken on purpose according to FAULT (see kernel.textproto).
#include <cstdint>
#include <cstdlib>

#if FAULT == 4
#error "FAULT=4: this config does not compile"
#endif

// Opaque to the optimizer, so FAULT=1 really stores through a null pointer
// (SIGSEGV) instead of being folded into a trap instruction.
static int* volatile null_pointer = nullptr;

extern "C" void faulty(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  if (FAULT == 1) *null_pointer = 1;
  if (FAULT == 2) {
    volatile int64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  if (FAULT == 5) std::abort();
  const float offset = FAULT == 3 ? 2.0f : 1.0f;
  for (int64_t i = 0; i < n; i += UNROLL) {
#pragma GCC unroll 4
    for (int u = 0; u < UNROLL; ++u) y[i + u] = 2.0f * x[i + u] + offset;
  }
}
