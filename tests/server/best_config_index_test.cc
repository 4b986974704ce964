// The BestConfigIndex against the reference scan over a real SQLite store:
// the same rows go to both, and every field of every answer must be equal.
#include "server/best_config_index.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/tuning_key.h"
#include "gtest/gtest.h"
#include "server/fleet_history.h"
#include "tests/server/best_config_reference.h"
#include "tests/support/nearest_cases.h"
#include "tests/support/test_support.h"
#include "tunefleet/v1/job_record.pb.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::LoadNearestCases;
using ::tunefleet::testing::NearestCase;
using ::tunefleet::testing::NearestRow;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;

const std::vector<std::string> kModels = {"cpu-a (8 cores)", "cpu-b (16 cores)", "cpu-c"};
const std::vector<std::string> kToolkits = {"gcc 12.2.0", "clang 16"};
// Few values, so that exact hits are common, and ratios that repeat, so
// that equal distances are too (100 is as near to 50 as to 200).
const std::vector<int64_t> kValues = {25, 50, 64, 100, 128, 200, 256, 400, 512, 1024};
// Above 2^53, where distinct dims can convert to the same double.
constexpr int64_t kHuge = (int64_t{1} << 53) + 1;

std::string Show(const BestConfigAnswer& a) {
  return absl::StrFormat(
      "source=%d config={%s} text=%s median=%a key=%s job=%s shape={%s} model=%s toolkit=%s",
      static_cast<int>(a.source), a.config.ShortDebugString(), a.config_text,
      a.median_seconds, a.tuning_key, a.job_id, a.tuned_shape.ShortDebugString(),
      a.device_model, a.toolkit);
}

class BestConfigIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store =
        OpenStore("sqlite://" + dir_.path() + "/store.db");
    ASSERT_OK(store);
    store_ = *std::move(store);
    absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
    ASSERT_OK(bundle);
    *current_.mutable_kernel() = bundle->spec;
    for (const auto& file : bundle->sources) *current_.add_sources() = file;
    older_ = current_;
    older_.mutable_kernel()->add_compile_options("-DOLDER_CODE");  // another digest
    ASSERT_NE(KernelDigest(older_.kernel(), Sources(older_)),
              KernelDigest(current_.kernel(), Sources(current_)));
  }

  static std::vector<v1::SourceFile> Sources(const v1::JobSpec& spec) {
    return {spec.sources().begin(), spec.sources().end()};
  }

  static std::string KeyFor(const v1::JobSpec& spec, const std::string& shape,
                            const std::string& model, const std::string& toolkit) {
    std::vector<v1::SourceFile> sources = Sources(spec);
    return ComputeTuningKey({&spec.kernel(), &sources, *ParseShape(shape), model, toolkit});
  }

  void PutKernel(const v1::JobSpec& spec) {
    latest_ = spec;
    index_.PutKernel(spec);
  }

  // The store's answer does not matter: the index applies the same rule.
  void Put(const BestRecord& row) {
    ASSERT_OK(store_->UpsertBest(row));
    index_.PutBest(row);
    written_.push_back(row);
  }

  BestRecord Row(const std::string& shape, const v1::JobSpec& code, const std::string& model,
                 const std::string& toolkit) {
    BestRecord row;
    row.kernel_name = "matmul";
    row.shape = shape;
    row.device_model = model;
    row.toolkit = toolkit;
    row.tuning_key = KeyFor(code, shape, model, toolkit);
    row.config = RandomConfig();
    row.median_seconds = static_cast<double>(1 + rng_() % 50) * 1e-4;  // ties happen
    row.job_id = absl::StrCat("j-", ++jobs_);
    return row;
  }

  std::string RandomConfig() {
    std::string text;
    for (const v1::Parameter& param : current_.kernel().params()) {
      absl::StrAppend(&text, text.empty() ? "" : ",", param.name(), "=",
                      param.values(rng_() % param.values_size()));
    }
    return text;
  }

  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[rng_() % items.size()];
  }
  bool Chance(double p) { return std::uniform_real_distribution<>(0, 1)(rng_) < p; }

  std::string RandomShape() {
    return absl::StrCat("M=", Pick(kValues), ",N=", Pick(kValues), ",K=", Pick(kValues));
  }

  // A new row (one in five tuned with the older code), or a faster, equal or
  // slower measurement of a row already written.
  BestRecord RandomRow() {
    if (!written_.empty() && Chance(0.25)) {
      BestRecord again = Pick(written_);
      again.config = RandomConfig();
      again.median_seconds = static_cast<double>(1 + rng_() % 50) * 1e-4;
      again.job_id = absl::StrCat("j-", ++jobs_);
      return again;
    }
    return Row(RandomShape(), Chance(0.2) ? older_ : current_, Pick(kModels), Pick(kToolkits));
  }

  // Rows the scan treats in ways a plain shape string would not.
  void PutOddRows() {
    const std::string& model = kModels[0];
    const std::string& toolkit = kToolkits[0];
    for (const char* shape : {"K=64,M=64,N=64",          // not in spec order: still exact
                              "M=64,N=64,K=64,X=3",      // an extra dim is ignored
                              "M=64,N=64",               // a missing dim: never served
                              "M=0,N=64,K=64",           // not positive: never served
                              "M=9007199254740993,N=64,K=64",  // 2^53 + 1
                              "M=9007199254740992,N=50,K=50"}) {
      Put(Row(shape, current_, model, toolkit));
    }
    BestRecord bad_shape = Row("M=64,N=64,K=64", current_, model, toolkit);
    bad_shape.shape = "M=64,N";
    Put(bad_shape);
    BestRecord bad_config = Row("M=512,N=25,K=25", current_, model, toolkit);
    bad_config.config = "BLOCK_M";
    Put(bad_config);
    BestRecord other_kernel = Row("M=100,N=100,K=100", current_, model, toolkit);
    other_kernel.kernel_name = "transpose";
    Put(other_kernel);
  }

  v1::GetBestConfigRequest RandomRequest() {
    v1::GetBestConfigRequest request;
    request.set_kernel_name("matmul");
    std::string shape;
    switch (rng_() % 5) {
      case 0:  // exact, or a bad shape
        shape = Pick(written_).shape;
        break;
      case 1:  // not in spec order
        shape = absl::StrCat("K=", Pick(kValues), ",M=", Pick(kValues), ",N=", Pick(kValues));
        break;
      case 2:  // near 2^53
        shape = absl::StrCat("M=", kHuge - rng_() % 3, ",N=", Pick(kValues), ",K=64");
        break;
      case 3: {  // anywhere
        auto dim = [&] { return 1 + rng_() % 5000; };
        shape = absl::StrCat("M=", dim(), ",N=", dim(), ",K=", dim());
        break;
      }
      default: shape = RandomShape();
    }
    if (Chance(0.02)) shape = "M=64,N=64";
    absl::StatusOr<v1::Shape> parsed = ParseShape(shape);
    *request.mutable_shape() = parsed.ok() ? *parsed : *ParseShape(RandomShape());
    request.set_device_model(Chance(0.25) ? "" : Chance(0.1) ? "unknown" : Pick(kModels));
    request.set_toolkit(Chance(0.25) ? "" : Chance(0.1) ? "unknown" : Pick(kToolkits));
    return request;
  }

  void ExpectSameAnswer(const v1::GetBestConfigRequest& request) {
    absl::StatusOr<BestConfigAnswer> want = ReferenceBestConfig(store_.get(), latest_, request);
    absl::StatusOr<BestConfigAnswer> got = index_.Resolve(
        request.kernel_name(), request.shape(), request.device_model(), request.toolkit());
    ASSERT_EQ(got.status(), want.status()) << request.ShortDebugString();
    if (!want.ok()) return;
    ++sources_[static_cast<int>(want->source)];
    EXPECT_EQ(Show(*got), Show(*want)) << request.ShortDebugString();
  }

  void ExpectSameAnswers(int queries) {
    for (int i = 0; i < queries && !HasFatalFailure(); ++i) ExpectSameAnswer(RandomRequest());
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  BestConfigIndex index_;
  v1::JobSpec current_;
  v1::JobSpec older_;
  v1::JobSpec latest_;
  std::vector<BestRecord> written_;
  std::mt19937_64 rng_{20261122};
  int jobs_ = 0;
  int sources_[3] = {0, 0, 0};  // answers seen, by source
};

TEST_F(BestConfigIndexTest, AnswersAsTheStoreScanDoesOnRandomRowsAndQueries) {
  PutKernel(older_);
  for (int i = 0; i < 150; ++i) Put(RandomRow());
  PutOddRows();
  PutKernel(current_);  // new code: every key is checked again
  for (int i = 0; i < 250; ++i) Put(RandomRow());
  ExpectSameAnswers(1200);

  v1::JobSpec new_default = current_;  // same code, another default config
  new_default.mutable_kernel()->set_default_config(
      "BLOCK_M=64,BLOCK_N=256,BLOCK_K=128,UNROLL=4,LOOP_ORDER=0");
  PutKernel(new_default);
  ExpectSameAnswers(300);

  PutKernel(older_);  // back to the older code: its rows are served again
  ExpectSameAnswers(600);

  // Every kind of answer was compared.
  EXPECT_GT(sources_[static_cast<int>(BestConfigAnswer::Source::kExact)], 100);
  EXPECT_GT(sources_[static_cast<int>(BestConfigAnswer::Source::kNearestShape)], 100);
  EXPECT_GT(sources_[static_cast<int>(BestConfigAnswer::Source::kDefault)], 50);
}

TEST_F(BestConfigIndexTest, RowsStoredBeforeTheKernelIsSubmittedAreServedOnceItIs) {
  for (int i = 0; i < 100; ++i) Put(RandomRow());
  EXPECT_THAT(index_.Resolve("matmul", *ParseShape("M=64,N=64,K=64"), "", ""),
              StatusIsWith(absl::StatusCode::kNotFound, "kernel matmul was never submitted here"));
  PutKernel(current_);
  ExpectSameAnswers(300);
}

TEST_F(BestConfigIndexTest, UnknownKernelIsNotFoundAndBadShapeIsInvalidArgument) {
  PutKernel(current_);
  Put(Row("M=64,N=64,K=64", current_, kModels[0], kToolkits[0]));
  EXPECT_THAT(index_.Resolve("transpose", *ParseShape("M=64,N=64,K=64"), "", ""),
              StatusIsWith(absl::StatusCode::kNotFound,
                           "kernel transpose was never submitted here"));
  for (const char* shape : {"M=64,N=64", "M=64,N=64,K=0", "M=64,N=64,K=64,X=1"}) {
    EXPECT_THAT(index_.Resolve("matmul", *ParseShape(shape), "", ""),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << shape;
  }
}

TEST_F(BestConfigIndexTest, EqualDistancesGoToTheSmallestTuningKey) {
  PutKernel(current_);
  BestRecord half = Row("M=50,N=64,K=64", current_, kModels[0], kToolkits[0]);
  BestRecord twice = Row("M=200,N=64,K=64", current_, kModels[1], kToolkits[0]);
  half.config = twice.config = "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";  // fits
  Put(half);
  Put(twice);
  absl::StatusOr<BestConfigAnswer> nearest =
      index_.Resolve("matmul", *ParseShape("M=100,N=64,K=64"), "", "");
  ASSERT_OK(nearest);
  EXPECT_EQ(nearest->source, BestConfigAnswer::Source::kNearestShape);
  EXPECT_EQ(nearest->tuning_key, std::min(half.tuning_key, twice.tuning_key));
  v1::GetBestConfigRequest request;
  request.set_kernel_name("matmul");
  *request.mutable_shape() = *ParseShape("M=100,N=64,K=64");
  ExpectSameAnswer(request);
}

TEST_F(BestConfigIndexTest, KeepsTheFasterRowOfAKey) {
  PutKernel(current_);
  BestRecord row = Row("M=64,N=64,K=64", current_, kModels[0], kToolkits[0]);
  row.median_seconds = 2e-3;
  row.config = "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  Put(row);
  row.median_seconds = 3e-3;  // slower: ignored
  row.config = "BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  Put(row);
  row.median_seconds = 2e-3;  // as fast: ignored
  Put(row);
  absl::StatusOr<BestConfigAnswer> exact =
      index_.Resolve("matmul", *ParseShape("M=64,N=64,K=64"), kModels[0], kToolkits[0]);
  ASSERT_OK(exact);
  EXPECT_EQ(exact->source, BestConfigAnswer::Source::kExact);
  EXPECT_EQ(exact->config_text, "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0");
  row.median_seconds = 1e-3;  // faster: replaces
  row.config = "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  Put(row);
  exact = index_.Resolve("matmul", *ParseShape("M=64,N=64,K=64"), kModels[0], kToolkits[0]);
  ASSERT_OK(exact);
  EXPECT_EQ(exact->config_text, row.config);
  EXPECT_EQ(exact->median_seconds, 1e-3);
}

BestRecord Record(const std::string& key, const std::string& shape, const std::string& model,
                  const std::string& toolkit, const std::string& config) {
  BestRecord row;
  row.tuning_key = key;
  row.kernel_name = "matmul";
  row.shape = shape;
  row.device_model = model;
  row.toolkit = toolkit;
  row.config = config;
  row.median_seconds = 1e-3;
  row.job_id = "j-" + key;
  return row;
}

// The shared cases (tests/data/nearest_fallback.json): each in an index of
// its own, rows keyed as the coordinator keys them.
TEST(BestConfigIndexSharedCasesTest, AnswersEveryNearestFallbackCase) {
  absl::StatusOr<std::vector<NearestCase>> cases = LoadNearestCases();
  ASSERT_OK(cases);
  for (const NearestCase& c : *cases) {
    SCOPED_TRACE(c.name);
    BestConfigIndex index;
    index.PutKernel(c.spec);
    const std::vector<v1::SourceFile> sources(c.spec.sources().begin(), c.spec.sources().end());
    auto key_of = [&](const NearestRow& row) {
      return ComputeTuningKey(
          {&c.spec.kernel(), &sources, *ParseShape(row.shape), row.device_model, row.toolkit});
    };
    for (const NearestRow& row : c.rows) {
      BestRecord record = Record(key_of(row), row.shape, row.device_model, row.toolkit, row.config);
      record.kernel_name = c.spec.kernel().name();
      index.PutBest(record);
    }
    absl::StatusOr<BestConfigAnswer> got = index.Resolve(
        c.spec.kernel().name(), *ParseShape(c.shape), c.device_model, c.toolkit);
    ASSERT_OK(got);
    const char* tiers[] = {"EXACT", "NEAREST", "DEFAULT"};
    EXPECT_EQ(tiers[static_cast<int>(got->source)], c.tier);
    if (c.tier == "DEFAULT") {
      EXPECT_EQ(got->config_text,
                ConfigToString(*NormalizeConfig(c.spec.kernel(), *ParseConfig(c.config))));
      EXPECT_EQ(got->tuning_key, "");
      continue;
    }
    const NearestRow& served = c.Row(c.ServedRow(key_of));
    EXPECT_EQ(got->tuning_key, key_of(served)) << got->config_text;
    EXPECT_EQ(got->config_text, served.config);
    EXPECT_EQ(ShapeToString(got->tuned_shape), served.shape);
  }
}

// A matmul whose checked constraint names a device limit and a dim.
v1::JobSpec MatmulWithL2PerK() {
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(SourceDir() + "/kernels/cpu/matmul");
  v1::JobSpec spec;
  *spec.mutable_kernel() = bundle->spec;
  for (const auto& file : bundle->sources) *spec.add_sources() = file;
  spec.mutable_kernel()->add_constraints()->set_expr("BLOCK_K * K * 4 <= l2_bytes");
  return spec;
}

TEST(BestConfigIndexLimitsTest, NearestRowsAreCheckedWithTheLimitsOfTheirDeviceModelWhereKnown) {
  const v1::JobSpec spec = MatmulWithL2PerK();
  // Placeholder l2_bytes: 2 MiB; cpu-small's: 256 KiB.
  BestConfigIndex index([](const std::string& model) -> std::optional<DeviceLimits> {
    if (model != "cpu-small") return std::nullopt;
    DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CPU);
    limits["l2_bytes"] = 256 * 1024;
    return limits;
  });
  index.PutKernel(spec);
  const std::vector<v1::SourceFile> sources(spec.sources().begin(), spec.sources().end());
  for (const char* model : {"cpu-small", "cpu-unknown"}) {
    for (const auto& [shape, config] : std::vector<std::pair<std::string, std::string>>{
             {"M=1024,N=1024,K=2048", "BLOCK_M=32,BLOCK_N=64,BLOCK_K=128,UNROLL=1,LOOP_ORDER=0"},
             {"M=1024,N=1024,K=8192", "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0"}}) {
      index.PutBest(Record(
          ComputeTuningKey({&spec.kernel(), &sources, *ParseShape(shape), model, "gcc"}), shape,
          model, "gcc", config));
    }
  }
  // At K=1024, BLOCK_K=128 needs 512 KiB of L2: more than cpu-small has.
  const v1::Shape asked = *ParseShape("M=1024,N=1024,K=1024");
  absl::StatusOr<BestConfigAnswer> small = index.Resolve("matmul", asked, "cpu-small", "gcc");
  ASSERT_OK(small);
  EXPECT_EQ(small->source, BestConfigAnswer::Source::kNearestShape);
  EXPECT_EQ(ShapeToString(small->tuned_shape), "M=1024,N=1024,K=8192");
  absl::StatusOr<BestConfigAnswer> unknown = index.Resolve("matmul", asked, "cpu-unknown", "gcc");
  ASSERT_OK(unknown);
  EXPECT_EQ(unknown->source, BestConfigAnswer::Source::kNearestShape);
  EXPECT_EQ(ShapeToString(unknown->tuned_shape), "M=1024,N=1024,K=2048");
}

TEST(BestConfigIndexLimitsTest, ASpecWhoseConstraintsDoNotCompileServesExactRowsAndTheDefault) {
  v1::JobSpec spec = MatmulWithL2PerK();
  spec.mutable_kernel()->add_constraints()->set_expr("no_such_limit > 0");
  BestConfigIndex index;
  index.PutKernel(spec);
  const std::vector<v1::SourceFile> sources(spec.sources().begin(), spec.sources().end());
  const std::string shape = "M=256,N=256,K=256";
  index.PutBest(
      Record(ComputeTuningKey({&spec.kernel(), &sources, *ParseShape(shape), "cpu", "gcc"}),
             shape, "cpu", "gcc", "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0"));
  EXPECT_EQ(index.Resolve("matmul", *ParseShape(shape), "cpu", "gcc")->source,
            BestConfigAnswer::Source::kExact);
  EXPECT_EQ(index.Resolve("matmul", *ParseShape("M=512,N=256,K=256"), "cpu", "gcc")->source,
            BestConfigAnswer::Source::kDefault);
}

TEST(TunedShapesTest, RemovingARowKeepsTheOthersFindable) {
  TunedShapes shapes(/*dims=*/2);
  for (int64_t m = 1; m <= 5; ++m) shapes.Put(absl::StrCat("k", m), {m, 10});
  shapes.Remove("k2");
  shapes.Remove("k9");  // none: nothing happens
  shapes.Put("k4", {4, 20});  // moved
  EXPECT_EQ(shapes.size(), 4u);
  int64_t two[] = {2, 10};
  EXPECT_FALSE(shapes.Exact(ShapeQuery(two)).has_value());
  for (int64_t m : {1, 3, 5}) {
    int64_t point[] = {m, 10};
    std::optional<ShapeMatch> match = shapes.Exact(ShapeQuery(point));
    ASSERT_TRUE(match.has_value());
    EXPECT_EQ(*match->tuning_key, absl::StrCat("k", m));
  }
  int64_t moved[] = {4, 20};
  ASSERT_TRUE(shapes.Exact(ShapeQuery(moved)).has_value());
  int64_t near_four[] = {4, 19};
  EXPECT_EQ(*shapes.Nearest(ShapeQuery(near_four))->tuning_key, "k4");
}

TEST(TunedShapesTest, NearestWhereIsTheNearestAcceptedRowTiesToTheSmallestKey) {
  TunedShapes shapes(/*dims=*/2);
  shapes.Put("a", {60, 10}, /*tag=*/1);  // the nearest
  shapes.Put("c", {25, 10}, /*tag=*/2);  // a factor 2 away, as "b" is
  shapes.Put("b", {100, 10}, /*tag=*/2);
  shapes.Put("d", {10000, 10}, /*tag=*/3);
  int64_t at[] = {50, 10};
  const ShapeQuery query(at);
  std::vector<uint32_t> asked;
  auto only = [&](std::vector<uint32_t> tags) {
    return [&asked, tags](uint32_t tag) {
      asked.push_back(tag);
      return std::find(tags.begin(), tags.end(), tag) != tags.end();
    };
  };
  EXPECT_EQ(*shapes.NearestWhere(query, only({1, 2, 3}))->tuning_key, "a");
  EXPECT_EQ(*shapes.NearestWhere(query, only({2, 3}))->tuning_key, "b");
  EXPECT_EQ(*shapes.NearestWhere(query, only({3}))->tuning_key, "d");
  asked.clear();
  EXPECT_FALSE(shapes.NearestWhere(query, only({})).has_value());
  EXPECT_EQ(asked.size(), 4u);  // none accepted: every row asked about
  shapes.Remove("a");           // the last row moves into its place, with its tag
  EXPECT_EQ(*shapes.NearestWhere(query, only({3}))->tuning_key, "d");
}

TEST_F(BestConfigIndexTest, NeighboursAreNearestFirstSameTargetBeforeOthersDistinctConfigs) {
  PutKernel(current_);
  const std::string& model = kModels[0];
  const std::string& toolkit = kToolkits[0];
  auto put = [&](const std::string& shape, const std::string& m, const std::string& t,
                 const std::string& config) {
    BestRecord row = Row(shape, current_, m, t);
    row.config = config;
    Put(row);
  };
  const std::string a = "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string b = "BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string c = "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string d = "BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  put("M=512,N=256,K=256", model, toolkit, a);      // distance log 2
  put("M=1024,N=256,K=256", model, toolkit, b);     // log 4
  put("M=256,N=256,K=200", model, toolkit, a);      // near, but config a again
  put("M=256,N=256,K=256", model, kToolkits[1], c);  // exact, another toolkit
  put("M=256,N=256,K=256", kModels[1], toolkit, d);  // exact, another model
  std::vector<std::string> configs;
  for (const BestConfigAnswer& answer :
       index_.Neighbours("matmul", *ParseShape("M=256,N=256,K=256"), model, toolkit, 8)) {
    configs.push_back(answer.config_text);
  }
  EXPECT_EQ(configs, (std::vector<std::string>{a, b, c, d}));
  EXPECT_EQ(index_.Neighbours("matmul", *ParseShape("M=256,N=256,K=256"), model, toolkit, 1)
                .size(),
            1u);
  EXPECT_TRUE(index_.Neighbours("nope", *ParseShape("M=1"), model, toolkit, 8).empty());
}

TEST(ArchitectureFamilyTest, OneFamilyPerMajorComputeCapability) {
  EXPECT_EQ(ArchitectureFamily("NVIDIA H200 sm_90"), "sm_9x");
  EXPECT_EQ(ArchitectureFamily("NVIDIA H100 80GB HBM3 sm_90"), "sm_9x");
  EXPECT_EQ(ArchitectureFamily("NVIDIA A100-SXM4-80GB sm_80"), "sm_8x");
  EXPECT_EQ(ArchitectureFamily("NVIDIA RTX A6000 sm_86"), "sm_8x");
  EXPECT_EQ(ArchitectureFamily("NVIDIA B200 sm_100"), "sm_10x");
  EXPECT_EQ(ArchitectureFamily("AMD EPYC x2"), "");
  EXPECT_EQ(ArchitectureFamily("odd sm_x1"), "");
}

TEST_F(BestConfigIndexTest, NeighboursRankTheSameArchitectureFamilyBeforeOtherModels) {
  PutKernel(current_);
  const std::string h200 = "NVIDIA H200 sm_90";
  const std::string toolkit = kToolkits[0];
  auto put = [&](const std::string& shape, const std::string& model, const std::string& config) {
    BestRecord row = Row(shape, current_, model, toolkit);
    row.config = config;
    Put(row);
  };
  const std::string same = "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string family = "BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string other = "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  put("M=1024,N=1024,K=1024", h200, same);               // far, but the same model
  put("M=256,N=256,K=256", "NVIDIA A100 sm_80", other);  // exact, another family
  put("M=512,N=256,K=256", "NVIDIA H100 sm_90", family);  // near, the same family
  std::vector<std::string> configs;
  for (const BestConfigAnswer& answer :
       index_.Neighbours("matmul", *ParseShape("M=256,N=256,K=256"), h200, toolkit, 8)) {
    configs.push_back(answer.config_text);
  }
  EXPECT_EQ(configs, (std::vector<std::string>{same, family, other}));
  std::vector<BestConfigAnswer> rows =
      index_.TunedRows("matmul", *ParseShape("M=256,N=256,K=256"), h200, 8);
  ASSERT_EQ(rows.size(), 1u);  // only the same model's
  EXPECT_EQ(rows[0].config_text, same);
}

TEST_F(BestConfigIndexTest, FleetHistoryIsTheTrialsOfTheModelsNearestTunedShapesNewestFirst) {
  PutKernel(current_);
  const std::string h200 = "NVIDIA H200 sm_90";
  const std::string toolkit = kToolkits[0];
  const BestRecord near = Row("M=512,N=256,K=256", current_, h200, kToolkits[1]);
  const BestRecord far = Row("M=1024,N=256,K=256", current_, h200, toolkit);
  const BestRecord too_far = Row("M=1024,N=1024,K=1024", current_, h200, toolkit);  // 64 times
  const BestRecord other_model = Row("M=256,N=256,K=256", current_, "NVIDIA H100 sm_90", toolkit);
  const BestRecord older_code = Row("M=256,N=256,K=256", older_, h200, toolkit);
  for (const BestRecord& row : {near, far, too_far, other_model, older_code}) Put(row);
  const std::string a = "BLOCK_M=16,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string b = "BLOCK_M=32,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  const std::string c = "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,UNROLL=1,LOOP_ORDER=0";
  std::vector<TrialRecord> trials;
  auto trial = [&](const BestRecord& row, const std::string& config, double seconds,
                   int64_t finished, const std::string& job = "j-1") {
    TrialRecord t;
    t.job_id = job;
    t.tuning_key = row.tuning_key;
    t.config = config;
    t.status = v1::TRIAL_STATUS_OK;
    t.median_seconds = seconds;
    t.finished_unix_ms = finished;
    trials.push_back(t);
    return &trials.back();
  };
  trial(near, a, 3e-3, 100);
  trial(near, b, 1e-3, 300);
  trial(near, a, 2e-3, 200, "j-2");  // a newer measurement of `a`
  trial(near, c, 5e-3, 400)->status = v1::TRIAL_STATUS_COMPILE_ERROR;
  trials.back().median_seconds = 0;
  trial(near, c, 4e-3, 500)->cut_early = true;  // partial: never a training row
  trial(far, c, 9e-3, 50);
  trial(too_far, b, 9e-2, 50);
  trial(other_model, a, 1e-4, 50);  // another model
  trial(older_code, a, 1e-4, 50);   // another code
  ASSERT_OK(store_->InsertTrials(trials));

  absl::StatusOr<FleetHistoryRows> history =
      FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=256,N=256,K=256"), h200, {});
  ASSERT_OK(history);
  std::vector<std::string> got;
  for (const FleetTrial& t : history->trials) {
    got.push_back(absl::StrCat(t.shape, " ", t.config, " ", t.median_seconds));
  }
  EXPECT_EQ(got, (std::vector<std::string>{absl::StrCat("0 ", b, " 0.001"),
                                           absl::StrCat("0 ", a, " 0.002"),
                                           absl::StrCat("1 ", c, " 0.009")}));
  // Where each shape was measured, and how many configs it measured.
  ASSERT_EQ(history->shapes.size(), 2u);
  EXPECT_EQ(history->shapes[0].device_model, h200);
  EXPECT_EQ(history->shapes[0].measured, 2);
  EXPECT_EQ(history->shapes[1].measured, 1);
  EXPECT_TRUE(history->shapes[0].limits.empty());  // no job record says

  // Bounded: rows in all, then shapes.
  history = FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=256,N=256,K=256"), h200,
                         {.shapes = 8, .rows = 1});
  ASSERT_OK(history);
  ASSERT_EQ(history->trials.size(), 1u);
  EXPECT_EQ(history->trials[0].config, b);
  history = FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=1024,N=256,K=512"),
                         h200, {.shapes = 1, .rows = 512});
  ASSERT_OK(history);
  ASSERT_EQ(history->trials.size(), 1u);  // the nearest shape alone: `far`
  EXPECT_EQ(history->trials[0].config, c);
  history = FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=2048,N=1024,K=1024"),
                         h200, {});
  ASSERT_OK(history);
  ASSERT_EQ(history->trials.size(), 1u);  // `too_far` alone is near enough
  EXPECT_EQ(history->trials[0].config, b);
  history = FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=8192,N=8192,K=8192"),
                         h200, {});
  ASSERT_OK(history);
  EXPECT_TRUE(history->trials.empty());  // a factor of 512 from the nearest, on every model
}

TEST_F(BestConfigIndexTest, AModelNotTunedNearTheShapeLearnsFromOtherModelsItsFamilyFirst) {
  PutKernel(current_);
  const std::string h100 = "NVIDIA H100 sm_90", h200 = "NVIDIA H200 sm_90";
  const std::string a100 = "NVIDIA A100 sm_80", gh200 = "NVIDIA GH200 sm_90";
  const std::string toolkit = kToolkits[0];
  const BestRecord same_family = Row("M=512,N=256,K=256", current_, h200, toolkit);
  const BestRecord other_family = Row("M=256,N=256,K=256", current_, a100, toolkit);
  const BestRecord far_on_own = Row("M=4096,N=4096,K=4096", current_, gh200, toolkit);
  for (const BestRecord& row : {same_family, other_family, far_on_own}) Put(row);
  // The job that tuned `same_family` recorded its device's limits.
  v1::StoredJob stored;
  v1::StoredTarget* target = stored.add_targets();
  target->set_device_model(h200);
  v1::DeviceLimit* limit = target->add_limits();
  limit->set_name("sm_count");
  limit->set_value(132);
  JobRecord job;
  job.id = same_family.job_id;
  job.kernel_name = "matmul";
  job.targets = stored.SerializeAsString();
  ASSERT_OK(store_->PutJob(job));
  std::vector<TrialRecord> trials;
  for (const BestRecord* row : {&same_family, &other_family, &far_on_own}) {
    TrialRecord t;
    t.job_id = row->job_id;
    t.tuning_key = row->tuning_key;
    t.config = row->config;
    t.status = v1::TRIAL_STATUS_OK;
    t.median_seconds = 1e-3;
    t.finished_unix_ms = 100;
    trials.push_back(t);
  }
  ASSERT_OK(store_->InsertTrials(trials));

  // H100 was never tuned: H200's shape (the same family) comes first, then
  // A100's, though A100's is the nearer shape.
  absl::StatusOr<FleetHistoryRows> history =
      FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=256,N=256,K=256"), h100, {});
  ASSERT_OK(history);
  ASSERT_EQ(history->shapes.size(), 2u);
  EXPECT_EQ(history->shapes[0].device_model, h200);
  EXPECT_EQ(history->shapes[0].limits, (DeviceLimits{{"sm_count", 132}}));
  EXPECT_EQ(history->shapes[1].device_model, a100);
  EXPECT_TRUE(history->shapes[1].limits.empty());  // its job's record is not in the store
  ASSERT_EQ(history->trials.size(), 2u);
  EXPECT_EQ(history->trials[0].config, same_family.config);
  EXPECT_EQ(history->trials[1].shape, 1);

  // GH200 has a shape of its own, but none near: the same rule.
  history = FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=256,N=256,K=256"), gh200,
                         {});
  ASSERT_OK(history);
  ASSERT_EQ(history->shapes.size(), 2u);
  EXPECT_EQ(history->shapes[0].device_model, h200);

  // Bounded by the shapes in all.
  history = FleetHistory(index_, store_.get(), "matmul", *ParseShape("M=256,N=256,K=256"), h100,
                         {.shapes = 1});
  ASSERT_OK(history);
  ASSERT_EQ(history->shapes.size(), 1u);
  EXPECT_EQ(history->shapes[0].device_model, h200);
}

}  // namespace
}  // namespace tunefleet::server
