// tunefleet::BestConfigTable on the shared nearest-shape fallback cases
// (tests/data/nearest_fallback.json): each case's rows exported as a table
// document, as `tunectl export` writes one, and looked up offline.
#include <string>
#include <vector>

#include "client/best_table_json.h"
#include "common/config_text.h"
#include "gtest/gtest.h"
#include "tests/support/nearest_cases.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::LoadNearestCases;
using ::tunefleet::testing::NearestCase;
using ::tunefleet::testing::NearestRow;
using ::tunefleet::testing::StatusIs;

// The case's rows as a table; each row's tuning key is its id.
absl::StatusOr<BestConfigTable> TableOf(const NearestCase& c) {
  v1::ExportBestResponse table;
  *table.add_kernels()->mutable_spec() = c.spec;
  for (const NearestRow& row : c.rows) {
    v1::ExportedBest* exported = table.add_rows();
    exported->set_tuning_key(row.id);
    exported->set_kernel_name(c.spec.kernel().name());
    exported->set_shape(row.shape);
    exported->set_device_model(row.device_model);
    exported->set_toolkit(row.toolkit);
    exported->set_config_text(row.config);
    exported->set_median_seconds(1e-3);
    exported->set_job_id("j-" + row.id);
  }
  return BestConfigTable::Parse(client_internal::BestTableToJson(table));
}

TEST(BestConfigTableTest, AnswersEverySharedNearestFallbackCase) {
  absl::StatusOr<std::vector<NearestCase>> cases = LoadNearestCases();
  ASSERT_OK(cases);
  for (const NearestCase& c : *cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<BestConfigTable> table = TableOf(c);
    ASSERT_OK(table);
    absl::StatusOr<BestConfig> got =
        table->Lookup(c.spec.kernel().name(), c.shape, c.device_model, c.toolkit);
    ASSERT_OK(got);
    const std::string tier = BestConfigSourceName(got->source);
    EXPECT_EQ(tier == "NEAREST_SHAPE" ? "NEAREST" : tier, c.tier);
    if (c.tier == "DEFAULT") {
      EXPECT_EQ(ConfigToString(*ParseConfig(got->config)), ConfigToString(*ParseConfig(c.config)));
      EXPECT_EQ(got->tuning_key, "");
      continue;
    }
    const NearestRow& served = c.Row(c.ServedRow([](const NearestRow& row) { return row.id; }));
    EXPECT_EQ(got->tuning_key, served.id) << got->config;
    EXPECT_EQ(got->config, served.config);
    EXPECT_EQ(got->tuned_shape, served.shape);
  }
}

TEST(BestConfigTableTest, WithoutTheKernelsSpecOnlyExactRowsAreServed) {
  v1::ExportBestResponse table;
  v1::ExportedBest* row = table.add_rows();
  row->set_tuning_key("k1");
  row->set_kernel_name("matmul");
  row->set_shape("M=64,N=64,K=64");
  row->set_config_text("BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0");
  absl::StatusOr<BestConfigTable> parsed =
      BestConfigTable::Parse(client_internal::BestTableToJson(table));
  ASSERT_OK(parsed);
  absl::StatusOr<BestConfig> exact = parsed->Lookup("matmul", "M=64,N=64,K=64");
  ASSERT_OK(exact);
  EXPECT_EQ(exact->source, BestConfig::Source::kExact);
  EXPECT_THAT(parsed->Lookup("matmul", "M=128,N=128,K=128"),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace tunefleet
