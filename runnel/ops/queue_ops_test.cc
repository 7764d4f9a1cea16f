// Queue ops through the op-test harness: one kernel at a time, no step
// cancellation, so only operations that complete at once are exercised here
// (blocking, cancellation and timeouts are in queue_ops_session_test.cc).
// Every test names its own queues: the harness device's ResourceMgr is
// shared by the whole binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runnel/framework/queue_interface.h"
#include "runnel/framework/resource_var.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using Tensors = std::vector<Tensor>;

struct QueueSpec {
  std::string op = "FIFOQueueV2";
  std::vector<DataType> types = {DT_FLOAT};
  std::vector<PartialTensorShape> shapes;
  int64_t capacity = -1;
  bool set_shapes = true;  // PriorityQueueV2's shapes has no default.
  int64_t min_after_dequeue = 0, seed = 0, seed2 = 0;
};

StatusOr<Tensor> MakeQueue(const std::string& name, const QueueSpec& spec) {
  OpTestCase t(spec.op, name + "_node");
  t.Attr("component_types", spec.types)
      .Attr("capacity", spec.capacity)
      .Attr("shared_name", name);
  if (spec.set_shapes) t.Attr("shapes", spec.shapes);
  if (spec.op == "RandomShuffleQueueV2") {
    t.Attr("min_after_dequeue", spec.min_after_dequeue)
        .Attr("seed", spec.seed)
        .Attr("seed2", spec.seed2);
  }
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

Tensor Queue(const std::string& name, const QueueSpec& spec = {}) {
  auto q = MakeQueue(name, spec);
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *q : Tensor();
}

std::vector<DataType> TypesOf(const Tensors& ts) {
  std::vector<DataType> v;
  for (const Tensor& t : ts) v.push_back(t.dtype());
  return v;
}

Status EnqueueOp(const char* op, const Tensor& q, const Tensors& components) {
  OpTestCase t(op);
  t.Attr("Tcomponents", TypesOf(components)).Input(q);
  for (const Tensor& c : components) t.Input(c);
  return t.Run();
}
Status Enqueue(const Tensor& q, const Tensors& components) {
  return EnqueueOp("QueueEnqueueV2", q, components);
}
Status EnqueueMany(const Tensor& q, const Tensors& components) {
  return EnqueueOp("QueueEnqueueManyV2", q, components);
}

StatusOr<Tensors> Dequeue(const Tensor& q, std::vector<DataType> types) {
  OpTestCase t("QueueDequeueV2");
  t.Attr("component_types", types).Input(q);
  RETURN_IF_ERROR(t.Run());
  Tensors out;
  for (int i = 0; i < t.num_outputs(); ++i) out.push_back(t.output(i));
  return out;
}

StatusOr<Tensors> DequeueMany(const Tensor& q, int32_t n,
                              std::vector<DataType> types, bool up_to = false) {
  OpTestCase t(up_to ? "QueueDequeueUpToV2" : "QueueDequeueManyV2");
  t.Attr("component_types", types).Input(q).Input(Tensor::Scalar<int32_t>(n));
  RETURN_IF_ERROR(t.Run());
  Tensors out;
  for (int i = 0; i < t.num_outputs(); ++i) out.push_back(t.output(i));
  return out;
}

Status Close(const Tensor& q, bool cancel_pending_enqueues = false) {
  OpTestCase t("QueueCloseV2");
  t.Attr("cancel_pending_enqueues", cancel_pending_enqueues).Input(q);
  return t.Run();
}

int32_t Size(const Tensor& q) {
  OpTestCase t("QueueSizeV2");
  t.Input(q);
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() ? t.output(0).scalar<int32_t>() : -1;
}

bool IsClosed(const Tensor& q) {
  OpTestCase t("QueueIsClosedV2");
  t.Input(q);
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  return s.ok() && t.output(0).scalar<bool>();
}

template <typename T>
Tensor Vec(std::vector<T> v, TensorShape shape = {}) {
  if (shape.dims() == 0 && v.size() != 1) {
    shape = TensorShape({static_cast<int64_t>(v.size())});
  }
  return Tensor::FromVector<T>(v, shape);
}

void ExpectError(const Status& s, absl::StatusCode code,
                 const std::string& text) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(text), std::string::npos) << s;
}

// Each test starts from an empty container, so a repeated run
// (--gtest_repeat) does not see the queues of the previous one.
class QueueTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(TestCpuDevice()->resource_manager()->Cleanup("localhost"));
  }
};
using FIFOQueueTest = QueueTestBase;
using PaddingFIFOQueueTest = QueueTestBase;
using PriorityQueueTest = QueueTestBase;
using RandomShuffleQueueTest = QueueTestBase;
using QueueOpsTest = QueueTestBase;

// ---------------------------------------------------------------------------
// FIFOQueueV2

TEST_F(FIFOQueueTest, HandleNamesTheQueue) {
  Tensor q = Queue("fifo_handle");
  ASSERT_EQ(q.dtype(), DT_RESOURCE);
  ASSERT_EQ(q.shape(), TensorShape({}));
  const ResourceHandle& h = q.scalar<ResourceHandle>();
  EXPECT_EQ(h.container(), "localhost");
  EXPECT_EQ(h.name(), "fifo_handle");
  EXPECT_EQ(h.hash_code(), ResourceTypeHash<QueueInterface>());
  // A second node with the same shared_name gets the same queue.
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<float>(1)}));
  Tensor again = Queue("fifo_handle");
  EXPECT_EQ(Size(again), 1);
}

TEST_F(FIFOQueueTest, FirstInFirstOutForEveryDtype) {
  Tensor q =
      Queue("fifo_dtypes", {.types = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64,
                                      DT_BOOL, DT_STRING, DT_UINT8}});
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(
        Enqueue(q, {Tensor::Scalar<float>(i + 0.5f), Tensor::Scalar<double>(-i),
                    Vec<int32_t>({i, 10 * i}),
                    Tensor::Scalar<int64_t>(int64_t{1} << (40 + i)),
                    Tensor::Scalar<bool>(i % 2 == 1),
                    Tensor::Scalar<tstring>("s" + std::to_string(i)),
                    Tensor::Scalar<uint8_t>(static_cast<uint8_t>(200 + i))}));
  }
  EXPECT_EQ(Size(q), 3);
  for (int i = 0; i < 3; ++i) {
    auto out = Dequeue(q, {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL,
                           DT_STRING, DT_UINT8});
    ASSERT_OK(out.status());
    ASSERT_EQ(out->size(), 7u);
    EXPECT_EQ((*out)[0].scalar<float>(), i + 0.5f);
    EXPECT_EQ((*out)[1].scalar<double>(), -i);
    ExpectTensorEqual<int32_t>((*out)[2], Vec<int32_t>({i, 10 * i}));
    EXPECT_EQ((*out)[3].scalar<int64_t>(), int64_t{1} << (40 + i));
    EXPECT_EQ((*out)[4].scalar<bool>(), i % 2 == 1);
    EXPECT_EQ((*out)[5].scalar<tstring>(), "s" + std::to_string(i));
    EXPECT_EQ((*out)[6].scalar<uint8_t>(), 200 + i);
  }
  EXPECT_EQ(Size(q), 0);
}

TEST_F(FIFOQueueTest, EnqueueManyThenDequeueManyBatches) {
  Tensor q =
      Queue("fifo_many",
            {.types = {DT_INT32, DT_STRING},
             .shapes = {PartialTensorShape({2}), PartialTensorShape({})}});
  ASSERT_OK(EnqueueMany(q, {Vec<int32_t>({1, 2, 3, 4, 5, 6}, {3, 2}),
                            Vec<tstring>({"a", "b", "c"})}));
  ASSERT_OK(
      EnqueueMany(q, {Vec<int32_t>({7, 8}, {1, 2}), Vec<tstring>({"d"}, {1})}));
  EXPECT_EQ(Size(q), 4);
  auto two = DequeueMany(q, 2, {DT_INT32, DT_STRING});
  ASSERT_OK(two.status());
  ExpectTensorEqual<int32_t>((*two)[0], Vec<int32_t>({1, 2, 3, 4}, {2, 2}));
  ExpectTensorEqual<tstring>((*two)[1], Vec<tstring>({"a", "b"}));
  // A single dequeue sees the next element without the batch dimension.
  auto one = Dequeue(q, {DT_INT32, DT_STRING});
  ASSERT_OK(one.status());
  ExpectTensorEqual<int32_t>((*one)[0], Vec<int32_t>({5, 6}));
  EXPECT_EQ((*one)[1].scalar<tstring>(), "c");
  EXPECT_EQ(Size(q), 1);
}

// Found by the kernel fuzzer: a batch of a billion empty rows holds no data
// but would make a billion queue elements.
TEST_F(FIFOQueueTest, EnqueueManyOfHugelyManyEmptyRowsIsRefused) {
  Tensor q = Queue("fifo_empty_rows",
                   {.types = {DT_FLOAT}, .shapes = {PartialTensorShape({0})}});
  Status s = EnqueueMany(q, {Tensor(DT_FLOAT, TensorShape({1000000000, 0}))});
  ExpectError(s, absl::StatusCode::kResourceExhausted, "queue bookkeeping");
  EXPECT_EQ(Size(q), 0);
  // Ordinary batches of empty rows still go in.
  ASSERT_OK(EnqueueMany(q, {Tensor(DT_FLOAT, TensorShape({1000, 0}))}));
  EXPECT_EQ(Size(q), 1000);
}

TEST_F(FIFOQueueTest, DequeueManyZeroAndEmptyEnqueueMany) {
  Tensor q = Queue("fifo_zero",
                   {.types = {DT_DOUBLE}, .shapes = {PartialTensorShape({3})}});
  ASSERT_OK(EnqueueMany(q, {Tensor(DT_DOUBLE, TensorShape({0, 3}))}));
  EXPECT_EQ(Size(q), 0);
  auto out = DequeueMany(q, 0, {DT_DOUBLE});
  ASSERT_OK(out.status());
  EXPECT_EQ((*out)[0].shape(), TensorShape({0, 3}));
}

TEST_F(FIFOQueueTest, EmptyElements) {
  Tensor q =
      Queue("fifo_empty_elems",
            {.types = {DT_FLOAT}, .shapes = {PartialTensorShape({0, 2})}});
  ASSERT_OK(EnqueueMany(q, {Tensor(DT_FLOAT, TensorShape({2, 0, 2}))}));
  EXPECT_EQ(Size(q), 2);
  auto out = DequeueMany(q, 2, {DT_FLOAT});
  ASSERT_OK(out.status());
  EXPECT_EQ((*out)[0].shape(), TensorShape({2, 0, 2}));
}

TEST_F(FIFOQueueTest, CloseDrainsThenOutOfRange) {
  Tensor q = Queue("fifo_close",
                   {.types = {DT_INT64}, .shapes = {PartialTensorShape({})}});
  ASSERT_OK(EnqueueMany(q, {Vec<int64_t>({1, 2, 3})}));
  EXPECT_FALSE(IsClosed(q));
  ASSERT_OK(Close(q));
  EXPECT_TRUE(IsClosed(q));
  ASSERT_OK(Close(q));  // Closing twice is fine.
  // Enqueue after close: Cancelled (TensorFlow's code).
  ExpectError(Enqueue(q, {Tensor::Scalar<int64_t>(4)}),
              absl::StatusCode::kCancelled, "is closed");
  // DequeueMany(3) with 3 left still works after close...
  auto first = Dequeue(q, {DT_INT64});
  ASSERT_OK(first.status());
  EXPECT_EQ((*first)[0].scalar<int64_t>(), 1);
  // ...DequeueMany(3) with 2 left fails without losing them...
  ExpectError(DequeueMany(q, 3, {DT_INT64}).status(),
              absl::StatusCode::kOutOfRange,
              "insufficient elements (requested 3, current size 2)");
  EXPECT_EQ(Size(q), 2);
  // ...and DequeueUpTo returns the final short batch.
  auto rest = DequeueMany(q, 3, {DT_INT64}, /*up_to=*/true);
  ASSERT_OK(rest.status());
  ExpectTensorEqual<int64_t>((*rest)[0], Vec<int64_t>({2, 3}));
  ExpectError(Dequeue(q, {DT_INT64}).status(), absl::StatusCode::kOutOfRange,
              "is closed");
  ExpectError(DequeueMany(q, 1, {DT_INT64}, true).status(),
              absl::StatusCode::kOutOfRange, "is closed");
}

TEST_F(FIFOQueueTest, CapacityIsRespectedByEnqueueMany) {
  // EnqueueMany of 3 into a capacity-2 queue stores two and waits; with
  // cancel_pending_enqueues the waiting one is cancelled. (The harness runs
  // one kernel at a time, so the wait happens on another thread.)
  Tensor q = Queue(
      "fifo_cap",
      {.types = {DT_INT32}, .shapes = {PartialTensorShape({})}, .capacity = 2});
  Status enqueue_status;
  std::thread t([&] {
    enqueue_status = EnqueueMany(q, {Vec<int32_t>({1, 2, 3})});
  });
  while (Size(q) < 2) std::this_thread::yield();
  EXPECT_EQ(Size(q), 2);
  auto out = Dequeue(q, {DT_INT32});  // Makes room for the third.
  ASSERT_OK(out.status());
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 1);
  t.join();
  ASSERT_OK(enqueue_status);
  auto rest = DequeueMany(q, 2, {DT_INT32});
  ASSERT_OK(rest.status());
  ExpectTensorEqual<int32_t>((*rest)[0], Vec<int32_t>({2, 3}));
}

TEST_F(FIFOQueueTest, CloseCancelsPendingEnqueues) {
  Tensor q = Queue("fifo_cancel", {.types = {DT_FLOAT}, .capacity = 1});
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<float>(1)}));
  Status blocked;
  std::thread t([&] { blocked = Enqueue(q, {Tensor::Scalar<float>(2)}); });
  // Give the enqueue time to block; closing without cancelling would wait.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_OK(Close(q, /*cancel_pending_enqueues=*/true));
  t.join();
  ExpectError(blocked, absl::StatusCode::kCancelled,
              "Enqueue operation was cancelled");
  auto out = Dequeue(q, {DT_FLOAT});
  ASSERT_OK(out.status());
  EXPECT_EQ((*out)[0].scalar<float>(), 1);
  EXPECT_EQ(Dequeue(q, {DT_FLOAT}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(FIFOQueueTest, CloseWaitsForPendingEnqueues) {
  Tensor q = Queue("fifo_close_wait", {.types = {DT_FLOAT}, .capacity = 1});
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<float>(1)}));
  Status blocked, closed;
  std::thread e([&] { blocked = Enqueue(q, {Tensor::Scalar<float>(2)}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::thread c([&] { closed = Close(q); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(IsClosed(q));  // The close waits behind the enqueue.
  auto out = Dequeue(q, {DT_FLOAT});
  ASSERT_OK(out.status());
  e.join();
  c.join();
  ASSERT_OK(blocked);
  ASSERT_OK(closed);
  EXPECT_TRUE(IsClosed(q));
  auto last = Dequeue(q, {DT_FLOAT});
  ASSERT_OK(last.status());
  EXPECT_EQ((*last)[0].scalar<float>(), 2);
}

TEST_F(FIFOQueueTest, BlockedDequeueCompletesFromEnqueue) {
  Tensor q = Queue("fifo_wake", {.types = {DT_INT32}});
  StatusOr<Tensors> got = Tensors();
  std::thread t([&] { got = Dequeue(q, {DT_INT32}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<int32_t>(42)}));
  t.join();
  ASSERT_OK(got.status());
  EXPECT_EQ((*got)[0].scalar<int32_t>(), 42);
}

TEST_F(FIFOQueueTest, BlockedDequeueManyFailsOnCloseAndKeepsElements) {
  Tensor q = Queue("fifo_many_close",
                   {.types = {DT_INT32}, .shapes = {PartialTensorShape({})}});
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<int32_t>(1)}));
  StatusOr<Tensors> got = Tensors();
  std::thread t([&] { got = DequeueMany(q, 3, {DT_INT32}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<int32_t>(2)}));
  ASSERT_OK(Close(q));
  t.join();
  ExpectError(got.status(), absl::StatusCode::kOutOfRange,
              "requested 3, current size 2");
  auto rest = DequeueMany(q, 5, {DT_INT32}, /*up_to=*/true);
  ASSERT_OK(rest.status());
  ExpectTensorEqual<int32_t>((*rest)[0], Vec<int32_t>({1, 2}));
}

// ---------------------------------------------------------------------------
// PaddingFIFOQueueV2

TEST_F(PaddingFIFOQueueTest, PadsToTheBatchMaximum) {
  Tensor q = Queue("pad_1d", {.op = "PaddingFIFOQueueV2",
                              .types = {DT_INT32, DT_FLOAT},
                              .shapes = {PartialTensorShape({-1}),
                                         PartialTensorShape({-1, 2})}});
  ASSERT_OK(Enqueue(q, {Vec<int32_t>({1, 2}), Vec<float>({1, 2}, {1, 2})}));
  ASSERT_OK(Enqueue(
      q, {Vec<int32_t>({3, 4, 5}), Vec<float>({3, 4, 5, 6, 7, 8}, {3, 2})}));
  ASSERT_OK(Enqueue(q, {Vec<int32_t>({6}, {1}), Tensor(DT_FLOAT, {0, 2})}));
  auto out = DequeueMany(q, 3, {DT_INT32, DT_FLOAT});
  ASSERT_OK(out.status());
  ExpectTensorEqual<int32_t>((*out)[0],
                             Vec<int32_t>({1, 2, 0, 3, 4, 5, 6, 0, 0}, {3, 3}));
  ExpectTensorEqual<float>((*out)[1], Vec<float>({1, 2, 0, 0, 0, 0,  //
                                                  3, 4, 5, 6, 7, 8,  //
                                                  0, 0, 0, 0, 0, 0},
                                                 {3, 3, 2}));
}

TEST_F(PaddingFIFOQueueTest, PadsInnerDimensionsAndStrings) {
  Tensor q = Queue("pad_2d", {.op = "PaddingFIFOQueueV2",
                              .types = {DT_STRING},
                              .shapes = {PartialTensorShape({-1, -1})}});
  ASSERT_OK(Enqueue(q, {Vec<tstring>({"a", "b"}, {1, 2})}));
  ASSERT_OK(Enqueue(q, {Vec<tstring>({"c", "d"}, {2, 1})}));
  auto out = DequeueMany(q, 2, {DT_STRING});
  ASSERT_OK(out.status());
  ExpectTensorEqual<tstring>(
      (*out)[0], Vec<tstring>({"a", "b", "", "", "c", "", "d", ""}, {2, 2, 2}));
}

TEST_F(PaddingFIFOQueueTest, EnqueueManyAndZeroBatch) {
  Tensor q = Queue("pad_many", {.op = "PaddingFIFOQueueV2",
                                .types = {DT_INT64},
                                .shapes = {PartialTensorShape({2, -1})}});
  ASSERT_OK(EnqueueMany(q, {Vec<int64_t>({1, 2, 3, 4}, {2, 2, 1})}));
  ASSERT_OK(EnqueueMany(q, {Vec<int64_t>({5, 6, 7, 8}, {1, 2, 2})}));
  auto zero = DequeueMany(q, 0, {DT_INT64});
  ASSERT_OK(zero.status());
  EXPECT_EQ((*zero)[0].shape(), TensorShape({0, 2, 0}));
  ASSERT_OK(Close(q));
  auto out = DequeueMany(q, 5, {DT_INT64}, /*up_to=*/true);
  ASSERT_OK(out.status());
  ExpectTensorEqual<int64_t>(
      (*out)[0], Vec<int64_t>({1, 0, 2, 0, 3, 0, 4, 0, 5, 6, 7, 8}, {3, 2, 2}));
}

TEST_F(PaddingFIFOQueueTest, RejectsKnownDimensionMismatchAndUnknownRank) {
  Tensor q = Queue("pad_bad", {.op = "PaddingFIFOQueueV2",
                               .types = {DT_FLOAT},
                               .shapes = {PartialTensorShape({2, -1})}});
  ExpectError(Enqueue(q, {Tensor(DT_FLOAT, {3, 1})}),
              absl::StatusCode::kInvalidArgument,
              "Shape mismatch in tuple component 0. Expected [2,?]");
  ExpectError(Enqueue(q, {Tensor(DT_FLOAT, {2})}),
              absl::StatusCode::kInvalidArgument, "Shape mismatch");
  ExpectError(MakeQueue("pad_bad_rank", {.op = "PaddingFIFOQueueV2",
                                         .types = {DT_FLOAT},
                                         .shapes = {PartialTensorShape()}})
                  .status(),
              absl::StatusCode::kInvalidArgument, "known rank");
}

// ---------------------------------------------------------------------------
// PriorityQueueV2

TEST_F(PriorityQueueTest, SmallestPriorityFirstThenInsertionOrder) {
  Tensor q = Queue("prio", {.op = "PriorityQueueV2",
                            .types = {DT_STRING},
                            .shapes = {PartialTensorShape({})}});
  const std::vector<std::pair<int64_t, std::string>> in = {
      {5, "e"}, {-2, "a"}, {3, "c1"}, {3, "c2"}, {4, "d"}};
  for (const auto& [p, s] : in) {
    ASSERT_OK(
        Enqueue(q, {Tensor::Scalar<int64_t>(p), Tensor::Scalar<tstring>(s)}));
  }
  auto first = Dequeue(q, {DT_INT64, DT_STRING});
  ASSERT_OK(first.status());
  EXPECT_EQ((*first)[0].scalar<int64_t>(), -2);
  EXPECT_EQ((*first)[1].scalar<tstring>(), "a");
  auto batch = DequeueMany(q, 3, {DT_INT64, DT_STRING});
  ASSERT_OK(batch.status());
  ExpectTensorEqual<int64_t>((*batch)[0], Vec<int64_t>({3, 3, 4}));
  ExpectTensorEqual<tstring>((*batch)[1], Vec<tstring>({"c1", "c2", "d"}));
  ASSERT_OK(EnqueueMany(q, {Vec<int64_t>({9, 0}), Vec<tstring>({"z", "y"})}));
  ASSERT_OK(Close(q));
  auto rest = DequeueMany(q, 10, {DT_INT64, DT_STRING}, /*up_to=*/true);
  ASSERT_OK(rest.status());
  ExpectTensorEqual<int64_t>((*rest)[0], Vec<int64_t>({0, 5, 9}));
  ExpectTensorEqual<tstring>((*rest)[1], Vec<tstring>({"y", "e", "z"}));
}

TEST_F(PriorityQueueTest, PriorityMustBeScalarInt64) {
  Tensor q = Queue(
      "prio_bad", {.op = "PriorityQueueV2", .types = {DT_FLOAT}, .shapes = {}});
  ExpectError(
      Enqueue(q, {Tensor::Scalar<int32_t>(1), Tensor::Scalar<float>(1)}),
      absl::StatusCode::kInvalidArgument,
      "Type mismatch in tuple component 0. Expected int64");
  ExpectError(Enqueue(q, {Vec<int64_t>({1, 2}), Tensor::Scalar<float>(1)}),
              absl::StatusCode::kInvalidArgument,
              "Shape mismatch in tuple component 0");
  // Without shapes only single dequeues work.
  ASSERT_OK(Enqueue(q, {Tensor::Scalar<int64_t>(1), Vec<float>({1, 2})}));
  ExpectError(DequeueMany(q, 1, {DT_INT64, DT_FLOAT}).status(),
              absl::StatusCode::kInvalidArgument, "specified shapes");
  // PriorityQueueV2's shapes attr has no default.
  ExpectError(
      MakeQueue("prio_noshapes", {.op = "PriorityQueueV2", .set_shapes = false})
          .status(),
      absl::StatusCode::kInvalidArgument, "shapes");
}

// ---------------------------------------------------------------------------
// RandomShuffleQueueV2

std::vector<int32_t> DrainShuffled(const std::string& name, int64_t seed,
                                   int64_t seed2, int n) {
  Tensor q = Queue(name, {.op = "RandomShuffleQueueV2",
                          .types = {DT_INT32},
                          .shapes = {PartialTensorShape({})},
                          .seed = seed,
                          .seed2 = seed2});
  std::vector<int32_t> in(n);
  for (int i = 0; i < n; ++i) in[i] = i;
  EXPECT_OK(EnqueueMany(q, {Vec<int32_t>(in)}));
  EXPECT_OK(Close(q));
  std::vector<int32_t> out;
  while (true) {
    auto got = DequeueMany(q, 7, {DT_INT32}, /*up_to=*/true);
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kOutOfRange);
      break;
    }
    for (int32_t v : (*got)[0].flat<int32_t>()) out.push_back(v);
  }
  return out;
}

TEST_F(RandomShuffleQueueTest, PermutationDeterministicWithSeeds) {
  const std::vector<int32_t> a = DrainShuffled("rs_a", 7, 0, 50);
  const std::vector<int32_t> b = DrainShuffled("rs_b", 7, 0, 50);
  const std::vector<int32_t> c = DrainShuffled("rs_c", 0, 8, 50);
  ASSERT_EQ(a.size(), 50u);
  EXPECT_EQ(a, b);  // Same seeds, same order.
  EXPECT_NE(a, c);
  std::vector<int32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  std::vector<int32_t> identity(50);
  for (int i = 0; i < 50; ++i) identity[i] = i;
  EXPECT_NE(a, identity);  // Shuffled (a fixed seed: not flaky).
}

TEST_F(RandomShuffleQueueTest, MinAfterDequeueAllowsDequeueAboveMinimum) {
  Tensor q = Queue("rs_min", {.op = "RandomShuffleQueueV2",
                              .types = {DT_INT32},
                              .shapes = {PartialTensorShape({})},
                              .capacity = 10,
                              .min_after_dequeue = 2,
                              .seed = 1});
  ASSERT_OK(EnqueueMany(q, {Vec<int32_t>({1, 2, 3, 4})}));
  auto two = DequeueMany(q, 2, {DT_INT32});  // 4 - 2 >= 2: no wait.
  ASSERT_OK(two.status());
  EXPECT_EQ(Size(q), 2);
  ASSERT_OK(Close(q));  // After close the minimum no longer applies.
  auto rest = DequeueMany(q, 2, {DT_INT32});
  ASSERT_OK(rest.status());
  std::vector<int32_t> all;
  for (const auto* t : {&(*two)[0], &(*rest)[0]}) {
    for (int32_t v : t->flat<int32_t>()) all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST_F(RandomShuffleQueueTest, BadAttrs) {
  ExpectError(MakeQueue("rs_bad1", {.op = "RandomShuffleQueueV2",
                                    .capacity = 5,
                                    .min_after_dequeue = 5})
                  .status(),
              absl::StatusCode::kInvalidArgument, "must be < capacity 5");
  ExpectError(MakeQueue("rs_bad2",
                        {.op = "RandomShuffleQueueV2", .min_after_dequeue = -1})
                  .status(),
              absl::StatusCode::kInvalidArgument, "must be >= 0");
}

// ---------------------------------------------------------------------------
// Bad inputs

TEST_F(QueueOpsTest, WrongDtypeShapeAndArity) {
  Tensor q =
      Queue("bad_tuple",
            {.types = {DT_INT32, DT_FLOAT},
             .shapes = {PartialTensorShape({2}), PartialTensorShape({})}});
  ExpectError(Enqueue(q, {Vec<float>({1, 2}), Tensor::Scalar<float>(1)}),
              absl::StatusCode::kInvalidArgument,
              "Type mismatch in tuple component 0. Expected int32, got float");
  ExpectError(Enqueue(q, {Vec<int32_t>({1, 2, 3}), Tensor::Scalar<float>(1)}),
              absl::StatusCode::kInvalidArgument,
              "Shape mismatch in tuple component 0. Expected [2], got [3]");
  ExpectError(Enqueue(q, {Vec<int32_t>({1, 2})}),
              absl::StatusCode::kInvalidArgument,
              "Wrong number of components in tuple. Expected 2, got 1");
  ExpectError(
      EnqueueMany(q, {Vec<int32_t>({1, 2}, {1, 2}), Vec<float>({1, 2})}),
      absl::StatusCode::kInvalidArgument,
      "Component 1 has 2, and should have 1");
  ExpectError(
      EnqueueMany(q, {Vec<int32_t>({1, 2, 3}, {1, 3}), Vec<float>({1}, {1})}),
      absl::StatusCode::kInvalidArgument,
      "Shape mismatch in tuple component 0. Expected [1,2], got [1,3]");
  ExpectError(
      EnqueueMany(q, {Tensor::Scalar<int32_t>(1), Tensor::Scalar<float>(1)}),
      absl::StatusCode::kInvalidArgument, "is a scalar");
  ExpectError(Dequeue(q, {DT_INT32}).status(),
              absl::StatusCode::kInvalidArgument,
              "component_types [int32] do not match the queue's component "
              "types [int32, float]");
  OpTestCase neg("QueueDequeueManyV2");  // The kernel alone, not the shape fn.
  neg.Attr("component_types", std::vector<DataType>{DT_INT32, DT_FLOAT})
      .Input(q)
      .Input(Tensor::Scalar<int32_t>(-1));
  ExpectError(neg.RunKernelOnly(), absl::StatusCode::kInvalidArgument,
              "QueueDequeueManyV2 requested -1 < 0 elements");
  EXPECT_EQ(Size(q), 0);
}

TEST_F(QueueOpsTest, NegativeNIsRejectedByTheShapeFunction) {
  AttrMap attrs;
  attrs["component_types"] = MakeAttrValue(std::vector<DataType>{DT_FLOAT});
  attrs["timeout_ms"] = MakeAttrValue(-1);
  EXPECT_OK(InferShapes("QueueDequeueManyV2", attrs,
                        {PartialTensorShape({}), PartialTensorShape({})})
                .status());
  OpTestCase t("QueueDequeueUpToV2");
  t.Attr("component_types", std::vector<DataType>{DT_FLOAT})
      .Input(Queue("neg_n"))
      .Input(Tensor::Scalar<int32_t>(-3));
  ExpectError(t.Run(), absl::StatusCode::kInvalidArgument, "must be >= 0");
  OpTestCase v("QueueDequeueManyV2");
  v.Attr("component_types", std::vector<DataType>{DT_FLOAT})
      .Input(Queue("neg_n"))
      .Input(Vec<int32_t>({1, 2}));
  ExpectError(v.RunKernelOnly(), absl::StatusCode::kInvalidArgument,
              "n must be a scalar");
}

TEST_F(QueueOpsTest, WrongHandles) {
  // A variable's handle.
  Tensor var(DT_RESOURCE, TensorShape({}));
  var.scalar<ResourceHandle>() = MakeResourceHandle<Var>(
      "localhost", "not_a_queue", TestCpuDevice()->name());
  ExpectError(Enqueue(var, {Tensor::Scalar<float>(1)}),
              absl::StatusCode::kInvalidArgument, "wrong type");
  ExpectError(Dequeue(var, {DT_FLOAT}).status(),
              absl::StatusCode::kInvalidArgument, "wrong type");
  // Not a resource at all.
  OpTestCase s("QueueSizeV2");
  s.Input(Tensor::Scalar<float>(1));
  ExpectError(s.RunKernelOnly(), absl::StatusCode::kInvalidArgument,
              "must be a resource handle");
  // A handle to a queue that does not exist.
  Tensor ghost(DT_RESOURCE, TensorShape({}));
  ghost.scalar<ResourceHandle>() = MakeResourceHandle<QueueInterface>(
      "localhost", "no_such_queue", TestCpuDevice()->name());
  EXPECT_EQ(Dequeue(ghost, {DT_FLOAT}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Close(ghost).code(), absl::StatusCode::kNotFound);
}

TEST_F(QueueOpsTest, BadDefinitions) {
  ExpectError(MakeQueue("def_partial", {.types = {DT_FLOAT},
                                        .shapes = {PartialTensorShape({-1})}})
                  .status(),
              absl::StatusCode::kInvalidArgument, "not fully defined");
  ExpectError(MakeQueue("def_count", {.types = {DT_FLOAT, DT_INT32},
                                      .shapes = {PartialTensorShape({})}})
                  .status(),
              absl::StatusCode::kInvalidArgument, "one entry per component");
  Tensor q = Queue("def_shared", {.types = {DT_FLOAT}, .capacity = 3});
  ExpectError(
      MakeQueue("def_shared", {.types = {DT_FLOAT}, .capacity = 4}).status(),
      absl::StatusCode::kInvalidArgument,
      "has capacity 3 but requested capacity was 4");
  ExpectError(
      MakeQueue("def_shared", {.types = {DT_INT32}, .capacity = 3}).status(),
      absl::StatusCode::kInvalidArgument, "component types");
  ExpectError(MakeQueue("def_shared", {.op = "PaddingFIFOQueueV2",
                                       .types = {DT_FLOAT},
                                       .capacity = 3})
                  .status(),
              absl::StatusCode::kInvalidArgument, "is a FIFOQueue");
  // Without shapes, DequeueMany is refused.
  ExpectError(DequeueMany(q, 1, {DT_FLOAT}).status(),
              absl::StatusCode::kInvalidArgument,
              "require the components to have specified shapes");
}

}  // namespace
}  // namespace runnel
