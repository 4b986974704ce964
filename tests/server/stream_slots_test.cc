#include "server/stream_slots.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::StatusIs;

TEST(StreamSlotsTest, BoundsEachPrincipalAndEveryone) {
  StreamSlots slots(/*per_principal=*/2, /*total=*/3);
  std::vector<StreamSlots::Slot> held;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<StreamSlots::Slot> slot = slots.Acquire("alice");
    ASSERT_OK(slot);
    held.push_back(*std::move(slot));
  }
  EXPECT_THAT(slots.Acquire("alice"), StatusIs(absl::StatusCode::kResourceExhausted));
  absl::StatusOr<StreamSlots::Slot> bob = slots.Acquire("bob");
  ASSERT_OK(bob);
  EXPECT_EQ(slots.open(), 3);
  EXPECT_THAT(slots.Acquire("carol"), StatusIs(absl::StatusCode::kResourceExhausted));
  held.pop_back();  // a stream ends: its slot is free again
  EXPECT_EQ(slots.open(), 2);
  EXPECT_OK(slots.Acquire("alice"));  // released again at once
  EXPECT_EQ(slots.open(), 2);
}

TEST(StreamSlotsTest, AMovedSlotIsReleasedOnce) {
  StreamSlots slots(1, 1);
  {
    absl::StatusOr<StreamSlots::Slot> first = slots.Acquire("");
    ASSERT_OK(first);
    std::optional<StreamSlots::Slot> moved(*std::move(first));
    EXPECT_EQ(slots.open(), 1);
  }
  EXPECT_EQ(slots.open(), 0);
  EXPECT_OK(slots.Acquire(""));
}

}  // namespace
}  // namespace tunefleet::server
