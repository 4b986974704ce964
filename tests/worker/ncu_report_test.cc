#include "worker/ncu_report.h"

#include <string>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::worker {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ncu's raw page as `--csv --page raw --print-units base` writes it (Nsight
// Compute 2025.3.1 on an H200, the gemm at 1024^3, the columns not asked
// for left out), with its own messages and the child's output around it.
constexpr char kReport[] =
    "==PROF== Connected to process 470 (/opt/tunefleet/bin/tunefleet-cuda-trial)\n"
    "==PROF== Connected to process 495 (/opt/tunefleet/bin/tunefleet-nvrtc)\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
    "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\","
    "\"device__attribute_display_name\",\"dram__bytes.sum.per_second\","
    "\"dram__throughput.avg.pct_of_peak_sustained_elapsed\",\"gpu__time_duration.sum\","
    "\"launch__registers_per_thread\",\"launch__shared_mem_per_block_dynamic\","
    "\"launch__shared_mem_per_block_static\",\"lts__t_sector_hit_rate.pct\","
    "\"sm__cycles_elapsed.max\",\"sm__warps_active.avg.pct_of_peak_sustained_active\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"byte/s\",\"%\",\"ns\","
    "\"register/thread\",\"byte/block\",\"byte/block\",\"%\",\"cycle\",\"%\"\n"
    "\"0\",\"470\",\"tunefleet-cuda-trial\",\"127.0.0.1\",\"gemm_f16\",\"1\",\"13\","
    "\"(256, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"NVIDIA H200\",\"320,852,300,242.13\","
    "\"6.68\",\"13,216\",\"180\",\"132,096\",\"0\",\"75.13\",\"24,028\",\"12.44\"\n"
    "==PROF== Disconnected from process 495\n"
    "==PROF== Disconnected from process 470\n";

TEST(NcuReportTest, ReadsTheLaunchsMetricsInBaseUnits) {
  absl::StatusOr<NcuMetrics> metrics = ParseNcuCsv(kReport);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(metrics->at("gpu__time_duration.sum"), DoubleNear(13.216e-6, 1e-12));
  EXPECT_THAT(metrics->at("dram__bytes.sum.per_second"), DoubleNear(320852300242.13, 1));
  EXPECT_EQ(metrics->at("launch__shared_mem_per_block_dynamic"), 132096);
  EXPECT_EQ(metrics->at("sm__cycles_elapsed.max"), 24028);
  EXPECT_EQ(metrics->at("launch__registers_per_thread"), 180);
  EXPECT_EQ(metrics->at("lts__t_sector_hit_rate.pct"), 75.13);
  EXPECT_FALSE(metrics->contains("device__attribute_display_name"));  // not a number
  EXPECT_FALSE(metrics->contains("Process ID"));  // not a metric
}

TEST(NcuReportTest, FillsAProfileFromTheMetrics) {
  absl::StatusOr<NcuMetrics> metrics = ParseNcuCsv(kReport);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  v1::KernelProfile profile;
  FillProfile(*metrics, &profile);
  EXPECT_THAT(profile.duration_seconds(), DoubleNear(13.216e-6, 1e-12));
  EXPECT_EQ(profile.cycles(), 24028);
  EXPECT_EQ(profile.registers_per_thread(), 180);
  EXPECT_EQ(profile.shared_memory_bytes(), 132096);
  EXPECT_EQ(profile.achieved_occupancy_pct(), 12.44);
  EXPECT_EQ(profile.l2_hit_rate_pct(), 75.13);
  EXPECT_EQ(profile.dram_throughput_pct(), 6.68);
  EXPECT_THAT(profile.dram_bytes_per_second(), DoubleNear(320852300242.13, 1));
}

TEST(NcuReportTest, ScalesEveryTimeAndSizePrefix) {
  const std::string report =
      "\"ID\",\"a__t\",\"b__t\",\"c__t\",\"d__b\",\"e__b\",\"f__r\",\"g__t\",\"h__t\",\"i__r\"\n"
      "\"\",\"nsecond\",\"msecond\",\"second\",\"Mbyte\",\"Gbyte\",\"Tbyte/second\",\"us\","
      "\"s\",\"Gbyte/s\"\n"
      "\"0\",\"2\",\"3\",\"4\",\"5\",\"6\",\"1.5\",\"7\",\"8\",\"2.5\"\n";
  absl::StatusOr<NcuMetrics> metrics = ParseNcuCsv(report);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(metrics->at("a__t"), DoubleNear(2e-9, 1e-18));
  EXPECT_THAT(metrics->at("b__t"), DoubleNear(3e-3, 1e-12));
  EXPECT_EQ(metrics->at("c__t"), 4);
  EXPECT_THAT(metrics->at("d__b"), DoubleNear(5e6, 1e-6));
  EXPECT_THAT(metrics->at("e__b"), DoubleNear(6e9, 1e-3));
  EXPECT_THAT(metrics->at("f__r"), DoubleNear(1.5e12, 1));
  EXPECT_THAT(metrics->at("g__t"), DoubleNear(7e-6, 1e-15));
  EXPECT_EQ(metrics->at("h__t"), 8);
  EXPECT_THAT(metrics->at("i__r"), DoubleNear(2.5e9, 1e-3));
}

TEST(NcuReportTest, KeepsTheLastLaunchAndSkipsValuesThatAreNotNumbers) {
  const std::string report =
      "\"ID\",\"Kernel Name\",\"x__y\",\"z__w\"\n"
      "\"\",\"\",\"cycle\",\"%\"\n"
      "\"0\",\"k\",\"10\",\"n/a\"\n"
      "\"1\",\"k\",\"20\",\"n/a\"\n";
  absl::StatusOr<NcuMetrics> metrics = ParseNcuCsv(report);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->at("x__y"), 20);
  EXPECT_FALSE(metrics->contains("z__w"));
}

TEST(NcuReportTest, AReportWithoutALaunchIsInvalidArgument) {
  const std::string header_only =
      "\"ID\",\"Kernel Name\",\"x__y\"\n\"\",\"\",\"cycle\"\n==WARNING== No kernels were "
      "profiled.\n";
  EXPECT_EQ(ParseNcuCsv(header_only).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNcuCsv("==ERROR== something\n").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNcuCsv("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NcuReportTest, TellsWhyNcuReadNoCounters) {
  std::optional<std::string> no_permission = NcuRefusal(
      "==PROF== Connected to process 1\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.\n");
  ASSERT_TRUE(no_permission.has_value());
  EXPECT_THAT(*no_permission, HasSubstr("cannot read the GPU's performance counters"));
  EXPECT_THAT(*no_permission, HasSubstr("ERR_NVGPUCTRPERM - The user does not have"));
  std::optional<std::string> init = NcuRefusal("==ERROR== Failed to initialize the profiler.\n");
  ASSERT_TRUE(init.has_value());
  EXPECT_THAT(*init, HasSubstr("Failed to initialize the profiler"));
  EXPECT_FALSE(NcuRefusal(kReport).has_value());
}

TEST(NcuReportTest, SaysWhenAProfileCannotBeTakenAtAll) {
  EXPECT_EQ(CannotProfile(v1::BACKEND_CPU, "/usr/bin/ncu"),
            "profiling is not supported for the cpu backend");
  EXPECT_EQ(CannotProfile(v1::BACKEND_CUDA, ""), "ncu not found on this host");
  EXPECT_FALSE(CannotProfile(v1::BACKEND_CUDA, "/usr/local/cuda/bin/ncu").has_value());
  EXPECT_EQ(CannotProfile(v1::BACKEND_PYTHON, "/usr/bin/ncu"),
            "profiling is not supported for the python backend");
  EXPECT_FALSE(CannotProfile(v1::BACKEND_CPU, "/bin/fake-ncu", {v1::BACKEND_CPU}).has_value());
}

TEST(NcuReportTest, ReadsNcusVersion) {
  EXPECT_EQ(NcuVersion("NVIDIA (R) Nsight Compute Command Line Profiler\n"
                       "Copyright (c) 2018-2025 NVIDIA Corporation\n"
                       "Version 2025.3.1.0 (build 36398880) (public-release)\n"),
            "2025.3.1.0 (build 36398880) (public-release)");
  EXPECT_EQ(NcuVersion("garbage"), "");
}

TEST(NcuReportTest, PutsNcuWithTheProfilesFlagsBeforeTheChild) {
  std::vector<std::string> argv =
      NcuArgv("/opt/ncu", "gemm_f16", "/tmp/log.csv", {"/bin/worker", "--child"});
  const std::string line = absl::StrJoin(argv, " ");
  EXPECT_EQ(argv.front(), "/opt/ncu");
  EXPECT_THAT(line, HasSubstr("--csv --page raw --print-units base --clock-control none"));
  EXPECT_THAT(line, HasSubstr("--kernel-name regex:^gemm_f16$ --launch-count 1"));
  EXPECT_THAT(line, HasSubstr("--log-file /tmp/log.csv /bin/worker --child"));
  EXPECT_THAT(line, HasSubstr("gpu__time_duration.sum,"));
  EXPECT_THAT(std::vector<std::string>(argv.end() - 2, argv.end()),
              ElementsAre("/bin/worker", "--child"));
}

}  // namespace
}  // namespace tunefleet::worker
