// The numeric gradient checker: compares the Jacobian that the symbolic
// gradients (AddSymbolicGradients) compute with central differences.
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root, DT_DOUBLE);
//   auto y = ops::Tanh(root, x);
//   double err;
//   ASSERT_OK(ComputeGradientError(root, {x}, {Tensor::FromVector<double>(
//                                  {0.1, -0.7})}, {y}, &err));
//   EXPECT_LT(err, 1e-8);
//
// The symbolic Jacobian is built once with a placeholder dy per output and
// evaluated one output element at a time (dy one-hot); the numeric one
// perturbs one input element at a time by +-delta. Both are accumulated in
// double; inputs and outputs are float or double tensors (use double for
// tight tolerances). Other inputs of the graph are fed from `extra_feeds`
// or must be constants.
//
// Thread safety: builds into `scope`'s graph; one caller at a time.
#ifndef RUNNEL_TESTING_GRADIENT_CHECKER_H_
#define RUNNEL_TESTING_GRADIENT_CHECKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/scope.h"

namespace runnel {

struct GradientCheckOptions {
  // The central-difference step; 0 picks 1e-5 for double inputs and 1e-3 for
  // float ones.
  double delta = 0;
  // Feeds for placeholders other than `xs` (e.g. integer indices).
  ClientSession::FeedType extra_feeds;
};

struct GradientCheckResult {
  // max |J_symbolic - J_numeric| over every entry.
  double max_error = 0;
  // The Jacobians, row-major [x element][y element], elements of all xs
  // (all ys) concatenated in order.
  int64_t x_size = 0;
  int64_t y_size = 0;
  std::vector<double> symbolic;
  std::vector<double> numeric;
  // Both Jacobians as text, for failure messages.
  std::string DebugString() const;
};

// Checks the gradients of `ys` with respect to `xs` (placeholders fed with
// `x_values`). Errors: InvalidArgument for mismatched sizes or a non-float
// dtype, a symbolic gradient of the wrong shape; any error of building the
// gradients or running the graph.
Status CheckGradients(const Scope& scope, const std::vector<Output>& xs,
                      const std::vector<Tensor>& x_values,
                      const std::vector<Output>& ys,
                      const GradientCheckOptions& options,
                      GradientCheckResult* result);

// TF's ComputeGradientError: just the max error.
Status ComputeGradientError(const Scope& scope, const std::vector<Output>& xs,
                            const std::vector<Tensor>& x_values,
                            const std::vector<Output>& ys, double* max_error,
                            const GradientCheckOptions& options = {});

}  // namespace runnel

#endif  // RUNNEL_TESTING_GRADIENT_CHECKER_H_
