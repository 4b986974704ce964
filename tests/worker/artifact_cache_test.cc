#include "worker/artifact_cache.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "worker/cpu/cpu_compiler.h"

namespace tunefleet::worker {
namespace {

ArtifactKeyInputs Inputs() {
  ArtifactKeyInputs in;
  in.backend = "cpu";
  in.toolkit = "g++ 12.2.0";
  in.target = "AMD EPYC x2";
  in.sources = {{"matmul.cc", std::string(64, 'a')}, {"reference.cc", std::string(64, 'b')}};
  in.compile_files = {"matmul.cc"};
  in.entry = "matmul";
  in.options = {"-O3", "-march=native"};
  in.macros = {{"BLOCK_M", 32}, {"BLOCK_N", 64}};
  return in;
}

TEST(ArtifactKeyTest, IsStable) {
  // Pinned: a change here silently invalidates every worker's cache, so it
  // must be deliberate (bump the "tunefleet-artifact-vN" prefix).
  EXPECT_EQ(ArtifactKey(Inputs()), ArtifactKey(Inputs()));
  EXPECT_EQ(ArtifactKey(Inputs()), "fe9b7d1b529d05e6c802637dbc3b3c9f3728fe72219d33cf4897a2e0c8381d59");
}

TEST(ArtifactKeyTest, EveryInputTakesPart) {
  const std::string base = ArtifactKey(Inputs());
  std::vector<ArtifactKeyInputs> variants(9, Inputs());
  variants[0].backend = "cuda";
  variants[1].toolkit = "g++ 13.1.0";
  variants[2].target = "Intel Xeon x8";
  variants[3].sources[0].second = std::string(64, 'c');
  variants[4].compile_files.push_back("reference.cc");
  variants[5].entry = "matmul2";
  variants[6].options.push_back("-ffast-math");
  variants[7].macros[1].second = 128;
  variants[8].reference = true;
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_NE(ArtifactKey(variants[i]), base) << "variant " << i;
  }
}

TEST(ArtifactKeyTest, OptionBoundariesMatter) {
  ArtifactKeyInputs a = Inputs(), b = Inputs();
  a.options = {"-DX=1\noption=-O0"};
  b.options = {"-DX=1", "-O0"};
  EXPECT_NE(ArtifactKey(a), ArtifactKey(b));
}

TEST(ArtifactCacheTest, PublishesAtomically) {
  testing::TempDir dir;
  ArtifactCache cache(dir.path());
  const std::string path = cache.PathFor("abcdef", ".so");
  EXPECT_EQ(path, dir.path() + "/ab/abcdef.so");
  EXPECT_FALSE(cache.Contains(path));
  absl::StatusOr<std::string> temp = cache.TempPathFor(path);
  ASSERT_OK(temp);
  std::ofstream(*temp) << "elf";
  EXPECT_FALSE(cache.Contains(path));
  ASSERT_OK(cache.Publish(*temp, path));
  EXPECT_TRUE(cache.Contains(path));
}

TEST(TrimLogTest, KeepsHeadAndTail) {
  EXPECT_EQ(TrimLog("short", 100), "short");
  std::string log = "HEAD" + std::string(20000, 'x') + "TAIL";
  std::string trimmed = TrimLog(log, 1000);
  EXPECT_LT(trimmed.size(), 1100u);
  EXPECT_THAT(trimmed, ::testing::StartsWith("HEAD"));
  EXPECT_THAT(trimmed, ::testing::EndsWith("TAIL"));
  EXPECT_THAT(trimmed, ::testing::HasSubstr("bytes trimmed"));
}

}  // namespace
}  // namespace tunefleet::worker
