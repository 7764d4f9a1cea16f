// Conditional accumulators through ClientSession (Note [Accumulator
// semantics] in accumulator_ops.cc): means and sums across Run calls, stale
// gradients dropped, takes that wait for other steps' gradients, step
// cancellation, sharing by name, the sparse accumulator, and bad inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Tensors = std::vector<Tensor>;

RunOptions Timeout(int64_t ms) {
  RunOptions o;
  o.set_timeout_in_ms(ms);
  return o;
}

std::vector<float> Floats(const Tensor& t) {
  auto f = t.flat<float>();
  return std::vector<float>(f.begin(), f.end());
}

// A dense float accumulator and the ops that use it: `step` and `grad` are
// fed to `apply`; `n` to `take`.
struct Dense {
  explicit Dense(const Scope& root, PartialTensorShape shape = {},
                 bool resource = false, const std::string& reduction = "MEAN",
                 const std::string& shared_name = "") {
    step = ops::Placeholder(root.WithOpName("step"), DT_INT64);
    grad = ops::Placeholder(root.WithOpName("grad"), DT_FLOAT);
    n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    new_step = ops::Placeholder(root.WithOpName("new_step"), DT_INT64);
    if (resource) {
      handle = ops::ResourceConditionalAccumulator(
          root.WithOpName("acc"), DT_FLOAT, shape,
          ops::ResourceConditionalAccumulator::ReductionType(reduction)
              .SharedName(shared_name));
      apply = ops::ResourceAccumulatorApplyGradient(root.WithOpName("apply"),
                                                    handle, step, grad)
                  .operation;
      take = ops::ResourceAccumulatorTakeGradient(root.WithOpName("take"),
                                                  handle, n, DT_FLOAT);
      num = ops::ResourceAccumulatorNumAccumulated(root.WithOpName("num"),
                                                   handle);
      set_step = ops::ResourceAccumulatorSetGlobalStep(
                     root.WithOpName("set_step"), handle, new_step)
                     .operation;
    } else {
      handle = ops::ConditionalAccumulator(
          root.WithOpName("acc"), DT_FLOAT, shape,
          ops::ConditionalAccumulator::ReductionType(reduction).SharedName(
              shared_name));
      apply = ops::AccumulatorApplyGradient(root.WithOpName("apply"), handle,
                                            step, grad)
                  .operation;
      take = ops::AccumulatorTakeGradient(root.WithOpName("take"), handle, n,
                                          DT_FLOAT);
      num = ops::AccumulatorNumAccumulated(root.WithOpName("num"), handle);
      set_step = ops::AccumulatorSetGlobalStep(root.WithOpName("set_step"),
                                               handle, new_step)
                     .operation;
    }
  }

  Status Apply(const ClientSession& s, int64_t local_step,
               const std::vector<float>& g) const {
    return s.Run({{step, local_step}, {grad, Tensor::FromVector<float>(g)}}, {},
                 {apply}, nullptr);
  }
  StatusOr<std::vector<float>> Take(const ClientSession& s, int32_t k,
                                    const RunOptions& o = {}) const {
    Tensors out;
    RETURN_IF_ERROR(s.Run(o, {{n, k}}, {take}, {}, &out, nullptr));
    return Floats(out[0]);
  }
  int32_t Num(const ClientSession& s) const {
    Tensors out;
    Status st = s.Run({num}, &out);
    EXPECT_TRUE(st.ok()) << st;
    return st.ok() ? out[0].scalar<int32_t>() : -1;
  }

  Output handle, step, grad, n, new_step, take, num;
  Operation apply, set_step;
};

TEST(AccumulatorSessionTest, TakeAveragesThenStaleGradientsAreDropped) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource ? "resource handle" : "ref handle");
    Scope root = Scope::NewRootScope();
    Dense acc(root, PartialTensorShape({2}), resource);
    ClientSession s(root);
    EXPECT_EQ(acc.Num(s), 0);
    ASSERT_OK(acc.Apply(s, 0, {1, 2}));
    ASSERT_OK(acc.Apply(s, 0, {3, 4}));
    EXPECT_EQ(acc.Num(s), 2);
    auto mean = acc.Take(s, 2);
    ASSERT_OK(mean.status());
    EXPECT_THAT(*mean, ElementsAre(2.f, 3.f));
    EXPECT_EQ(acc.Num(s), 0);
    // The take moved the global step to 1: a step-0 gradient is stale.
    ASSERT_OK(acc.Apply(s, 0, {100, 100}));
    EXPECT_EQ(acc.Num(s), 0);
    ASSERT_OK(acc.Apply(s, 1, {5, 6}));
    ASSERT_OK(acc.Apply(s, 7, {7, 8}));  // Newer than the global step: kept.
    mean = acc.Take(s, 1);               // At least one: takes both.
    ASSERT_OK(mean.status());
    EXPECT_THAT(*mean, ElementsAre(6.f, 7.f));
  }
}

TEST(AccumulatorSessionTest, SumReductionAndSetGlobalStep) {
  Scope root = Scope::NewRootScope();
  Dense acc(root, PartialTensorShape(), false, "SUM");
  ClientSession s(root);
  ASSERT_OK(s.Run({{acc.new_step, int64_t{5}}}, {}, {acc.set_step}, nullptr));
  ASSERT_OK(acc.Apply(s, 4, {1, 1, 1}));  // Stale.
  ASSERT_OK(acc.Apply(s, 5, {1, 2, 3}));
  ASSERT_OK(acc.Apply(s, 6, {10, 20, 30}));
  auto sum = acc.Take(s, 2);
  ASSERT_OK(sum.status());
  EXPECT_THAT(*sum, ElementsAre(11.f, 22.f, 33.f));
  // The take made the global step 6; setting it back is allowed.
  ASSERT_OK(s.Run({{acc.new_step, int64_t{0}}}, {}, {acc.set_step}, nullptr));
  ASSERT_OK(acc.Apply(s, 0, {1, 1, 1}));
  EXPECT_EQ(acc.Num(s), 1);
}

TEST(AccumulatorSessionTest, TakeWaitsForGradientsFromOtherSteps) {
  Scope root = Scope::NewRootScope();
  Dense acc(root, PartialTensorShape({1}));
  ClientSession s(root);
  std::atomic<bool> done{false};
  StatusOr<std::vector<float>> got = std::vector<float>{};
  std::thread taker([&] {
    got = acc.Take(s, 3, Timeout(20000));
    done = true;
  });
  ASSERT_OK(acc.Apply(s, 0, {1}));
  ASSERT_OK(acc.Apply(s, 0, {2}));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load());  // Two of three.
  ASSERT_OK(acc.Apply(s, 0, {6}));
  taker.join();
  ASSERT_OK(got.status());
  EXPECT_THAT(*got, ElementsAre(3.f));
}

TEST(AccumulatorSessionTest, CancelledTakeLeavesTheGradientsForTheNext) {
  Scope root = Scope::NewRootScope();
  Dense acc(root, PartialTensorShape({1}));
  ClientSession s(root);
  ASSERT_OK(acc.Apply(s, 0, {4}));
  const auto start = std::chrono::steady_clock::now();
  Status st = acc.Take(s, 2, Timeout(100)).status();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(acc.Num(s), 1);
  ASSERT_OK(acc.Apply(s, 0, {8}));
  auto got = acc.Take(s, 2, Timeout(5000));
  ASSERT_OK(got.status());
  EXPECT_THAT(*got, ElementsAre(6.f));
}

TEST(AccumulatorSessionTest, NodesNamingOneAccumulatorShareIt) {
  Scope root = Scope::NewRootScope();
  Dense a(root.NewSubScope("a"), PartialTensorShape({1}), false, "MEAN",
          "shared");
  Dense b(root.NewSubScope("b"), PartialTensorShape({1}), false, "MEAN",
          "shared");
  ClientSession s(root);
  ASSERT_OK(a.Apply(s, 0, {1}));
  ASSERT_OK(b.Apply(s, 0, {3}));
  EXPECT_EQ(a.Num(s), 2);
  auto got = b.Take(s, 2);
  ASSERT_OK(got.status());
  EXPECT_THAT(*got, ElementsAre(2.f));
  // A node asking for another definition under the same name fails.
  auto other = ops::ConditionalAccumulator(
      root.WithOpName("other"), DT_DOUBLE, PartialTensorShape({1}),
      ops::ConditionalAccumulator::SharedName("shared"));
  Tensors out;
  Status st = s.Run({other}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("'shared'"));
}

TEST(AccumulatorSessionTest, BadGradientsAndArgumentsAreInvalidArgument) {
  Scope root = Scope::NewRootScope();
  Dense acc(root, PartialTensorShape({2}));
  ClientSession s(root);
  Status st = acc.Apply(s, 0, {1, 2, 3});  // The attr says [2].
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("Shape mismatch"));
  EXPECT_THAT(st.message(), HasSubstr("apply"));  // Names the node.
  EXPECT_EQ(acc.Num(s), 0);
  st = s.Run({{acc.step, Tensor::FromVector<int64_t>({0, 1})},
              {acc.grad, Tensor::FromVector<float>({1, 2})}},
             {}, {acc.apply}, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("local_step must be scalar"));
  st = acc.Take(s, 0).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("must be positive"));

  // Once a gradient is in, later ones must have its shape.
  Scope root2 = Scope::NewRootScope();
  Dense any(root2, PartialTensorShape());
  ClientSession s2(root2);
  ASSERT_OK(any.Apply(s2, 0, {1, 2}));
  st = any.Apply(s2, 0, {1, 2, 3});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(any.Num(s2), 1);

  // Integer gradients have no kernel here (TF: half, float, double).
  Scope root3 = Scope::NewRootScope();
  auto bad = ops::ConditionalAccumulator(root3.WithOpName("int_acc"), DT_INT32,
                                         PartialTensorShape());
  ClientSession s3(root3);
  Tensors out;
  st = s3.Run({bad}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("int32"));
}

// The sparse accumulator: rows summed by index, each divided by the number
// of gradients that touched it.
struct Sparse {
  explicit Sparse(const Scope& root, PartialTensorShape shape) {
    step = ops::Placeholder(root.WithOpName("step"), DT_INT64);
    indices = ops::Placeholder(root.WithOpName("indices"), DT_INT64);
    values = ops::Placeholder(root.WithOpName("values"), DT_FLOAT);
    dense_shape = ops::Placeholder(root.WithOpName("dense_shape"), DT_INT64);
    n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    handle = ops::SparseConditionalAccumulator(root.WithOpName("acc"), DT_FLOAT,
                                               shape);
    apply = ops::SparseAccumulatorApplyGradient(root.WithOpName("apply"),
                                                handle, step, indices, values,
                                                dense_shape, true)
                .operation;
    auto take = ops::SparseAccumulatorTakeGradient(root.WithOpName("take"),
                                                   handle, n, DT_FLOAT);
    take_indices = take.indices;
    take_values = take.values;
    take_shape = take.shape;
    num = ops::AccumulatorNumAccumulated(root.WithOpName("num"), handle);
  }
  Status Apply(const ClientSession& s, int64_t local_step,
               const std::vector<int64_t>& idx, const Tensor& rows,
               const std::vector<int64_t>& shape) const {
    return s.Run({{step, local_step},
                  {indices, Tensor::FromVector<int64_t>(idx)},
                  {values, rows},
                  {dense_shape, Tensor::FromVector<int64_t>(shape)}},
                 {}, {apply}, nullptr);
  }

  Output handle, step, indices, values, dense_shape, n, num;
  Output take_indices, take_values, take_shape;
  Operation apply;
};

Tensor Rows(const std::vector<std::vector<float>>& rows) {
  Tensor t(DT_FLOAT, TensorShape({static_cast<int64_t>(rows.size()),
                                  static_cast<int64_t>(rows[0].size())}));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j)
      t.flat<float>()[i * rows[i].size() + j] = rows[i][j];
  return t;
}

std::vector<int64_t> Ints(const Tensor& t) {
  auto f = t.flat<int64_t>();
  return std::vector<int64_t>(f.begin(), f.end());
}

TEST(AccumulatorSessionTest, SparseRowsAreAveragedPerIndex) {
  Scope root = Scope::NewRootScope();
  Sparse acc(root, PartialTensorShape({4, 2}));
  ClientSession s(root);
  ASSERT_OK(acc.Apply(s, 0, {2, 0}, Rows({{1, 1}, {2, 2}}), {4, 2}));
  ASSERT_OK(acc.Apply(s, 0, {2}, Rows({{3, 5}}), {4, 2}));
  Tensors out;
  ASSERT_OK(s.Run({{acc.n, 2}},
                  {acc.take_indices, acc.take_values, acc.take_shape}, {},
                  &out));
  EXPECT_THAT(Ints(out[0]), ElementsAre(0, 2));
  EXPECT_THAT(Floats(out[1]), ElementsAre(2, 2, 2, 3));
  EXPECT_THAT(Ints(out[2]), ElementsAre(4, 2));
  // Rows of one index within one gradient add up and count once.
  ASSERT_OK(acc.Apply(s, 1, {1, 1}, Rows({{1, 0}, {2, 0}}), {4, 2}));
  ASSERT_OK(acc.Apply(s, 0, {3}, Rows({{9, 9}}), {4, 2}));  // Stale.
  ASSERT_OK(s.Run({{acc.n, 1}}, {acc.take_indices, acc.take_values}, {}, &out));
  EXPECT_THAT(Ints(out[0]), ElementsAre(1));
  EXPECT_THAT(Floats(out[1]), ElementsAre(3, 0));
}

TEST(AccumulatorSessionTest, SparseBadInputsAreInvalidArgument) {
  Scope root = Scope::NewRootScope();
  Sparse acc(root, PartialTensorShape({4, 2}));
  ClientSession s(root);
  const Tensor row = Rows({{1, 1}});
  for (const auto& [idx, shape, what] : std::vector<
           std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::string>>{
           {{4}, {4, 2}, "exceeded limits"},
           {{-1}, {4, 2}, "negative"},
           {{0, 1}, {4, 2}, "non-empty input values"},
           {{0}, {5, 2}, "expected shape dim 0 to be 4"},
       }) {
    Status st = acc.Apply(s, 0, idx, row, shape);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_THAT(st.message(), HasSubstr(what));
  }
  Status st = acc.Apply(s, 0, {0}, Rows({{1, 1, 1}}), {4, 3});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  Tensors out;
  ASSERT_OK(s.Run({acc.num}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 0);
  // A dense op on a sparse accumulator.
  auto take = ops::AccumulatorTakeGradient(root.WithOpName("dense_take"),
                                           acc.handle, 1, DT_FLOAT);
  st = s.Run({take}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
}

}  // namespace
}  // namespace runnel
