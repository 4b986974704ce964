// y = 2(x + 1) in two stages whose costs kernel.textproto gives. The empty
// asm with a memory clobber keeps the compiler from folding the repeats.
#include <cstdint>
#include <vector>

namespace {

constexpr int Square(int v) { return v * v; }
constexpr int kLog2 = 2 * Square(qk__BLOCK - pv__BLOCK - 1) + Square(pv__BLOCK - 3);
constexpr int kPasses = 4 << (kLog2 < 8 ? kLog2 : 8);
constexpr int kFirstPasses = kPasses - 1;
constexpr int kSecondPasses = 1;

}  // namespace

extern "C" void pair(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  thread_local std::vector<float> t;  // the first stage's output
  t.resize(n);
  for (int r = 0; r < kFirstPasses; ++r) {
    for (int64_t i = 0; i < n; ++i) t[i] = x[i] + 1.0f;
    asm volatile("" ::: "memory");
  }
  for (int r = 0; r < kSecondPasses; ++r) {
    for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * t[i];
    asm volatile("" ::: "memory");
  }
}

extern "C" void pair_reference(void** args) {
  const float* x = *static_cast<const float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * (x[i] + 1.0f);
}
