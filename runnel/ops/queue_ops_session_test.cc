// Queues through ClientSession: state across Run calls, blocking enqueue
// and dequeue completed by other steps (on other threads), close, step
// cancellation (RunOptions.timeout_in_ms, Session::Close), and concurrent
// producers and consumers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using Tensors = std::vector<Tensor>;

void SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

RunOptions Timeout(int64_t ms) {
  RunOptions o;
  o.set_timeout_in_ms(ms);
  return o;
}

// A graph with one int32 queue and the ops that use it: `x` (a scalar) is
// enqueued by `enq`, `xs` (a vector) by `enq_many`; `n` sizes the batches.
struct Int32Queue {
  explicit Int32Queue(const Scope& root, int64_t capacity = -1,
                      const std::string& op = "FIFOQueueV2") {
    const std::vector<DataType> types = {DT_INT32};
    const std::vector<PartialTensorShape> shapes = {PartialTensorShape({})};
    if (op == "FIFOQueueV2") {
      queue =
          ops::FIFOQueueV2(root.WithOpName("q"), types,
                           ops::FIFOQueueV2::Capacity(capacity).Shapes(shapes));
    } else {
      queue = ops::RandomShuffleQueueV2(
          root.WithOpName("q"), types,
          ops::RandomShuffleQueueV2::Capacity(capacity)
              .Shapes(shapes)
              .MinAfterDequeue(3)
              .Seed(11));
    }
    x = ops::Placeholder(root.WithOpName("x"), DT_INT32);
    xs = ops::Placeholder(root.WithOpName("xs"), DT_INT32);
    n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    enq = ops::QueueEnqueueV2(root.WithOpName("enq"), queue, {x}).operation;
    enq_many = ops::QueueEnqueueManyV2(root.WithOpName("enq_many"), queue, {xs})
                   .operation;
    deq =
        ops::QueueDequeueV2(root.WithOpName("deq"), queue, types).components[0];
    deq_many =
        ops::QueueDequeueManyV2(root.WithOpName("deq_many"), queue, n, types)
            .components[0];
    deq_up_to =
        ops::QueueDequeueUpToV2(root.WithOpName("deq_up_to"), queue, n, types)
            .components[0];
    close = ops::QueueCloseV2(root.WithOpName("close"), queue).operation;
    cancel = ops::QueueCloseV2(root.WithOpName("cancel"), queue,
                               ops::QueueCloseV2::CancelPendingEnqueues(true))
                 .operation;
    size = ops::QueueSizeV2(root.WithOpName("size"), queue);
    is_closed = ops::QueueIsClosedV2(root.WithOpName("is_closed"), queue);
  }

  Status Enqueue(const ClientSession& s, int32_t v) const {
    return s.Run({{x, v}}, {}, {enq}, nullptr);
  }
  Status EnqueueMany(const ClientSession& s, std::vector<int32_t> v,
                     const RunOptions& o = {}) const {
    return s.Run(o, {{xs, Tensor::FromVector<int32_t>(v)}}, {}, {enq_many},
                 nullptr, nullptr);
  }
  StatusOr<int32_t> Dequeue(const ClientSession& s,
                            const RunOptions& o = {}) const {
    Tensors out;
    RETURN_IF_ERROR(s.Run(o, {}, {deq}, {}, &out, nullptr));
    return out[0].scalar<int32_t>();
  }
  StatusOr<std::vector<int32_t>> DequeueMany(const ClientSession& s, int32_t k,
                                             bool up_to = false,
                                             const RunOptions& o = {}) const {
    Tensors out;
    RETURN_IF_ERROR(
        s.Run(o, {{n, k}}, {up_to ? deq_up_to : deq_many}, {}, &out, nullptr));
    auto f = out[0].flat<int32_t>();
    return std::vector<int32_t>(f.begin(), f.end());
  }
  int32_t Size(const ClientSession& s) const {
    Tensors out;
    Status st = s.Run({size}, &out);
    EXPECT_TRUE(st.ok()) << st;
    return st.ok() ? out[0].scalar<int32_t>() : -1;
  }

  Output queue, x, xs, n, deq, deq_many, deq_up_to, size, is_closed;
  Operation enq, enq_many, close, cancel;
};

TEST(QueueSessionTest, FifoOrderAcrossRuns) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  for (int32_t v : {5, 6, 7}) ASSERT_OK(q.Enqueue(s, v));
  ASSERT_OK(q.EnqueueMany(s, {8, 9}));
  EXPECT_EQ(q.Size(s), 5);
  for (int32_t want : {5, 6, 7, 8, 9}) {
    auto got = q.Dequeue(s);
    ASSERT_OK(got.status());
    EXPECT_EQ(*got, want);
  }
  EXPECT_EQ(q.Size(s), 0);
}

TEST(QueueSessionTest, DequeueManyBatchesAndUpToGivesSmallFinalBatch) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  ASSERT_OK(q.EnqueueMany(s, {1, 2, 3, 4, 5, 6, 7}));
  auto a = q.DequeueMany(s, 3);
  ASSERT_OK(a.status());
  EXPECT_EQ(*a, (std::vector<int32_t>{1, 2, 3}));
  auto b = q.DequeueMany(s, 3, /*up_to=*/true);  // Enough: a full batch.
  ASSERT_OK(b.status());
  EXPECT_EQ(*b, (std::vector<int32_t>{4, 5, 6}));
  ASSERT_OK(s.Run({}, {}, {q.close}, nullptr));
  Tensors out;
  ASSERT_OK(s.Run({q.is_closed}, &out));
  EXPECT_TRUE(out[0].scalar<bool>());
  // Many(3) with one left fails (and keeps it); UpTo(3) returns it.
  Status many = q.DequeueMany(s, 3).status();
  EXPECT_EQ(many.code(), absl::StatusCode::kOutOfRange) << many;
  EXPECT_THAT(many.message(), HasSubstr("deq_many"));
  auto c = q.DequeueMany(s, 3, /*up_to=*/true);
  ASSERT_OK(c.status());
  EXPECT_EQ(*c, (std::vector<int32_t>{7}));
  // Then everything is OutOfRange.
  EXPECT_EQ(q.Dequeue(s).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(q.DequeueMany(s, 1, true).status().code(),
            absl::StatusCode::kOutOfRange);
  // Enqueueing into a closed queue is Cancelled, as in TensorFlow.
  Status enq = q.Enqueue(s, 1);
  EXPECT_EQ(enq.code(), absl::StatusCode::kCancelled) << enq;
  EXPECT_THAT(enq.message(), HasSubstr("is closed"));
}

TEST(QueueSessionTest, EnqueueBlocksAtCapacityUntilADequeue) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root, /*capacity=*/2);
  ClientSession s(root);
  ASSERT_OK(q.EnqueueMany(s, {1, 2}));
  std::atomic<bool> done{false};
  Status blocked;
  std::thread producer([&] {
    blocked = q.Enqueue(s, 3);
    done = true;
  });
  SleepMs(100);
  EXPECT_FALSE(done);  // Full: the enqueue waits (holding no thread).
  EXPECT_EQ(q.Size(s), 2);
  auto first = q.Dequeue(s);
  ASSERT_OK(first.status());
  EXPECT_EQ(*first, 1);
  producer.join();
  ASSERT_OK(blocked);
  auto rest = q.DequeueMany(s, 2);
  ASSERT_OK(rest.status());
  EXPECT_EQ(*rest, (std::vector<int32_t>{2, 3}));
}

TEST(QueueSessionTest, EnqueueManyLargerThanCapacityStreams) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root, /*capacity=*/3);
  ClientSession s(root);
  Status enq;
  std::thread producer([&] { enq = q.EnqueueMany(s, {1, 2, 3, 4, 5, 6, 7}); });
  // DequeueMany(5) of a capacity-3 queue: taken piece by piece.
  auto a = q.DequeueMany(s, 5);
  ASSERT_OK(a.status());
  EXPECT_EQ(*a, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  producer.join();
  ASSERT_OK(enq);
  auto b = q.DequeueMany(s, 2);
  ASSERT_OK(b.status());
  EXPECT_EQ(*b, (std::vector<int32_t>{6, 7}));
}

TEST(QueueSessionTest, DequeueBlocksThenCompletesFromAnotherRun) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  std::atomic<bool> done{false};
  StatusOr<int32_t> got = -1;
  std::thread consumer([&] {
    got = q.Dequeue(s);
    done = true;
  });
  SleepMs(100);
  EXPECT_FALSE(done);
  ASSERT_OK(q.Enqueue(s, 42));
  consumer.join();
  ASSERT_OK(got.status());
  EXPECT_EQ(*got, 42);
}

TEST(QueueSessionTest, BlockedDequeuesHoldNoPoolThread) {
  // Far more blocked dequeues than the inter-op pool has threads: if each
  // held a pool thread, the unrelated step below could never run.
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  auto a = ops::Placeholder(root, DT_FLOAT);
  auto b = ops::Mul(root, ops::Add(root, a, 1.0f), 2.0f);
  ClientSession s(root);
  constexpr int kWaiters = 24;
  std::vector<std::thread> waiters;
  std::vector<int32_t> got(kWaiters, -1);
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto v = q.Dequeue(s);
      if (v.ok()) got[i] = *v;
    });
  }
  SleepMs(100);
  Tensors out;
  ASSERT_OK(s.Run(Timeout(10000), {{a, 2.0f}}, {b}, {}, &out, nullptr));
  EXPECT_EQ(out[0].scalar<float>(), 6.0f);
  std::vector<int32_t> values(kWaiters);
  for (int i = 0; i < kWaiters; ++i) values[i] = 100 + i;
  ASSERT_OK(q.EnqueueMany(s, values));
  for (auto& t : waiters) t.join();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, values);
}

TEST(QueueSessionTest, CloseGivesOutOfRangeToWaitingDequeues) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  ASSERT_OK(q.Enqueue(s, 1));
  StatusOr<std::vector<int32_t>> many = std::vector<int32_t>();
  StatusOr<std::vector<int32_t>> up_to = std::vector<int32_t>();
  std::thread t1([&] { many = q.DequeueMany(s, 4); });
  SleepMs(50);
  std::thread t2([&] { up_to = q.DequeueMany(s, 4, /*up_to=*/true); });
  SleepMs(50);
  ASSERT_OK(s.Run({}, {}, {q.close}, nullptr));
  t1.join();
  t2.join();
  // The first waiter (Many) fails and gives its element back; the UpTo
  // behind it returns that element as a short batch.
  EXPECT_EQ(many.status().code(), absl::StatusCode::kOutOfRange)
      << many.status();
  ASSERT_OK(up_to.status());
  EXPECT_EQ(*up_to, (std::vector<int32_t>{1}));
}

TEST(QueueSessionTest, CloseWithCancelPendingEnqueues) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root, /*capacity=*/1);
  ClientSession s(root);
  ASSERT_OK(q.Enqueue(s, 1));
  Status blocked;
  std::thread producer([&] { blocked = q.Enqueue(s, 2); });
  SleepMs(50);
  ASSERT_OK(s.Run({}, {}, {q.cancel}, nullptr));
  producer.join();
  EXPECT_EQ(blocked.code(), absl::StatusCode::kCancelled) << blocked;
  EXPECT_THAT(blocked.message(), HasSubstr("enq"));
  auto one = q.Dequeue(s);
  ASSERT_OK(one.status());
  EXPECT_EQ(*one, 1);
  EXPECT_EQ(q.Dequeue(s).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(QueueSessionTest, TimeoutUnblocksDequeueOnEmptyQueue) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  const auto start = std::chrono::steady_clock::now();
  Status st = q.Dequeue(s, Timeout(100)).status();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_GE(ms, 90);
  EXPECT_LT(ms, 5000);
  // The cancelled dequeue left no trace: the next element goes to the next
  // dequeue.
  ASSERT_OK(q.Enqueue(s, 9));
  auto got = q.Dequeue(s, Timeout(5000));
  ASSERT_OK(got.status());
  EXPECT_EQ(*got, 9);
}

TEST(QueueSessionTest, TimeoutUnblocksEnqueueOnFullQueue) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root, /*capacity=*/2);
  ClientSession s(root);
  ASSERT_OK(q.EnqueueMany(s, {1, 2}));
  Status st = q.EnqueueMany(s, {3, 4}, Timeout(50));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_EQ(q.Size(s), 2);
  auto all = q.DequeueMany(s, 2);
  ASSERT_OK(all.status());
  EXPECT_EQ(*all, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(q.Size(s), 0);
}

TEST(QueueSessionTest, CancelledDequeueManyGivesBackWhatItTook) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  ASSERT_OK(q.EnqueueMany(s, {1, 2}));
  Status st = q.DequeueMany(s, 3, false, Timeout(50)).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_EQ(q.Size(s), 2);
  ASSERT_OK(q.Enqueue(s, 3));
  auto all = q.DequeueMany(s, 3);
  ASSERT_OK(all.status());
  EXPECT_EQ(*all, (std::vector<int32_t>{1, 2, 3}));
}

// A failing node cancels the rest of its step (the executor calls
// StartCancel on the step's CancellationManager, as TensorFlow's does),
// which unblocks a dequeue waiting in the same step.
TEST(QueueSessionTest, FailingNodeCancelsBlockedDequeueInItsStep) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  // `bad_enq` fails, but only after `gate` (released from another thread
  // once q.deq is surely waiting).
  auto gate_q = ops::FIFOQueueV2(root.WithOpName("gate_q"), {DT_INT32});
  auto gate = ops::QueueDequeueV2(root.WithOpName("gate"), gate_q, {DT_INT32});
  auto open_gate = ops::QueueEnqueueV2(root.WithOpName("open"), gate_q, {1});
  auto f = ops::Placeholder(root.WithOpName("f"), DT_FLOAT);
  auto bad_enq =
      ops::QueueEnqueueV2(root.WithOpName("bad_enq").WithControlDependencies(
                              gate.components[0]),
                          q.queue, {f})
          .operation;
  ClientSession s(root);
  std::thread opener([&] {
    SleepMs(100);
    EXPECT_OK(s.Run({}, {}, {open_gate.operation}, nullptr));
  });
  Tensors out;
  const auto start = std::chrono::steady_clock::now();
  Status st =
      s.Run(Timeout(3000), {{f, 1.f}}, {q.deq}, {bad_enq}, &out, nullptr);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  opener.join();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_LT(ms, 2000);
}

TEST(QueueSessionTest, SessionCloseUnblocksDequeue) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  ClientSession s(root);
  ASSERT_OK(q.Enqueue(s, 1));
  ASSERT_OK(q.Dequeue(s).status());
  Status st;
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    st = q.Dequeue(s).status();
    done = true;
  });
  SleepMs(100);
  EXPECT_FALSE(done);
  ASSERT_OK(s.session()->Close());
  consumer.join();
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
}

TEST(QueueSessionTest, ConcurrentProducersAndConsumers) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root, /*capacity=*/8);
  ClientSession s(root);
  constexpr int kProducers = 3, kPerProducer = 120, kConsumers = 2;
  constexpr int kTotal = kProducers * kPerProducer;
  std::vector<std::thread> threads;
  std::vector<std::vector<int32_t>> got(kConsumers);
  std::atomic<int> failures{0};
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; i += 4) {
        std::vector<int32_t> v;
        for (int k = 0; k < 4; ++k) v.push_back(p * kPerProducer + i + k);
        if (!(i % 8 ? q.EnqueueMany(s, v) : q.Enqueue(s, v[0])).ok()) {
          ++failures;
        }
        if (i % 8 == 0) {
          if (!q.EnqueueMany(s, {v[1], v[2], v[3]}).ok()) ++failures;
        }
      }
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kTotal / kConsumers / 5; ++i) {
        auto b = q.DequeueMany(s, 5);
        if (!b.ok()) {
          ++failures;
          return;
        }
        got[c].insert(got[c].end(), b->begin(), b->end());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  std::vector<int32_t> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kTotal));
  for (int i = 0; i < kTotal; ++i) EXPECT_EQ(all[i], i);
  // Each producer's elements come out in its order.
  for (const auto& g : got) {
    for (int p = 0; p < kProducers; ++p) {
      int32_t last = -1;
      for (int32_t v : g) {
        if (v / kPerProducer != p) continue;
        EXPECT_GT(v, last);
        last = v;
      }
    }
  }
}

TEST(QueueSessionTest, RandomShuffleKeepsMinAfterDequeueUntilClose) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root, /*capacity=*/10, "RandomShuffleQueueV2");  // min 3.
  ClientSession s(root);
  ASSERT_OK(q.EnqueueMany(s, {1, 2, 3, 4}));
  auto first = q.Dequeue(s);  // 4 > 3: allowed.
  ASSERT_OK(first.status());
  // 3 left: a dequeue would leave fewer than min_after_dequeue, so it waits.
  Status st = q.Dequeue(s, Timeout(50)).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  StatusOr<int32_t> waiting = -1;
  std::thread consumer([&] { waiting = q.Dequeue(s); });
  SleepMs(50);
  ASSERT_OK(s.Run({}, {}, {q.close}, nullptr));  // Close lifts the minimum.
  consumer.join();
  ASSERT_OK(waiting.status());
  auto rest = q.DequeueMany(s, 2);
  ASSERT_OK(rest.status());
  std::vector<int32_t> all = {*first, *waiting, (*rest)[0], (*rest)[1]};
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(q.Dequeue(s).status().code(), absl::StatusCode::kOutOfRange);
}

std::vector<int32_t> ShuffleOnce(int64_t seed) {
  Scope root = Scope::NewRootScope();
  auto q = ops::RandomShuffleQueueV2(
      root, {DT_INT32},
      ops::RandomShuffleQueueV2::Shapes({PartialTensorShape({})})
          .Seed(seed)
          .Seed2(3));
  std::vector<int32_t> in(40);
  for (int i = 0; i < 40; ++i) in[i] = i;
  auto enq =
      ops::QueueEnqueueManyV2(root, q, {Tensor::FromVector<int32_t>(in)});
  auto deq = ops::QueueDequeueManyV2(root, q, 40, {DT_INT32});
  ClientSession s(root);
  Tensors out;
  EXPECT_OK(s.Run({}, {}, {enq.operation}, nullptr));
  EXPECT_OK(s.Run({deq.components[0]}, &out));
  if (out.empty()) return {};
  auto f = out[0].flat<int32_t>();
  return std::vector<int32_t>(f.begin(), f.end());
}

TEST(QueueSessionTest, RandomShuffleIsADeterministicPermutation) {
  const std::vector<int32_t> a = ShuffleOnce(5), b = ShuffleOnce(5);
  const std::vector<int32_t> c = ShuffleOnce(6);
  EXPECT_EQ(a, b);  // Fresh sessions, same seeds: same order.
  EXPECT_NE(a, c);
  std::vector<int32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_FALSE(std::is_sorted(a.begin(), a.end()));
}

TEST(QueueSessionTest, PaddingAndPriorityQueues) {
  Scope root = Scope::NewRootScope();
  auto pad = ops::PaddingFIFOQueueV2(
      root, {DT_FLOAT},
      ops::PaddingFIFOQueueV2::Shapes({PartialTensorShape({-1})}));
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto pad_enq = ops::QueueEnqueueV2(root, pad, {x});
  auto pad_deq = ops::QueueDequeueManyV2(root, pad, 2, {DT_FLOAT});
  auto prio =
      ops::PriorityQueueV2(root, {PartialTensorShape({})},
                           ops::PriorityQueueV2::ComponentTypes({DT_STRING}));
  auto p = ops::Placeholder(root, DT_INT64);
  auto v = ops::Placeholder(root, DT_STRING);
  auto prio_enq = ops::QueueEnqueueManyV2(root, prio, {p, v});
  auto prio_deq = ops::QueueDequeueManyV2(root, prio, 3, {DT_INT64, DT_STRING});
  ClientSession s(root);
  ASSERT_OK(s.Run({{x, {1.f, 2.f, 3.f}}}, {}, {pad_enq.operation}, nullptr));
  ASSERT_OK(s.Run({{x, {4.f}}}, {}, {pad_enq.operation}, nullptr));
  Tensors out;
  ASSERT_OK(s.Run({pad_deq.components[0]}, &out));
  ExpectTensorEqual<float>(
      out[0], Tensor::FromVector<float>({1, 2, 3, 4, 0, 0}, {2, 3}));
  ASSERT_OK(s.Run({{p, Tensor::FromVector<int64_t>({30, 10, 20})},
                   {v, Tensor::FromVector<tstring>({"c", "a", "b"})}},
                  {}, {prio_enq.operation}, nullptr));
  ASSERT_OK(s.Run(prio_deq.components, &out));
  ExpectTensorEqual<int64_t>(out[0], Tensor::FromVector<int64_t>({10, 20, 30}));
  ExpectTensorEqual<tstring>(out[1],
                             Tensor::FromVector<tstring>({"a", "b", "c"}));
}

TEST(QueueSessionTest, BadInputsNameTheNode) {
  Scope root = Scope::NewRootScope();
  Int32Queue q(root);
  auto f = ops::Placeholder(root.WithOpName("f"), DT_FLOAT);
  auto bad_enq =
      ops::QueueEnqueueV2(root.WithOpName("bad_enq"), q.queue, {f}).operation;
  auto bad_deq =
      ops::QueueDequeueV2(root.WithOpName("bad_deq"), q.queue, {DT_FLOAT});
  auto var = ops::VarHandleOp(root.WithOpName("var"), DT_INT32,
                              PartialTensorShape({}));
  auto var_size = ops::QueueSizeV2(root.WithOpName("var_size"), var);
  ClientSession s(root);
  Status st = s.Run({{f, 1.f}}, {}, {bad_enq}, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("QueueEnqueueV2 'bad_enq'"));
  EXPECT_THAT(st.message(), HasSubstr("Type mismatch in tuple component 0"));
  st =
      s.Run({{q.x, Tensor::FromVector<int32_t>({1, 2})}}, {}, {q.enq}, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("Shape mismatch in tuple component 0"));
  Tensors out;
  st = s.Run({bad_deq.components[0]}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("do not match the queue's"));
  st = q.DequeueMany(s, -2).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("-2 < 0 elements"));
  st = s.Run({var_size}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("wrong type"));
  EXPECT_EQ(q.Size(s), 0);  // Nothing half-enqueued.
}

}  // namespace
}  // namespace runnel
