// y = 2x + 1, crashing according to CRASH (see kernel.textproto).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

// Opaque to the optimizer, so the crash really stores through a null pointer
// (SIGSEGV) instead of being folded into a trap instruction.
static int* volatile null_pointer = nullptr;

static bool MarkerExists() {
  const char* marker = std::getenv("TUNEFLEET_TEST_CRASH_MARKER");
  return marker != nullptr && access(marker, F_OK) == 0;
}

extern "C" void flaky(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  if (CRASH == 1 || (CRASH == 2 && MarkerExists())) *null_pointer = 1;
  for (int64_t i = 0; i < n; i += UNROLL) {
#pragma GCC unroll 4
    for (int u = 0; u < UNROLL; ++u) y[i + u] = 2.0f * x[i + u] + 1.0f;
  }
}
