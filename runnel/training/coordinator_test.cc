#include "runnel/training/coordinator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

TEST(CoordinatorTest, RequestStopWakesWaiters) {
  Coordinator coord;
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_FALSE(coord.WaitForStop(absl::Milliseconds(10)));
  std::thread waiter([&] { coord.WaitForStop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  coord.RequestStop();
  waiter.join();
  EXPECT_TRUE(coord.ShouldStop());
  EXPECT_TRUE(coord.WaitForStop(absl::Milliseconds(1)));
  ASSERT_OK(coord.GetStatus());
  ASSERT_OK(coord.Join());
}

TEST(CoordinatorTest, KeepsTheFirstRealError) {
  Coordinator coord;
  coord.ReportStatus(errors::OutOfRange("input exhausted"));  // Clean.
  ASSERT_OK(coord.GetStatus());
  EXPECT_FALSE(coord.ShouldStop());  // Reporting does not stop.
  coord.ReportStatus(errors::DataLoss("bad record"));
  coord.ReportStatus(errors::Internal("later"));
  EXPECT_EQ(coord.GetStatus().code(), absl::StatusCode::kDataLoss);
  coord.RequestStop(errors::Unavailable("ignored: an error is recorded"));
  EXPECT_TRUE(coord.ShouldStop());
  Status s = coord.Join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("bad record"));
}

TEST(CoordinatorTest, ErrorsAfterTheStopAreIgnored) {
  Coordinator coord;
  coord.RequestStop(errors::OutOfRange("done"));
  ASSERT_OK(coord.GetStatus());
  coord.RequestStop(errors::Cancelled("caused by the stop"));
  ASSERT_OK(coord.Join());
}

TEST(CoordinatorTest, CustomCleanStopCodes) {
  Coordinator coord(
      {absl::StatusCode::kOutOfRange, absl::StatusCode::kCancelled});
  coord.RequestStop(errors::Cancelled("clean here"));
  ASSERT_OK(coord.Join());
  Coordinator strict(std::vector<absl::StatusCode>{});
  strict.RequestStop(errors::OutOfRange("an error here"));
  EXPECT_EQ(strict.Join().code(), absl::StatusCode::kOutOfRange);
}

TEST(CoordinatorTest, JoinsRegisteredAndGivenThreads) {
  Coordinator coord;
  std::atomic<int> stopped{0};
  auto worker = [&] {
    while (!coord.ShouldStop()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ++stopped;
  };
  coord.RegisterThread(std::thread(worker));
  coord.RegisterThread(std::thread(worker));
  std::vector<std::thread> mine;
  mine.emplace_back([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    coord.RequestStop(errors::InvalidArgument("worker 3 failed"));
    ++stopped;
  });
  Status s = coord.Join(&mine);
  EXPECT_EQ(stopped, 3);
  EXPECT_TRUE(mine.empty());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("worker 3 failed"));
}

class FakeRunner : public RunnerInterface {
 public:
  FakeRunner(Status status, std::atomic<bool>* running)
      : status_(std::move(status)), running_(running) {}
  Status Join() override {
    running_->store(false);
    return status_;
  }
  bool IsRunning() const override { return running_->load(); }

 private:
  Status status_;
  std::atomic<bool>* running_;
};

TEST(CoordinatorTest, JoinsRunnersAndFoldsTheirErrors) {
  std::atomic<bool> a{true}, b{true};
  Coordinator coord;
  EXPECT_EQ(coord.RegisterRunner(nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(coord.RegisterRunner(
      std::make_unique<FakeRunner>(errors::OutOfRange("clean"), &a)));
  ASSERT_OK(coord.RegisterRunner(
      std::make_unique<FakeRunner>(errors::DataLoss("crc"), &b)));
  EXPECT_FALSE(coord.AllRunnersStopped());
  coord.RequestStop();
  Status s = coord.Join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(coord.AllRunnersStopped());
}

TEST(CoordinatorTest, StopCallbacksRunOnce) {
  Coordinator coord;
  std::atomic<int> a{0}, b{0}, removed{0};
  coord.AddStopCallback([&] { ++a; });
  const auto id = coord.AddStopCallback([&] { ++removed; });
  coord.RemoveStopCallback(id);
  coord.AddStopCallback([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ++b;
  });
  std::thread stopper([&] { coord.RequestStop(); });
  stopper.join();
  coord.RequestStop();  // Again: nothing more runs.
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(removed, 0);
  // Added after the stop: runs at once.
  std::atomic<int> late{0};
  coord.AddStopCallback([&] { ++late; });
  EXPECT_EQ(late, 1);
}

TEST(CoordinatorTest, RemoveWaitsForARunningCallback) {
  Coordinator coord;
  std::atomic<bool> finished{false};
  const auto id = coord.AddStopCallback([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    finished = true;
  });
  std::thread stopper([&] { coord.RequestStop(); });
  while (!coord.ShouldStop()) std::this_thread::yield();
  coord.RemoveStopCallback(id);
  EXPECT_TRUE(finished);  // The callback's captures may now go.
  stopper.join();
}

}  // namespace
}  // namespace runnel
