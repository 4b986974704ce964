// The pieces of the coordinator's observability that need no server: the
// RPC method label, the store decorator's timing and pass-through, and the
// JSON log line escaping.
#include <vector>

#include "common/logging.h"
#include "gtest/gtest.h"
#include "server/metered_store.h"
#include "server/rpc_metrics.h"
#include "tests/support/test_support.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"
#include "tunefleet/v1/worker_service.pb.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::TempDir;

TEST(MethodLabelTest, NamesKnownMethodsAndFoldsEverythingElseIntoOther) {
  // The services a coordinator serves are linked into it; here, by name.
  ASSERT_NE(v1::TuningService::service_full_name(), nullptr);
  ASSERT_NE(v1::SubmitJobRequest::descriptor(), nullptr);
  ASSERT_NE(v1::LeaseWorkRequest::descriptor(), nullptr);
  EXPECT_EQ(MethodLabel("/tunefleet.v1.TuningService/SubmitJob"), "TuningService/SubmitJob");
  EXPECT_EQ(MethodLabel("/tunefleet.v1.WorkerService/LeaseWork"), "WorkerService/LeaseWork");
  EXPECT_EQ(MethodLabel("/tunefleet.v1.TuningService/NoSuchMethod"), "other");
  EXPECT_EQ(MethodLabel("/made.up.Service/Anything"), "other");
  EXPECT_EQ(MethodLabel("not a path"), "other");
  EXPECT_EQ(MethodLabel(""), "other");
  EXPECT_EQ(MethodLabel(nullptr), "other");
}

// Records what MeteredStore reports.
class RecordingMetrics : public NullMetrics {
 public:
  struct Call {
    std::string operation;
    absl::StatusCode code;
  };
  void StoreOperation(absl::string_view operation, absl::StatusCode code,
                      absl::Duration elapsed) override {
    EXPECT_GE(elapsed, absl::ZeroDuration());
    calls.push_back({std::string(operation), code});
  }
  std::vector<Call> calls;
};

TEST(MeteredStoreTest, PassesEveryCallThroughAndReportsItsOperationAndCode) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<Store>> sqlite =
      OpenStore("sqlite://" + dir.path() + "/metered.db");
  ASSERT_TRUE(sqlite.ok()) << sqlite.status();
  RecordingMetrics metrics;
  MeteredStore store(*std::move(sqlite), &metrics);
  KernelRecord kernel{"matmul", "spec bytes", 1};
  ASSERT_TRUE(store.PutKernel(kernel).ok());
  absl::StatusOr<std::vector<KernelRecord>> kernels = store.ListKernels();
  ASSERT_TRUE(kernels.ok());
  ASSERT_EQ(kernels->size(), 1u);
  EXPECT_EQ((*kernels)[0].spec, "spec bytes");
  EXPECT_THAT(store.GetJob("no-such-job"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_EQ(metrics.calls.size(), 3u);
  EXPECT_EQ(metrics.calls[0].operation, "PutKernel");
  EXPECT_EQ(metrics.calls[0].code, absl::StatusCode::kOk);
  EXPECT_EQ(metrics.calls[1].operation, "ListKernels");
  EXPECT_EQ(metrics.calls[2].operation, "GetJob");
  EXPECT_EQ(metrics.calls[2].code, absl::StatusCode::kNotFound);
}

TEST(JsonEscapeTest, EscapesQuotesControlsAndBytesThatAreNotUtf8) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a \"quoted\" \\ path"), "a \\\"quoted\\\" \\\\ path");
  EXPECT_EQ(JsonEscape("two\nlines\tand\x01"), "two\\nlines\\tand\\u0001");
  EXPECT_EQ(JsonEscape("gr\xc3\xbc\xc3\x9f"), "gr\xc3\xbc\xc3\x9f");  // UTF-8 kept
  EXPECT_EQ(JsonEscape("bad \xff byte"), "bad \\ufffd byte");
  EXPECT_EQ(JsonEscape("cut \xe2\x82"), "cut \\ufffd\\ufffd");
}

}  // namespace
}  // namespace tunefleet::server
