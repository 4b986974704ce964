#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/tunectl/profile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

KernelProfile Read() {
  KernelProfile p;
  p.config = "BM=128,BN=128";
  p.device_model = "NVIDIA H200 sm_90";
  p.rank = 1;
  p.median_seconds = 210e-6;
  p.duration_seconds = 215.36e-6;
  p.cycles = 398112;
  p.registers_per_thread = 168;
  p.shared_memory_bytes = 49152;
  p.achieved_occupancy_pct = 23.7;
  p.l2_hit_rate_pct = 87.5;
  p.dram_bytes_per_second = 1234.5e9;
  p.dram_throughput_pct = 41.2;
  p.tflops = 638.2;
  p.ncu_version = "2025.3.1.0";
  return p;
}

KernelProfile Unavailable() {
  KernelProfile p;
  p.config = "BM=64,BN=128";
  p.rank = 2;
  p.unavailable = "ncu not found on this host";
  return p;
}

TEST(ProfileFormatTest, TableShowsTheMetricsInReadableUnitsAndWhyOthersHaveNone) {
  const std::string table = ProfilesTable({Read(), Unavailable()});
  EXPECT_THAT(table, HasSubstr("DURATION µs"));
  EXPECT_THAT(table, HasSubstr("215.36"));
  EXPECT_THAT(table, HasSubstr("398112"));
  EXPECT_THAT(table, HasSubstr("48.0"));    // KiB of shared memory
  EXPECT_THAT(table, HasSubstr("1234.5"));  // GB/s
  EXPECT_THAT(table, HasSubstr("638.2"));
  EXPECT_THAT(table, HasSubstr("ncu not found on this host"));
  EXPECT_THAT(table, Not(HasSubstr("2025.3.1.0")));
  EXPECT_THAT(ProfilesTable({Read()}, /*wide=*/true), HasSubstr("2025.3.1.0"));
}

TEST(ProfileFormatTest, APendingProfileSaysSo) {
  KernelProfile pending = Unavailable();
  pending.unavailable.clear();
  pending.pending = true;
  EXPECT_THAT(ProfilesTable({pending}), HasSubstr("pending"));
}

TEST(ProfileFormatTest, JsonAndCsvCarryEveryProfileInBaseUnits) {
  nlohmann::json json = nlohmann::json::parse(ProfilesJson("j1", {Read(), Unavailable()}));
  EXPECT_EQ(json["job_id"], "j1");
  ASSERT_THAT(json["profiles"], SizeIs(2));
  EXPECT_EQ(json["profiles"][0]["registers_per_thread"], 168);
  EXPECT_DOUBLE_EQ(json["profiles"][0]["duration_seconds"].get<double>(), 215.36e-6);
  EXPECT_EQ(json["profiles"][1]["unavailable"], "ncu not found on this host");

  std::vector<std::string> lines =
      absl::StrSplit(ProfilesCsv({Read(), Unavailable()}), "\r\n", absl::SkipEmpty());
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], HasSubstr("duration_seconds"));
  EXPECT_THAT(lines[1], HasSubstr("0.00021536"));
  EXPECT_THAT(lines[2], HasSubstr("ncu not found on this host"));
}

}  // namespace
}  // namespace tunefleet::tunectl
