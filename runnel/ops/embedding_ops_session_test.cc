// The embedding ops through a Session: the ref scatter ops on VariableV2
// variables (ref inputs need the executor), every gradient of
// embedding_grad.cc against central differences in double precision, the
// tie and zero cases of the segment gradients in closed form, and the
// sparse records the sparse segment reductions leave for optimizers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
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

Tensor Doubles(const std::vector<double>& v, const TensorShape& shape) {
  return Tensor::FromVector<double>(v, shape);
}
Output I32(const Scope& s, const std::vector<int32_t>& v,
           const TensorShape& shape) {
  return ops::Const(s, Tensor::FromVector<int32_t>(v, shape));
}
Output I32(const Scope& s, const std::vector<int32_t>& v) {
  return I32(s, v, TensorShape({static_cast<int64_t>(v.size())}));
}
Output I64(const Scope& s, const std::vector<int64_t>& v) {
  return ops::Const(s, Tensor::FromVector<int64_t>(v));
}

// Deterministic distinct values in about [-2, 2] (no ties, none zero).
Tensor Distinct(const TensorShape& shape, unsigned seed = 1) {
  Tensor t(DT_DOUBLE, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const double v = 0.3 + 0.137 * static_cast<double>((i * 7 + seed) % 29);
    t.flat<double>()[i] = (i + seed) % 2 ? v : -v;
  }
  return t;
}

// ys = build(root, xs) over double placeholders fed `x_values`; checks the
// symbolic Jacobian against central differences, with the placeholders'
// shapes unknown and then known.
void CheckGrad(const BuildFn& build, const std::vector<Tensor>& x_values,
               double tol = 1e-7) {
  for (bool known_shapes : {false, true}) {
    SCOPED_TRACE(known_shapes ? "known shapes" : "unknown shapes");
    Scope root = Scope::NewRootScope();
    Outputs xs;
    for (size_t i = 0; i < x_values.size(); ++i) {
      auto attrs = ops::Placeholder::Attrs();
      if (known_shapes) attrs = attrs.Shape(x_values[i].shape());
      xs.push_back(ops::Placeholder(root.WithOpName("x" + std::to_string(i)),
                                    x_values[i].dtype(), attrs));
    }
    Outputs ys = build(root, xs);
    ASSERT_OK(root.status());
    GradientCheckResult result;
    ASSERT_OK(CheckGradients(root, xs, x_values, ys, {}, &result));
    EXPECT_LT(result.max_error, tol) << result.DebugString();
    EXPECT_GT(result.x_size * result.y_size, 0);
  }
}

std::vector<Tensor> Fetch(const ClientSession& session, const Outputs& fetches,
                          const ClientSession::FeedType& feeds = {}) {
  std::vector<Tensor> out;
  Status s = session.Run(feeds, fetches, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// ---------------------------------------------------------------------------
// Ref scatters (VariableV2)

struct RefVar {
  explicit RefVar(const Tensor& init) {
    var = ops::VariableV2(root.WithOpName("v"), init.shape(), init.dtype());
    assign = ops::Assign(root.WithOpName("v/assign"), var,
                         ops::Const(root.WithOpName("v/init"), init));
  }
  Scope root = Scope::NewRootScope();
  Output var;
  Output assign;
};

TEST(RefScatterTest, EveryOpClosedForm) {
  // v = [[1, 2], [3, 4], [5, 6]]; rows 2, 0, 2 get [10, 20], [30, 40],
  // [50, 60].
  struct Case {
    std::function<Output(const Scope&, Output, Output, Output)> op;
    std::vector<float> want;
  };
  const std::vector<Case> cases = {
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterAdd(s, r, i, u));
       },
       {31, 42, 3, 4, 65, 86}},
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterSub(s, r, i, u));
       },
       {-29, -38, 3, 4, -55, -74}},
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterMul(s, r, i, u));
       },
       {30, 80, 3, 4, 2500, 7200}},
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterDiv(s, r, i, u));
       },
       {1.f / 30, 2.f / 40, 3, 4, 5.f / 10 / 50, 6.f / 20 / 60}},
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterMin(s, r, i, u));
       },
       {1, 2, 3, 4, 5, 6}},
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterMax(s, r, i, u));
       },
       {30, 40, 3, 4, 50, 60}},
      {[](const Scope& s, Output r, Output i, Output u) {
         return Output(ops::ScatterUpdate(s, r, i, u));
       },
       {30, 40, 3, 4, 50, 60}},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE(k);
    RefVar v(
        Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
    Output out = cases[k].op(
        v.root, v.var, I64(v.root, {2, 0, 2}),
        ops::Const(v.root, Tensor::FromVector<float>({10, 20, 30, 40, 50, 60},
                                                     TensorShape({3, 2}))));
    ASSERT_OK(v.root.status());
    EXPECT_EQ(v.root.GetShape(out), PartialTensorShape({3, 2}));
    ClientSession session(v.root);
    Fetch(session, {v.assign});
    // The output ref reads the updated variable.
    auto got = Fetch(session, {ops::Identity(v.root, out)});
    ASSERT_EQ(got.size(), 1u);
    ExpectTensorNear<float>(
        got[0], Tensor::FromVector<float>(cases[k].want, TensorShape({3, 2})),
        1e-6);
    got = Fetch(session, {ops::Identity(v.root, v.var)});
    ExpectTensorNear<float>(
        got[0], Tensor::FromVector<float>(cases[k].want, TensorShape({3, 2})),
        1e-6);
  }
}

TEST(RefScatterTest, IntegersScalarUpdatesAndRepeatedSteps) {
  RefVar v(Tensor::FromVector<int64_t>({1, 2, 3, 4}));
  auto add = ops::ScatterAdd(v.root, v.var, I32(v.root, {3, 0, 3}),
                             ops::Const(v.root, int64_t{5}),
                             ops::ScatterAdd::UseLocking(true));
  ClientSession session(v.root);
  Fetch(session, {v.assign});
  Fetch(session, {add});
  auto got = Fetch(session, {add});
  ExpectTensorEqual<int64_t>(got[0],
                             Tensor::FromVector<int64_t>({11, 2, 3, 24}));
}

void ExpectRunError(const ClientSession& session, const Output& fetch,
                    absl::StatusCode code, const std::string& text) {
  std::vector<Tensor> out;
  Status s = session.Run({fetch}, &out);
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(text));
}

TEST(RefScatterTest, Errors) {
  {
    RefVar v(Tensor::FromVector<float>({1, 2, 3}));
    auto bad =
        ops::ScatterAdd(v.root.WithOpName("bad"), v.var, I32(v.root, {1, 3}),
                        ops::Const(v.root, {1.f, 1.f}));
    ClientSession session(v.root);
    Fetch(session, {v.assign});
    ExpectRunError(session, bad, absl::StatusCode::kInvalidArgument,
                   "ScatterAdd 'bad': indices[1] = 3 is not in [0, 3)");
    // Nothing was written.
    auto got = Fetch(session, {ops::Identity(v.root, v.var)});
    ExpectTensorEqual<float>(got[0], Tensor::FromVector<float>({1, 2, 3}));
  }
  {
    RefVar v(Tensor::FromVector<int32_t>({4, 6}));
    auto div0 = ops::ScatterDiv(v.root, v.var, I32(v.root, {0, 1}),
                                I32(v.root, {2, 0}));
    ClientSession session(v.root);
    Fetch(session, {v.assign});
    ExpectRunError(session, div0, absl::StatusCode::kInvalidArgument,
                   "Integer division by zero: updates[1] = 0");
  }
  {
    // Not initialised.
    RefVar v(Tensor::FromVector<float>({1, 2}));
    auto add = ops::ScatterSub(v.root, v.var, I32(v.root, {0}),
                               ops::Const(v.root, {1.f}));
    ClientSession session(v.root);
    ExpectRunError(session, add, absl::StatusCode::kFailedPrecondition,
                   "uninitialized");
  }
  {
    // Shape mismatch: the shape function rejects it where it is built.
    RefVar v(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
    ops::ScatterUpdate(v.root, v.var, I32(v.root, {0}),
                       ops::Const(v.root, {1.f, 2.f, 3.f}));
    EXPECT_EQ(v.root.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(v.root.status().message()),
                HasSubstr("Must have updates.shape = indices.shape + "
                          "params.shape[1:] or updates.shape = []"));
  }
}

// ---------------------------------------------------------------------------
// Gradients against central differences

TEST(EmbeddingGradTest, DynamicPartition) {
  // Vector partitions over a matrix, and matrix partitions over rank 3.
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        auto p = ops::DynamicPartition(s, xs[0], I32(s, {2, 0, 2, 2}), 3);
        return {p[0], p[2]};  // Partition 1 is empty; ignore it.
      },
      {Distinct({4, 3})});
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        auto p = ops::DynamicPartition(
            s, xs[0], I32(s, {1, 0, 0, 1, 1, 0}, TensorShape({2, 3})), 2);
        // Only partition 1 reaches the loss: partition 0's rows get zeros.
        return {ops::Mul(s, p[1], p[1])};
      },
      {Distinct({2, 3, 2})});
}

TEST(EmbeddingGradTest, ParallelDynamicStitch) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::ParallelDynamicStitch(
            s, {I32(s, {0, 4}), I32(s, {3, 1, 2, 5}, TensorShape({2, 2}))},
            {xs[0], xs[1]})};
      },
      {Distinct({2, 3}), Distinct({2, 2, 3}, 5)});
}

TEST(EmbeddingGradTest, UnsortedSegmentMaxMin) {
  for (bool max : {true, false}) {
    SCOPED_TRACE(max ? "max" : "min");
    CheckGrad(
        [max](const Scope& s, const Outputs& xs) -> Outputs {
          const Output ids = I32(s, {1, -1, 0, 1, 3});
          if (max) return {ops::UnsortedSegmentMax(s, xs[0], ids, 4)};
          return {ops::UnsortedSegmentMin(s, xs[0], ids, 4)};
        },
        {Distinct({5, 2})});
    CheckGrad(
        [max](const Scope& s, const Outputs& xs) -> Outputs {
          const Output ids = I64(s, {0, 0, 1, 0});
          const Output y =
              max ? Output(ops::UnsortedSegmentMax(s, xs[0], ids, int64_t{2}))
                  : Output(ops::UnsortedSegmentMin(s, xs[0], ids, int64_t{2}));
          return {ops::Mul(s, y, y)};
        },
        {Distinct({4})});
  }
}

TEST(EmbeddingGradTest, UnsortedSegmentMaxSplitsTiesEvenly) {
  // Segment 0 = {3, 1, 3}: both 3s share the gradient.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::UnsortedSegmentMax(root, x, I32(root, {0, 0, 0, 1}), 2);
  Outputs dx;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x},
                                 {ops::Const(root, {6.0, 10.0})}, &dx));
  ClientSession session(root);
  auto got = Fetch(session, dx, {{x, Doubles({3, 1, 3, -2}, {4})}});
  ExpectTensorNear<double>(got[0], Doubles({3, 0, 3, 10}, {4}), 1e-12);
}

TEST(EmbeddingGradTest, UnsortedSegmentProd) {
  // No zeros, one zero in a segment, two zeros in a segment, a dropped id.
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {
            ops::UnsortedSegmentProd(s, xs[0], I32(s, {0, 1, 0, 2, 1, -1}), 3)};
      },
      {Distinct({6, 2})});
  const Tensor with_zeros =
      Doubles({0.5, 0, 2, 0, 3, 0, 1.5, -2, 0, 4}, {5, 2});
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::UnsortedSegmentProd(s, xs[0], I32(s, {0, 1, 0, 1, 1}), 2)};
      },
      {with_zeros});
}

TEST(EmbeddingGradTest, UnsortedSegmentProdAtZerosClosedForm) {
  // Segment 0 = {0, 2, 3}: d/dx0 = 6, others 0. Segment 1 = {0, 0}: all 0.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::UnsortedSegmentProd(root, x, I32(root, {0, 0, 0, 1, 1}), 2);
  Outputs dx;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &dx));
  ClientSession session(root);
  auto got = Fetch(session, dx, {{x, Doubles({0, 2, 3, 0, 0}, {5})}});
  ExpectTensorNear<double>(got[0], Doubles({6, 0, 0, 0, 0}, {5}), 1e-12);
}

TEST(EmbeddingGradTest, SparseSegmentReductions) {
  using Fn = std::function<Output(const Scope&, Output, Output, Output)>;
  const std::vector<std::pair<std::string, Fn>> ops_to_check = {
      {"Sum",
       [](const Scope& s, Output d, Output i, Output g) {
         return Output(ops::SparseSegmentSum(s, d, i, g));
       }},
      {"Mean",
       [](const Scope& s, Output d, Output i, Output g) {
         return Output(ops::SparseSegmentMean(s, d, i, g));
       }},
      {"SqrtN",
       [](const Scope& s, Output d, Output i, Output g) {
         return Output(ops::SparseSegmentSqrtN(s, d, i, g));
       }},
      {"SumWithNumSegments",
       [](const Scope& s, Output d, Output i, Output g) {
         return Output(ops::SparseSegmentSumWithNumSegments(s, d, i, g, 5));
       }},
      {"MeanWithNumSegments",
       [](const Scope& s, Output d, Output i, Output g) {
         return Output(ops::SparseSegmentMeanWithNumSegments(s, d, i, g, 5));
       }},
      {"SqrtNWithNumSegments",
       [](const Scope& s, Output d, Output i, Output g) {
         return Output(
             ops::SparseSegmentSqrtNWithNumSegments(s, d, i, g, int64_t{5}));
       }},
  };
  for (const auto& [name, fn] : ops_to_check) {
    SCOPED_TRACE(name);
    // Row 3 twice, row 1 unused, segment 1 empty.
    CheckGrad(
        [&fn](const Scope& s, const Outputs& xs) -> Outputs {
          return {
              fn(s, xs[0], I64(s, {3, 0, 3, 2, 4}), I32(s, {0, 0, 2, 2, 2}))};
        },
        {Distinct({5, 2})});
  }
}

TEST(EmbeddingGradTest, SparseSegmentGradOps) {
  using Fn =
      std::function<Output(const Scope&, Output, Output, Output, Output)>;
  const std::vector<std::pair<std::string, Fn>> ops_to_check = {
      {"SumGrad",
       [](const Scope& s, Output g, Output i, Output ids, Output n) {
         return Output(ops::SparseSegmentSumGrad(s, g, i, ids, n));
       }},
      {"MeanGrad",
       [](const Scope& s, Output g, Output i, Output ids, Output n) {
         return Output(ops::SparseSegmentMeanGrad(s, g, i, ids, n));
       }},
      {"SqrtNGrad",
       [](const Scope& s, Output g, Output i, Output ids, Output n) {
         return Output(ops::SparseSegmentSqrtNGrad(s, g, i, ids, n));
       }},
  };
  for (const auto& [name, fn] : ops_to_check) {
    SCOPED_TRACE(name);
    CheckGrad(
        [&fn](const Scope& s, const Outputs& xs) -> Outputs {
          return {fn(s, xs[0], I32(s, {3, 0, 3, 2}), I32(s, {0, 0, 1, 3}),
                     ops::Const(s, 5))};
        },
        {Distinct({4, 3})});
  }
}

// ---------------------------------------------------------------------------
// Sparse records (Note [Sparse gradients])

TEST(EmbeddingGradTest, SparseSegmentGradientsAreRecordedSparse) {
  for (const std::string kind : {"Sum", "Mean", "SqrtN"}) {
    SCOPED_TRACE(kind);
    Scope root = Scope::NewRootScope();
    auto data = ops::Placeholder(root, DT_DOUBLE);
    const Output idx = I32(root, {3, 0, 3});
    const Output ids = I64(root, {0, 1, 1});
    Output y;
    if (kind == "Sum") y = ops::SparseSegmentSum(root, data, idx, ids);
    if (kind == "Mean") y = ops::SparseSegmentMean(root, data, idx, ids);
    if (kind == "SqrtN") y = ops::SparseSegmentSqrtN(root, data, idx, ids);
    auto w = ops::Const(root, Doubles({1, 2, 3, 4}, {2, 2}));
    Outputs dx;
    ASSERT_OK(AddSymbolicGradients(root, {y}, {data}, {w}, &dx));
    SparseGradientInfo info;
    ASSERT_TRUE(GetSparseGradient(root, dx[0], &info));
    ClientSession session(root);
    auto got =
        Fetch(session, {dx[0], info.values, info.indices, info.dense_shape},
              {{data, Distinct({4, 2})}});
    ASSERT_EQ(got.size(), 4u);
    // The dense gradient, and the sparse rows scattered into zeros, agree.
    const double s1 = kind == "Sum"    ? 1
                      : kind == "Mean" ? 0.5
                                       : 1 / std::sqrt(2.0);
    ExpectTensorNear<double>(
        got[0],
        Doubles({3 * s1, 4 * s1, 0, 0, 0, 0, 1 + 3 * s1, 2 + 4 * s1}, {4, 2}),
        1e-12);
    ExpectTensorNear<double>(
        got[1], Doubles({1, 2, 3 * s1, 4 * s1, 3 * s1, 4 * s1}, {3, 2}), 1e-12);
    ExpectTensorEqual<int32_t>(got[2], Tensor::FromVector<int32_t>({3, 0, 3}));
    ExpectTensorEqual<int64_t>(got[3], Tensor::FromVector<int64_t>({4, 2}));
  }
}

}  // namespace
}  // namespace runnel
