// logging_ops through a Session: an Assert on a control edge stops the step
// that depends on it; gradients pass through Print and CheckNumerics, and
// CheckNumerics checks the gradient too.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

TEST(LoggingOpsSessionTest, AssertOnAControlEdgeGuardsTheStep) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto positive =
      ops::Assert(root, ops::Greater(root, ops::Min(root, x, {0}), 0.f),
                  std::vector<Input>{
                      ops::Const(root, std::string("x must be positive")), x});
  auto y = ops::Sqrt(
      root.WithControlDependencies(std::vector<Operation>{positive.operation}),
      x);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, {4.f, 9.f}}}, {Output(y)}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({2, 3}));
  Status s = session.Run({{x, {4.f, -1.f}}}, {Output(y)}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("assertion failed: [x must be positive] [4 -1]"),
            std::string::npos)
      << s;
}

// The kernel lives across steps: first_n = 2 prints in the first two.
TEST(LoggingOpsSessionTest, PrintFirstNPrintsOnlyThatManyTimes) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_INT32);
  auto y = ops::Print(root, x, std::vector<Input>{x},
                      ops::Print::Message("step").FirstN(2));
  ClientSession session(root);
  std::vector<Tensor> out;
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(session.Run({{x, 5}}, {y}, &out));
    EXPECT_EQ(out[0].scalar<int32_t>(), 5);
  }
  const std::string printed = ::testing::internal::GetCapturedStderr();
  size_t count = 0;
  for (size_t at = printed.find("step[5]\n"); at != std::string::npos;
       at = printed.find("step[5]\n", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 2u) << printed;
}

TEST(LoggingOpsSessionTest, GradientsPassThroughPrintAndCheckNumerics) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto printed = ops::Print(root, x, std::vector<Input>{x},
                            ops::Print::FirstN(0));  // Prints nothing.
  auto checked = ops::CheckNumerics(root, printed, "x");
  auto loss = ops::Sum(root, ops::Square(root, checked), {0});
  std::vector<Output> grads;
  ASSERT_OK(AddSymbolicGradients(root, {loss}, {x}, &grads));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, {1.f, -3.f}}}, {grads[0]}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({2, -6}));
  // An infinite gradient (2x at x = 3e38 overflows float) fails
  // with TF's gradient message.
  Status s = session.Run({{x, {3e38f}}}, {grads[0]}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Not a number (NaN) or infinity (Inf) values "
                             "detected in gradient. x : Tensor had Inf"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace runnel
