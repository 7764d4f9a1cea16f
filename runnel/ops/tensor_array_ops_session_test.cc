// TensorArray and stack ops through a session: one step runs the whole
// graph (forward array ops, gradient arrays, stacks), errors name the node,
// arrays do not outlive their step, and every TensorArray gradient matches
// central differences in double precision (testing/gradient_checker.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"
#include "testing/gradient_checker.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using Outputs = std::vector<Output>;
using BuildFn = std::function<Outputs(const Scope&, const Outputs&)>;

// Deterministic values in [-1, 1].
Tensor Values(const TensorShape& shape, unsigned seed) {
  Tensor t(DT_DOUBLE, shape);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t.flat<double>()[i] =
        -1 + 2 * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
  return t;
}

Output Int32s(const Scope& s, const std::vector<int32_t>& v) {
  return ops::Const(s, Tensor::FromVector<int32_t>(v));
}
Output Int64s(const Scope& s, const std::vector<int64_t>& v) {
  return ops::Const(s, Tensor::FromVector<int64_t>(v));
}
Output Index(const Scope& s, int32_t i) {
  return ops::Const(s, Tensor::Scalar<int32_t>(i));
}

// Checks d ys / d xs against central differences, with placeholders of
// unknown and of known shape (the gradients' static element shapes).
void CheckGrad(const BuildFn& build, const std::vector<Tensor>& x_values) {
  for (bool known_shapes : {false, true}) {
    SCOPED_TRACE(known_shapes ? "known shapes" : "unknown shapes");
    Scope root = Scope::NewRootScope();
    Outputs xs;
    for (size_t i = 0; i < x_values.size(); ++i) {
      auto attrs = ops::Placeholder::Attrs();
      if (known_shapes) attrs = attrs.Shape(x_values[i].shape());
      xs.push_back(ops::Placeholder(root.WithOpName("x" + std::to_string(i)),
                                    DT_DOUBLE, attrs));
    }
    Outputs ys = build(root, xs);
    ASSERT_OK(root.status());
    GradientCheckResult result;
    ASSERT_OK(CheckGradients(root, xs, x_values, ys, {}, &result));
    EXPECT_LT(result.max_error, 1e-8) << result.DebugString();
    EXPECT_GT(result.x_size * result.y_size, 0);
  }
}

ops::TensorArrayV3 NewTA(const Scope& s, int32_t size,
                         ops::TensorArrayV3::Attrs attrs = {}) {
  return ops::TensorArrayV3(s, ops::Const(s, Tensor::Scalar<int32_t>(size)),
                            DT_DOUBLE, attrs);
}

// ---------------------------------------------------------------------------
// Values in one step

TEST(TensorArraySessionTest, WriteReadGatherSizeInOneStep) {
  Scope root = Scope::NewRootScope();
  auto ta = ops::TensorArrayV3(
      root, ops::Const(root, 0), DT_FLOAT,
      ops::TensorArrayV3::DynamicSize(true).ClearAfterRead(false));
  auto w0 = ops::TensorArrayWriteV3(root, ta.handle, Index(root, 0),
                                    ops::Const(root, {1.f, 2.f}), ta.flow);
  auto w2 = ops::TensorArrayWriteV3(root, ta.handle, Index(root, 2),
                                    ops::Const(root, {5.f, 6.f}), w0.flow_out);
  auto w1 = ops::TensorArrayWriteV3(root, ta.handle, Index(root, 1),
                                    ops::Const(root, {3.f, 4.f}), w2.flow_out);
  auto size = ops::TensorArraySizeV3(root, ta.handle, w1.flow_out);
  auto read = ops::TensorArrayReadV3(root, ta.handle, Index(root, 2),
                                     w1.flow_out, DT_FLOAT);
  auto gather = ops::TensorArrayGatherV3(
      root, ta.handle, Int32s(root, {2, 0, 1}), w1.flow_out, DT_FLOAT,
      ops::TensorArrayGatherV3::ElementShape(PartialTensorShape({2})));
  EXPECT_EQ(root.GetShape(gather.value), PartialTensorShape({3, 2}));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({size.size, read.value, gather.value}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);
  ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({5, 6}));
  ExpectTensorEqual<float>(
      out[2],
      Tensor::FromVector<float>({5, 6, 1, 2, 3, 4}, TensorShape({3, 2})));
  // The next step makes a new array and runs the same way.
  ASSERT_OK(session.Run({size.size, gather.value}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);
}

TEST(TensorArraySessionTest, SplitConcatScatterInOneStep) {
  Scope root = Scope::NewRootScope();
  auto ta = ops::TensorArrayV3(root, ops::Const(root, 3), DT_INT32);
  auto split = ops::TensorArraySplitV3(root, ta.handle,
                                       ops::Const(root, {1, 2, 3, 4, 5}),
                                       Int64s(root, {2, 0, 3}), ta.flow);
  auto concat =
      ops::TensorArrayConcatV3(root, ta.handle, split.flow_out, DT_INT32);
  auto ta2 = ops::TensorArrayV3(root, ops::Const(root, 2), DT_INT32);
  auto scatter = ops::TensorArrayScatterV3(
      root, ta2.handle, Int32s(root, {1, 0}),
      ops::Const(
          root, Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape({2, 2}))),
      ta2.flow);
  auto read0 = ops::TensorArrayReadV3(root, ta2.handle, Index(root, 0),
                                      scatter.flow_out, DT_INT32);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({concat.value, concat.lengths, read0.value}, &out));
  ExpectTensorEqual<int32_t>(out[0],
                             Tensor::FromVector<int32_t>({1, 2, 3, 4, 5}));
  ExpectTensorEqual<int64_t>(out[1], Tensor::FromVector<int64_t>({2, 0, 3}));
  ExpectTensorEqual<int32_t>(out[2], Tensor::FromVector<int32_t>({3, 4}));
}

TEST(TensorArraySessionTest, ErrorsNameTheNode) {
  Scope root = Scope::NewRootScope();
  auto ta = ops::TensorArrayV3(root, ops::Const(root, 2), DT_FLOAT);
  auto read =
      ops::TensorArrayReadV3(root.WithOpName("unwritten_read"), ta.handle,
                             Index(root, 1), ta.flow, DT_FLOAT);
  auto w = ops::TensorArrayWriteV3(root, ta.handle, Index(root, 0),
                                   ops::Const(root, {1.f}), ta.flow);
  auto bad_write = ops::TensorArrayWriteV3(root.WithOpName("bad_write"),
                                           ta.handle, Index(root, 5),
                                           ops::Const(root, {1.f}), w.flow_out);
  auto close = ops::TensorArrayCloseV3(
      root.WithControlDependencies(w.operation), ta.handle);
  auto after_close = ops::TensorArraySizeV3(
      root.WithOpName("after_close").WithControlDependencies(close.operation),
      ta.handle, w.flow_out);
  ClientSession session(root);
  std::vector<Tensor> out;
  Status s = session.Run({read.value}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("TensorArrayReadV3 'unwritten_read'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not yet been written"));
  s = session.Run({bad_write.flow_out}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("TensorArrayWriteV3 'bad_write'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("Tried to write to index 5"));
  s = session.Run({after_close.size}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'after_close'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("has already been closed"));
}

TEST(TensorArraySessionTest, ArraysDoNotOutliveTheirStep) {
  Scope root = Scope::NewRootScope();
  auto ta = ops::TensorArrayV3(root, ops::Const(root, 1), DT_FLOAT);
  auto fed = ops::Placeholder(root, DT_RESOURCE);
  auto size = ops::TensorArraySizeV3(root.WithOpName("size_of_fed"), fed,
                                     ops::Const(root, 0.f));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({ta.handle}, &out));
  Tensor old_handle = out[0];
  Status s = session.Run({{fed, old_handle}}, {size.size}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("live for one step"));
}

// ---------------------------------------------------------------------------
// Gradients (Note [TensorArray gradients] in tensor_array_grad.cc)

TEST(TensorArrayGradTest, ReadOfWrite) {
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 2);
        auto w0 =
            ops::TensorArrayWriteV3(s, ta.handle, Index(s, 0), x[0], ta.flow);
        auto w1 = ops::TensorArrayWriteV3(s, ta.handle, Index(s, 1), x[1],
                                          w0.flow_out);
        auto r0 = ops::TensorArrayReadV3(s, ta.handle, Index(s, 0), w1.flow_out,
                                         DT_DOUBLE);
        auto r1 = ops::TensorArrayReadV3(s, ta.handle, Index(s, 1), w1.flow_out,
                                         DT_DOUBLE);
        // y = r0 * r1 + r1
        return {ops::AddV2(s, ops::Mul(s, r0, r1), r1)};
      },
      {Values({2, 3}, 1), Values({2, 3}, 2)});
}

TEST(TensorArrayGradTest, GatherOfScatter) {
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 4);
        auto sc = ops::TensorArrayScatterV3(
            s, ta.handle, Int32s(s, {2, 0, 3, 1}), x[0], ta.flow);
        auto g = ops::TensorArrayGatherV3(s, ta.handle, Int32s(s, {3, 1, 0, 2}),
                                          sc.flow_out, DT_DOUBLE);
        // y = gather(scatter(x)) * w
        return {ops::Mul(s, g.value, ops::Const(s, Values({4, 2}, 9)))};
      },
      {Values({4, 2}, 3)});
}

TEST(TensorArrayGradTest, ConcatOfSplit) {
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 3);
        auto sp = ops::TensorArraySplitV3(s, ta.handle, x[0],
                                          Int64s(s, {2, 0, 3}), ta.flow);
        auto c = ops::TensorArrayConcatV3(s, ta.handle, sp.flow_out, DT_DOUBLE);
        return {ops::Square(s, c.value)};
      },
      {Values({5, 2}, 4)});
}

TEST(TensorArrayGradTest, GatherOfSplitSkipsAnElement) {
  // Element 1 is never read: its gradient is zero (a zero read from the
  // gradient array, of the forward element's shape).
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 3);
        auto sp = ops::TensorArraySplitV3(s, ta.handle, x[0],
                                          Int64s(s, {2, 2, 2}), ta.flow);
        auto g = ops::TensorArrayGatherV3(s, ta.handle, Int32s(s, {2, 0}),
                                          sp.flow_out, DT_DOUBLE);
        return {ops::Square(s, g.value)};
      },
      {Values({6}, 5)});
}

TEST(TensorArrayGradTest, RepeatedReadsAddUp) {
  // clear_after_read=false: reads of one index send several partial
  // gradients, which the gradient array adds.
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 1, ops::TensorArrayV3::ClearAfterRead(false));
        auto w =
            ops::TensorArrayWriteV3(s, ta.handle, Index(s, 0), x[0], ta.flow);
        auto a = ops::TensorArrayReadV3(s, ta.handle, Index(s, 0), w.flow_out,
                                        DT_DOUBLE);
        auto b = ops::TensorArrayReadV3(s, ta.handle, Index(s, 0), w.flow_out,
                                        DT_DOUBLE);
        auto c = ops::TensorArrayGatherV3(s, ta.handle, Int32s(s, {0, 0}),
                                          w.flow_out, DT_DOUBLE);
        // y = a * b + sum(c)
        return {ops::AddV2(s, ops::Mul(s, a, b),
                           ops::Sum(s, c.value, ops::Const(s, 0)))};
      },
      {Values({3}, 6)});
}

TEST(TensorArrayGradTest, DynamicScatterThenReads) {
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 0, ops::TensorArrayV3::DynamicSize(true));
        auto sc = ops::TensorArrayScatterV3(s, ta.handle, Int32s(s, {0, 1, 2}),
                                            x[0], ta.flow);
        auto r1 = ops::TensorArrayReadV3(s, ta.handle, Index(s, 1), sc.flow_out,
                                         DT_DOUBLE);
        auto r2 = ops::TensorArrayReadV3(s, ta.handle, Index(s, 2), sc.flow_out,
                                         DT_DOUBLE);
        // y = r1 * r2 (row 0 unread: zero gradient)
        return {ops::Mul(s, r1, r2)};
      },
      {Values({3, 2}, 7)});
}

TEST(TensorArrayGradTest, WritesFromSeveralInputsThenConcat) {
  CheckGrad(
      [](const Scope& s, const Outputs& x) -> Outputs {
        auto ta = NewTA(s, 2);
        auto w0 =
            ops::TensorArrayWriteV3(s, ta.handle, Index(s, 1), x[0], ta.flow);
        auto w1 = ops::TensorArrayWriteV3(s, ta.handle, Index(s, 0),
                                          ops::Tanh(s, x[1]), w0.flow_out);
        auto c = ops::TensorArrayConcatV3(s, ta.handle, w1.flow_out, DT_DOUBLE);
        return {ops::Mul(s, c.value, c.value)};
      },
      {Values({2, 2}, 8), Values({3, 2}, 9)});
}

TEST(TensorArrayGradTest, TwoGradientComputationsUseTwoGradientArrays) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto ta = NewTA(root, 1, ops::TensorArrayV3::ClearAfterRead(false));
  auto w = ops::TensorArrayWriteV3(root, ta.handle, Index(root, 0), x, ta.flow);
  auto r = ops::TensorArrayReadV3(root, ta.handle, Index(root, 0), w.flow_out,
                                  DT_DOUBLE);
  auto y1 = ops::Mul(root, r, ops::Const(root, 3.0));  // dy1/dx = 3
  auto y2 = ops::Square(root, r);                      // dy2/dx = 2x
  Outputs d1, d2;
  ASSERT_OK(AddSymbolicGradients(root, {y1}, {x}, &d1));
  ASSERT_OK(AddSymbolicGradients(root, {y2}, {x}, &d2));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, Tensor::FromVector<double>({1.5, -2})}},
                        {d1[0], d2[0]}, &out));
  ExpectTensorEqual<double>(out[0], Tensor::FromVector<double>({3, 3}));
  ExpectTensorEqual<double>(out[1], Tensor::FromVector<double>({3, -4}));
}

// ---------------------------------------------------------------------------
// Stacks

TEST(StackSessionTest, PushThenPopInOneStepIsLastInFirstOut) {
  Scope root = Scope::NewRootScope();
  auto stack = ops::StackV2(root, ops::Const(root, -1), DT_FLOAT,
                            ops::StackV2::StackName("values"));
  auto p1 = ops::StackPushV2(root, stack, ops::Const(root, {1.f, 2.f}));
  auto p2 = ops::StackPushV2(root.WithControlDependencies(p1.operation), stack,
                             ops::Const(root, {3.f}));
  auto pop1 = ops::StackPopV2(root.WithControlDependencies(p2.operation), stack,
                              DT_FLOAT);
  auto pop2 = ops::StackPopV2(root.WithControlDependencies(pop1.operation),
                              stack, DT_FLOAT);
  auto pop3 = ops::StackPopV2(
      root.WithOpName("pop_empty").WithControlDependencies(pop2.operation),
      stack, DT_FLOAT);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({p2.output, pop1.elem, pop2.elem}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({3}));
  ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({3}));
  ExpectTensorEqual<float>(out[2], Tensor::FromVector<float>({1, 2}));
  // A third pop finds the stack empty; the error names node and stack.
  Status s = session.Run({pop3.elem}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("StackPopV2 'pop_empty'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("Stack[values_"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("is empty"));
}

TEST(StackSessionTest, SavedForwardValuesGiveAHandWrittenGradient) {
  // The pattern of loop gradients: the forward pass pushes the value the
  // backward pass needs; the backward pass pops it. y = x^2, dx = 2 x dy.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto stack = ops::StackV2(root, ops::Const(root, 1), DT_DOUBLE);
  auto saved = ops::StackPushV2(root, stack, x);
  auto y = ops::Square(root, saved);
  auto dy = ops::OnesLike(root, y);
  auto x_again = ops::StackPopV2(root.WithControlDependencies(y.operation),
                                 stack, DT_DOUBLE);
  auto dx = ops::Mul(root, ops::Mul(root, ops::Const(root, 2.0), x_again), dy);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(
      session.Run({{x, Tensor::FromVector<double>({0.5, -3})}}, {dx}, &out));
  ExpectTensorEqual<double>(out[0], Tensor::FromVector<double>({1, -6}));
  // The stack ops carry no gradient (as in TensorFlow): through them it is
  // zero.
  Outputs grads;
  ASSERT_OK(AddSymbolicGradients(root, {x_again}, {x}, &grads));
  ASSERT_OK(session.Run({{x, Tensor::FromVector<double>({0.5, -3})}},
                        {grads[0]}, &out));
  ExpectTensorEqual<double>(out[0], Tensor::FromVector<double>({0, 0}));
}

TEST(StackSessionTest, StacksDoNotOutliveTheirStep) {
  Scope root = Scope::NewRootScope();
  auto stack = ops::StackV2(root, ops::Const(root, -1), DT_FLOAT);
  auto fed = ops::Placeholder(root, DT_RESOURCE);
  auto pop = ops::StackPopV2(root, fed, DT_FLOAT);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({stack.handle}, &out));
  Status s = session.Run({{fed, out[0]}}, {pop.elem}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
}

}  // namespace
}  // namespace runnel
