// CancellationManager: callbacks run once, registration after cancellation
// is refused, and DeregisterCallback waits for a callback that is running on
// another thread (what lets its caller free what the callback uses).
#include "runnel/framework/cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace runnel {
namespace {

TEST(CancellationManagerTest, CallbacksRunOnceAndLateOnesAreRefused) {
  CancellationManager cm;
  int runs = 0;
  const auto a = cm.NewToken(), b = cm.NewToken();
  ASSERT_TRUE(cm.RegisterCallback(a, [&] { ++runs; }));
  ASSERT_TRUE(cm.RegisterCallback(b, [&] { runs += 10; }));
  EXPECT_TRUE(cm.DeregisterCallback(b));
  EXPECT_FALSE(cm.IsCancelled());
  cm.StartCancel();
  cm.StartCancel();
  EXPECT_TRUE(cm.IsCancelled());
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(cm.RegisterCallback(cm.NewToken(), [&] { runs += 100; }));
  EXPECT_FALSE(cm.DeregisterCallback(a));
  EXPECT_EQ(runs, 1);
}

// Thread A cancels and its callback is still running when thread B
// deregisters: B must not return before the callback does.
TEST(CancellationManagerTest, DeregisterWaitsForARunningCallback) {
  for (int round = 0; round < 20; ++round) {
    CancellationManager cm;
    const auto token = cm.NewToken();
    absl::Notification entered, release;
    std::atomic<bool> callback_done{false};
    ASSERT_TRUE(cm.RegisterCallback(token, [&] {
      entered.Notify();
      release.WaitForNotification();
      callback_done.store(true);
    }));
    std::thread canceller([&] { cm.StartCancel(); });
    entered.WaitForNotification();
    std::atomic<bool> deregistered{false};
    bool removed = true;
    std::thread other([&] {
      removed = cm.DeregisterCallback(token);
      // What the callback uses may be freed from here on.
      EXPECT_TRUE(callback_done.load());
      deregistered.store(true);
    });
    absl::SleepFor(absl::Milliseconds(round % 4 * 5));
    EXPECT_FALSE(deregistered.load());
    release.Notify();
    other.join();
    canceller.join();
    EXPECT_FALSE(removed);
    EXPECT_TRUE(deregistered.load());
  }
}

// A callback may deregister tokens of its own manager (a step finishing
// inside its cancellation): that must not wait for itself.
TEST(CancellationManagerTest, DeregisterInsideACallbackDoesNotWait) {
  CancellationManager cm;
  const auto a = cm.NewToken(), b = cm.NewToken();
  bool a_removed = true, b_removed = true;
  ASSERT_TRUE(cm.RegisterCallback(a, [&] {
    a_removed = cm.DeregisterCallback(a);
    b_removed = cm.DeregisterCallback(b);
  }));
  ASSERT_TRUE(cm.RegisterCallback(b, [] {}));
  cm.StartCancel();  // Would hang if the callback waited for itself.
  EXPECT_FALSE(a_removed);
  EXPECT_FALSE(b_removed);
}

// Many threads deregistering while another cancels: every deregistration
// either removes its callback (which then never runs) or returns after it
// ran.
TEST(CancellationManagerTest, DeregisterRacingCancelEitherRemovesOrWaits) {
  for (int round = 0; round < 200; ++round) {
    CancellationManager cm;
    constexpr int kThreads = 4;
    std::atomic<int> ran[kThreads] = {};
    CancellationManager::Token tokens[kThreads];
    for (int i = 0; i < kThreads; ++i) {
      tokens[i] = cm.NewToken();
      ASSERT_TRUE(cm.RegisterCallback(tokens[i], [&ran, i] {
        absl::SleepFor(absl::Microseconds(50));
        ran[i].fetch_add(1);
      }));
    }
    std::thread threads[kThreads];
    for (int i = 0; i < kThreads; ++i) {
      threads[i] = std::thread([&, i] {
        const bool removed = cm.DeregisterCallback(tokens[i]);
        EXPECT_EQ(ran[i].load(), removed ? 0 : 1) << "round " << round;
      });
    }
    cm.StartCancel();
    for (auto& t : threads) t.join();
    for (int i = 0; i < kThreads; ++i) EXPECT_LE(ran[i].load(), 1);
  }
}

}  // namespace
}  // namespace runnel
