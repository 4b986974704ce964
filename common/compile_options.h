// The compile options a kernel spec may carry: a positive allowlist per
// backend. Anything not on it is refused, so a spec can tune code generation
// but can never make the compiler run a program (-wrapper, -B, -fplugin,
// -specs), read or write a file of its choosing (@file, -o, -include,
// absolute or ".." include dirs, -save-temps, -dump*), or reach the linker
// (-Wl,, -Xlinker, -l, -L).
//
// CPU (the system C++ compiler):
//   -O0 -O1 -O2 -O3 -Os -Ofast -Og -Oz        -g -g0 -g1 -g2 -g3 -w
//   -march=<cpu> -mtune=<cpu>                 <cpu> from a fixed set (native,
//                                             x86-64-v3, znver4, neoverse-v2...)
//   -m<isa>, -mno-<isa>                       avx, avx2, avx512f, fma, ...
//   -mprefer-vector-width=128|256|512
//   -f<optimisation>, -fno-<optimisation>     a fixed set (fast-math,
//                                             unroll-loops, tree-vectorize...)
//   -ffp-contract=fast|on|off  -fvect-cost-model=<model>
//   -std=c++11..c++23, gnu++11..gnu++23
//   -W<warning>, -Wno-<warning>, -Werror      letters, digits, '-', '=' only
// CUDA (NVRTC):
//   --use_fast_math  -maxrregcount=N  --ftz= --prec-div= --prec-sqrt=
//   --fmad= (true|false)  -lineinfo  --extra-device-vectorization
//   -std=c++11..c++20  --tunefleet-arch-specific  -restrict  -default-device
// Both, each spelled with one or two leading dashes for NVRTC:
//   -D<NAME>[=<value>], -U<NAME>              NAME an identifier; value of
//                                             letters, digits and _ . + - * / ( )
//   -I<dir>                                   relative, no "..": a directory
//                                             of the kernel's own sources
//
// Thread-safety: pure functions.
#ifndef TUNEFLEET_COMMON_COMPILE_OPTIONS_H_
#define TUNEFLEET_COMMON_COMPILE_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tunefleet/v1/kernel_spec.pb.h"

namespace tunefleet {

// OK when `option` is allowed for `backend`; InvalidArgument naming the
// option (and the backend) otherwise, also for an unknown backend.
absl::Status CheckCompileOption(v1::Backend backend, const std::string& option);

// CheckCompileOption for every option; the error names the first refused
// one as `compile_options[i] "<option>"`.
absl::Status CheckCompileOptions(
    v1::Backend backend, const google::protobuf::RepeatedPtrField<std::string>& options);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_COMPILE_OPTIONS_H_
