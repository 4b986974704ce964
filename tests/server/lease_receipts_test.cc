#include "server/lease_receipts.h"

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::StatusIs;

v1::LeaseReceiptBody Body() {
  v1::LeaseReceiptBody body;
  body.set_lease_id("l7");
  body.set_epoch(1'700'000'000'000'007);
  body.set_incarnation(42);
  body.set_principal("host-a");
  body.set_device_id("cpu0");
  body.set_job_id("j1");
  body.set_tuning_key("k");
  for (uint64_t ordinal : {3, 5, 8}) body.add_ordinals(ordinal);
  body.set_issued_unix_ms(1'700'000'000'000);
  return body;
}

TEST(LeaseReceiptsTest, ASealedReceiptOpensToItsBodyUnderTheSameKeyOnly) {
  const std::string key = LeaseReceipts::NewKey();
  EXPECT_EQ(key.size(), 32u);
  LeaseReceipts granter(key, LeaseReceipts::RandomIncarnation());
  const std::string receipt = granter.Seal(Body());
  // Another process of the same database opens it.
  LeaseReceipts adopter(key, LeaseReceipts::RandomIncarnation());
  absl::StatusOr<v1::LeaseReceiptBody> opened = adopter.Open(receipt);
  ASSERT_OK(opened);
  EXPECT_EQ(opened->SerializeAsString(), Body().SerializeAsString());
  // Another database's key does not.
  LeaseReceipts stranger(LeaseReceipts::NewKey(), 1);
  EXPECT_THAT(stranger.Open(receipt), StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST(LeaseReceiptsTest, AnAlteredOrForgedReceiptIsRefused) {
  LeaseReceipts receipts(LeaseReceipts::NewKey(), 1);
  v1::LeaseReceipt sealed;
  ASSERT_TRUE(sealed.ParseFromString(receipts.Seal(Body())));
  // Another config slipped into the body, the MAC kept.
  v1::LeaseReceiptBody more = Body();
  more.add_ordinals(13);
  v1::LeaseReceipt altered = sealed;
  altered.set_body(more.SerializeAsString());
  EXPECT_THAT(receipts.Open(altered.SerializeAsString()),
              StatusIs(absl::StatusCode::kPermissionDenied));
  // One flipped bit of the MAC, a MAC cut short, none at all.
  v1::LeaseReceipt flipped = sealed;
  flipped.mutable_mac()->at(0) ^= 1;
  EXPECT_THAT(receipts.Open(flipped.SerializeAsString()),
              StatusIs(absl::StatusCode::kPermissionDenied));
  v1::LeaseReceipt cut = sealed;
  cut.mutable_mac()->resize(16);
  EXPECT_THAT(receipts.Open(cut.SerializeAsString()),
              StatusIs(absl::StatusCode::kPermissionDenied));
  v1::LeaseReceipt unsealed = sealed;
  unsealed.clear_mac();
  EXPECT_THAT(receipts.Open(unsealed.SerializeAsString()),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(receipts.Open("\xff\xff\xff not a receipt"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// RFC 4231, test cases 2 (a short key) and 6 (a key longer than a block).
TEST(LeaseReceiptsTest, TheMacIsHmacSha256) {
  LeaseReceipts jefe("Jefe", 1);
  EXPECT_EQ(absl::BytesToHexString(jefe.Mac("what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  LeaseReceipts long_key(std::string(131, '\xaa'), 1);
  EXPECT_EQ(absl::BytesToHexString(
                long_key.Mac("Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(LeaseReceiptsTest, IncarnationsDiffer) {
  EXPECT_NE(LeaseReceipts::RandomIncarnation(), LeaseReceipts::RandomIncarnation());
  EXPECT_NE(LeaseReceipts::RandomIncarnation(), 0u);
}

}  // namespace
}  // namespace tunefleet::server
