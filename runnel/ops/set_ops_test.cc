// SetSize, DenseToDenseSetOperation, DenseToSparseSetOperation and
// SparseToSparseSetOperation, with TensorFlow's test cases
// (python/kernel_tests/math_ops/sets_test.py) for int64 and string sets. As
// there, each operation runs with and without validate_indices and with its
// operands swapped, and every run must give the same result.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

template <typename T>
T V(int64_t x) {
  if constexpr (std::is_same_v<T, tstring>) {
    return std::to_string(x);
  } else {
    return static_cast<T>(x);
  }
}

template <typename T>
std::vector<T> Vs(const std::vector<int64_t>& xs) {
  std::vector<T> out;
  for (int64_t x : xs) out.push_back(V<T>(x));
  return out;
}

Tensor I64(std::initializer_list<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::FromVector<int64_t>(v, TensorShape(shape));
}

// Row-major indices [n, rank] from their rows.
Tensor Indices(const std::vector<std::vector<int64_t>>& rows, int64_t rank) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return Tensor::FromVector<int64_t>(
      flat, TensorShape({static_cast<int64_t>(rows.size()), rank}));
}

template <typename T>
struct Sparse {
  Tensor indices, values, shape;
};

template <typename T>
Sparse<T> MakeSparse(const std::vector<std::vector<int64_t>>& indices,
                     const std::vector<int64_t>& values,
                     const std::vector<int64_t>& shape) {
  return {Indices(indices, static_cast<int64_t>(shape.size())),
          Tensor::FromVector<T>(Vs<T>(values)),
          Tensor::FromVector<int64_t>(shape)};
}

// TF's _dense_to_sparse: row i of `rows` is set i, of shape
// [rows, longest row].
template <typename T>
Sparse<T> RowsToSparse(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<std::vector<int64_t>> indices;
  std::vector<int64_t> values;
  int64_t width = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    width = std::max<int64_t>(width, rows[i].size());
    for (size_t j = 0; j < rows[i].size(); ++j) {
      indices.push_back({static_cast<int64_t>(i), static_cast<int64_t>(j)});
      values.push_back(rows[i][j]);
    }
  }
  return MakeSparse<T>(indices, values,
                       {static_cast<int64_t>(rows.size()), width});
}

template <typename T>
Tensor Dense(std::initializer_list<int64_t> shape,
             const std::vector<int64_t>& v) {
  return Tensor::FromVector<T>(Vs<T>(v), TensorShape(shape));
}

// A dense copy of `sp` (TF's sparse_to_dense), `fill` elsewhere.
template <typename T>
Tensor ToDense(const Sparse<T>& sp, int64_t fill) {
  const auto dims = sp.shape.template flat<int64_t>();
  Tensor t(DataTypeToEnum<T>::value,
           TensorShape(absl::MakeConstSpan(dims.data(), dims.size())));
  for (auto& x : t.flat<T>()) x = V<T>(fill);
  const int64_t rank = dims.size();
  const int64_t* ix = sp.indices.template data<int64_t>();
  for (int64_t n = 0; n < sp.values.NumElements(); ++n) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat = flat * dims[d] + ix[n * rank + d];
    t.flat<T>()[flat] = sp.values.template flat<T>()[n];
  }
  return t;
}

// An operand: dense or sparse.
template <typename T>
struct Set {
  Set(Tensor t) : dense(std::move(t)) {}  // NOLINT: implicit on purpose.
  Set(Sparse<T> s) : is_sparse(true), sparse(std::move(s)) {}  // NOLINT
  bool is_sparse = false;
  Tensor dense;
  Sparse<T> sparse;
};

struct Result {
  Tensor indices, values, shape;
};

std::string Flip(const std::string& op) {
  if (op == "a-b") return "b-a";
  if (op == "b-a") return "a-b";
  return op;
}

// One run of the op that fits the operands (sparse-to-dense runs as
// dense-to-sparse with the operation flipped).
template <typename T>
StatusOr<Result> RunOnce(const Set<T>& a, const Set<T>& b,
                         const std::string& op, bool validate_indices) {
  if (a.is_sparse && !b.is_sparse) {
    return RunOnce<T>(b, a, Flip(op), validate_indices);
  }
  OpTestCase t(!a.is_sparse ? (b.is_sparse ? "DenseToSparseSetOperation"
                                           : "DenseToDenseSetOperation")
                            : "SparseToSparseSetOperation");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("set_operation", op)
      .Attr("validate_indices", validate_indices);
  for (const Set<T>* s : {&a, &b}) {
    if (s->is_sparse) {
      t.Input(s->sparse.indices).Input(s->sparse.values).Input(s->sparse.shape);
    } else {
      t.Input(s->dense);
    }
  }
  RETURN_IF_ERROR(t.Run());
  return Result{t.output(0), t.output(1), t.output(2)};
}

template <typename T>
void ExpectSameResult(const Result& a, const Result& b) {
  ExpectTensorEqual<int64_t>(a.indices, b.indices);
  ExpectTensorEqual<T>(a.values, b.values);
  ExpectTensorEqual<int64_t>(a.shape, b.shape);
}

// TF's _set_intersection & co.: with and without validate_indices, and with
// the operands swapped; all must agree. Returns the first.
template <typename T>
Result RunSetOp(const Set<T>& a, const Set<T>& b, const std::string& op) {
  std::vector<Result> results;
  for (bool swap : {false, true}) {
    for (bool validate : {true, false}) {
      auto r = swap ? RunOnce<T>(b, a, Flip(op), validate)
                    : RunOnce<T>(a, b, op, validate);
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) results.push_back(*r);
    }
  }
  if (results.empty()) return {};
  for (size_t i = 1; i < results.size(); ++i) {
    ExpectSameResult<T>(results[0], results[i]);
  }
  return results[0];
}

// `values` are each set's elements in ascending numeric order; for strings
// they are sorted as strings within each set (the leading indices of
// consecutive `indices` rows), as the ops sort them.
template <typename T>
void ExpectResult(const Result& r,
                  const std::vector<std::vector<int64_t>>& indices,
                  const std::vector<int64_t>& values,
                  const std::vector<int64_t>& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<T> want = Vs<T>(values);
  for (size_t begin = 0; begin < indices.size();) {
    size_t end = begin + 1;
    while (end < indices.size() &&
           std::equal(indices[end].begin(), indices[end].end() - 1,
                      indices[begin].begin())) {
      ++end;
    }
    std::sort(want.begin() + begin, want.begin() + end);
    begin = end;
  }
  ExpectTensorEqual<int64_t>(r.indices, Indices(indices, rank));
  ExpectTensorEqual<T>(r.values, Tensor::FromVector<T>(want));
  ExpectTensorEqual<int64_t>(r.shape, Tensor::FromVector<int64_t>(shape));
}

template <typename T>
StatusOr<Tensor> SetSize(const Tensor& indices, const Tensor& values,
                         const Tensor& shape, bool validate_indices = true) {
  OpTestCase t("SetSize");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("validate_indices", validate_indices)
      .Input(indices)
      .Input(values)
      .Input(shape);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

// TF's _set_size: the same with and without validate_indices.
template <typename T>
Tensor Sizes(const Sparse<T>& sp) {
  auto a = SetSize<T>(sp.indices, sp.values, sp.shape, true);
  auto b = SetSize<T>(sp.indices, sp.values, sp.shape, false);
  EXPECT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(b.ok()) << b.status();
  if (!a.ok() || !b.ok()) return Tensor();
  ExpectTensorEqual<int32_t>(*a, *b);
  return *a;
}

// SetSize of an operation's result (TF's _set_intersection_count & co.).
template <typename T>
Tensor ResultSizes(const Result& r) {
  return Sizes<T>(Sparse<T>{r.indices, r.values, r.shape});
}

Tensor I32(std::initializer_list<int64_t> shape, std::vector<int32_t> v) {
  return Tensor::FromVector<int32_t>(v, TensorShape(shape));
}

template <typename T>
class SetOpsTest : public ::testing::Test {};
using SetTypes = ::testing::Types<int64_t, tstring>;
TYPED_TEST_SUITE(SetOpsTest, SetTypes);

// The 3-d sparse operands of TF's *_3d tests, shapes [4,2,3] and [4,2,4].
template <typename T>
Sparse<T> SparseA3d(bool out_of_order = false) {
  std::vector<std::vector<int64_t>> indices = {
      {0, 0, 0}, {0, 0, 2},             // 0,0
      {0, 1, 0}, {0, 1, 1},             // 0,1
      {1, 0, 0},                        // 1,0
      {1, 1, 0}, {1, 1, 1}, {1, 1, 2},  // 1,1
      {2, 1, 1},                        // 2,1
  };
  std::vector<int64_t> values = {1, 9, 3, 3, 1, 9, 7, 8, 5};
  if (out_of_order) {
    // TF's invalid_indices variant: group 0,0 moved after 1,0.
    indices = {{0, 1, 0}, {0, 1, 1}, {1, 0, 0}, {0, 0, 0}, {0, 0, 2},
               {1, 1, 0}, {1, 1, 1}, {1, 1, 2}, {2, 1, 1}};
    values = {3, 3, 1, 1, 9, 9, 7, 8, 5};
  }
  return MakeSparse<T>(indices, values, {4, 2, 3});
}

template <typename T>
Sparse<T> SparseB3d() {
  return MakeSparse<T>({{0, 0, 0},
                        {0, 0, 3},  // 0,0
                        {1, 0, 0},  // 1,0
                        {1, 1, 0},
                        {1, 1, 1},  // 1,1
                        {2, 0, 1},  // 2,0
                        {2, 1, 1},  // 2,1
                        {3, 0, 0},  // 3,0
                        {3, 1, 0}},
                       {1, 3, 3, 7, 8, 2, 5, 4, 4}, {4, 2, 4});
}

// ---------------------------------------------------------------------------
// SetSize

TYPED_TEST(SetOpsTest, SetSize2d) {
  using T = TypeParam;
  ExpectTensorEqual<int32_t>(Sizes(RowsToSparse<T>({{1}})), I32({1}, {1}));
  ExpectTensorEqual<int32_t>(Sizes(RowsToSparse<T>({{1, 9}, {1}})),
                             I32({2}, {2, 1}));
  ExpectTensorEqual<int32_t>(Sizes(RowsToSparse<T>({{1, 9, 2}, {}})),
                             I32({2}, {3, 0}));
  ExpectTensorEqual<int32_t>(Sizes(RowsToSparse<T>({{}, {1, 9, 2}})),
                             I32({2}, {0, 3}));
}

TYPED_TEST(SetOpsTest, SetSizeDuplicates2d) {
  using T = TypeParam;
  ExpectTensorEqual<int32_t>(Sizes(RowsToSparse<T>({{1, 1, 1, 1, 1, 1}})),
                             I32({1}, {1}));
  ExpectTensorEqual<int32_t>(
      Sizes(RowsToSparse<T>({{1, 9},
                             {6, 7, 8, 8, 6, 7, 5, 3, 3, 0, 6, 6, 9, 0, 0, 0},
                             {999, 1, -1000},
                             {},
                             {-1}})),
      I32({5}, {2, 7, 3, 0, 1}));
}

TYPED_TEST(SetOpsTest, SetSize3d) {
  using T = TypeParam;
  Sparse<T> sp = SparseA3d<T>();
  sp.shape = Tensor::FromVector<int64_t>({3, 2, 3});
  ExpectTensorEqual<int32_t>(Sizes(sp), I32({3, 2}, {2, 1, 1, 3, 0, 1}));
}

TYPED_TEST(SetOpsTest, SetSize3dOutOfOrder) {
  using T = TypeParam;
  Sparse<T> sp = SparseA3d<T>(/*out_of_order=*/true);
  sp.shape = Tensor::FromVector<int64_t>({3, 2, 3});
  auto s = SetSize<T>(sp.indices, sp.values, sp.shape, true);
  ExpectInvalid(s.status(), "indices[3] = [0,0,0] is out of order");
  ExpectInvalid(s.status(), "SetSize 'test_node'");
  // Without validation the rows are grouped wherever they are.
  auto u = SetSize<T>(sp.indices, sp.values, sp.shape, false);
  ASSERT_OK(u.status());
  ExpectTensorEqual<int32_t>(*u, I32({3, 2}, {2, 1, 1, 3, 0, 1}));
}

TYPED_TEST(SetOpsTest, SetSizeInvalidIndices) {
  using T = TypeParam;
  // TF's test_invalid_size: indices outside the shape, not validated.
  const Tensor indices = I64({2, 2}, {804, 7450, 48245, 2577});
  const Tensor values = Tensor::FromVector<T>(Vs<T>({1, 1}));
  const Tensor shape = Tensor::FromVector<int64_t>({812, 390});
  ExpectInvalid(SetSize<T>(indices, values, shape, false).status(),
                "indices[0, 1] expected < 390, got 7450.");
  ExpectInvalid(SetSize<T>(indices, values, shape, true).status(),
                "indices[0] = [804,7450] is out of bounds: need 0 <= index < "
                "[812,390]");
  ExpectInvalid(SetSize<T>(I64({1, 2}, {-1, 0}),
                           Tensor::FromVector<T>(Vs<T>({1})), shape, false)
                    .status(),
                "indices[0, 0] expected >= 0, got -1.");
}

TYPED_TEST(SetOpsTest, SetSizeRepeatedIndex) {
  using T = TypeParam;
  const Tensor values = Tensor::FromVector<T>(Vs<T>({1, 2}));
  const Tensor shape = Tensor::FromVector<int64_t>({2, 2});
  ExpectInvalid(
      SetSize<T>(I64({2, 2}, {0, 1, 0, 1}), values, shape, true).status(),
      "indices[1] = [0,1] is repeated");
  auto u = SetSize<T>(I64({2, 2}, {0, 1, 0, 1}), values, shape, false);
  ASSERT_OK(u.status());
  ExpectTensorEqual<int32_t>(*u, I32({2}, {2, 0}));
}

TEST(SetSizeTest, BadInputs) {
  const Tensor ix = I64({1, 2}, {0, 0});
  const Tensor v = Tensor::FromVector<int64_t>({1});
  const Tensor shape = Tensor::FromVector<int64_t>({2, 2});
  // TF's test_raw_ops_setsize_invalid_shape.
  ExpectInvalid(SetSize<int64_t>(ix, v, Tensor::Scalar<int64_t>(1)).status(),
                "must have rank 1");
  OpTestCase t("SetSize");
  t.Attr("T", DT_INT64).Input(ix).Input(v).Input(Tensor::Scalar<int64_t>(1));
  ExpectInvalid(t.RunKernelOnly(), "Shape must be a 1D tensor");
  // Rank 1.
  ExpectInvalid(
      SetSize<int64_t>(I64({1, 1}, {0}), v, Tensor::FromVector<int64_t>({3}))
          .status(),
      "expected rank >= 2, got 1");
  OpTestCase r("SetSize");
  r.Attr("T", DT_INT64)
      .Input(I64({1, 1}, {0}))
      .Input(v)
      .Input(Tensor::FromVector<int64_t>({3}));
  ExpectInvalid(r.RunKernelOnly(), "Invalid rank 1.");
  // Indices and values disagree.
  ExpectInvalid(
      SetSize<int64_t>(ix, Tensor::FromVector<int64_t>({1, 2}), shape).status(),
      "set_indices has 1 rows but set_values has 2");
  OpTestCase m("SetSize");
  m.Attr("T", DT_INT64)
      .Input(ix)
      .Input(Tensor::FromVector<int64_t>({1, 2}))
      .Input(shape);
  ExpectInvalid(m.RunKernelOnly(),
                "indices and values rows (indexing dimension) must match. "
                "(indices = 1, values = 2)");
  OpTestCase c("SetSize");
  c.Attr("T", DT_INT64)
      .Input(ix)
      .Input(v)
      .Input(Tensor::FromVector<int64_t>({2, 2, 2}));
  ExpectInvalid(c.RunKernelOnly(), "Shape rank must be SparseTensor rank.");
  OpTestCase vm("SetSize");
  vm.Attr("T", DT_INT64).Input(ix).Input(I64({1, 1}, {1})).Input(shape);
  ExpectInvalid(vm.RunKernelOnly(), "vals must be a vec, but got: [1,1]");
  OpTestCase im("SetSize");
  im.Attr("T", DT_INT64).Input(Tensor::FromVector<int64_t>({0})).Input(v);
  im.Input(shape);
  ExpectInvalid(im.RunKernelOnly(), "indices must be a matrix, but got: [1]");
  // A negative or too large dense shape.
  ExpectInvalid(
      SetSize<int64_t>(ix, v, Tensor::FromVector<int64_t>({-1, 2})).status(),
      "negative dimension");
  ExpectInvalid(SetSize<int64_t>(I64({1, 3}, {0, 0, 0}), v,
                                 Tensor::FromVector<int64_t>(
                                     {int64_t{1} << 40, int64_t{1} << 40, 2}))
                    .status(),
                "too many elements");
}

TEST(SetSizeTest, ShapeFunction) {
  // set_shape's value known: the exact shape; else its length's rank.
  const Tensor ix = I64({1, 3}, {0, 1, 2});
  const Tensor v = Tensor::FromVector<int64_t>({7});
  auto s = SetSize<int64_t>(ix, v, Tensor::FromVector<int64_t>({2, 3, 4}));
  ASSERT_OK(s.status());
  ExpectTensorEqual<int32_t>(*s, I32({2, 3}, {0, 1, 0, 0, 0, 0}));
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_INT64);
  auto shapes =
      InferShapes("SetSize", attrs,
                  {PartialTensorShape({-1, 3}), PartialTensorShape({-1}),
                   PartialTensorShape({3})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({-1, -1}));
  shapes = InferShapes(
      "SetSize", attrs,
      {PartialTensorShape(), PartialTensorShape(), PartialTensorShape()});
  ASSERT_OK(shapes.status());
  EXPECT_TRUE((*shapes)[0].unknown_rank());
}

// ---------------------------------------------------------------------------
// Intersection

TYPED_TEST(SetOpsTest, IntersectionMultirow2d) {
  using T = TypeParam;
  const Tensor a = Dense<T>({2, 3}, {9, 1, 5, 2, 4, 3});
  const Sparse<T> sp_b = RowsToSparse<T>({{1, 9}, {1}});
  for (const Set<T>& x :
       {Set<T>(a), Set<T>(RowsToSparse<T>({{9, 1, 5}, {2, 4, 3}}))}) {
    const Result r = RunSetOp<T>(x, sp_b, "intersection");
    ExpectResult<T>(r, {{0, 0}, {0, 1}}, {1, 9}, {2, 2});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {2, 0}));
  }
}

TYPED_TEST(SetOpsTest, DenseIntersectionMultirow2d) {
  using T = TypeParam;
  const Result r = RunSetOp<T>(Dense<T>({2, 3}, {9, 1, 5, 2, 4, 3}),
                               Dense<T>({2, 2}, {1, 9, 1, 5}), "intersection");
  ExpectResult<T>(r, {{0, 0}, {0, 1}}, {1, 9}, {2, 2});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {2, 0}));
}

TYPED_TEST(SetOpsTest, IntersectionDuplicates2d) {
  using T = TypeParam;
  const Tensor a = Dense<T>({1, 3}, {1, 1, 3});
  const Tensor b = Dense<T>({1, 1}, {1});
  const Sparse<T> sp_a = RowsToSparse<T>({{1, 1, 3}});
  const Sparse<T> sp_b = RowsToSparse<T>({{1}});
  for (const auto& [x, y] : std::vector<std::pair<Set<T>, Set<T>>>{
           {a, b}, {a, sp_b}, {sp_a, sp_b}}) {
    const Result r = RunSetOp<T>(x, y, "intersection");
    ExpectResult<T>(r, {{0, 0}}, {1}, {1, 1});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({1}, {1}));
  }
}

TYPED_TEST(SetOpsTest, Intersection3d) {
  using T = TypeParam;
  const Sparse<T> sp_a = SparseA3d<T>(), sp_b = SparseB3d<T>();
  // Sparse to sparse, dense to sparse, dense to dense (TF fills the dense
  // copies with -1 and -2, which the other side never holds).
  const Tensor a = ToDense(sp_a, -1), b = ToDense(sp_b, -2);
  for (const auto& [x, y] : std::vector<std::pair<Set<T>, Set<T>>>{
           {sp_a, sp_b}, {a, sp_b}, {a, b}}) {
    const Result r = RunSetOp<T>(x, y, "intersection");
    ExpectResult<T>(r, {{0, 0, 0}, {1, 1, 0}, {1, 1, 1}, {2, 1, 0}},
                    {1, 7, 8, 5}, {4, 2, 2});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r),
                               I32({4, 2}, {1, 0, 0, 2, 0, 1, 0, 0}));
  }
}

TYPED_TEST(SetOpsTest, Intersection3dOutOfOrder) {
  using T = TypeParam;
  const Sparse<T> sp_a = SparseA3d<T>(/*out_of_order=*/true);
  auto r = RunOnce<T>(sp_a, SparseB3d<T>(), "intersection", true);
  ExpectInvalid(r.status(), "is out of order");
  ExpectInvalid(r.status(), "SparseToSparseSetOperation 'test_node'");
  // Not validated: grouped by index, as if sorted.
  r = RunOnce<T>(sp_a, SparseB3d<T>(), "intersection", false);
  ASSERT_OK(r.status());
  ExpectResult<T>(*r, {{0, 0, 0}, {1, 1, 0}, {1, 1, 1}, {2, 1, 0}},
                  {1, 7, 8, 5}, {4, 2, 2});
}

// ---------------------------------------------------------------------------
// Difference

TYPED_TEST(SetOpsTest, DifferenceMultirow2d) {
  using T = TypeParam;
  const std::vector<std::vector<int64_t>> a_rows = {
      {1, 1, 1}, {1, 5, 9}, {4, 5, 3}, {5, 5, 1}};
  const Tensor a = Dense<T>({4, 3}, {1, 1, 1, 1, 5, 9, 4, 5, 3, 5, 5, 1});
  const Sparse<T> sp_b = RowsToSparse<T>({{}, {1, 2}, {1, 2, 2}, {}});
  for (const Set<T>& x : {Set<T>(a), Set<T>(RowsToSparse<T>(a_rows))}) {
    Result r = RunSetOp<T>(x, sp_b, "a-b");
    ExpectResult<T>(
        r, {{0, 0}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {2, 2}, {3, 0}, {3, 1}},
        {1, 5, 9, 3, 4, 5, 1, 5}, {4, 3});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({4}, {1, 2, 3, 2}));
    r = RunSetOp<T>(x, sp_b, "b-a");
    ExpectResult<T>(r, {{1, 0}, {2, 0}, {2, 1}}, {2, 1, 2}, {4, 2});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({4}, {0, 1, 2, 0}));
  }
}

TYPED_TEST(SetOpsTest, DenseDifferenceMultirow2d) {
  using T = TypeParam;
  const Tensor a = Dense<T>({2, 3}, {1, 5, 9, 4, 5, 3});
  const Tensor b = Dense<T>({2, 3}, {1, 2, 6, 1, 2, 2});
  Result r = RunSetOp<T>(a, b, "a-b");
  ExpectResult<T>(r, {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}}, {5, 9, 3, 4, 5},
                  {2, 3});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {2, 3}));
  r = RunSetOp<T>(a, b, "b-a");
  ExpectResult<T>(r, {{0, 0}, {0, 1}, {1, 0}, {1, 1}}, {2, 6, 1, 2}, {2, 2});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {2, 2}));
}

TYPED_TEST(SetOpsTest, SparseDifferenceMultirow2d) {
  using T = TypeParam;
  const Sparse<T> sp_a =
      RowsToSparse<T>({{}, {1, 5, 9}, {4, 5, 3, 3, 4, 5}, {5, 1}});
  const Sparse<T> sp_b = RowsToSparse<T>({{}, {1, 2}, {1, 2, 2}, {}});
  Result r = RunSetOp<T>(sp_a, sp_b, "a-b");
  ExpectResult<T>(r, {{1, 0}, {1, 1}, {2, 0}, {2, 1}, {2, 2}, {3, 0}, {3, 1}},
                  {5, 9, 3, 4, 5, 1, 5}, {4, 3});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({4}, {0, 2, 3, 2}));
  r = RunSetOp<T>(sp_a, sp_b, "b-a");
  ExpectResult<T>(r, {{1, 0}, {2, 0}, {2, 1}}, {2, 1, 2}, {4, 2});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({4}, {0, 1, 2, 0}));
}

TYPED_TEST(SetOpsTest, DifferenceDuplicates2d) {
  using T = TypeParam;
  const Tensor a = Dense<T>({1, 3}, {1, 1, 3});
  const Sparse<T> sp_a = RowsToSparse<T>({{1, 1, 3}});
  const Sparse<T> sp_b = RowsToSparse<T>({{1, 2, 2}});
  for (const Set<T>& x : {Set<T>(a), Set<T>(sp_a)}) {
    Result r = RunSetOp<T>(x, sp_b, "a-b");
    ExpectResult<T>(r, {{0, 0}}, {3}, {1, 1});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({1}, {1}));
    r = RunSetOp<T>(x, sp_b, "b-a");
    ExpectResult<T>(r, {{0, 0}}, {2}, {1, 1});
  }
}

TYPED_TEST(SetOpsTest, SparseDifference3d) {
  using T = TypeParam;
  const Sparse<T> sp_a = SparseA3d<T>(), sp_b = SparseB3d<T>();
  Result r = RunSetOp<T>(sp_a, sp_b, "a-b");
  ExpectResult<T>(r, {{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 0}}, {9, 3, 1, 9},
                  {4, 2, 1});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r),
                             I32({4, 2}, {1, 1, 1, 1, 0, 0, 0, 0}));
  r = RunSetOp<T>(sp_a, sp_b, "b-a");
  ExpectResult<T>(r, {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {3, 1, 0}},
                  {3, 3, 2, 4, 4}, {4, 2, 1});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r),
                             I32({4, 2}, {1, 0, 1, 0, 1, 0, 1, 1}));
  ExpectInvalid(RunOnce<T>(SparseA3d<T>(true), sp_b, "a-b", true).status(),
                "out of order");
  ExpectInvalid(RunOnce<T>(SparseA3d<T>(true), sp_b, "b-a", true).status(),
                "out of order");
}

// ---------------------------------------------------------------------------
// Union

TYPED_TEST(SetOpsTest, UnionMultirow2d) {
  using T = TypeParam;
  const Tensor a = Dense<T>({2, 3}, {9, 1, 5, 2, 4, 3});
  const Sparse<T> sp_b = RowsToSparse<T>({{1, 9}, {1}});
  for (const Set<T>& x :
       {Set<T>(a), Set<T>(RowsToSparse<T>({{9, 1, 5}, {2, 4, 3}}))}) {
    const Result r = RunSetOp<T>(x, sp_b, "union");
    ExpectResult<T>(r, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {1, 3}},
                    {1, 5, 9, 1, 2, 3, 4}, {2, 4});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {3, 4}));
  }
}

TYPED_TEST(SetOpsTest, DenseUnionMultirow2d) {
  using T = TypeParam;
  const Result r = RunSetOp<T>(Dense<T>({2, 3}, {9, 1, 5, 2, 4, 3}),
                               Dense<T>({2, 2}, {1, 9, 1, 2}), "union");
  ExpectResult<T>(r, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {1, 3}},
                  {1, 5, 9, 1, 2, 3, 4}, {2, 4});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {3, 4}));
}

TYPED_TEST(SetOpsTest, UnionDuplicates2d) {
  using T = TypeParam;
  const Sparse<T> sp_b = RowsToSparse<T>({{1}});
  for (const Set<T>& x : {Set<T>(Dense<T>({1, 3}, {1, 1, 3})),
                          Set<T>(RowsToSparse<T>({{1, 1, 3}}))}) {
    const Result r = RunSetOp<T>(x, sp_b, "union");
    ExpectResult<T>(r, {{0, 0}, {0, 1}}, {1, 3}, {1, 2});
    ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({1}, {2}));
  }
}

TYPED_TEST(SetOpsTest, SparseUnion3d) {
  using T = TypeParam;
  const Result r = RunSetOp<T>(SparseA3d<T>(), SparseB3d<T>(), "union");
  ExpectResult<T>(r,
                  {{0, 0, 0},
                   {0, 0, 1},
                   {0, 0, 2},
                   {0, 1, 0},
                   {1, 0, 0},
                   {1, 0, 1},
                   {1, 1, 0},
                   {1, 1, 1},
                   {1, 1, 2},
                   {2, 0, 0},
                   {2, 1, 0},
                   {3, 0, 0},
                   {3, 1, 0}},
                  {1, 3, 9, 3, 1, 3, 7, 8, 9, 2, 5, 4, 4}, {4, 2, 3});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r),
                             I32({4, 2}, {3, 1, 2, 3, 1, 1, 1, 1}));
  // TF's invalid_indices variant of this test.
  const Sparse<T> bad = MakeSparse<T>({{0, 1, 0},
                                       {0, 1, 1},
                                       {1, 0, 0},
                                       {0, 0, 0},
                                       {0, 0, 2},
                                       {1, 1, 0},
                                       {1, 1, 1},
                                       {1, 1, 2},
                                       {2, 1, 1}},
                                      {3, 3, 1, 1, 9, 9, 7, 8, 5}, {4, 2, 3});
  ExpectInvalid(RunOnce<T>(bad, SparseB3d<T>(), "union", true).status(),
                "indices[3] = [0,0,0] is out of order");
  ExpectInvalid(RunOnce<T>(SparseB3d<T>(), bad, "union", true).status(),
                "is out of order");
}

TYPED_TEST(SetOpsTest, UnionOutputIsSorted) {
  using T = TypeParam;
  // Rows [3 7 5 3 1], [2 6 5 4], [], [9 8] and [9 7], [5 2 0], [6], [].
  const Sparse<T> sp_a =
      MakeSparse<T>({{0, 0},
                     {0, 1},
                     {0, 2},
                     {0, 3},
                     {0, 4},
                     {1, 0},
                     {1, 1},
                     {1, 2},
                     {1, 3},
                     {3, 0},
                     {3, 1}},
                    {3, 7, 5, 3, 1, 2, 6, 5, 4, 9, 8}, {4, 5});
  const Sparse<T> sp_b =
      MakeSparse<T>({{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}, {2, 0}},
                    {9, 7, 5, 2, 0, 6}, {4, 3});
  auto r = RunOnce<T>(sp_a, sp_b, "union", true);
  ASSERT_OK(r.status());
  ExpectTensorEqual<int64_t>(r->shape, Tensor::FromVector<int64_t>({4, 5}));
  ExpectTensorEqual<int64_t>(r->indices, Indices({{0, 0},
                                                  {0, 1},
                                                  {0, 2},
                                                  {0, 3},
                                                  {0, 4},
                                                  {1, 0},
                                                  {1, 1},
                                                  {1, 2},
                                                  {1, 3},
                                                  {1, 4},
                                                  {2, 0},
                                                  {3, 0},
                                                  {3, 1}},
                                                 2));
  ExpectTensorEqual<T>(
      r->values,
      Tensor::FromVector<T>(Vs<T>({1, 3, 5, 7, 9, 0, 2, 4, 5, 6, 6, 8, 9})));
}

TEST(SetOpsTest, StringsSortAsStrings) {
  const Tensor a = Tensor::FromVector<tstring>({"b", "10", "9", "b", "", "a"},
                                               TensorShape({2, 3}));
  const Tensor b = Tensor::FromVector<tstring>({"9", "Z"}, TensorShape({2, 1}));
  const Result r = RunSetOp<tstring>(a, b, "union");
  ExpectTensorEqual<tstring>(
      r.values,
      Tensor::FromVector<tstring>({"10", "9", "b", "", "Z", "a", "b"}));
  ExpectTensorEqual<int64_t>(r.shape, Tensor::FromVector<int64_t>({2, 4}));
}

// ---------------------------------------------------------------------------
// Empty sets, every type, shapes

TYPED_TEST(SetOpsTest, EmptyResults) {
  using T = TypeParam;
  // Disjoint sets: nothing in common, result_shape's last dim is 0.
  Result r = RunSetOp<T>(Dense<T>({2, 2}, {1, 2, 3, 4}),
                         Dense<T>({2, 2}, {5, 6, 7, 8}), "intersection");
  ExpectResult<T>(r, {}, {}, {2, 0});
  ExpectTensorEqual<int32_t>(ResultSizes<T>(r), I32({2}, {0, 0}));
  // Empty dense sets (last dim 0) and an empty sparse operand.
  const Tensor empty = Tensor(DataTypeToEnum<T>::value, TensorShape({2, 0}));
  r = RunSetOp<T>(empty, Dense<T>({2, 1}, {4, 3}), "union");
  ExpectResult<T>(r, {{0, 0}, {1, 0}}, {4, 3}, {2, 1});
  r = RunSetOp<T>(empty, empty, "union");
  ExpectResult<T>(r, {}, {}, {2, 0});
  const Sparse<T> none = MakeSparse<T>({}, {}, {2, 5});
  r = RunSetOp<T>(none, Dense<T>({2, 2}, {4, 4, 3, 1}), "b-a");
  ExpectResult<T>(r, {{0, 0}, {1, 0}, {1, 1}}, {4, 1, 3}, {2, 2});
  r = RunSetOp<T>(none, none, "union");
  ExpectResult<T>(r, {}, {}, {2, 0});
  // No sets at all: a group dim of 0.
  r = RunSetOp<T>(Tensor(DataTypeToEnum<T>::value, TensorShape({0, 3})),
                  Tensor(DataTypeToEnum<T>::value, TensorShape({0, 2})), "a-b");
  ExpectResult<T>(r, {}, {}, {0, 0});
}

template <typename T>
void UnionOfType() {
  const Result r = RunSetOp<T>(Dense<T>({2, 2}, {5, 1, 2, 2}),
                               Dense<T>({2, 3}, {1, 7, 1, 0, 2, 9}), "union");
  ExpectResult<T>(r, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}},
                  {1, 5, 7, 0, 2, 9}, {2, 3});
}

TEST(SetOpsTest, EveryType) {
  UnionOfType<int8_t>();
  UnionOfType<int16_t>();
  UnionOfType<int32_t>();
  UnionOfType<int64_t>();
  UnionOfType<uint8_t>();
  UnionOfType<uint16_t>();
  UnionOfType<tstring>();
}

TEST(SetOpsTest, SetOperationIsCaseInsensitive) {
  auto r = RunOnce<int64_t>(Dense<int64_t>({1, 2}, {1, 2}),
                            Dense<int64_t>({1, 1}, {2}), "A-B", true);
  ASSERT_OK(r.status());
  ExpectResult<int64_t>(*r, {{0, 0}}, {1}, {1, 1});
}

TEST(SetOpsTest, ShapeFunctions) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_INT64);
  attrs["set_operation"] = MakeAttrValue(std::string("union"));
  auto s = InferShapes(
      "DenseToDenseSetOperation", attrs,
      {PartialTensorShape({2, -1, 4}), PartialTensorShape({-1, 3, 5})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 3}));
  EXPECT_EQ((*s)[1], PartialTensorShape({-1}));
  EXPECT_EQ((*s)[2], PartialTensorShape({3}));
  s = InferShapes("DenseToDenseSetOperation", attrs,
                  {PartialTensorShape(), PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[2], PartialTensorShape({-1}));
  s = InferShapes("DenseToSparseSetOperation", attrs,
                  {PartialTensorShape(), PartialTensorShape({-1, -1}),
                   PartialTensorShape({-1}), PartialTensorShape({4})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 4}));
  s = InferShapes("SparseToSparseSetOperation", attrs,
                  {PartialTensorShape(), PartialTensorShape(),
                   PartialTensorShape(), PartialTensorShape({-1, 3}),
                   PartialTensorShape({-1}), PartialTensorShape({-1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[2], PartialTensorShape({3}));
  // Ranks that disagree.
  ExpectInvalid(
      InferShapes("DenseToSparseSetOperation", attrs,
                  {PartialTensorShape({2, 3}), PartialTensorShape({-1, 3}),
                   PartialTensorShape({-1}), PartialTensorShape({3})})
          .status(),
      "set1 has rank 2 but set2_shape has 3 elements");
  ExpectInvalid(
      InferShapes("SparseToSparseSetOperation", attrs,
                  {PartialTensorShape({-1, 2}), PartialTensorShape({-1}),
                   PartialTensorShape({2}), PartialTensorShape({-1, 3}),
                   PartialTensorShape({-1}), PartialTensorShape({3})})
          .status(),
      "set1_shape has 2 elements but set2_shape has 3");
}

// ---------------------------------------------------------------------------
// Errors

TEST(SetOpsErrorsTest, MismatchedLeadingDims) {
  const Tensor a = Dense<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Dense<int64_t>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto r = RunOnce<int64_t>(a, b, "union", true);
  ExpectInvalid(r.status(), "Mismatched shapes [2] vs [3]");
  ExpectInvalid(r.status(), "DenseToDenseSetOperation 'test_node'");
  OpTestCase t("DenseToDenseSetOperation");
  t.Attr("T", DT_INT64).Attr("set_operation", "union").Input(a).Input(b);
  ExpectInvalid(t.RunKernelOnly(), "Mismatched shapes [2] vs [3]");
  // Dense to sparse, sparse to sparse.
  const Sparse<int64_t> sp = RowsToSparse<int64_t>({{1}, {2}, {3}});
  ExpectInvalid(RunOnce<int64_t>(a, sp, "a-b", true).status(),
                "Mismatched shapes [2] vs [3]");
  ExpectInvalid(
      RunOnce<int64_t>(RowsToSparse<int64_t>({{1}, {2}}), sp, "a-b", true)
          .status(),
      "Mismatched shapes [2] vs [3]");
  // Different ranks.
  ExpectInvalid(
      RunOnce<int64_t>(a, Dense<int64_t>({2, 3, 1}, {1, 2, 3, 4, 5, 6}),
                       "union", true)
          .status(),
      "must have rank 2");
  OpTestCase k("DenseToDenseSetOperation");
  k.Attr("T", DT_INT64)
      .Attr("set_operation", "union")
      .Input(a)
      .Input(Dense<int64_t>({2, 3, 1}, {1, 2, 3, 4, 5, 6}));
  ExpectInvalid(k.RunKernelOnly(), "Mismatched shapes [2] vs [2,3]");
}

TEST(SetOpsErrorsTest, RankOne) {
  const Tensor a = Dense<int64_t>({3}, {1, 2, 3});
  ExpectInvalid(RunOnce<int64_t>(a, a, "union", true).status(),
                "must have rank at least 2");
  OpTestCase t("DenseToDenseSetOperation");
  t.Attr("T", DT_INT64).Attr("set_operation", "union").Input(a).Input(a);
  ExpectInvalid(t.RunKernelOnly(), "Shape [3] has rank 1 < 2");
  const Sparse<int64_t> sp = MakeSparse<int64_t>({{0}}, {1}, {3});
  ExpectInvalid(RunOnce<int64_t>(sp, sp, "union", true).status(),
                "Input 0, expected rank >= 2, got 1.");
  OpTestCase s("SparseToSparseSetOperation");
  s.Attr("T", DT_INT64).Attr("set_operation", "union");
  for (int i = 0; i < 2; ++i)
    s.Input(sp.indices).Input(sp.values).Input(sp.shape);
  ExpectInvalid(s.RunKernelOnly(), "Invalid rank 1.");
}

TEST(SetOpsErrorsTest, SparseIndicesOutOfOrderOrBounds) {
  const Tensor a = Dense<int64_t>({2, 2}, {1, 2, 3, 4});
  const Sparse<int64_t> unordered =
      MakeSparse<int64_t>({{1, 0}, {0, 0}}, {5, 6}, {2, 2});
  ExpectInvalid(RunOnce<int64_t>(a, unordered, "union", true).status(),
                "indices[1] = [0,0] is out of order. Many sparse ops require "
                "sorted indices.");
  // Without validation the order does not matter.
  auto r = RunOnce<int64_t>(a, unordered, "union", false);
  ASSERT_OK(r.status());
  ExpectResult<int64_t>(*r, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}},
                        {1, 2, 6, 3, 4, 5}, {2, 3});
  const Sparse<int64_t> outside =
      MakeSparse<int64_t>({{0, 0}, {2, 0}}, {5, 6}, {2, 2});
  ExpectInvalid(RunOnce<int64_t>(a, outside, "union", true).status(),
                "indices[1] = [2,0] is out of bounds: need 0 <= index < [2,2]");
  ExpectInvalid(RunOnce<int64_t>(a, outside, "union", false).status(),
                "indices[1, 0] expected < 2, got 2.");
  ExpectInvalid(
      RunOnce<int64_t>(outside, RowsToSparse<int64_t>({{1}, {2}}), "a-b", true)
          .status(),
      "is out of bounds");
  const Sparse<int64_t> repeated =
      MakeSparse<int64_t>({{0, 1}, {0, 1}}, {5, 6}, {2, 2});
  ExpectInvalid(RunOnce<int64_t>(a, repeated, "union", true).status(),
                "indices[1] = [0,1] is repeated");
}

TEST(SetOpsErrorsTest, BadSetOperation) {
  const Tensor a = Dense<int64_t>({1, 2}, {1, 2});
  for (const char* op : {"xor", "", "a - b"}) {
    auto r = RunOnce<int64_t>(a, a, op, true);
    ExpectInvalid(r.status(), absl::StrCat("Invalid set_operation ", op, "."));
  }
  OpTestCase t("DenseToDenseSetOperation");
  t.Attr("T", DT_INT64).Input(a).Input(a);
  EXPECT_FALSE(t.Run().ok());  // set_operation has no default.
}

TEST(SetOpsErrorsTest, BadSparseComponents) {
  const Tensor a = Dense<int64_t>({2, 2}, {1, 2, 3, 4});
  const auto run = [&](Tensor ix, Tensor v, Tensor shape) {
    OpTestCase t("DenseToSparseSetOperation");
    t.Attr("T", DT_INT64)
        .Attr("set_operation", "union")
        .Input(a)
        .Input(std::move(ix))
        .Input(std::move(v))
        .Input(std::move(shape));
    return t.RunKernelOnly();
  };
  const Tensor ix = I64({1, 2}, {0, 0});
  const Tensor v = Tensor::FromVector<int64_t>({1});
  const Tensor shape = Tensor::FromVector<int64_t>({2, 2});
  ExpectInvalid(run(ix, v, Tensor::Scalar<int64_t>(2)),
                "Shape must be a 1D tensor.");
  ExpectInvalid(run(ix, v, Tensor::FromVector<int64_t>({2, -2})),
                "negative dimension");
  ExpectInvalid(run(ix, I64({1, 1}, {1}), shape), "vals must be a vec");
  ExpectInvalid(run(Tensor::FromVector<int64_t>({0, 0}), v, shape),
                "indices must be a matrix");
  ExpectInvalid(run(ix, Tensor::FromVector<int64_t>({1, 2}), shape),
                "indices and values rows (indexing dimension) must match.");
  ExpectInvalid(run(I64({1, 3}, {0, 0, 0}), v, shape),
                "Shape rank must be SparseTensor rank.");
}

// Random, mostly invalid, sparse operands: a clean result or an
// InvalidArgument, never a crash or an Internal error.
TEST(SetOpsErrorsTest, RandomSparseInputs) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> small(-1, 3);
  for (int iter = 0; iter < 400; ++iter) {
    const int64_t rank = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    const int64_t rows = std::uniform_int_distribution<int64_t>(0, 5)(rng);
    std::vector<int64_t> ix(rows * rank), shape(rank);
    for (auto& x : ix) x = small(rng);
    for (auto& d : shape) d = small(rng) + 1;
    std::vector<int64_t> vals(rows);
    for (auto& x : vals) x = small(rng);
    const Tensor ix_t =
        Tensor::FromVector<int64_t>(ix, TensorShape({rows, rank}));
    for (bool validate : {true, false}) {
      OpTestCase t("SparseToSparseSetOperation");
      t.Attr("T", DT_INT64)
          .Attr("set_operation", iter % 2 ? "union" : "a-b")
          .Attr("validate_indices", validate);
      for (int k = 0; k < 2; ++k) {
        t.Input(ix_t)
            .Input(Tensor::FromVector<int64_t>(vals))
            .Input(Tensor::FromVector<int64_t>(shape));
      }
      Status s = t.Run();
      EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
          << s;
      auto z = SetSize<int64_t>(ix_t, Tensor::FromVector<int64_t>(vals),
                                Tensor::FromVector<int64_t>(shape), validate);
      EXPECT_TRUE(z.ok() ||
                  z.status().code() == absl::StatusCode::kInvalidArgument)
          << z.status();
    }
  }
}

// The kernel robustness test's inputs (empty, scalar, mismatched, negative,
// large) with a valid set_operation, which that test cannot choose.
TEST(SetOpsErrorsTest, RobustnessVariants) {
  struct Variant {
    TensorShape even, odd;
    int64_t value;
  };
  const Variant variants[] = {{TensorShape({0}), TensorShape({0}), 1},
                              {TensorShape({}), TensorShape({}), 1},
                              {TensorShape({}), TensorShape({}), 0},
                              {TensorShape({2, 3}), TensorShape({4}), 1},
                              {TensorShape({2, 3}), TensorShape({2}), -1},
                              {TensorShape({1}), TensorShape({1}), 100000}};
  for (const char* op :
       {"SetSize", "DenseToDenseSetOperation", "DenseToSparseSetOperation",
        "SparseToSparseSetOperation"}) {
    const int inputs = std::string(op) == "SetSize"                     ? 3
                       : std::string(op) == "DenseToDenseSetOperation"  ? 2
                       : std::string(op) == "DenseToSparseSetOperation" ? 4
                                                                        : 6;
    for (const Variant& v : variants) {
      OpTestCase t(op);
      t.Attr("T", DT_INT64);
      if (std::string(op) != "SetSize") t.Attr("set_operation", "union");
      for (int i = 0; i < inputs; ++i) {
        Tensor x(DT_INT64, i % 2 ? v.odd : v.even);
        for (auto& e : x.flat<int64_t>()) e = v.value;
        t.Input(x);
      }
      for (bool kernel_only : {true, false}) {
        const Status s = kernel_only ? t.RunKernelOnly() : t.Run();
        EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
            << op << ": " << s;
      }
    }
  }
}

}  // namespace
}  // namespace runnel
