// The Store contract, run against every database: SQLite always, PostgreSQL
// when TUNEFLEET_TEST_POSTGRES_URL names a server (else those instances skip,
// or fail when TUNEFLEET_REQUIRE_POSTGRES=1).
#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/server/store/test_database.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {

// Field-by-field equality and printing, for EXPECT_EQ on records.
bool operator==(const JobRecord& a, const JobRecord& b) {
  return std::tie(a.id, a.kernel_name, a.state, a.reason, a.spec, a.targets,
                  a.created_unix_ms, a.updated_unix_ms, a.owner, a.replace_best,
                  a.sweep_id) ==
         std::tie(b.id, b.kernel_name, b.state, b.reason, b.spec, b.targets,
                  b.created_unix_ms, b.updated_unix_ms, b.owner, b.replace_best,
                  b.sweep_id);
}
bool operator==(const TrialRecord& a, const TrialRecord& b) {
  return std::tie(a.job_id, a.tuning_key, a.config, a.status, a.median_seconds,
                  a.p20_seconds, a.p80_seconds, a.samples, a.compile_seconds,
                  a.worker_id, a.device_id, a.error, a.finished_unix_ms) ==
         std::tie(b.job_id, b.tuning_key, b.config, b.status, b.median_seconds,
                  b.p20_seconds, b.p80_seconds, b.samples, b.compile_seconds,
                  b.worker_id, b.device_id, b.error, b.finished_unix_ms);
}
bool operator==(const BestRecord& a, const BestRecord& b) {
  return std::tie(a.tuning_key, a.kernel_name, a.shape, a.device_model,
                  a.toolkit, a.config, a.median_seconds, a.job_id,
                  a.updated_unix_ms, a.imported, a.origin, a.evidence) ==
         std::tie(b.tuning_key, b.kernel_name, b.shape, b.device_model,
                  b.toolkit, b.config, b.median_seconds, b.job_id,
                  b.updated_unix_ms, b.imported, b.origin, b.evidence);
}
bool operator==(const KernelRecord& a, const KernelRecord& b) {
  return std::tie(a.name, a.spec, a.updated_unix_ms) ==
         std::tie(b.name, b.spec, b.updated_unix_ms);
}
void PrintTo(const JobRecord& job, std::ostream* os) {
  *os << "job " << job.id << " state " << job.state << " created "
      << job.created_unix_ms;
}
void PrintTo(const TrialRecord& trial, std::ostream* os) {
  *os << "trial " << trial.job_id << "/" << trial.tuning_key << "/"
      << trial.config << " median " << trial.median_seconds;
}
void PrintTo(const BestRecord& best, std::ostream* os) {
  *os << "best " << best.tuning_key << " " << best.config << " median "
      << best.median_seconds;
}
void PrintTo(const KernelRecord& kernel, std::ostream* os) {
  *os << "kernel " << kernel.name << " (" << kernel.spec.size()
      << " bytes) updated " << kernel.updated_unix_ms;
}

namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::tunefleet::testing::StatusIs;

JobRecord MakeJob(const std::string& id, int64_t created_unix_ms,
                  int state = 1) {
  JobRecord job;
  job.id = id;
  job.kernel_name = "matmul";
  job.state = state;
  job.reason = "";
  job.spec = "spec of " + id;
  job.targets = "targets of " + id;
  job.created_unix_ms = created_unix_ms;
  job.updated_unix_ms = created_unix_ms + 5;
  job.owner = "alice";
  return job;
}

TrialRecord MakeTrial(const std::string& job_id, const std::string& config,
                      double median_seconds) {
  TrialRecord trial;
  trial.job_id = job_id;
  trial.tuning_key = "key-1";
  trial.config = config;
  trial.status = 1;
  trial.median_seconds = median_seconds;
  trial.p20_seconds = median_seconds * 0.9;
  trial.p80_seconds = median_seconds * 1.1;
  trial.samples = 30;
  trial.compile_seconds = 1.0 / 3.0;
  trial.worker_id = "worker-a";
  trial.device_id = "gpu-0";
  trial.error = "";
  trial.finished_unix_ms = 1700000000123;
  return trial;
}

BestRecord MakeBest(const std::string& tuning_key, const std::string& config,
                    double median_seconds) {
  BestRecord best;
  best.tuning_key = tuning_key;
  best.kernel_name = "matmul";
  best.shape = "M=1024,N=1024,K=1024";
  best.device_model = "H100";
  best.toolkit = "cuda-13.0";
  best.config = config;
  best.median_seconds = median_seconds;
  best.job_id = "job-1";
  best.updated_unix_ms = 1700000000456;
  best.evidence = std::string("\x0a\x03" "a\0b\xff", 6) + config;  // any bytes
  return best;
}

// Every byte value, then `size` pseudo-random bytes (not valid UTF-8).
std::string ArbitraryBytes(size_t size) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    bytes.push_back(static_cast<char>(x));
  }
  return bytes;
}

KernelRecord MakeKernel(const std::string& name, int64_t updated_unix_ms) {
  KernelRecord kernel;
  kernel.name = name;
  kernel.spec = "spec of " + name + std::string("\0\xff", 2);
  kernel.updated_unix_ms = updated_unix_ms;
  return kernel;
}

std::vector<std::string> JobIds(const std::vector<JobRecord>& jobs) {
  std::vector<std::string> ids;
  for (const JobRecord& job : jobs) ids.push_back(job.id);
  return ids;
}

// Runs `body(thread_index)` on `threads` threads at once and joins them.
template <typename Body>
void RunOnThreads(int threads, Body body) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(body, t);
  for (std::thread& worker : workers) worker.join();
}

class StoreContractTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) {
      SkipOrFailWithoutPostgres();
      if (IsSkipped() || HasFatalFailure()) return;
    }
    absl::StatusOr<std::unique_ptr<TestDatabase>> database =
        TestDatabase::Create(GetParam());
    ASSERT_TRUE(database.ok()) << database.status();
    database_ = std::move(database).value();
    ASSERT_NO_FATAL_FAILURE(Reopen());
  }

  // Closes the store (if open) and opens the same database again.
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(database_->url());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }

  void PutJobs(const std::vector<JobRecord>& jobs) {
    for (const JobRecord& job : jobs) ASSERT_OK(store_->PutJob(job));
  }

  void ExpectBest(const std::string& key, const BestRecord& expected) {
    absl::StatusOr<BestRecord> best = store_->GetBest(key);
    ASSERT_OK(best);
    EXPECT_EQ(*best, expected);
  }

  std::unique_ptr<TestDatabase> database_;
  std::unique_ptr<Store> store_;  // declared last: closed before the drop
};

TEST_P(StoreContractTest, GetJobReturnsEveryFieldPut) {
  JobRecord job = MakeJob("job-1", 1000, /*state=*/2);
  job.reason = "running";
  ASSERT_OK(store_->PutJob(job));

  absl::StatusOr<JobRecord> stored = store_->GetJob("job-1");
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, job);
}

TEST_P(StoreContractTest, PutJobWithSameIdReplacesEveryField) {
  ASSERT_OK(store_->PutJob(MakeJob("job-1", 1000)));
  JobRecord replacement = MakeJob("job-1", 2000, /*state=*/4);
  replacement.kernel_name = "conv2d";
  replacement.replace_best = true;
  replacement.reason = "compile failed";
  replacement.spec = "new spec";
  replacement.targets = "";
  ASSERT_OK(store_->PutJob(replacement));

  absl::StatusOr<JobRecord> stored = store_->GetJob("job-1");
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, replacement);
  absl::StatusOr<std::vector<JobRecord>> all = store_->ListJobs(false, 0);
  ASSERT_OK(all);
  EXPECT_THAT(*all, SizeIs(1));
}

TEST_P(StoreContractTest, GetJobOfUnknownIdIsNotFound) {
  ASSERT_OK(store_->PutJob(MakeJob("job-1", 1000)));
  EXPECT_THAT(store_->GetJob("job-2"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(StoreContractTest, ListJobsReturnsNewestFirst) {
  PutJobs({MakeJob("a", 100), MakeJob("c", 300), MakeJob("b", 200)});

  absl::StatusOr<std::vector<JobRecord>> jobs =
      store_->ListJobs(/*unfinished_only=*/false, /*limit=*/10);
  ASSERT_OK(jobs);
  EXPECT_THAT(JobIds(*jobs), ElementsAre("c", "b", "a"));
  EXPECT_EQ(jobs->front(), MakeJob("c", 300));
}

TEST_P(StoreContractTest, ListJobsUnfinishedOnlyKeepsQueuedAndRunning) {
  PutJobs({MakeJob("queued", 100, /*state=*/1),
           MakeJob("running", 200, /*state=*/2),
           MakeJob("done", 300, /*state=*/3),
           MakeJob("failed", 400, /*state=*/4),
           MakeJob("unknown", 500, /*state=*/0)});

  absl::StatusOr<std::vector<JobRecord>> jobs =
      store_->ListJobs(/*unfinished_only=*/true, /*limit=*/10);
  ASSERT_OK(jobs);
  EXPECT_THAT(JobIds(*jobs), ElementsAre("running", "queued"));
}

TEST_P(StoreContractTest, ListJobsReturnsAtMostLimitNewestJobs) {
  PutJobs({MakeJob("a", 100), MakeJob("b", 200), MakeJob("c", 300),
           MakeJob("d", 400, /*state=*/3)});

  absl::StatusOr<std::vector<JobRecord>> two = store_->ListJobs(false, 2);
  ASSERT_OK(two);
  EXPECT_THAT(JobIds(*two), ElementsAre("d", "c"));
  absl::StatusOr<std::vector<JobRecord>> unfinished = store_->ListJobs(true, 2);
  ASSERT_OK(unfinished);
  EXPECT_THAT(JobIds(*unfinished), ElementsAre("c", "b"));
  absl::StatusOr<std::vector<JobRecord>> all = store_->ListJobs(false, 0);
  ASSERT_OK(all);
  EXPECT_THAT(*all, SizeIs(4)) << "limit 0 means no limit";
}

TEST_P(StoreContractTest, ListJobsOfEmptyStoreIsEmpty) {
  absl::StatusOr<std::vector<JobRecord>> jobs = store_->ListJobs(false, 10);
  ASSERT_OK(jobs);
  EXPECT_THAT(*jobs, IsEmpty());
}

TEST_P(StoreContractTest, InsertTrialTwiceKeepsTheFirstRow) {
  TrialRecord first = MakeTrial("job-1", "BM=64,BN=64", 0.25);
  TrialRecord second = first;
  second.median_seconds = 0.125;
  second.worker_id = "worker-b";

  absl::StatusOr<bool> inserted = store_->InsertTrial(first);
  ASSERT_OK(inserted);
  EXPECT_TRUE(*inserted);
  absl::StatusOr<bool> again = store_->InsertTrial(second);
  ASSERT_OK(again);
  EXPECT_FALSE(*again);

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, ElementsAre(first));
}

TEST_P(StoreContractTest, SameConfigUnderAnotherKeyOrJobIsANewTrial) {
  TrialRecord trial = MakeTrial("job-1", "BM=64", 0.25);
  TrialRecord other_key = trial;
  other_key.tuning_key = "key-2";
  TrialRecord other_job = trial;
  other_job.job_id = "job-2";

  for (const TrialRecord& t : {trial, other_key, other_job}) {
    absl::StatusOr<bool> inserted = store_->InsertTrial(t);
    ASSERT_OK(inserted);
    EXPECT_TRUE(*inserted) << t.job_id << " " << t.tuning_key;
  }
}

TEST_P(StoreContractTest, ListTrialsReturnsTheJobsTrialsInInsertionOrder) {
  std::vector<TrialRecord> job1 = {MakeTrial("job-1", "c", 0.3),
                                   MakeTrial("job-1", "a", 0.1),
                                   MakeTrial("job-1", "b", 0.2)};
  ASSERT_OK(store_->InsertTrial(job1[0]));
  ASSERT_OK(store_->InsertTrial(MakeTrial("job-2", "z", 0.5)));
  ASSERT_OK(store_->InsertTrial(job1[1]));
  ASSERT_OK(store_->InsertTrial(job1[2]));

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_EQ(*trials, job1);
  absl::StatusOr<std::vector<TrialRecord>> none = store_->ListTrials("job-3");
  ASSERT_OK(none);
  EXPECT_THAT(*none, IsEmpty());
}

TEST_P(StoreContractTest, InsertTrialsTellsWhichTrialsWereNew) {
  TrialRecord stored = MakeTrial("job-1", "a", 0.1);
  ASSERT_OK(store_->InsertTrial(stored));
  TrialRecord restored = stored;
  restored.median_seconds = 0.5;
  TrialRecord b = MakeTrial("job-1", "b", 0.2);
  TrialRecord c = MakeTrial("job-1", "c", 0.3);
  TrialRecord b_again = b;
  b_again.worker_id = "worker-b";

  absl::StatusOr<std::vector<bool>> inserted =
      store_->InsertTrials({b, restored, c, b_again});
  ASSERT_OK(inserted);
  EXPECT_THAT(*inserted, ElementsAre(true, false, true, false));

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, ElementsAre(stored, b, c)) << "the first row is kept";
}

TEST_P(StoreContractTest, InsertTrialsStoresNoneWhenOneFails) {
  // A trigger refuses one row in the middle of the batch.
  const std::string refuse =
      IsSqlite(GetParam())
          ? "CREATE TRIGGER refuse_poison BEFORE INSERT ON trials "
            "WHEN NEW.config = 'poison' "
            "BEGIN SELECT RAISE(ABORT, 'poison'); END"
          : "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF NEW.config = 'poison' THEN "
            "RAISE EXCEPTION 'poison'; END IF; RETURN NEW; END $$; "
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON trials "
            "FOR EACH ROW EXECUTE FUNCTION refuse_poison()";
  ASSERT_OK(database_->Execute(refuse));

  absl::StatusOr<std::vector<bool>> inserted = store_->InsertTrials(
      {MakeTrial("job-1", "a", 0.1), MakeTrial("job-1", "poison", 0.2),
       MakeTrial("job-1", "c", 0.3)});
  EXPECT_FALSE(inserted.ok());

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, IsEmpty());
  TrialRecord after = MakeTrial("job-1", "a", 0.1);
  absl::StatusOr<bool> retried = store_->InsertTrial(after);
  ASSERT_OK(retried);
  EXPECT_TRUE(*retried) << "the failed batch left no row and no transaction";
}

TEST_P(StoreContractTest, InsertTrialsOfNoTrialsReturnsNothing) {
  absl::StatusOr<std::vector<bool>> inserted = store_->InsertTrials({});
  ASSERT_OK(inserted);
  EXPECT_THAT(*inserted, IsEmpty());
}

TEST_P(StoreContractTest, InsertTrialsStoresALargeBatchInOrder) {
  constexpr int kTrials = 2000;
  std::vector<TrialRecord> batch;
  for (int i = 0; i < kTrials; ++i) {
    batch.push_back(MakeTrial("job-1", absl::StrCat("c=", kTrials - i), i));
  }

  absl::StatusOr<std::vector<bool>> inserted = store_->InsertTrials(batch);
  ASSERT_OK(inserted);
  EXPECT_EQ(*inserted, std::vector<bool>(kTrials, true));
  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_EQ(*trials, batch);
}

TEST_P(StoreContractTest, ConcurrentOverlappingBatchesInsertEachTrialOnce) {
  constexpr int kThreads = 4;
  constexpr int kTrials = 50;
  std::atomic<int> inserted{0};
  std::atomic<int> failed{0};

  // Every thread writes the same trials, each starting at another offset.
  RunOnThreads(kThreads, [&](int thread) {
    std::vector<TrialRecord> batch;
    for (int i = 0; i < kTrials; ++i) {
      int n = (i + thread * kTrials / kThreads) % kTrials;
      batch.push_back(MakeTrial("job-1", absl::StrCat("c=", n), 0.5));
    }
    absl::StatusOr<std::vector<bool>> result = store_->InsertTrials(batch);
    if (!result.ok()) ++failed;
    if (result.ok()) {
      for (bool is_new : *result) inserted += is_new ? 1 : 0;
    }
  });

  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(inserted.load(), kTrials);
  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, SizeIs(kTrials));
}

TEST_P(StoreContractTest, UpsertBestWritesAKeyNeverTuned) {
  BestRecord best = MakeBest("key-1", "BM=64", 1.0 / 3.0);
  absl::StatusOr<bool> written = store_->UpsertBest(best);
  ASSERT_OK(written);
  EXPECT_TRUE(*written);

  absl::StatusOr<BestRecord> stored = store_->GetBest("key-1");
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, best);
}

TEST_P(StoreContractTest, UpsertBestReplacesOnlyWithAFasterConfig) {
  BestRecord first = MakeBest("key-1", "BM=64", 0.5);
  BestRecord slower = MakeBest("key-1", "BM=32", 0.75);
  BestRecord equal = MakeBest("key-1", "BM=16", 0.5);
  BestRecord faster = MakeBest("key-1", "BM=128", 0.25);
  faster.job_id = "job-2";
  faster.device_model = "H200";
  ASSERT_OK(store_->UpsertBest(first));

  absl::StatusOr<bool> written = store_->UpsertBest(slower);
  ASSERT_OK(written);
  EXPECT_FALSE(*written) << "slower";
  written = store_->UpsertBest(equal);
  ASSERT_OK(written);
  EXPECT_FALSE(*written) << "equal";
  absl::StatusOr<BestRecord> stored = store_->GetBest("key-1");
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, first);

  written = store_->UpsertBest(faster);
  ASSERT_OK(written);
  EXPECT_TRUE(*written) << "faster";
  stored = store_->GetBest("key-1");
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, faster);
}

TEST_P(StoreContractTest, GetBestOfKeyNeverTunedIsNotFound) {
  ASSERT_OK(store_->UpsertBest(MakeBest("key-1", "BM=64", 0.5)));
  EXPECT_THAT(store_->GetBest("key-2"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(StoreContractTest, ListBestFiltersByKernelDeviceModelAndToolkit) {
  BestRecord h100 = MakeBest("k-h100", "a", 0.1);
  BestRecord h200 = MakeBest("k-h200", "b", 0.2);
  h200.device_model = "H200";
  BestRecord old_toolkit = MakeBest("k-old", "c", 0.3);
  old_toolkit.toolkit = "cuda-12.4";
  BestRecord other_kernel = MakeBest("k-conv", "d", 0.4);
  other_kernel.kernel_name = "conv2d";
  for (const BestRecord& best : {h100, h200, old_toolkit, other_kernel}) {
    ASSERT_OK(store_->UpsertBest(best));
  }

  auto list = [&](const std::string& device, const std::string& toolkit) {
    absl::StatusOr<std::vector<BestRecord>> rows =
        store_->ListBest("matmul", device, toolkit);
    EXPECT_OK(rows);
    std::vector<std::string> keys;
    if (!rows.ok()) return keys;
    for (const BestRecord& row : *rows) keys.push_back(row.tuning_key);
    return keys;
  };
  EXPECT_THAT(list("", ""), ElementsAre("k-h100", "k-h200", "k-old"));
  EXPECT_THAT(list("H100", ""), ElementsAre("k-h100", "k-old"));
  EXPECT_THAT(list("", "cuda-13.0"), ElementsAre("k-h100", "k-h200"));
  EXPECT_THAT(list("H200", "cuda-13.0"), ElementsAre("k-h200"));
  EXPECT_THAT(list("A100", ""), IsEmpty());
}

TEST_P(StoreContractTest, ListBestWithEmptyKernelNameMatchesAnyKernel) {
  BestRecord matmul = MakeBest("k-matmul", "a", 0.1);
  BestRecord conv = MakeBest("k-conv", "b", 0.2);
  conv.kernel_name = "conv2d";
  BestRecord conv_h200 = MakeBest("k-conv-h200", "c", 0.3);
  conv_h200.kernel_name = "conv2d";
  conv_h200.device_model = "H200";
  for (const BestRecord& best : {matmul, conv, conv_h200}) {
    ASSERT_OK(store_->UpsertBest(best));
  }

  absl::StatusOr<std::vector<BestRecord>> all = store_->ListBest("", "", "");
  ASSERT_OK(all);
  EXPECT_THAT(*all, ElementsAre(conv, conv_h200, matmul));
  absl::StatusOr<std::vector<BestRecord>> h100 =
      store_->ListBest("", "H100", "");
  ASSERT_OK(h100);
  EXPECT_THAT(*h100, ElementsAre(conv, matmul));
}

TEST_P(StoreContractTest, GetBlobReturnsTheBytesPut) {
  const std::string big = ArbitraryBytes(4 << 20);
  const std::string small = "__global__ void k() {}\n";
  ASSERT_OK(store_->PutBlobs({{"digest-big", big}, {"digest-small", small}}));

  absl::StatusOr<std::string> stored = store_->GetBlob("digest-big");
  ASSERT_OK(stored);
  EXPECT_TRUE(*stored == big) << "4 MiB of arbitrary bytes differ";
  stored = store_->GetBlob("digest-small");
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, small);
}

TEST_P(StoreContractTest, PutBlobsLeavesAStoredDigestUnchanged) {
  ASSERT_OK(store_->PutBlobs({{"digest-1", "first"}}));
  ASSERT_OK(store_->PutBlobs({{"digest-2", "two"}, {"digest-1", "second"}}));

  absl::StatusOr<std::string> first = store_->GetBlob("digest-1");
  ASSERT_OK(first);
  EXPECT_EQ(*first, "first");
  absl::StatusOr<std::string> two = store_->GetBlob("digest-2");
  ASSERT_OK(two);
  EXPECT_EQ(*two, "two");
}

TEST_P(StoreContractTest, PutBlobsOfNoBlobsIsOk) {
  EXPECT_OK(store_->PutBlobs({}));
}

TEST_P(StoreContractTest, GetBlobOfUnknownDigestIsNotFound) {
  ASSERT_OK(store_->PutBlobs({{"digest-1", "content"}}));
  EXPECT_THAT(store_->GetBlob("digest-2"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(StoreContractTest, PutKernelReplacesTheKernelWithTheSameName) {
  ASSERT_OK(store_->PutKernel(MakeKernel("matmul", 100)));
  KernelRecord newer = MakeKernel("matmul", 200);
  newer.spec = ArbitraryBytes(1000);
  ASSERT_OK(store_->PutKernel(newer));

  absl::StatusOr<std::vector<KernelRecord>> kernels = store_->ListKernels();
  ASSERT_OK(kernels);
  EXPECT_THAT(*kernels, ElementsAre(newer));
}

TEST_P(StoreContractTest, ListProfilesReturnsTheJobsProfilesByKeyAndConfig) {
  const ProfileRecord second{"job-1", "key-a", "BM=64", ArbitraryBytes(300), 20};
  const ProfileRecord first{"job-1", "key-a", "BM=128", ArbitraryBytes(200), 10};
  const ProfileRecord other_key{"job-1", "key-b", "BM=32", "p", 30};
  const ProfileRecord other_job{"job-2", "key-a", "BM=64", "q", 40};
  for (const ProfileRecord& profile : {second, first, other_key, other_job}) {
    ASSERT_OK(store_->PutProfile(profile));
  }

  absl::StatusOr<std::vector<ProfileRecord>> profiles = store_->ListProfiles("job-1");
  ASSERT_OK(profiles);
  ASSERT_EQ(profiles->size(), 3u);
  EXPECT_EQ((*profiles)[0].config, "BM=128");
  EXPECT_EQ((*profiles)[0].profile, first.profile);
  EXPECT_EQ((*profiles)[0].profiled_unix_ms, 10);
  EXPECT_EQ((*profiles)[1].config, "BM=64");
  EXPECT_EQ((*profiles)[1].profile, second.profile);
  EXPECT_EQ((*profiles)[2].tuning_key, "key-b");
}

TEST_P(StoreContractTest, PutProfileTwiceKeepsTheNewest) {
  ASSERT_OK(store_->PutProfile({"job-1", "key-a", "BM=64", "old", 10}));
  ASSERT_OK(store_->PutProfile({"job-1", "key-a", "BM=64", "new", 20}));

  absl::StatusOr<std::vector<ProfileRecord>> profiles = store_->ListProfiles("job-1");
  ASSERT_OK(profiles);
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_EQ((*profiles)[0].profile, "new");
  EXPECT_EQ((*profiles)[0].profiled_unix_ms, 20);
}

TEST_P(StoreContractTest, ListProfilesOfAJobWithoutProfilesIsEmpty) {
  absl::StatusOr<std::vector<ProfileRecord>> profiles = store_->ListProfiles("job-9");
  ASSERT_OK(profiles);
  EXPECT_TRUE(profiles->empty());
}

ProfileRequestRecord MakeProfileRequest(const std::string& job_id, const std::string& key,
                                        const std::string& config, int rank) {
  return ProfileRequestRecord{job_id, key, "model-a", "g++ 12", config, rank, 0.25 * rank, 7};
}

std::vector<std::string> RequestedConfigs(const std::vector<ProfileRequestRecord>& requests) {
  std::vector<std::string> configs;
  for (const ProfileRequestRecord& request : requests) {
    configs.push_back(request.job_id + "/" + request.tuning_key + "/" + request.config);
  }
  return configs;
}

TEST_P(StoreContractTest, ProfileRequestsAreListedByJobKeyAndRankWithEveryField) {
  ASSERT_OK(store_->PutProfileRequests({MakeProfileRequest("job-2", "key-a", "BM=8", 1),
                                        MakeProfileRequest("job-1", "key-b", "BM=16", 1),
                                        MakeProfileRequest("job-1", "key-a", "BM=32", 2),
                                        MakeProfileRequest("job-1", "key-a", "BM=64", 1)}));

  absl::StatusOr<std::vector<ProfileRequestRecord>> requests = store_->ListProfileRequests();
  ASSERT_OK(requests);
  EXPECT_THAT(RequestedConfigs(*requests),
              ElementsAre("job-1/key-a/BM=64", "job-1/key-a/BM=32", "job-1/key-b/BM=16",
                          "job-2/key-a/BM=8"));
  const ProfileRequestRecord& second = (*requests)[1];
  EXPECT_EQ(second.device_model, "model-a");
  EXPECT_EQ(second.toolkit, "g++ 12");
  EXPECT_EQ(second.rank, 2);
  EXPECT_EQ(second.median_seconds, 0.5);
  EXPECT_EQ(second.requested_unix_ms, 7);
}

TEST_P(StoreContractTest, ProfileRequestsWithAStoredKeyReplaceIt) {
  ASSERT_OK(store_->PutProfileRequests({MakeProfileRequest("job-1", "key-a", "BM=64", 1)}));
  ASSERT_OK(store_->PutProfileRequests({MakeProfileRequest("job-1", "key-a", "BM=64", 3)}));

  absl::StatusOr<std::vector<ProfileRequestRecord>> requests = store_->ListProfileRequests();
  ASSERT_OK(requests);
  ASSERT_THAT(*requests, SizeIs(1));
  EXPECT_EQ((*requests)[0].rank, 3);
}

TEST_P(StoreContractTest, StoringAProfileRemovesOnlyItsConfigsRequest) {
  ASSERT_OK(store_->PutProfileRequests({MakeProfileRequest("job-1", "key-a", "BM=64", 1),
                                        MakeProfileRequest("job-1", "key-a", "BM=32", 2),
                                        MakeProfileRequest("job-1", "key-b", "BM=64", 1)}));
  ASSERT_OK(store_->PutProfile({"job-1", "key-a", "BM=64", "p", 10}));

  absl::StatusOr<std::vector<ProfileRequestRecord>> requests = store_->ListProfileRequests();
  ASSERT_OK(requests);
  EXPECT_THAT(RequestedConfigs(*requests),
              ElementsAre("job-1/key-a/BM=32", "job-1/key-b/BM=64"));
  absl::StatusOr<std::vector<ProfileRecord>> profiles = store_->ListProfiles("job-1");
  ASSERT_OK(profiles);
  EXPECT_THAT(*profiles, SizeIs(1));
}

TEST_P(StoreContractTest, NoProfileRequestsListAsEmpty) {
  ASSERT_OK(store_->PutProfileRequests({}));
  absl::StatusOr<std::vector<ProfileRequestRecord>> requests = store_->ListProfileRequests();
  ASSERT_OK(requests);
  EXPECT_THAT(*requests, IsEmpty());
}

TEST_P(StoreContractTest, ListKernelsReturnsEveryKernelByName) {
  KernelRecord softmax = MakeKernel("softmax", 300);
  KernelRecord conv = MakeKernel("conv2d", 100);
  KernelRecord matmul = MakeKernel("matmul", 200);
  for (const KernelRecord& kernel : {softmax, conv, matmul}) {
    ASSERT_OK(store_->PutKernel(kernel));
  }

  absl::StatusOr<std::vector<KernelRecord>> kernels = store_->ListKernels();
  ASSERT_OK(kernels);
  EXPECT_THAT(*kernels, ElementsAre(conv, matmul, softmax));
}

TEST_P(StoreContractTest, ListKernelsOfEmptyStoreIsEmpty) {
  absl::StatusOr<std::vector<KernelRecord>> kernels = store_->ListKernels();
  ASSERT_OK(kernels);
  EXPECT_THAT(*kernels, IsEmpty());
}

TokenRecord MakeToken(const std::string& id, const std::string& name) {
  TokenRecord token;
  token.id = id;
  token.name = name;
  token.role = "submit";
  token.secret_hash = std::string(64, id.back());
  token.created_unix_ms = 1000;
  return token;
}

TEST_P(StoreContractTest, PutTokenStoresEveryFieldAndReplacesBySameId) {
  ASSERT_OK(store_->PutToken(MakeToken("b2", "bob")));
  TokenRecord alice = MakeToken("a1", "alice");
  ASSERT_OK(store_->PutToken(alice));
  alice.revoked_unix_ms = 2000;
  alice.role = "admin";
  ASSERT_OK(store_->PutToken(alice));
  absl::StatusOr<std::vector<TokenRecord>> tokens = store_->ListTokens();
  ASSERT_OK(tokens.status());
  ASSERT_EQ(tokens->size(), 2u);
  const TokenRecord& first = (*tokens)[0];
  EXPECT_EQ(first.id, "a1");
  EXPECT_EQ(first.name, "alice");
  EXPECT_EQ(first.role, "admin");
  EXPECT_EQ(first.secret_hash, alice.secret_hash);
  EXPECT_EQ(first.created_unix_ms, 1000);
  EXPECT_EQ(first.revoked_unix_ms, 2000);
  EXPECT_EQ((*tokens)[1].name, "bob");
}

TEST_P(StoreContractTest, TheFirstSecretStoredUnderANameStandsAcrossReopening) {
  const std::string first("k\0\xff\x01 first", 10);  // any bytes
  absl::StatusOr<std::string> stored = store_->Secret("lease-receipts", first);
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, first);
  absl::StatusOr<std::string> again = store_->Secret("lease-receipts", "a later one");
  ASSERT_OK(again);
  EXPECT_EQ(*again, first);
  absl::StatusOr<std::string> other = store_->Secret("another", "its own");
  ASSERT_OK(other);
  EXPECT_EQ(*other, "its own");
  EXPECT_THAT(store_->Secret("empty", ""), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  absl::StatusOr<std::string> reopened = store_->Secret("lease-receipts", "after reopening");
  ASSERT_OK(reopened);
  EXPECT_EQ(*reopened, first);
}

TEST_P(StoreContractTest, ListTokensOfEmptyStoreIsEmpty) {
  absl::StatusOr<std::vector<TokenRecord>> tokens = store_->ListTokens();
  ASSERT_OK(tokens.status());
  EXPECT_TRUE(tokens->empty());
}

TEST_P(StoreContractTest, CheckHealthOfAWorkingStoreIsOk) {
  EXPECT_OK(store_->CheckHealth());
  ASSERT_OK(store_->PutJob(MakeJob("job-1", 100)));
  EXPECT_OK(store_->CheckHealth());
}

TEST_P(StoreContractTest, ConcurrentUpsertsOfOneKeyKeepTheMinimum) {
  constexpr int kThreads = 8;
  constexpr int kUpsertsPerThread = 50;
  constexpr int kTotal = kThreads * kUpsertsPerThread;
  // A permutation of 0..kTotal-1, so every median differs and the fastest
  // config is written somewhere in the middle of one thread's run.
  auto rank = [](int n) { return (n * 319 + 123) % kTotal; };
  std::atomic<int> written{0};
  std::atomic<int> failed{0};

  RunOnThreads(kThreads, [&](int thread) {
    for (int i = 0; i < kUpsertsPerThread; ++i) {
      int n = thread * kUpsertsPerThread + i;
      BestRecord best =
          MakeBest("key-1", absl::StrCat("n=", n), 1.0 + rank(n) / 1000.0);
      absl::StatusOr<bool> result = store_->UpsertBest(best);
      if (!result.ok()) ++failed;
      if (result.ok() && *result) ++written;
    }
  });

  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(written.load(), 1);
  int fastest = 0;
  while (rank(fastest) != 0) ++fastest;
  absl::StatusOr<BestRecord> stored = store_->GetBest("key-1");
  ASSERT_OK(stored);
  EXPECT_EQ(stored->median_seconds, 1.0);
  EXPECT_EQ(stored->config, absl::StrCat("n=", fastest));
  absl::StatusOr<std::vector<BestRecord>> rows =
      store_->ListBest("matmul", "", "");
  ASSERT_OK(rows);
  EXPECT_THAT(*rows, SizeIs(1));
}

TEST_P(StoreContractTest, ConcurrentInsertsOfOneTrialInsertItOnce) {
  constexpr int kThreads = 8;
  constexpr int kTrials = 20;
  std::atomic<int> inserted{0};
  std::atomic<int> failed{0};

  RunOnThreads(kThreads, [&](int thread) {
    for (int i = 0; i < kTrials; ++i) {
      TrialRecord trial = MakeTrial("job-1", absl::StrCat("c=", i), 0.5);
      trial.worker_id = absl::StrCat("worker-", thread);
      absl::StatusOr<bool> result = store_->InsertTrial(trial);
      if (!result.ok()) ++failed;
      if (result.ok() && *result) ++inserted;
    }
  });

  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(inserted.load(), kTrials);
  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, SizeIs(kTrials));
}

TEST_P(StoreContractTest, HostileTextRoundTripsVerbatim) {
  const std::vector<std::string> hostile = {
      "it's \"quoted\"",        "back\\slash \\x00 \\\\", "new\nline\r\ttab",
      "'; DROP TABLE jobs; --", "$1 ? ?1 :name %s",       "ünïcødé ✓ 日本"};
  for (size_t i = 0; i < hostile.size(); ++i) {
    const std::string& text = hostile[i];
    JobRecord job = MakeJob(text, 100 + i);
    job.kernel_name = text;
    job.reason = text;
    ASSERT_OK(store_->PutJob(job));
    absl::StatusOr<JobRecord> stored = store_->GetJob(text);
    ASSERT_OK(stored);
    EXPECT_EQ(*stored, job) << text;

    TrialRecord trial = MakeTrial(text, text, 0.5);
    trial.tuning_key = trial.worker_id = trial.device_id = trial.error = text;
    ASSERT_OK(store_->InsertTrial(trial));
    absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials(text);
    ASSERT_OK(trials);
    EXPECT_THAT(*trials, ElementsAre(trial)) << text;

    BestRecord best = MakeBest(text, text, 0.5);
    best.shape = best.device_model = best.toolkit = best.job_id = text;
    ASSERT_OK(store_->UpsertBest(best));
    absl::StatusOr<BestRecord> stored_best = store_->GetBest(text);
    ASSERT_OK(stored_best);
    EXPECT_EQ(*stored_best, best) << text;
  }
  absl::StatusOr<std::vector<JobRecord>> jobs = store_->ListJobs(false, 0);
  ASSERT_OK(jobs);
  EXPECT_THAT(*jobs, SizeIs(hostile.size())) << "the jobs table survived";
}

TEST_P(StoreContractTest, ArbitraryBytesRoundTripVerbatim) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  const std::string not_utf8("\xff\xfe\xc3\x28 \x00\x01 '\\x41' \x80", 16);
  JobRecord job = MakeJob("job-1", 100);
  job.spec = bytes + not_utf8;
  job.targets = not_utf8;
  job.reason = not_utf8;
  ASSERT_OK(store_->PutJob(job));
  TrialRecord trial = MakeTrial("job-1", "BM=64", 0.5);
  trial.error = "nvrtc: error: " + not_utf8 + "\n" + bytes;
  ASSERT_OK(store_->InsertTrial(trial));

  absl::StatusOr<JobRecord> stored = store_->GetJob("job-1");
  ASSERT_OK(stored);
  EXPECT_EQ(stored->spec, job.spec);
  EXPECT_EQ(*stored, job);
  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, ElementsAre(trial));
}

TEST_P(StoreContractTest, ReopeningKeepsDataAndAppliesNoMigrationTwice) {
  ASSERT_OK(store_->PutJob(MakeJob("job-1", 100)));
  ASSERT_OK(store_->UpsertBest(MakeBest("key-1", "BM=64", 0.5)));
  ASSERT_OK(store_->PutBlobs({{"digest-1", "content"}}));
  ASSERT_OK(store_->PutKernel(MakeKernel("matmul", 100)));
  absl::StatusOr<int64_t> migrations = database_->MigrationRows();
  ASSERT_OK(migrations);
  EXPECT_GE(*migrations, 1);

  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(Reopen());

  absl::StatusOr<JobRecord> job = store_->GetJob("job-1");
  ASSERT_OK(job);
  EXPECT_EQ(*job, MakeJob("job-1", 100));
  absl::StatusOr<BestRecord> best = store_->GetBest("key-1");
  ASSERT_OK(best);
  EXPECT_EQ(best->config, "BM=64");
  absl::StatusOr<std::string> blob = store_->GetBlob("digest-1");
  ASSERT_OK(blob);
  EXPECT_EQ(*blob, "content");
  absl::StatusOr<std::vector<KernelRecord>> kernels = store_->ListKernels();
  ASSERT_OK(kernels);
  EXPECT_THAT(*kernels, ElementsAre(MakeKernel("matmul", 100)));
  absl::StatusOr<int64_t> after = database_->MigrationRows();
  ASSERT_OK(after);
  EXPECT_EQ(*after, *migrations);
}

TEST_P(StoreContractTest, StoresOpeningOneFreshDatabaseAtOnceAllSucceed) {
  absl::StatusOr<std::unique_ptr<TestDatabase>> fresh =
      TestDatabase::Create(GetParam());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const std::string url = (*fresh)->url();
  constexpr int kStores = 4;
  std::vector<absl::StatusOr<std::unique_ptr<Store>>> stores(kStores);

  RunOnThreads(kStores, [&](int i) { stores[i] = OpenStore(url); });

  for (auto& store : stores) {
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_OK((*store)->PutJob(MakeJob("job-1", 100)));
  }
  stores.clear();
  absl::StatusOr<int64_t> migrations = (*fresh)->MigrationRows();
  ASSERT_OK(migrations);
  absl::StatusOr<int64_t> expected = database_->MigrationRows();
  ASSERT_OK(expected);
  EXPECT_EQ(*migrations, *expected);
}

// The schema as migrations 1 and 2 left it (copied as shipped: a migration
// is never edited), with one trial row of that time.
std::string Version2Database(Backend backend) {
  const char* sqlite = R"sql(CREATE TABLE schema_migrations (
  version INTEGER PRIMARY KEY, applied_unix_ms INTEGER NOT NULL);
INSERT INTO schema_migrations VALUES (1, 0), (2, 0);
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  state INTEGER NOT NULL,
  reason BLOB NOT NULL,
  spec BLOB NOT NULL,
  targets BLOB NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  updated_unix_ms INTEGER NOT NULL);
CREATE INDEX jobs_by_created ON jobs (created_unix_ms DESC, id DESC);
CREATE TABLE trials (
  seq INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  status INTEGER NOT NULL,
  median_seconds REAL NOT NULL,
  p20_seconds REAL NOT NULL,
  p80_seconds REAL NOT NULL,
  samples INTEGER NOT NULL,
  compile_seconds REAL NOT NULL,
  worker_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  error BLOB NOT NULL,
  finished_unix_ms INTEGER NOT NULL,
  UNIQUE (job_id, tuning_key, config));
CREATE TABLE best_configs (
  tuning_key TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  shape TEXT NOT NULL,
  device_model TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  config TEXT NOT NULL,
  median_seconds REAL NOT NULL,
  job_id TEXT NOT NULL,
  updated_unix_ms INTEGER NOT NULL);
CREATE INDEX best_configs_by_kernel ON best_configs (kernel_name);

CREATE TABLE blobs (
  digest TEXT PRIMARY KEY,
  content BLOB NOT NULL);
CREATE TABLE kernels (
  name TEXT PRIMARY KEY,
  spec BLOB NOT NULL,
  updated_unix_ms INTEGER NOT NULL);
)sql";
  const char* postgres = R"sql(CREATE TABLE schema_migrations (
  version INTEGER PRIMARY KEY, applied_unix_ms BIGINT NOT NULL);
INSERT INTO schema_migrations VALUES (1, 0), (2, 0);
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  state INTEGER NOT NULL,
  reason BYTEA NOT NULL,
  spec BYTEA NOT NULL,
  targets BYTEA NOT NULL,
  created_unix_ms BIGINT NOT NULL,
  updated_unix_ms BIGINT NOT NULL);
CREATE INDEX jobs_by_created ON jobs (created_unix_ms DESC, id DESC);
CREATE TABLE trials (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  status INTEGER NOT NULL,
  median_seconds DOUBLE PRECISION NOT NULL,
  p20_seconds DOUBLE PRECISION NOT NULL,
  p80_seconds DOUBLE PRECISION NOT NULL,
  samples BIGINT NOT NULL,
  compile_seconds DOUBLE PRECISION NOT NULL,
  worker_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  error BYTEA NOT NULL,
  finished_unix_ms BIGINT NOT NULL,
  UNIQUE (job_id, tuning_key, config));
CREATE TABLE best_configs (
  tuning_key TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  shape TEXT NOT NULL,
  device_model TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  config TEXT NOT NULL,
  median_seconds DOUBLE PRECISION NOT NULL,
  job_id TEXT NOT NULL,
  updated_unix_ms BIGINT NOT NULL);
CREATE INDEX best_configs_by_kernel ON best_configs (kernel_name);

CREATE TABLE blobs (
  digest TEXT PRIMARY KEY,
  content BYTEA NOT NULL);
CREATE TABLE kernels (
  name TEXT PRIMARY KEY,
  spec BYTEA NOT NULL,
  updated_unix_ms BIGINT NOT NULL);
)sql";
  return absl::StrCat(IsSqlite(backend) ? sqlite : postgres,
                      "INSERT INTO trials (job_id, tuning_key, config, status, median_seconds, "
                      "p20_seconds, p80_seconds, samples, compile_seconds, worker_id, "
                      "device_id, error, finished_unix_ms) VALUES ('job-1', 'key-1', "
                      "'BM=64', 1, 0.5, 0.45, 0.55, 30, 0.25, 'worker-a', 'gpu-0', ",
                      IsSqlite(backend) ? "X''" : "''::bytea", ", 1700000000123);");
}

TEST_P(StoreContractTest, MigratingAVersion2DatabaseKeepsOldTrialsAndAddsProvenance) {
  absl::StatusOr<std::unique_ptr<TestDatabase>> old = TestDatabase::Create(GetParam());
  ASSERT_TRUE(old.ok()) << old.status();
  if (GetParam() == Backend::kSqlite) {  // an empty file is an empty database
    std::ofstream((*old)->url().substr(std::string("sqlite://").size()));
  }
  ASSERT_OK((*old)->Execute(Version2Database(GetParam())));

  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore((*old)->url());
  ASSERT_TRUE(store.ok()) << store.status();

  absl::StatusOr<std::vector<TrialRecord>> trials = (*store)->ListTrials("job-1");
  ASSERT_OK(trials);
  ASSERT_THAT(*trials, SizeIs(1));
  EXPECT_EQ((*trials)[0].config, "BM=64");
  EXPECT_EQ((*trials)[0].median_seconds, 0.5);
  EXPECT_EQ((*trials)[0].principal, "");
  EXPECT_EQ((*trials)[0].round, TrialRound::kSearch);
  EXPECT_FALSE((*trials)[0].excluded);
  EXPECT_FALSE((*trials)[0].cut_early);
  EXPECT_EQ((*trials)[0].rounds, 0);
  EXPECT_EQ((*trials)[0].low_clock_samples, 0);
  TrialRecord finals = (*trials)[0];
  finals.round = TrialRound::kFinalists;
  absl::StatusOr<bool> inserted = (*store)->InsertTrial(finals);
  ASSERT_OK(inserted);
  EXPECT_TRUE(*inserted);
  ASSERT_OK((*store)->PutQuarantine({"rogue-host", "test", 1}));
  absl::StatusOr<int64_t> migrations = (*old)->MigrationRows();
  ASSERT_OK(migrations);
  // 3: provenance and quarantine, 4: tokens, 5: cut_early, 6: job owners, imported bests,
  // 7: finalist rounds and low-clock samples, 8: profiles, 9: profile requests,
  // 10: replacing jobs, 11: sweeps, 12: best evidence, 13: calibration,
  // 14: the coordinator leader, 15: the coordinators' secrets
  EXPECT_EQ(*migrations, 15);
  store->reset();  // closed before the database is dropped
}

TEST_P(StoreContractTest, TrialKeepsItsProvenanceAndRound) {
  TrialRecord trial = MakeTrial("job-1", "BM=64", 0.5);
  trial.principal = "host-a";
  trial.clock_mhz = 1980.5;
  trial.round = TrialRound::kFinalists;
  trial.cut_early = true;
  ASSERT_OK(store_->InsertTrial(trial));

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  ASSERT_THAT(*trials, SizeIs(1));
  EXPECT_TRUE((*trials)[0].cut_early);
  EXPECT_EQ((*trials)[0].principal, "host-a");
  EXPECT_EQ((*trials)[0].clock_mhz, 1980.5);
  EXPECT_EQ((*trials)[0].round, TrialRound::kFinalists);
  EXPECT_FALSE((*trials)[0].excluded);
}

TEST_P(StoreContractTest, TrialKeepsItsRepeatabilityFigures) {
  TrialRecord trial = MakeTrial("job-1", "BM=64", 0.5);
  trial.round = TrialRound::kFinalists;
  trial.rounds = 5;
  trial.rounds_cv = 0.0041;
  trial.retaken_samples = 12;
  trial.low_clock_samples = 3;
  ASSERT_OK(store_->InsertTrials({trial}));

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  ASSERT_THAT(*trials, SizeIs(1));
  EXPECT_EQ((*trials)[0].rounds, 5);
  EXPECT_EQ((*trials)[0].rounds_cv, 0.0041);
  EXPECT_EQ((*trials)[0].retaken_samples, 12);
  EXPECT_EQ((*trials)[0].low_clock_samples, 3);
}

TEST_P(StoreContractTest, TrialKeepsItsCalibrationExactly) {
  TrialRecord calibrated = MakeTrial("job-1", "BM=64", 2.5e-4);
  calibrated.calibration_seconds = 1.8873162079e-4;  // not a short decimal
  TrialRecord uncalibrated = MakeTrial("job-1", "BM=128", 3e-4);
  ASSERT_OK(store_->InsertTrials({calibrated, uncalibrated}));

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListTrials("job-1");
  ASSERT_OK(trials);
  ASSERT_THAT(*trials, SizeIs(2));
  EXPECT_EQ((*trials)[0].calibration_seconds, 1.8873162079e-4);
  EXPECT_EQ((*trials)[1].calibration_seconds, 0);
}

TEST_P(StoreContractTest, EachRoundOfAConfigIsItsOwnRow) {
  TrialRecord search = MakeTrial("job-1", "BM=64", 0.5);
  TrialRecord finals = search;
  finals.round = TrialRound::kFinalists;
  finals.median_seconds = 0.6;
  TrialRecord verify = search;
  verify.round = TrialRound::kVerify;

  absl::StatusOr<std::vector<bool>> inserted =
      store_->InsertTrials({search, finals, verify, finals});
  ASSERT_OK(inserted);
  EXPECT_THAT(*inserted, ElementsAre(true, true, true, false));
}

TEST_P(StoreContractTest, ListKeyTrialsReturnsOkRowsOfEveryJobNotExcluded) {
  TrialRecord failed = MakeTrial("job-1", "BM=16", 0);
  failed.status = 3;
  TrialRecord other_key = MakeTrial("job-1", "BM=32", 0.1);
  other_key.tuning_key = "key-2";
  ASSERT_OK(store_->InsertTrials({MakeTrial("job-1", "BM=64", 0.5), failed, other_key,
                                  MakeTrial("job-2", "BM=128", 0.4)}));

  absl::StatusOr<std::vector<TrialRecord>> trials = store_->ListKeyTrials("key-1");
  ASSERT_OK(trials);
  EXPECT_THAT(*trials, ElementsAre(MakeTrial("job-1", "BM=64", 0.5),
                                   MakeTrial("job-2", "BM=128", 0.4)));
}

TEST_P(StoreContractTest, ListReplacingJobsNamesReplacingJobsWithRowsOfTheKey) {
  JobRecord replacing = MakeJob("job-2", 2000);
  replacing.replace_best = true;
  JobRecord elsewhere = MakeJob("job-3", 3000);
  elsewhere.replace_best = true;
  PutJobs({MakeJob("job-1", 1000), replacing, elsewhere});
  TrialRecord failed = MakeTrial("job-2", "BM=16", 0);
  failed.status = 3;
  TrialRecord other_key = MakeTrial("job-3", "BM=32", 0.1);
  other_key.tuning_key = "key-2";
  ASSERT_OK(store_->InsertTrials({MakeTrial("job-1", "BM=64", 0.5), failed, other_key}));

  absl::StatusOr<std::vector<std::string>> jobs = store_->ListReplacingJobs("key-1");
  ASSERT_OK(jobs);
  EXPECT_THAT(*jobs, ElementsAre("job-2"));
  ASSERT_OK(store_->ExcludeTrials(TrialFilter{"", "", "job-2"}).status());
  jobs = store_->ListReplacingJobs("key-1");
  ASSERT_OK(jobs);
  EXPECT_THAT(*jobs, ElementsAre("job-2"));  // excluded rows still name it
  jobs = store_->ListReplacingJobs("key-3");
  ASSERT_OK(jobs);
  EXPECT_THAT(*jobs, IsEmpty());
}

TEST_P(StoreContractTest, ExcludeTrialsMarksMatchingRowsOnceAndKeepsThem) {
  TrialRecord rogue = MakeTrial("job-1", "BM=64", 1e-9);
  rogue.principal = "rogue-host";
  TrialRecord rogue_other_key = rogue;
  rogue_other_key.tuning_key = "key-2";
  TrialRecord honest = MakeTrial("job-1", "BM=128", 0.4);
  honest.principal = "honest-host";
  ASSERT_OK(store_->InsertTrials({rogue, rogue_other_key, honest}));

  absl::StatusOr<Exclusion> excluded = store_->ExcludeTrials(TrialFilter{"rogue-host", "", ""});
  ASSERT_OK(excluded);
  EXPECT_EQ(excluded->trials, 2);
  EXPECT_THAT(excluded->tuning_keys, ElementsAre("key-1", "key-2"));
  EXPECT_THAT(excluded->principals, ElementsAre("rogue-host"));
  absl::StatusOr<Exclusion> again = store_->ExcludeTrials(TrialFilter{"rogue-host", "", ""});
  ASSERT_OK(again);
  EXPECT_EQ(again->trials, 0);
  EXPECT_THAT(again->principals, IsEmpty());

  absl::StatusOr<std::vector<TrialRecord>> served = store_->ListKeyTrials("key-1");
  ASSERT_OK(served);
  EXPECT_THAT(*served, ElementsAre(honest));
  absl::StatusOr<std::vector<TrialRecord>> audit = store_->ListTrials("job-1");
  ASSERT_OK(audit);
  ASSERT_THAT(*audit, SizeIs(3));
  EXPECT_TRUE((*audit)[0].excluded);
  EXPECT_FALSE((*audit)[2].excluded);
}

TEST_P(StoreContractTest, ExcludeTrialsMatchesWorkerIdKeyAndJob) {
  TrialRecord a = MakeTrial("job-1", "BM=64", 0.5);
  TrialRecord b = MakeTrial("job-2", "BM=64", 0.5);
  TrialRecord c = MakeTrial("job-2", "BM=32", 0.5);
  c.tuning_key = "key-2";
  a.principal = "host:a";
  c.principal = "host:c";  // b's is unknown ("")
  ASSERT_OK(store_->InsertTrials({a, b, c}));

  absl::StatusOr<Exclusion> by_job_and_key =
      store_->ExcludeTrials(TrialFilter{"", "key-1", "job-2"});
  ASSERT_OK(by_job_and_key);
  EXPECT_EQ(by_job_and_key->trials, 1);
  absl::StatusOr<Exclusion> by_worker_id = store_->ExcludeTrials(TrialFilter{"worker-a", "", ""});
  ASSERT_OK(by_worker_id);
  EXPECT_EQ(by_worker_id->trials, 2);
  EXPECT_THAT(by_worker_id->principals, ElementsAre("host:a", "host:c"));
  EXPECT_THAT(store_->ExcludeTrials({}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_P(StoreContractTest, PutBestReplacesEvenWithASlowerConfigAndDeleteBestRemoves) {
  ASSERT_OK(store_->UpsertBest(MakeBest("key-1", "BM=64", 1e-9)));
  ASSERT_OK(store_->PutBest(MakeBest("key-1", "BM=128", 0.5)));
  absl::StatusOr<BestRecord> best = store_->GetBest("key-1");
  ASSERT_OK(best);
  EXPECT_EQ(*best, MakeBest("key-1", "BM=128", 0.5));

  absl::StatusOr<bool> deleted = store_->DeleteBest("key-1");
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  EXPECT_THAT(store_->GetBest("key-1"), StatusIs(absl::StatusCode::kNotFound));
  deleted = store_->DeleteBest("key-1");
  ASSERT_OK(deleted);
  EXPECT_FALSE(*deleted);
}

TEST_P(StoreContractTest, QueryJobsFiltersByStateKernelAndOwner) {
  JobRecord other_kernel = MakeJob("job-2", 2000, /*state=*/3);
  other_kernel.kernel_name = "softmax";
  JobRecord other_owner = MakeJob("job-3", 3000, /*state=*/3);
  other_owner.owner = "bob";
  PutJobs({MakeJob("job-1", 1000, /*state=*/3), other_kernel, other_owner,
           MakeJob("job-4", 4000, /*state=*/2)});

  JobQuery query;
  query.state = 3;
  query.kernel_name = "matmul";
  query.owner = "alice";
  absl::StatusOr<std::vector<JobRecord>> jobs = store_->QueryJobs(query);
  ASSERT_OK(jobs);
  EXPECT_THAT(JobIds(*jobs), ElementsAre("job-1"));
  query = JobQuery();
  query.owner = "bob";
  jobs = store_->QueryJobs(query);
  ASSERT_OK(jobs);
  ASSERT_THAT(JobIds(*jobs), ElementsAre("job-3"));
  EXPECT_EQ((*jobs)[0], other_owner);
}

TEST_P(StoreContractTest, QueryJobsFiltersBySweep) {
  JobRecord first = MakeJob("job-1", 1000);
  first.sweep_id = "s-1";
  JobRecord second = MakeJob("job-2", 2000);
  second.sweep_id = "s-1";
  JobRecord other = MakeJob("job-3", 3000);
  other.sweep_id = "s-2";
  PutJobs({first, second, other, MakeJob("job-4", 4000)});
  JobQuery query;
  query.sweep_id = "s-1";
  absl::StatusOr<std::vector<JobRecord>> jobs = store_->QueryJobs(query);
  ASSERT_OK(jobs);
  ASSERT_THAT(JobIds(*jobs), ElementsAre("job-2", "job-1"));
  EXPECT_EQ((*jobs)[1], first);
}

TEST_P(StoreContractTest, QueryJobsPagesNewestFirstAfterTheCursor) {
  // Two jobs created in the same millisecond are ordered by id.
  PutJobs({MakeJob("job-a", 1000), MakeJob("job-b", 2000), MakeJob("job-c", 2000),
           MakeJob("job-d", 3000)});
  JobQuery query;
  query.limit = 2;
  std::vector<std::string> seen;
  for (int page = 0; page < 4; ++page) {
    absl::StatusOr<std::vector<JobRecord>> jobs = store_->QueryJobs(query);
    ASSERT_OK(jobs);
    if (jobs->empty()) break;
    for (const JobRecord& job : *jobs) seen.push_back(job.id);
    query.after_created_unix_ms = jobs->back().created_unix_ms;
    query.after_id = jobs->back().id;
  }
  EXPECT_THAT(seen, ElementsAre("job-d", "job-c", "job-b", "job-a"));
}

TEST_P(StoreContractTest, QueryTrialsFiltersByStatusAndPagesInInsertionOrder) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 5; ++i) {
    TrialRecord trial = MakeTrial("job-1", absl::StrCat("BM=", i), 0.1 * (i + 1));
    trial.status = i % 2 == 0 ? 1 : 3;
    trial.error = i % 2 == 0 ? "" : absl::StrCat("error ", i);
    trials.push_back(trial);
  }
  ASSERT_OK(store_->InsertTrials(trials));
  ASSERT_OK(store_->InsertTrial(MakeTrial("job-2", "BM=9", 0.5)));

  TrialQuery query;
  query.job_id = "job-1";
  query.limit = 2;
  absl::StatusOr<TrialPage> page = store_->QueryTrials(query);
  ASSERT_OK(page);
  EXPECT_EQ(page->trials, std::vector<TrialRecord>({trials[0], trials[1]}));
  ASSERT_NE(page->next_seq, 0);
  query.after_seq = page->next_seq;
  query.limit = 3;
  page = store_->QueryTrials(query);
  ASSERT_OK(page);
  EXPECT_EQ(page->trials, std::vector<TrialRecord>({trials[2], trials[3], trials[4]}));
  EXPECT_EQ(page->next_seq, 0);

  query = TrialQuery();
  query.job_id = "job-1";
  query.status = 3;
  page = store_->QueryTrials(query);
  ASSERT_OK(page);
  EXPECT_EQ(page->trials, std::vector<TrialRecord>({trials[1], trials[3]}));
}

TEST_P(StoreContractTest, ImportBestNeverReplacesAMeasuredRowUnlessOverwriting) {
  ASSERT_OK(store_->PutBest(MakeBest("key-1", "BM=64", 0.2)));
  BestRecord imported = MakeBest("key-1", "BM=128", 0.1);
  imported.imported = true;
  imported.origin = "fleet-a";
  absl::StatusOr<bool> written = store_->ImportBest(imported, /*overwrite=*/false);
  ASSERT_OK(written);
  EXPECT_FALSE(*written);
  ExpectBest("key-1", MakeBest("key-1", "BM=64", 0.2));

  written = store_->ImportBest(imported, /*overwrite=*/true);
  ASSERT_OK(written);
  EXPECT_TRUE(*written);
  ExpectBest("key-1", imported);
}

TEST_P(StoreContractTest, ImportBestReplacesAnImportedRowAndAMeasuredOneReplacesIt) {
  BestRecord first = MakeBest("key-1", "BM=64", 0.1);
  first.imported = true;
  first.origin = "fleet-a";
  BestRecord second = MakeBest("key-1", "BM=32", 0.3);
  second.imported = true;
  second.origin = "fleet-b";
  ASSERT_TRUE(store_->ImportBest(first, /*overwrite=*/false).value_or(false));
  ASSERT_TRUE(store_->ImportBest(second, /*overwrite=*/false).value_or(false));
  ExpectBest("key-1", second);

  ASSERT_OK(store_->PutBest(MakeBest("key-1", "BM=128", 0.5)));
  ExpectBest("key-1", MakeBest("key-1", "BM=128", 0.5));
}

TEST_P(StoreContractTest, QuarantineSurvivesReopeningUntilLifted) {
  ASSERT_OK(store_->PutQuarantine({"rogue-host", "claimed 1 ns", 1700000000000}));
  ASSERT_OK(store_->PutQuarantine({"b-host", "r\n'\"", 1700000000001}));
  ASSERT_NO_FATAL_FAILURE(Reopen());

  absl::StatusOr<std::vector<QuarantineRecord>> quarantined = store_->ListQuarantine();
  ASSERT_OK(quarantined);
  ASSERT_THAT(*quarantined, SizeIs(2));
  EXPECT_EQ((*quarantined)[0].principal, "b-host");
  EXPECT_EQ((*quarantined)[0].reason, "r\n'\"");
  EXPECT_EQ((*quarantined)[1].since_unix_ms, 1700000000000);

  absl::StatusOr<bool> lifted = store_->DeleteQuarantine("rogue-host");
  ASSERT_OK(lifted);
  EXPECT_TRUE(*lifted);
  quarantined = store_->ListQuarantine();
  ASSERT_OK(quarantined);
  EXPECT_THAT(*quarantined, SizeIs(1));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContractTest,
                         ::testing::Values(Backend::kSqlite, Backend::kSqliteMemory,
                                           Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return BackendName(info.param);
                         });

}  // namespace
}  // namespace testing
}  // namespace tunefleet::server
