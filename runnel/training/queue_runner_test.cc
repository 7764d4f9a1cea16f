#include "runnel/training/queue_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using Tensors = std::vector<Tensor>;

// An input pipeline: `source` holds 0..n-1 and is closed; each runner
// thread moves one element from it into `queue` (capacity 4); the main
// thread reads batches from `queue`.
struct Pipeline {
  explicit Pipeline(const Scope& root, int n) {
    source =
        ops::FIFOQueueV2(root.WithOpName("source"), {DT_INT32},
                         ops::FIFOQueueV2::Shapes({PartialTensorShape({})}));
    std::vector<int32_t> values(n);
    for (int i = 0; i < n; ++i) values[i] = i;
    fill = ops::QueueEnqueueManyV2(root.WithOpName("fill"), source,
                                   {Tensor::FromVector<int32_t>(values)})
               .operation;
    close_source =
        ops::QueueCloseV2(root.WithOpName("close_source"), source).operation;
    queue = ops::FIFOQueueV2(
        root.WithOpName("queue"), {DT_INT32},
        ops::FIFOQueueV2::Shapes({PartialTensorShape({})}).Capacity(4));
    auto one = ops::QueueDequeueV2(root.WithOpName("take"), source, {DT_INT32});
    for (int i = 0; i < 2; ++i) {
      enqueue.push_back(
          ops::QueueEnqueueV2(root.WithOpName("move_" + std::to_string(i)),
                              queue, {one.components[0]})
              .operation);
    }
    batch =
        ops::QueueDequeueUpToV2(root.WithOpName("batch"), queue, 10, {DT_INT32})
            .components[0];
    is_closed = ops::QueueIsClosedV2(root.WithOpName("is_closed"), queue);
  }

  Output source, queue, batch, is_closed;
  Operation fill, close_source;
  std::vector<Operation> enqueue;
};

TEST(QueueRunnerTest, FeedsAQueueUntilItsInputRunsOut) {
  Scope root = Scope::NewRootScope();
  Pipeline p(root, 95);
  auto runner = QueueRunner::New(root, p.queue, p.enqueue);
  ASSERT_OK(runner.status());
  EXPECT_EQ((*runner)->def().close_op_name, "queue_Close");
  EXPECT_EQ((*runner)->def().cancel_op_name, "queue_Close_1");
  ClientSession session(root);
  ASSERT_OK(session.Run({}, {}, {p.fill}, nullptr));
  ASSERT_OK(session.Run({}, {}, {p.close_source}, nullptr));
  Coordinator coord;
  ASSERT_OK((*runner)->Start(&session, &coord));
  std::vector<int32_t> got;
  while (!coord.ShouldStop()) {
    Tensors out;
    Status s = session.Run({p.batch}, &out);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
      coord.RequestStop(s);  // Clean: the input is exhausted.
      break;
    }
    for (int32_t v : out[0].flat<int32_t>()) got.push_back(v);
  }
  ASSERT_OK(coord.Join());
  ASSERT_OK((*runner)->Join());
  EXPECT_FALSE((*runner)->IsRunning());
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), 95u);
  for (int i = 0; i < 95; ++i) EXPECT_EQ(got[i], i);
}

TEST(QueueRunnerTest, CoordinatorStopCancelsBlockedEnqueues) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueueV2(root.WithOpName("q"), {DT_FLOAT},
                            ops::FIFOQueueV2::Capacity(2));
  auto enq = ops::QueueEnqueueV2(root.WithOpName("enq"), q, {1.5f});
  auto deq = ops::QueueDequeueV2(root.WithOpName("deq"), q, {DT_FLOAT});
  auto is_closed = ops::QueueIsClosedV2(root, q);
  auto runner = QueueRunner::New(root, q, {enq.operation, enq.operation});
  ASSERT_OK(runner.status());
  ClientSession session(root);
  Coordinator coord;
  ASSERT_OK((*runner)->Start(&session, &coord));
  EXPECT_EQ((*runner)->Start(&session, &coord).code(),
            absl::StatusCode::kFailedPrecondition);
  for (int i = 0; i < 20; ++i) {
    Tensors out;
    ASSERT_OK(session.Run({deq.components[0]}, &out));
    EXPECT_EQ(out[0].scalar<float>(), 1.5f);
  }
  // The queue is full again and both threads are blocked in enqueues.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE((*runner)->IsRunning());
  coord.RequestStop();
  ASSERT_OK((*runner)->Join());
  ASSERT_OK(coord.Join());
  EXPECT_FALSE((*runner)->IsRunning());
  Tensors out;
  ASSERT_OK(session.Run({is_closed}, &out));
  EXPECT_TRUE(out[0].scalar<bool>());  // The cancel op closed it.
}

TEST(QueueRunnerTest, ErrorsGoToTheCoordinator) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueueV2(root.WithOpName("q"), {DT_INT32});
  // A float into an int32 queue: every run fails with InvalidArgument.
  auto bad = ops::QueueEnqueueV2(root.WithOpName("bad"), q, {2.5f});
  auto runner = QueueRunner::New(root, q, {bad.operation});
  ASSERT_OK(runner.status());
  ClientSession session(root);
  Coordinator coord;
  ASSERT_OK((*runner)->Start(&session, &coord));
  coord.WaitForStop();  // The runner's error requests the stop.
  Status s = coord.Join();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("QueueEnqueueV2 'bad'"));
  Status r = (*runner)->Join();
  EXPECT_EQ(r.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*runner)->GetStatus().code(), absl::StatusCode::kInvalidArgument);
}

TEST(QueueRunnerTest, ByNameThroughASessionAndOwnedByTheCoordinator) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueueV2(root.WithOpName("q"), {DT_INT32},
                            ops::FIFOQueueV2::Capacity(3));
  ops::QueueEnqueueV2(root.WithOpName("enq"), q, {7});
  ops::QueueCloseV2(root.WithOpName("close"), q);
  ops::QueueCloseV2(root.WithOpName("cancel"), q,
                    ops::QueueCloseV2::CancelPendingEnqueues(true));
  auto size = ops::QueueSizeV2(root.WithOpName("size"), q);
  ClientSession client(root);
  Tensors out;
  ASSERT_OK(client.Run({size}, &out));  // Sends the graph to the session.
  QueueRunnerDef def;
  def.queue_name = "q";
  def.enqueue_op_name = {"enq"};
  def.close_op_name = "close";
  def.cancel_op_name = "cancel";
  auto runner = QueueRunner::New(def);
  ASSERT_OK(runner.status());
  Session* session = client.session();
  Coordinator coord;
  ASSERT_OK((*runner)->Start(session, &coord));
  ASSERT_OK(coord.RegisterRunner(std::move(*runner)));
  // Wait until the runner has filled the queue.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_OK(session->Run({}, {"size"}, {}, &out));
    if (out[0].scalar<int32_t>() == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);
  EXPECT_FALSE(coord.AllRunnersStopped());
  coord.RequestStop();
  ASSERT_OK(coord.Join());
  EXPECT_TRUE(coord.AllRunnersStopped());
}

TEST(QueueRunnerTest, StopWithoutACoordinatorAndDestroyWhileRunning) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueueV2(root.WithOpName("q"), {DT_INT32},
                            ops::FIFOQueueV2::Capacity(1));
  auto enq = ops::QueueEnqueueV2(root.WithOpName("enq"), q, {1});
  auto q2 = ops::FIFOQueueV2(root.WithOpName("q2"), {DT_INT32},
                             ops::FIFOQueueV2::Capacity(1));
  auto enq2 = ops::QueueEnqueueV2(root.WithOpName("enq2"), q2, {2});
  auto r1 = QueueRunner::New(root, q, {enq.operation});
  auto r2 = QueueRunner::New(root, q2, {enq2.operation});
  ASSERT_OK(r1.status());
  ASSERT_OK(r2.status());
  ClientSession session(root);
  ASSERT_OK((*r1)->Start(&session));
  ASSERT_OK((*r2)->Start(&session));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  (*r1)->Stop();
  ASSERT_OK((*r1)->Join());
  r2->reset();  // Stops and joins the blocked thread.
  // After a Join the runner can start again (the queue is closed now, so
  // its thread ends at once with Cancelled, an error without a stop).
  ASSERT_OK((*r1)->Start(&session));
  EXPECT_EQ((*r1)->Join().code(), absl::StatusCode::kCancelled);
}

TEST(QueueRunnerTest, BadDefinitions) {
  EXPECT_EQ(QueueRunner::New(QueueRunnerDef{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  QueueRunnerDef def;
  def.enqueue_op_name = {""};
  EXPECT_EQ(QueueRunner::New(def).status().code(),
            absl::StatusCode::kInvalidArgument);
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueueV2(root, {DT_INT32});
  auto c = ops::Const(root, 1);
  EXPECT_EQ(QueueRunner::New(root, q, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  Status s = QueueRunner::New(root, c, {c.op()}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("not a queue handle"));
  EXPECT_EQ(QueueRunner::New(root, q, {Operation()}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto runner = QueueRunner::New(root, q, {c.op()});
  ASSERT_OK(runner.status());
  EXPECT_EQ((*runner)->Start(static_cast<Session*>(nullptr)).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
