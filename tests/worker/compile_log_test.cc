#include "worker/compile_log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const JobFiles kJob{{"kernel.cc", "include/tile.h"}, "/cache/sources/abc"};

TEST(CompileLogTest, DropsGccDiagnosticsAndExcerptsOfOtherFiles) {
  const std::string log =
      "In file included from kernel.cc:1:\n"
      "/etc/passwd:1:5: error: found ':' in nested-name-specifier, expected '::'\n"
      "    1 | root:x:0:0:root:/root:/bin/bash\n"
      "      |     ^\n"
      "/etc/passwd:1:1: error: 'root' does not name a type\n"
      "    1 | root:x:0:0:root:/root:/bin/bash\n"
      "      | ^~~~\n"
      "kernel.cc:4:3: error: 'y' was not declared in this scope\n"
      "    4 |   y = 1;\n"
      "      |   ^\n";
  const std::string kept = FilterCompilerLog(log, kJob);
  EXPECT_THAT(kept, Not(HasSubstr("root")));
  EXPECT_THAT(kept, Not(HasSubstr("/etc/passwd")));
  EXPECT_THAT(kept, HasSubstr("In file included from kernel.cc:1:"));
  EXPECT_THAT(kept, HasSubstr("kernel.cc:4:3: error: 'y' was not declared"));
  EXPECT_THAT(kept, HasSubstr("    4 |   y = 1;"));
  EXPECT_THAT(kept, HasSubstr("[6 line(s) about files outside the kernel's sources omitted]"));
}

TEST(CompileLogTest, DropsNvrtcDiagnosticsOfOtherFiles) {
  const std::string log =
      "/etc/passwd(1): error: this declaration has no storage class or type specifier\n"
      "  root:x:0:0:root:/root:/bin/bash\n"
      "  ^\n"
      "\n"
      "/cache/sources/abc/include/tile.h(3): warning: variable \"t\" was declared\n"
      "    int t;\n"
      "kernel.cu(7): error: identifier \"q\" is undefined\n"
      "1 error detected in the compilation of \"kernel.cu\".\n"
      "ptxas info    : Used 32 registers\n";
  const std::string kept = FilterCompilerLog(log, {{"kernel.cu", "include/tile.h"}, kJob.dir});
  EXPECT_THAT(kept, Not(HasSubstr("root")));
  EXPECT_THAT(kept, HasSubstr("tile.h(3): warning"));
  EXPECT_THAT(kept, HasSubstr("    int t;"));
  EXPECT_THAT(kept, HasSubstr("kernel.cu(7): error"));
  EXPECT_THAT(kept, HasSubstr("1 error detected"));
  EXPECT_THAT(kept, HasSubstr("ptxas info    : Used 32 registers"));
}

TEST(CompileLogTest, DropsSystemHeadersAndKeepsToolMessages) {
  const std::string log =
      "In file included from /usr/include/c++/12/vector:64,\n"
      "                 from ./include/tile.h:2,\n"
      "                 from kernel.cc:1:\n"
      "/usr/include/c++/12/bits/stl_vector.h:10: error: secret\n"
      "   10 | system header text\n"
      "cc1plus: warning: command-line option '-Wfoo' is valid for C only\n"
      "\"/opt/x.h\", line 3: error: quoted\n"
      "compilation terminated.\n";
  const std::string kept = FilterCompilerLog(log, kJob);
  EXPECT_THAT(kept, Not(HasSubstr("/usr/include")));
  EXPECT_THAT(kept, Not(HasSubstr("system header text")));
  EXPECT_THAT(kept, Not(HasSubstr("quoted")));
  EXPECT_THAT(kept, HasSubstr("                 from ./include/tile.h:2,"));
  EXPECT_THAT(kept, HasSubstr("cc1plus: warning"));
  EXPECT_THAT(kept, HasSubstr("compilation terminated."));
}

TEST(CompileLogTest, SiblingOfTheJobDirIsNotTheJob) {
  const std::string kept =
      FilterCompilerLog("/cache/sources/abcd/kernel.cc:1:1: error: x\n", kJob);
  EXPECT_THAT(kept, Not(HasSubstr("error: x")));
}

TEST(CompileLogTest, CleanLogIsUnchangedAndLongLogsAreCapped) {
  const std::string clean = "kernel.cc:1:1: warning: unused\nfine\n";
  EXPECT_EQ(FilterCompilerLog(clean, kJob), clean);
  std::string noisy;
  for (int i = 0; i < 2000; ++i) noisy += "kernel.cc:1:1: error: again and again\n";
  EXPECT_LE(JobCompilerLog(noisy, kJob, 1000).size(), 1100u);
}

}  // namespace
}  // namespace tunefleet::worker
