// Set operations (TensorFlow's set_ops.cc, behind tf.sets): SetSize,
// DenseToDenseSetOperation, DenseToSparseSetOperation and
// SparseToSparseSetOperation.
//
// Note [Sets in the last dimension]. An input of rank n >= 2 is a batch of
// sets: its first n-1 dimensions (the group shape) index a set, and the last
// holds that set's elements, duplicates allowed. A sparse input is the
// triple (indices [N, n], values [N], shape [n]); its set at group g is the
// values of the rows whose first n-1 indices are g (the last index only
// orders them), so sparse sets may have different sizes. The two inputs of
// an operation must have the same group shape; their last dimensions may
// differ. The result is a SparseTensor: for every group whose result is not
// empty, its elements in ascending order at positions 0, 1, ... of the last
// dimension, groups in row-major order; the last dimension of result_shape
// is the size of the largest result set (0 when all are empty).
//
// With validate_indices (the default) sparse indices must lie within the
// shape and be in strictly increasing row-major order, as TF's
// SparseTensor::IndicesValid checks. Without it, rows may come in any order
// (they are grouped by their index; TF assumes the order and then gives
// unspecified results), but an index outside the shape is still an error:
// the kernels never read or write outside their tensors.
//
// None of these ops is differentiable: their outputs are indices, sizes and
// values selected from the inputs by comparisons.
#include <algorithm>
#include <compare>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

constexpr char kSetTypes[] =
    "T: {int8, int16, int32, int64, uint8, uint16, string}";

// ---------------------------------------------------------------------------
// Shape functions

// The sparse tensor at inputs [i, i + 3), named `name`_indices, ...: checks
// indices [N, rank], values [N] and shape [rank] (TF's ValidateSparseTensor)
// and sets *rank to its rank, -1 if unknown.
Status SparseRank(InferenceContext* c, int i, const char* name, int64_t* rank) {
  PartialTensorShape indices, values, shape;
  RETURN_IF_ERROR(c->WithRank(i, 2, &indices));
  RETURN_IF_ERROR(c->WithRank(i + 1, 1, &values));
  RETURN_IF_ERROR(c->WithRank(i + 2, 1, &shape));
  const int64_t rows = indices.dim_size(0), num_values = values.dim_size(0);
  if (rows >= 0 && num_values >= 0 && rows != num_values) {
    return c->InvalidArgument(name, "_indices has ", rows, " rows but ", name,
                              "_values has ", num_values, " elements");
  }
  const int64_t cols = indices.dim_size(1), dims = shape.dim_size(0);
  if (cols >= 0 && dims >= 0 && cols != dims) {
    return c->InvalidArgument(name, "_indices has ", cols, " columns but ",
                              name, "_shape has ", dims, " elements");
  }
  *rank = cols >= 0 ? cols : dims;
  return absl::OkStatus();
}

Status CheckSparseRankAtLeast2(InferenceContext* c, int input, int64_t rank) {
  if (rank >= 0 && rank < 2) {
    return c->InvalidArgument("Input ", input, ", expected rank >= 2, got ",
                              rank, ".");
  }
  return absl::OkStatus();
}

// result_indices [?, rank], result_values [?], result_shape [rank]; rank -1
// if unknown.
Status SetResultShapes(InferenceContext* c, int64_t rank) {
  c->set_output(0, PartialTensorShape({-1, rank}));
  c->set_output(1, PartialTensorShape({-1}));
  c->set_output(2, PartialTensorShape({rank}));
  return absl::OkStatus();
}

Status DenseToDenseShape(InferenceContext* c) {
  PartialTensorShape set1, set2;
  RETURN_IF_ERROR(c->WithRankAtLeast(0, 2, &set1));
  if (set1.unknown_rank()) {
    RETURN_IF_ERROR(c->WithRankAtLeast(1, 2, &set2));
    return SetResultShapes(c, set2.dims());
  }
  const int rank = set1.dims();
  RETURN_IF_ERROR(c->WithRank(1, rank, &set2));
  const PartialTensorShape group1(set1.dim_sizes().subspan(0, rank - 1));
  const PartialTensorShape group2(set2.dim_sizes().subspan(0, rank - 1));
  if (!group1.IsCompatibleWith(group2)) {
    return c->InvalidArgument("Mismatched shapes ", group1.DebugString(),
                              " vs ", group2.DebugString(),
                              ": set1 and set2 must agree in all but the "
                              "last dimension");
  }
  return SetResultShapes(c, rank);
}

Status DenseToSparseShape(InferenceContext* c) {
  int64_t rank2;
  RETURN_IF_ERROR(SparseRank(c, 1, "set2", &rank2));
  RETURN_IF_ERROR(CheckSparseRankAtLeast2(c, 1, rank2));
  PartialTensorShape set1;
  RETURN_IF_ERROR(c->WithRankAtLeast(0, 2, &set1));
  if (set1.unknown_rank()) return SetResultShapes(c, rank2);
  if (rank2 >= 0 && rank2 != set1.dims()) {
    return c->InvalidArgument("set1 has rank ", set1.dims(),
                              " but set2_shape has ", rank2, " elements");
  }
  return SetResultShapes(c, set1.dims());
}

Status SparseToSparseShape(InferenceContext* c) {
  int64_t rank1, rank2;
  RETURN_IF_ERROR(SparseRank(c, 0, "set1", &rank1));
  RETURN_IF_ERROR(SparseRank(c, 3, "set2", &rank2));
  RETURN_IF_ERROR(CheckSparseRankAtLeast2(c, 0, rank1));
  RETURN_IF_ERROR(CheckSparseRankAtLeast2(c, 1, rank2));
  if (rank1 >= 0 && rank2 >= 0 && rank1 != rank2) {
    return c->InvalidArgument("set1_shape has ", rank1,
                              " elements but set2_shape has ", rank2);
  }
  return SetResultShapes(c, rank1 >= 0 ? rank1 : rank2);
}

// set_shape[:-1]: exact when set_shape's value is known.
Status SetSizeShape(InferenceContext* c) {
  int64_t rank;
  RETURN_IF_ERROR(SparseRank(c, 0, "set", &rank));
  RETURN_IF_ERROR(CheckSparseRankAtLeast2(c, 0, rank));
  std::vector<int64_t> shape;
  if (c->GetConstInts(2, &shape) && shape.size() >= 2 &&
      std::all_of(shape.begin(), shape.end(),
                  [](int64_t d) { return d >= 0; })) {
    c->set_output(0, PartialTensorShape(absl::MakeConstSpan(shape).subspan(
                         0, shape.size() - 1)));
  } else if (rank >= 2) {
    c->set_output(0, PartialTensorShape::UnknownDims(rank - 1));
  } else {
    c->set_output(0, PartialTensorShape::UnknownRank());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Kernel helpers

enum class SetOperation { kAMinusB, kBMinusA, kIntersection, kUnion };

// TF's spelling, case-insensitive.
Status ParseSetOperation(std::string s, SetOperation* op) {
  absl::AsciiStrToLower(&s);
  if (s == "a-b") {
    *op = SetOperation::kAMinusB;
  } else if (s == "b-a") {
    *op = SetOperation::kBMinusA;
  } else if (s == "intersection") {
    *op = SetOperation::kIntersection;
  } else if (s == "union") {
    *op = SetOperation::kUnion;
  } else {
    return errors::InvalidArgument(
        "Invalid set_operation ", s,
        ". Expected one of \"a-b\", \"b-a\", \"intersection\", \"union\".");
  }
  return absl::OkStatus();
}

// The first n-1 dims of a rank-n shape (Note [Sets in the last dimension]).
Status GroupShape(absl::Span<const int64_t> shape, DimVector* group) {
  if (shape.size() < 2) {
    return errors::InvalidArgument("Shape [", absl::StrJoin(shape, ","),
                                   "] has rank ", shape.size(), " < 2");
  }
  group->assign(shape.begin(), shape.end() - 1);
  return absl::OkStatus();
}

// The group shape both inputs share; TF's messages.
Status GroupShapeFromInputs(absl::Span<const int64_t> shape1,
                            absl::Span<const int64_t> shape2,
                            DimVector* group) {
  DimVector group1, group2;
  RETURN_IF_ERROR(GroupShape(shape1, &group1));
  RETURN_IF_ERROR(GroupShape(shape2, &group2));
  if (group1 != group2) {
    return errors::InvalidArgument("Mismatched shapes [",
                                   absl::StrJoin(group1, ","), "] vs [",
                                   absl::StrJoin(group2, ","), "]");
  }
  // Group indices are flattened row-major: their product must fit (TF
  // builds the result's TensorShape from it).
  RETURN_IF_ERROR(TensorShape::FromDims(group1).status());
  *group = std::move(group1);
  return absl::OkStatus();
}

// A validated sparse input: indices [rows, rank] within `shape`.
struct SparseInput {
  const int64_t* indices = nullptr;
  int64_t rows = 0;
  int rank = 0;
  const Tensor* values = nullptr;
  TensorShape shape;
};

std::string IndexString(const int64_t* row, int rank) {
  return absl::StrCat("[", absl::StrJoin(absl::MakeConstSpan(row, rank), ","),
                      "]");
}

// Reads and checks the sparse tensor at inputs [base, base + 3), with TF's
// messages (SparseTensor::Create and IndicesValid).
Status ReadSparse(OpKernelContext* ctx, int base, bool validate_indices,
                  SparseInput* st) {
  const Tensor& indices = ctx->input(base);
  const Tensor& values = ctx->input(base + 1);
  const Tensor& shape_t = ctx->input(base + 2);
  if (shape_t.dims() != 1) {
    return errors::InvalidArgument("Shape must be a 1D tensor. Got shape ",
                                   shape_t.shape().DebugString());
  }
  ASSIGN_OR_RETURN(st->shape, TensorShape::FromDims(shape_t.flat<int64_t>()));
  if (st->shape.dims() < 2) {
    return errors::InvalidArgument("Invalid rank ", st->shape.dims(), ".");
  }
  if (values.dims() != 1) {
    return errors::InvalidArgument("vals must be a vec, but got: ",
                                   values.shape().DebugString());
  }
  if (indices.dims() != 2) {
    return errors::InvalidArgument("indices must be a matrix, but got: ",
                                   indices.shape().DebugString());
  }
  if (indices.dim_size(0) != values.dim_size(0)) {
    return errors::InvalidArgument(
        "indices and values rows (indexing dimension) must match. (indices = ",
        indices.dim_size(0), ", values = ", values.dim_size(0), ")");
  }
  if (indices.dim_size(1) != st->shape.dims()) {
    return errors::InvalidArgument(
        "Shape rank must be SparseTensor rank. (indices = ",
        indices.shape().DebugString(), ", shape = ", st->shape.DebugString(),
        ")");
  }
  st->indices = indices.data<int64_t>();
  st->rows = indices.dim_size(0);
  st->rank = st->shape.dims();
  st->values = &values;
  const absl::Span<const int64_t> dims = st->shape.dim_sizes();
  const int r = st->rank;
  for (int64_t n = 0; n < st->rows; ++n) {
    const int64_t* row = st->indices + n * r;
    for (int d = 0; d < r; ++d) {
      if (row[d] >= 0 && row[d] < dims[d]) continue;
      if (validate_indices) {
        return errors::InvalidArgument("indices[", n,
                                       "] = ", IndexString(row, r),
                                       " is out of bounds: need 0 <= index < [",
                                       absl::StrJoin(dims, ","), "]");
      }
      // TF's message when it does not validate (there an Internal error).
      const std::string want =
          row[d] < 0 ? ">= 0" : absl::StrCat("< ", dims[d]);
      return errors::InvalidArgument("indices[", n, ", ", d, "] expected ",
                                     want, ", got ", row[d], ".");
    }
    if (!validate_indices || n == 0) continue;
    const int64_t* prev = row - r;
    const auto cmp =
        std::lexicographical_compare_three_way(prev, prev + r, row, row + r);
    if (cmp > 0) {
      return errors::InvalidArgument(
          "indices[", n, "] = ", IndexString(row, r),
          " is out of order. Many sparse ops require sorted indices.\n"
          "    Use `tf.sparse.reorder` to create a correctly ordered copy."
          "\n\n");
    }
    if (cmp == 0) {
      return errors::InvalidArgument("indices[", n, "] = ", IndexString(row, r),
                                     " is repeated");
    }
  }
  return absl::OkStatus();
}

// The non-empty sets of one input: for each, in ascending order of its
// row-major group index `key`, its distinct elements sorted ascending.
template <typename T>
struct Groups {
  std::vector<int64_t> keys;
  std::vector<size_t> starts{0};  // keys.size() + 1 offsets into values.
  std::vector<T> values;

  size_t size() const { return keys.size(); }
  absl::Span<const T> set(size_t i) const {
    return absl::MakeConstSpan(values).subspan(starts[i],
                                               starts[i + 1] - starts[i]);
  }
  // Adds group `key` (greater than every key so far) with `elems` (any order,
  // duplicates allowed), if any.
  void Add(int64_t key, std::vector<T>* elems) {
    std::sort(elems->begin(), elems->end());
    elems->erase(std::unique(elems->begin(), elems->end()), elems->end());
    AddSorted(key, *elems);
  }
  void AddSorted(int64_t key, const std::vector<T>& elems) {
    if (elems.empty()) return;
    keys.push_back(key);
    values.insert(values.end(), elems.begin(), elems.end());
    starts.push_back(values.size());
  }
};

// The sets of a dense input of rank >= 2: one per row of its last dim.
template <typename T>
Groups<T> GroupDense(const Tensor& t) {
  Groups<T> out;
  const int64_t len = t.dim_size(t.dims() - 1);
  // Empty rows add nothing; with len 0 the group count need not be small.
  if (len == 0) return out;
  const int64_t num_groups = t.NumElements() / len;
  const T* x = t.data<T>();
  std::vector<T> elems;
  for (int64_t g = 0; g < num_groups; ++g) {
    elems.assign(x + g * len, x + (g + 1) * len);
    out.Add(g, &elems);
  }
  return out;
}

// The sets of a validated sparse input, whose shape's first rank-1 dims are
// the group shape. Rows of a group need not be adjacent.
template <typename T>
Groups<T> GroupSparse(const SparseInput& st) {
  Groups<T> out;
  if (st.rows == 0) return out;
  // Some row lies within the shape, so no dim is 0 and the product of the
  // dims (checked to fit when the shape was read) bounds every stride.
  const int g = st.rank - 1;
  std::vector<int64_t> strides(g);
  int64_t stride = 1;
  for (int d = g - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= st.shape.dim_size(d);
  }
  std::vector<int64_t> keys(st.rows);
  for (int64_t n = 0; n < st.rows; ++n) {
    const int64_t* row = st.indices + n * st.rank;
    int64_t key = 0;
    for (int d = 0; d < g; ++d) key += row[d] * strides[d];
    keys[n] = key;
  }
  std::vector<int64_t> order(st.rows);
  std::iota(order.begin(), order.end(), 0);
  if (!std::is_sorted(keys.begin(), keys.end())) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  }
  const T* v = st.values->data<T>();
  std::vector<T> elems;
  for (int64_t begin = 0; begin < st.rows;) {
    const int64_t key = keys[order[begin]];
    elems.clear();
    int64_t end = begin;
    for (; end < st.rows && keys[order[end]] == key; ++end) {
      elems.push_back(v[order[end]]);
    }
    out.Add(key, &elems);
    begin = end;
  }
  return out;
}

// `op` applied group by group; a group missing from one side is empty there.
template <typename T>
Groups<T> Apply(SetOperation op, const Groups<T>& a, const Groups<T>& b) {
  Groups<T> out;
  std::vector<T> result;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const int64_t key = j == b.size() || (i < a.size() && a.keys[i] < b.keys[j])
                            ? a.keys[i]
                            : b.keys[j];
    absl::Span<const T> x, y;
    if (i < a.size() && a.keys[i] == key) x = a.set(i++);
    if (j < b.size() && b.keys[j] == key) y = b.set(j++);
    result.clear();
    auto dst = std::back_inserter(result);
    switch (op) {
      case SetOperation::kAMinusB:
        std::set_difference(x.begin(), x.end(), y.begin(), y.end(), dst);
        break;
      case SetOperation::kBMinusA:
        std::set_difference(y.begin(), y.end(), x.begin(), x.end(), dst);
        break;
      case SetOperation::kIntersection:
        std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), dst);
        break;
      case SetOperation::kUnion:
        std::set_union(x.begin(), x.end(), y.begin(), y.end(), dst);
        break;
    }
    out.AddSorted(key, result);
  }
  return out;
}

// Writes `sets` as the SparseTensor outputs (result_indices, result_values,
// result_shape) of group shape `group`.
template <typename T>
void OutputSets(OpKernelContext* ctx, absl::Span<const int64_t> group,
                const Groups<T>& sets) {
  const int64_t n = static_cast<int64_t>(sets.values.size());
  const int rank = static_cast<int>(group.size()) + 1;
  Tensor *indices_t, *values_t, *shape_t;
  OP_REQUIRES_OK(ctx,
                 ctx->allocate_output(0, TensorShape({n, rank}), &indices_t));
  OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n}), &values_t));
  OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({rank}), &shape_t));
  int64_t* indices = indices_t->data<int64_t>();
  T* values = values_t->data<T>();
  int64_t max_size = 0;
  std::vector<int64_t> coords(rank - 1);
  for (size_t i = 0; i < sets.size(); ++i) {
    int64_t key = sets.keys[i];
    for (int d = rank - 2; d >= 0; --d) {
      coords[d] = key % group[d];
      key /= group[d];
    }
    const absl::Span<const T> set = sets.set(i);
    const int64_t size = static_cast<int64_t>(set.size());
    max_size = std::max(max_size, size);
    for (int64_t k = 0; k < size; ++k) {
      std::copy(coords.begin(), coords.end(), indices);
      indices[rank - 1] = k;
      indices += rank;
      *values++ = set[k];
    }
  }
  int64_t* shape = shape_t->data<int64_t>();
  std::copy(group.begin(), group.end(), shape);
  shape[rank - 1] = max_size;
}

// ---------------------------------------------------------------------------
// SetSize

REGISTER_OP("SetSize")
    .Input("set_indices: int64")
    .Input("set_values: T")
    .Input("set_shape: int64")
    .Attr("validate_indices: bool = true")
    .Attr(kSetTypes)
    .Output("size: int32")
    .SetShapeFn(SetSizeShape)
    .Doc(R"doc(Number of unique elements along last dimension of input `set`.

`set` is a SparseTensor (set_indices [N, n], set_values [N], set_shape [n],
n >= 2) in row-major order; its last dimension holds the sets (Note [Sets in
the last dimension] in runnel/ops/set_ops.cc). size has shape set_shape[:-1]:
size[i_0, ..., i_{n-2}] is the number of distinct values in that set, 0 where
it has none. With validate_indices, indices must be within set_shape and in
strictly increasing row-major order.)doc");

template <typename T>
class SetSizeKernel : public OpKernel {
 public:
  explicit SetSizeKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("validate_indices", &validate_indices_));
  }

  void Compute(OpKernelContext* ctx) override {
    SparseInput set;
    OP_REQUIRES_OK(ctx, ReadSparse(ctx, 0, validate_indices_, &set));
    DimVector group;
    OP_REQUIRES_OK(ctx, GroupShape(set.shape.dim_sizes(), &group));
    auto out_shape = TensorShape::FromDims(group);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out_t));
    const absl::Span<int32_t> out = out_t->flat<int32_t>();
    std::fill(out.begin(), out.end(), 0);
    const Groups<T> sets = GroupSparse<T>(set);
    for (size_t i = 0; i < sets.size(); ++i) {
      out[sets.keys[i]] = static_cast<int32_t>(sets.set(i).size());
    }
  }

 private:
  bool validate_indices_ = true;
};

// ---------------------------------------------------------------------------
// DenseToDenseSetOperation, DenseToSparseSetOperation,
// SparseToSparseSetOperation

constexpr char kSetOperationDoc[] = R"doc(

set_operation is "a-b" (elements of set1 not in set2), "b-a", "intersection"
or "union", case-insensitive; any other is an InvalidArgument when the kernel
is built. Each input holds its sets in its last dimension, and both must have
the same shape in all others (Note [Sets in the last dimension] in
runnel/ops/set_ops.cc). The result is a SparseTensor of the same rank:
result_indices [N, rank], result_values [N] (each set's elements ascending)
and result_shape [rank], whose last element is the largest result set's
size.)doc";

class SetOperationKernel : public OpKernel {
 public:
  explicit SetOperationKernel(OpKernelConstruction* c) : OpKernel(c) {
    std::string op;
    OP_REQUIRES_OK(c, c->GetAttr("set_operation", &op));
    OP_REQUIRES_OK(c, ParseSetOperation(op, &op_));
    OP_REQUIRES_OK(c, c->GetAttr("validate_indices", &validate_indices_));
  }

 protected:
  SetOperation op_ = SetOperation::kUnion;
  bool validate_indices_ = true;
};

REGISTER_OP("DenseToDenseSetOperation")
    .Input("set1: T")
    .Input("set2: T")
    .Attr("set_operation: string")
    .Attr("validate_indices: bool = true")
    .Attr(kSetTypes)
    .Output("result_indices: int64")
    .Output("result_values: T")
    .Output("result_shape: int64")
    .SetShapeFn(DenseToDenseShape)
    .Doc(absl::StrCat(
        "Applies set operation along last dimension of 2 `Tensor` inputs.\n"
        "set1 and set2 are dense, of rank n >= 2; their last dimensions may "
        "differ.",
        kSetOperationDoc));

template <typename T>
class DenseToDenseKernel : public SetOperationKernel {
 public:
  using SetOperationKernel::SetOperationKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& set1 = ctx->input(0);
    const Tensor& set2 = ctx->input(1);
    DimVector group;
    OP_REQUIRES_OK(ctx, GroupShapeFromInputs(set1.shape().dim_sizes(),
                                             set2.shape().dim_sizes(), &group));
    OutputSets<T>(ctx, group,
                  Apply(op_, GroupDense<T>(set1), GroupDense<T>(set2)));
  }
};

REGISTER_OP("DenseToSparseSetOperation")
    .Input("set1: T")
    .Input("set2_indices: int64")
    .Input("set2_values: T")
    .Input("set2_shape: int64")
    .Attr("set_operation: string")
    .Attr("validate_indices: bool = true")
    .Attr(kSetTypes)
    .Output("result_indices: int64")
    .Output("result_values: T")
    .Output("result_shape: int64")
    .SetShapeFn(DenseToSparseShape)
    .Doc(absl::StrCat(
        "Applies set operation along last dimension of `Tensor` and "
        "`SparseTensor`.\n"
        "set1 is dense, of rank n >= 2; set2 a SparseTensor (set2_indices "
        "[N, n], set2_values [N], set2_shape [n]) in row-major order. With "
        "validate_indices, set2's indices must be within set2_shape and in "
        "strictly increasing row-major order.",
        kSetOperationDoc));

template <typename T>
class DenseToSparseKernel : public SetOperationKernel {
 public:
  using SetOperationKernel::SetOperationKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& set1 = ctx->input(0);
    SparseInput set2;
    OP_REQUIRES_OK(ctx, ReadSparse(ctx, 1, validate_indices_, &set2));
    DimVector group;
    OP_REQUIRES_OK(ctx, GroupShapeFromInputs(set1.shape().dim_sizes(),
                                             set2.shape.dim_sizes(), &group));
    OutputSets<T>(ctx, group,
                  Apply(op_, GroupDense<T>(set1), GroupSparse<T>(set2)));
  }
};

REGISTER_OP("SparseToSparseSetOperation")
    .Input("set1_indices: int64")
    .Input("set1_values: T")
    .Input("set1_shape: int64")
    .Input("set2_indices: int64")
    .Input("set2_values: T")
    .Input("set2_shape: int64")
    .Attr("set_operation: string")
    .Attr("validate_indices: bool = true")
    .Attr(kSetTypes)
    .Output("result_indices: int64")
    .Output("result_values: T")
    .Output("result_shape: int64")
    .SetShapeFn(SparseToSparseShape)
    .Doc(absl::StrCat(
        "Applies set operation along last dimension of 2 `SparseTensor` "
        "inputs.\n"
        "set1 and set2 are SparseTensors (indices [N, n], values [N], shape "
        "[n], n >= 2) in row-major order. With validate_indices, their "
        "indices must be within their shapes and in strictly increasing "
        "row-major order.",
        kSetOperationDoc));

template <typename T>
class SparseToSparseKernel : public SetOperationKernel {
 public:
  using SetOperationKernel::SetOperationKernel;

  void Compute(OpKernelContext* ctx) override {
    SparseInput set1, set2;
    OP_REQUIRES_OK(ctx, ReadSparse(ctx, 0, validate_indices_, &set1));
    OP_REQUIRES_OK(ctx, ReadSparse(ctx, 3, validate_indices_, &set2));
    DimVector group;
    OP_REQUIRES_OK(ctx, GroupShapeFromInputs(set1.shape.dim_sizes(),
                                             set2.shape.dim_sizes(), &group));
    OutputSets<T>(ctx, group,
                  Apply(op_, GroupSparse<T>(set1), GroupSparse<T>(set2)));
  }
};

#define REGISTER_SET_KERNELS(T)                                  \
  REGISTER_KERNEL_BUILDER(                                       \
      Name("SetSize").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      SetSizeKernel<T>);                                         \
  REGISTER_KERNEL_BUILDER(Name("DenseToDenseSetOperation")       \
                              .Device(kDeviceCpu)                \
                              .TypeConstraint<T>("T"),           \
                          DenseToDenseKernel<T>);                \
  REGISTER_KERNEL_BUILDER(Name("DenseToSparseSetOperation")      \
                              .Device(kDeviceCpu)                \
                              .TypeConstraint<T>("T"),           \
                          DenseToSparseKernel<T>);               \
  REGISTER_KERNEL_BUILDER(Name("SparseToSparseSetOperation")     \
                              .Device(kDeviceCpu)                \
                              .TypeConstraint<T>("T"),           \
                          SparseToSparseKernel<T>)
REGISTER_SET_KERNELS(int8_t);
REGISTER_SET_KERNELS(int16_t);
REGISTER_SET_KERNELS(int32_t);
REGISTER_SET_KERNELS(int64_t);
REGISTER_SET_KERNELS(uint8_t);
REGISTER_SET_KERNELS(uint16_t);
REGISTER_SET_KERNELS(tstring);
#undef REGISTER_SET_KERNELS

REGISTER_NO_GRADIENT("SetSize", "an integer count of distinct values");
REGISTER_NO_GRADIENT("DenseToDenseSetOperation",
                     "selects and sorts values by comparison");
REGISTER_NO_GRADIENT("DenseToSparseSetOperation",
                     "selects and sorts values by comparison");
REGISTER_NO_GRADIENT("SparseToSparseSetOperation",
                     "selects and sorts values by comparison");

}  // namespace
}  // namespace runnel
