#include "common/compile_options.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tunefleet {
namespace {

using Set = absl::flat_hash_set<absl::string_view>;

bool AllOf(absl::string_view text, bool (*ok)(char)) {
  for (char c : text) {
    if (!ok(c)) return false;
  }
  return true;
}

bool IdentifierChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }
bool MacroValueChar(char c) {
  return absl::ascii_isalnum(c) || absl::string_view("_.+-*/()").find(c) != absl::string_view::npos;
}
bool WarningChar(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '=' || c == '+';
}
bool PathChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/';
}

// "NAME" or "NAME=value" (-D), "NAME" (-U).
bool IsMacro(absl::string_view text, bool with_value) {
  absl::string_view name = text.substr(0, text.find('='));
  if (name.empty() || absl::ascii_isdigit(name[0]) || !AllOf(name, IdentifierChar)) return false;
  if (name.size() == text.size()) return true;
  return with_value && AllOf(text.substr(name.size() + 1), MacroValueChar);
}

// A directory of the kernel's own sources: relative, without "..".
bool IsRelativeDir(absl::string_view dir) {
  if (dir.empty() || dir[0] == '/' || !AllOf(dir, PathChar)) return false;
  return !(dir == ".." || absl::StartsWith(dir, "../") || absl::EndsWith(dir, "/..") ||
           absl::StrContains(dir, "/../"));
}

// -D, -U and -I, shared by both backends (`body` without its dashes).
bool IsPreprocessorOption(absl::string_view body) {
  if (absl::ConsumePrefix(&body, "D")) return IsMacro(body, /*with_value=*/true);
  if (absl::ConsumePrefix(&body, "U")) return IsMacro(body, /*with_value=*/false);
  if (absl::ConsumePrefix(&body, "I")) return IsRelativeDir(body);
  return false;
}

const Set& CpuNames() {
  static const auto* set = new Set{
      "native", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell",
      "broadwell", "skylake", "skylake-avx512", "cascadelake", "icelake-server",
      "sapphirerapids", "alderlake", "znver1", "znver2", "znver3", "znver4",
      "armv8-a", "armv8.2-a", "armv9-a", "neoverse-n1", "neoverse-n2", "neoverse-v1",
      "neoverse-v2"};
  return *set;
}

const Set& IsaExtensions() {
  static const auto* set = new Set{
      "sse4.1", "sse4.2", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "popcnt",
      "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512vnni",
      "avx512bf16", "avx512fp16", "amx-tile", "amx-int8", "amx-bf16"};
  return *set;
}

// -f<name> and -fno-<name>.
const Set& OptimisationFlags() {
  static const auto* set = new Set{
      "fast-math", "unroll-loops", "unroll-all-loops", "peel-loops", "unswitch-loops",
      "tree-vectorize", "tree-loop-vectorize", "tree-slp-vectorize", "math-errno",
      "trapping-math", "associative-math", "reciprocal-math", "finite-math-only",
      "signed-zeros", "rounding-math", "strict-aliasing", "omit-frame-pointer",
      "openmp-simd", "prefetch-loop-arrays", "ipa-pta", "inline-functions",
      "inline", "exceptions", "rtti", "gcse", "split-loops", "loop-interchange",
      "aggressive-loop-optimizations", "schedule-insns", "schedule-insns2",
      "reorder-blocks", "align-loops", "cx-limited-range", "fp-int-builtin-inexact",
      "pic", "PIC", "stack-protector", "builtin", "vect-cost-model"};
  return *set;
}

bool IsCpuFOption(absl::string_view body) {  // body after "-f"
  if (body == "fp-contract=fast" || body == "fp-contract=on" || body == "fp-contract=off") {
    return true;
  }
  if (absl::ConsumePrefix(&body, "vect-cost-model=")) {
    return Set{"unlimited", "dynamic", "cheap", "very-cheap"}.contains(body);
  }
  absl::ConsumePrefix(&body, "no-");
  return OptimisationFlags().contains(body);
}

bool IsCpuMOption(absl::string_view body) {  // body after "-m"
  if (absl::ConsumePrefix(&body, "arch=") || absl::ConsumePrefix(&body, "tune=")) {
    return CpuNames().contains(body);
  }
  if (absl::ConsumePrefix(&body, "prefer-vector-width=")) {
    return body == "128" || body == "256" || body == "512";
  }
  absl::ConsumePrefix(&body, "no-");
  return IsaExtensions().contains(body);
}

bool IsCppStandard(absl::string_view value, bool gnu) {
  const bool prefixed = absl::ConsumePrefix(&value, "c++") ||
                        (gnu && absl::ConsumePrefix(&value, "gnu++"));
  if (!prefixed) return false;
  return Set{"11", "14", "17", "20", "2a", "23", "2b"}.contains(value);
}

bool IsCpuOption(absl::string_view option) {
  static const auto* plain = new Set{"-O0", "-O1", "-O2", "-O3", "-Os", "-Ofast", "-Og",
                                     "-Oz", "-g", "-g0", "-g1", "-g2", "-g3", "-w", "-Werror"};
  if (plain->contains(option)) return true;
  absl::string_view body = option;
  if (!absl::ConsumePrefix(&body, "-") || absl::StartsWith(body, "-")) return false;
  if (absl::ConsumePrefix(&body, "std=")) return IsCppStandard(body, /*gnu=*/true);
  if (absl::ConsumePrefix(&body, "f")) return IsCpuFOption(body);
  if (absl::ConsumePrefix(&body, "m")) return IsCpuMOption(body);
  // -W<warning> only: -Wl, -Wa, -Wp pass options on, and need a ','.
  if (absl::ConsumePrefix(&body, "W")) {
    return !body.empty() && absl::ascii_islower(body[0]) && AllOf(body, WarningChar);
  }
  return IsPreprocessorOption(body);
}

bool IsTrueFalse(absl::string_view value) { return value == "true" || value == "false"; }

bool IsCudaOption(absl::string_view option) {
  absl::string_view body = option;
  if (!absl::ConsumePrefix(&body, "-")) return false;
  absl::ConsumePrefix(&body, "-");  // NVRTC takes -x and --x alike
  static const auto* plain = new Set{
      "use_fast_math", "lineinfo", "generate-line-info", "extra-device-vectorization",
      "restrict", "default-device", "tunefleet-arch-specific"};
  if (plain->contains(body)) return true;
  for (absl::string_view flag : {"ftz=", "prec-div=", "prec-sqrt=", "fmad="}) {
    if (absl::ConsumePrefix(&body, flag)) return IsTrueFalse(body);
  }
  if (absl::ConsumePrefix(&body, "maxrregcount=")) {
    return !body.empty() && body.size() <= 3 && AllOf(body, [](char c) { return absl::ascii_isdigit(c); });
  }
  if (absl::ConsumePrefix(&body, "std=")) {
    return IsCppStandard(body, /*gnu=*/false) && body != "c++23" && body != "c++2b";
  }
  return IsPreprocessorOption(body);
}

}  // namespace

absl::Status CheckCompileOption(v1::Backend backend, const std::string& option) {
  switch (backend) {
    case v1::BACKEND_CPU:
      if (IsCpuOption(option)) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "compile option \"", absl::CHexEscape(option),
          "\" is not allowed for the cpu backend (allowed: -O<level>, -march=/-mtune=<cpu>, "
          "-m<isa>, -f<optimisation>, -std=, -W<warning>, -D/-U<macro>, -I<relative dir>)"));
    case v1::BACKEND_CUDA:
      if (IsCudaOption(option)) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "compile option \"", absl::CHexEscape(option),
          "\" is not allowed for the cuda backend (allowed: --use_fast_math, "
          "-maxrregcount=N, --ftz=/--prec-div=/--prec-sqrt=/--fmad=true|false, -lineinfo, "
          "-std=, -D/-U<macro>, -I<relative dir>, --tunefleet-arch-specific)"));
    case v1::BACKEND_PYTHON:
      return absl::InvalidArgumentError(absl::StrCat(
          "compile option \"", absl::CHexEscape(option),
          "\" is not allowed for the python backend (it takes none: the build function "
          "compiles)"));
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("compile options for unknown backend ", static_cast<int>(backend)));
}

absl::Status CheckCompileOptions(
    v1::Backend backend, const google::protobuf::RepeatedPtrField<std::string>& options) {
  for (int i = 0; i < options.size(); ++i) {
    absl::Status status = CheckCompileOption(backend, options.Get(i));
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("compile_options[", i, "]: ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace tunefleet
