#include "common/compile_options.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::StatusIsWith;

google::protobuf::RepeatedPtrField<std::string> Options(std::vector<std::string> list) {
  return {list.begin(), list.end()};
}

TEST(CompileOptionsTest, AcceptsTuningOptionsForCpu) {
  for (const char* option :
       {"-O3", "-Ofast", "-march=native", "-mtune=znver4", "-mavx2", "-mno-avx512f",
        "-ffp-contract=fast", "-funroll-loops", "-fno-math-errno", "-std=c++20",
        "-std=gnu++17", "-Wall", "-Wno-unused-variable", "-Werror", "-DTILE=16",
        "-DNDEBUG", "-DEXPR=(4*N)/2", "-UFOO", "-Iinclude", "-Isub/dir"}) {
    absl::Status status = CheckCompileOption(v1::BACKEND_CPU, option);
    EXPECT_TRUE(status.ok()) << option << ": " << status;
  }
}

TEST(CompileOptionsTest, RefusesOptionsThatRunProgramsOrTouchFiles) {
  for (const char* option :
       {"-wrapper", "-B/tmp", "-B", "-specs=/tmp/x", "@/etc/passwd", "-fplugin=/x.so",
        "-o", "-o/tmp/x", "-I/etc", "-I..", "-Isub/../..", "-I", "-include", "-imacros",
        "-isystem/etc", "-L/tmp", "-lfoo", "-Wl,-rpath,/x", "-Xlinker", "-save-temps",
        "--save-temps", "-dumpbase", "-fdump-tree-all", "-march=/etc/passwd",
        "-DX=\"a\"", "-D1X", "-D", "-DX=a;b", "-Wa,-x", "-Wp,-x", "-fopenmp",
        "-fprofile-generate=/tmp", "--param=x", "-x", "c++", "", "-O3 -wrapper"}) {
    EXPECT_THAT(CheckCompileOption(v1::BACKEND_CPU, option),
                StatusIsWith(absl::StatusCode::kInvalidArgument, "not allowed"))
        << option;
  }
}

TEST(CompileOptionsTest, AcceptsNvrtcOptionsForCuda) {
  for (const char* option :
       {"--use_fast_math", "-use_fast_math", "-maxrregcount=64", "--ftz=true",
        "--prec-div=false", "--fmad=true", "-lineinfo", "-std=c++17", "-DBLOCK=128",
        "--tunefleet-arch-specific", "-Idetail"}) {
    absl::Status status = CheckCompileOption(v1::BACKEND_CUDA, option);
    EXPECT_TRUE(status.ok()) << option << ": " << status;
  }
}

TEST(CompileOptionsTest, RefusesOtherNvrtcOptions) {
  for (const char* option :
       {"--include-path=/etc", "-I/usr/include", "--pre-include=/etc/passwd", "-include",
        "--gpu-architecture=sm_80", "-Xptxas", "--ptxas-options=-v", "--ftz=maybe",
        "-maxrregcount=x", "-O3", "-march=native", "-std=gnu++17"}) {
    EXPECT_THAT(CheckCompileOption(v1::BACKEND_CUDA, option),
                StatusIsWith(absl::StatusCode::kInvalidArgument, "cuda backend"))
        << option;
  }
}

TEST(CompileOptionsTest, ListErrorNamesIndexAndOption) {
  EXPECT_OK(CheckCompileOptions(v1::BACKEND_CPU, Options({"-O2", "-DX=1"})));
  EXPECT_THAT(CheckCompileOptions(v1::BACKEND_CPU, Options({"-O2", "-wrapper", "/bin/sh"})),
              StatusIsWith(absl::StatusCode::kInvalidArgument,
                           "compile_options[1]: compile option \"-wrapper\""));
  EXPECT_THAT(CheckCompileOptions(v1::BACKEND_UNSPECIFIED, Options({"-O2"})),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "unknown backend"));
  EXPECT_OK(CheckCompileOptions(v1::BACKEND_UNSPECIFIED, Options({})));
}

}  // namespace
}  // namespace tunefleet
