// `tunectl report` against a real TLS coordinator and worker process: the
// page of a job with failing configs and the page of its kernel, opened in
// headless Chromium, which must draw every chart without a script error.
//
// Set TUNEFLEET_REPORT_KEEP=DIR to keep the pages and their screenshots.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "bench/local_fleet.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fleet_client.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRefusal[] = "UNROLL 4 is refused by this kernel";

std::string Chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = Chromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (apt-get install chromium): the report "
                      "pages cannot be checked in a browser";
    }
    fleet_ = std::make_unique<Fleet>(SecureFleetOptions(dir_.path() + "/fleet"));
    ASSERT_OK(fleet_->StartCoordinator());
    ASSERT_OK(fleet_->StartWorker());
  }

  // tunectl `args` as the fleet's admin; stdout and the exit code.
  RunResult Tunectl(const std::vector<std::string>& args) {
    return TunectlAsAdmin(*fleet_, args, absl::Seconds(300));
  }

  // A random search over a copy of the CPU matmul kernel whose UNROLL=4
  // configs do not compile; returns the job id once it finished.
  std::string RunPartlyBrokenJob(const std::string& shape, bool force = false) {
    const std::string kernel_dir = dir_.path() + "/matmul";
    if (!std::filesystem::exists(kernel_dir)) {
      std::filesystem::copy(SourceDir() + "/kernels/cpu/matmul", kernel_dir);
      std::ofstream(kernel_dir + "/matmul.cc", std::ios::app)
          << "\n#if UNROLL == 4\n#error \"" << kRefusal << "\"\n#endif\n";
    }
    std::vector<std::string> submit = {"-q",         "submit",   kernel_dir, "--shape", shape,
                                       "--strategy", "random",   "--budget", "16",
                                       "--seed",     "3"};
    if (force) submit.push_back("--force");
    RunResult run = Tunectl(submit);
    EXPECT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
    const std::string job(absl::StripAsciiWhitespace(run.out));
    run = Tunectl({"-q", "watch", job});
    // Some trials failed, so the job's exit code is 3 (see exit_codes.h).
    EXPECT_EQ(run.exit.code, 3) << run.exit.ToString() << "\n" << run.out;
    return job;
  }

  static std::string WithoutScripts(std::string html) {
    for (size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at)) {
      const size_t end = html.find("</script>", at);
      html.erase(at, end == std::string::npos ? std::string::npos : end + 9 - at);
    }
    return html;
  }

  // The page's DOM once Chromium loaded it and ran its scripts.
  std::string RenderedDom(const std::string& page, const std::string& screenshot) {
    std::vector<std::string> argv = {chromium_, "--headless", "--no-sandbox", "--disable-gpu",
                                     "--user-data-dir=" + dir_.path() + "/chromium",
                                     "--window-size=1280,2400", "--hide-scrollbars",
                                     "--virtual-time-budget=5000", "--log-level=3",
                                     "--disable-dev-shm-usage"};
    std::vector<std::string> shoot = argv;
    shoot.push_back("--screenshot=" + screenshot);
    shoot.push_back("file://" + page);
    absl::StatusOr<RunResult> shot = RunProgram(shoot, absl::Seconds(120));
    EXPECT_TRUE(shot.ok() && shot->exit.success()) << (shot.ok() ? shot->exit.ToString() : "");
    argv.push_back("--dump-dom");
    argv.push_back("file://" + page);
    absl::StatusOr<RunResult> dom = RunProgram(argv, absl::Seconds(120));
    EXPECT_TRUE(dom.ok() && dom->exit.success()) << (dom.ok() ? dom->exit.ToString() : "");
    Keep(page);
    Keep(screenshot);
    // What the scripts drew, without the scripts: their text (the page's
    // code and its embedded data) holds every string the checks look for.
    return dom.ok() ? WithoutScripts(dom->out) : "";
  }

  static void Keep(const std::string& file) {
    const char* keep = std::getenv("TUNEFLEET_REPORT_KEEP");
    if (keep == nullptr || *keep == '\0' || !std::filesystem::exists(file)) return;
    std::filesystem::create_directories(keep);
    std::filesystem::copy_file(file,
                               std::filesystem::path(keep) / std::filesystem::path(file).filename(),
                               std::filesystem::copy_options::overwrite_existing);
  }

  TempDir dir_;
  std::string chromium_;
  std::unique_ptr<Fleet> fleet_;
};

// A page that opens offline: no address or file it would have to fetch.
void ExpectSelfContained(const std::string& html) {
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, HasSubstr("Chart.js v"));
}

void ExpectDrawn(const std::string& dom) {
  EXPECT_THAT(dom, HasSubstr("data-rendered=\"true\"")) << dom.substr(0, 4000);
  EXPECT_THAT(dom, Not(HasSubstr("data-error")));
  EXPECT_TRUE(std::regex_search(dom, std::regex("<canvas[^>]*height=\"[1-9]")))
      << "no chart was drawn";
}

TEST_F(ReportTest, AJobsPageDrawsEveryConfigAndExplainsItsFailures) {
  const std::string job = RunPartlyBrokenJob("M=256,N=256,K=256");
  ASSERT_FALSE(job.empty());
  RunResult profiled = Tunectl({"-q", "profile", job, "--top", "2"});
  ASSERT_TRUE(profiled.exit.success()) << profiled.exit.ToString() << "\n" << profiled.out;
  const std::string page = dir_.path() + "/job-report.html";
  RunResult run = Tunectl({"report", job, "--out", page});
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
  absl::StatusOr<std::string> html = ReadFile(page);
  ASSERT_OK(html);
  ExpectSelfContained(*html);
  std::string dom = RenderedDom(page, dir_.path() + "/job-report.png");
  ExpectDrawn(dom);
  EXPECT_THAT(dom, HasSubstr("Every config, fastest first"));
  EXPECT_THAT(dom, HasSubstr("Effect of each parameter"));
  EXPECT_THAT(dom, HasSubstr("Fastest configs"));
  EXPECT_THAT(dom, HasSubstr("COMPILE_ERROR"));
  EXPECT_THAT(dom, HasSubstr(kRefusal));  // the reason, in the failures table
  EXPECT_THAT(dom, HasSubstr("Profiles (Nsight Compute)"));
  EXPECT_THAT(dom, HasSubstr("profiling is not supported for the cpu backend"));
  EXPECT_TRUE(std::filesystem::file_size(dir_.path() + "/job-report.png") > 10000);
}

TEST_F(ReportTest, AKernelsPageShowsItsBestPerShapeAndDeviceOverTime) {
  RunPartlyBrokenJob("M=128,N=128,K=128");
  RunPartlyBrokenJob("M=256,N=128,K=128");
  RunPartlyBrokenJob("M=128,N=128,K=128", /*force=*/true);  // a second point in time
  // Written to stdout with `-o -`.
  RunResult run = Tunectl({"report", "matmul", "--out", "-"});
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString();
  ExpectSelfContained(run.out);
  const std::string page = dir_.path() + "/kernel-report.html";
  std::ofstream(page) << run.out;
  std::string dom = RenderedDom(page, dir_.path() + "/kernel-report.png");
  ExpectDrawn(dom);
  EXPECT_THAT(dom, HasSubstr("Best time over time"));
  EXPECT_THAT(dom, HasSubstr("M=128,N=128,K=128"));
  EXPECT_THAT(dom, HasSubstr("M=256,N=128,K=128"));
}

TEST_F(ReportTest, ASweepsPageShowsEachShapesBestAndTheSweepAsAWhole) {
  // The partly broken kernel, made by a job first.
  RunPartlyBrokenJob("M=64,N=64,K=64");
  RunResult run = Tunectl({"-q", "submit", dir_.path() + "/matmul", "--shape",
                           "M=32,96,N=64,K=64", "--strategy", "random", "--budget", "8",
                           "--seed", "5"});
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
  const std::string sweep(absl::StripAsciiWhitespace(run.out));
  run = Tunectl({"-q", "sweep", sweep, "--wait"});
  // 3 when a shape drew an UNROLL=4 config (a failed trial).
  EXPECT_TRUE(run.exit.code == 0 || run.exit.code == 3) << run.exit.ToString() << "\n" << run.out;
  const std::string page = dir_.path() + "/sweep-report.html";
  run = Tunectl({"report", sweep, "--out", page});
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString() << "\n" << run.out;
  absl::StatusOr<std::string> html = ReadFile(page);
  ASSERT_OK(html);
  ExpectSelfContained(*html);
  EXPECT_THAT(*html, HasSubstr("sweep " + sweep + " over 2 shapes"));
  std::string dom = RenderedDom(page, dir_.path() + "/sweep-report.png");
  ExpectDrawn(dom);
  EXPECT_THAT(dom, HasSubstr("Best and default time per shape"));
  EXPECT_THAT(dom, HasSubstr("Every shape"));
  EXPECT_THAT(dom, HasSubstr("M=32,N=64,K=64"));
  EXPECT_THAT(dom, HasSubstr("M=96,N=64,K=64"));
  EXPECT_THAT(dom, HasSubstr("SUCCEEDED"));
}

// A job no worker can take (a CUDA kernel; the worker has only a CPU):
// QUEUED, no trial yet.
TEST_F(ReportTest, AQueuedJobsPageDrawsAndAScriptErrorIsShownInThePage) {
  RunResult run = Tunectl({"-q", "submit", SourceDir() + "/kernels/cuda/softmax", "--shape",
                           "ROWS=64,COLS=64"});
  ASSERT_TRUE(run.exit.success()) << run.exit.ToString();
  const std::string job(absl::StripAsciiWhitespace(run.out));
  const std::string page = dir_.path() + "/queued.html";
  ASSERT_TRUE(Tunectl({"report", job, "--out", page}).exit.success());
  std::string dom = RenderedDom(page, dir_.path() + "/queued.png");
  EXPECT_THAT(dom, HasSubstr("data-rendered=\"true\""));
  EXPECT_THAT(dom, HasSubstr("QUEUED"));

  const std::string broken = dir_.path() + "/broken-chart.js";
  std::ofstream(broken) << "throw new Error('broken chart library');\n";
  ASSERT_TRUE(Tunectl({"report", job, "--out", page, "--chart-js", broken}).exit.success());
  dom = RenderedDom(page, dir_.path() + "/broken.png");
  EXPECT_THAT(dom, Not(HasSubstr("data-rendered")));
  EXPECT_THAT(dom, HasSubstr("data-error="));
  EXPECT_THAT(dom, HasSubstr("This report could not be drawn"));
}

TEST_F(ReportTest, AnUnknownSubjectIsNotFound) {
  RunResult run = Tunectl({"report", "no-such-kernel", "--out", dir_.path() + "/x.html"});
  EXPECT_EQ(run.exit.code, 5) << run.exit.ToString();  // kExitNotFound
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/x.html"));
}

}  // namespace
}  // namespace tunefleet::testing
