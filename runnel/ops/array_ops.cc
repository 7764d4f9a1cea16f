// The array op family: ops that make, re-view, join and split tensors without
// arithmetic on their elements (Const, Placeholder, Identity, Reshape,
// ConcatV2, Split, Pack, ...), plus Fill, ZerosLike, OnesLike and Range.
//
// Note [Sharing, not copying]: kernels that only change metadata (Const,
// Identity, Reshape, Squeeze, ExpandDims) output a Tensor sharing the input's
// buffer, and Split/SplitV/Unpack output 64-byte-aligned sub-buffers when every
// piece is one contiguous block. A shared buffer never has a reference count
// of one, so the executor never forwards it to an in-place consumer while
// another tensor still reads it.
//
// Note [Column copies]: ConcatV2 and Pack view input i as a [rows, cols_i]
// matrix and the output as [rows, sum(cols_i)]; Split, SplitV and Unpack do
// the reverse. One routine (MoveColumns) moves those blocks for every dtype:
// POD elements as bytes with memcpy, strings by assignment.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"

namespace runnel {
namespace {

using absl::Span;

// ---------------------------------------------------------------------------
// Shared helpers

int64_t ElementBytes(DataType dt) {
  return dt == DT_STRING ? static_cast<int64_t>(sizeof(tstring))
                         : DataTypeSize(dt);
}

// Rough ParallelFor cost (ns) of moving one element.
int64_t CopyCost(DataType dt) {
  return dt == DT_STRING ? 20 : std::max<int64_t>(1, DataTypeSize(dt) / 8);
}

// Rejects user-sized outputs (Fill, Range) whose byte size the allocator
// could not represent.
Status CheckByteSize(DataType dt, const TensorShape& shape) {
  const int64_t per = std::max<int64_t>(1, ElementBytes(dt));
  if (shape.num_elements() > (int64_t{1} << 60) / per) {
    return errors::InvalidArgument("output shape ", shape.DebugString(), " of ",
                                   DataTypeString(dt),
                                   " is too large to allocate");
  }
  return absl::OkStatus();
}

// The values of an int32 or int64 tensor.
std::vector<int64_t> IntValues(const Tensor& t) {
  std::vector<int64_t> v;
  v.reserve(static_cast<size_t>(t.NumElements()));
  if (t.dtype() == DT_INT32) {
    for (int32_t x : t.flat<int32_t>()) v.push_back(x);
  } else if (t.dtype() == DT_INT64) {
    for (int64_t x : t.flat<int64_t>()) v.push_back(x);
  }
  return v;
}

// Product of dims [begin, end) of `s`.
int64_t DimProduct(const TensorShape& s, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= s.dim_size(i);
  return n;
}

std::string AxisRange(int64_t rank) {
  return absl::StrCat("[", -rank, ", ", rank, ")");
}

// True if `axis` lies in [-rank, rank); stores it made non-negative.
bool CanonicalAxis(int64_t axis, int64_t rank, int* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = static_cast<int>(axis < 0 ? axis + rank : axis);
  return true;
}

// Shape-function helper: input i's value as one integer, when it is a known
// int32/int64 tensor with a single element.
bool ConstScalar(const InferenceContext& c, int i, int64_t* v) {
  std::vector<int64_t> vals;
  if (!c.GetConstInts(i, &vals) || vals.size() != 1) return false;
  *v = vals[0];
  return true;
}

// --- Column copies (Note [Column copies]) ---

template <typename E>
void CopyElements(E* dst, const E* src, int64_t n, int64_t scale) {
  if constexpr (std::is_same_v<E, char>) {
    std::memcpy(dst, src, static_cast<size_t>(n * scale));
  } else {
    std::copy(src, src + n, dst);
  }
}

// Moves data between `whole`, a [rows, offsets.back()] matrix, and `pieces`,
// piece i being a [rows, offsets[i+1] - offsets[i]] matrix: pieces -> whole
// when `gather`, whole -> pieces otherwise. E is char for POD elements of
// `scale` bytes, or tstring (scale 1). Work is split by output element, so
// both one huge piece and many small rows use every core.
template <typename E>
void MoveColumns(ThreadPool* pool, int64_t cost, int64_t rows,
                 Span<const int64_t> offsets, int64_t scale, E* whole,
                 Span<E* const> pieces, bool gather) {
  const int64_t cols = offsets.back();
  if (rows == 0 || cols == 0) return;
  pool->ParallelFor(rows * cols, cost, [&](int64_t begin, int64_t end) {
    int64_t pos = begin;
    while (pos < end) {
      const int64_t r = pos / cols, c = pos % cols;
      // The last piece starting at or before c is non-empty and holds c.
      const size_t i = std::upper_bound(offsets.begin(), offsets.end(), c) -
                       offsets.begin() - 1;
      const int64_t width = offsets[i + 1] - offsets[i];
      const int64_t n = std::min(offsets[i + 1] - c, end - pos);
      E* w = whole + pos * scale;
      E* p = pieces[i] + (r * width + (c - offsets[i])) * scale;
      if (gather) {
        CopyElements(w, p, n, scale);
      } else {
        CopyElements(p, w, n, scale);
      }
      pos += n;
    }
  });
}

void MoveColumnsOfType(OpKernelContext* ctx, DataType dt, int64_t rows,
                       Span<const int64_t> offsets, void* whole,
                       const std::vector<void*>& pieces, bool gather) {
  ThreadPool* pool = ctx->intra_op_threadpool();
  if (dt == DT_STRING) {
    std::vector<tstring*> p;
    for (void* x : pieces) p.push_back(static_cast<tstring*>(x));
    MoveColumns<tstring>(pool, CopyCost(dt), rows, offsets, 1,
                         static_cast<tstring*>(whole), p, gather);
  } else {
    std::vector<char*> p;
    for (void* x : pieces) p.push_back(static_cast<char*>(x));
    MoveColumns<char>(pool, CopyCost(dt), rows, offsets, DataTypeSize(dt),
                      static_cast<char*>(whole), p, gather);
  }
}

std::vector<int64_t> Offsets(Span<const int64_t> cols) {
  std::vector<int64_t> offsets(cols.size() + 1, 0);
  for (size_t i = 0; i < cols.size(); ++i)
    offsets[i + 1] = offsets[i] + cols[i];
  return offsets;
}

// Output 0 of shape `out_shape` := inputs[i] viewed as [rows, cols[i]], joined
// column-wise.
void GatherColumns(OpKernelContext* ctx,
                   const std::vector<const Tensor*>& inputs, int64_t rows,
                   Span<const int64_t> cols, const TensorShape& out_shape) {
  // A join where only one input holds data is that input (Note [Sharing, not
  // copying]).
  int nonempty = -1, count = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->NumElements() > 0) {
      nonempty = static_cast<int>(i);
      ++count;
    }
  }
  if (count == 1 &&
      inputs[nonempty]->NumElements() == out_shape.num_elements()) {
    Tensor out;
    out.CopyFrom(*inputs[nonempty], out_shape);
    ctx->set_output(0, std::move(out));
    return;
  }
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
  std::vector<void*> pieces;
  for (const Tensor* t : inputs) pieces.push_back(t->raw_data());
  MoveColumnsOfType(ctx, out->dtype(), rows, Offsets(cols), out->raw_data(),
                    pieces, /*gather=*/true);
}

// Outputs i of shape out_shapes[i] := `input` viewed as [rows, sum(cols)],
// split column-wise into [rows, cols[i]] pieces.
void ScatterColumns(OpKernelContext* ctx, const Tensor& input, int64_t rows,
                    Span<const int64_t> cols,
                    Span<const TensorShape> out_shapes) {
  const std::vector<int64_t> offsets = Offsets(cols);
  const int64_t elem = ElementBytes(input.dtype());
  if (rows == 1) {
    // Each piece is a contiguous block: share it if it stays aligned.
    const auto base = reinterpret_cast<uintptr_t>(input.raw_data());
    bool aligned = true;
    for (size_t i = 0; i < cols.size(); ++i) {
      aligned &=
          cols[i] == 0 || (base + offsets[i] * elem) % kAllocatorAlignment == 0;
    }
    if (aligned) {
      Tensor flat;
      flat.CopyFrom(input, TensorShape({offsets.back()}));
      for (size_t i = 0; i < cols.size(); ++i) {
        Tensor out;
        out.CopyFrom(flat.Slice(offsets[i], offsets[i + 1]), out_shapes[i]);
        ctx->set_output(static_cast<int>(i), std::move(out));
      }
      return;
    }
  }
  std::vector<void*> pieces;
  for (size_t i = 0; i < cols.size(); ++i) {
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(static_cast<int>(i), out_shapes[i], &out));
    pieces.push_back(out->raw_data());
  }
  MoveColumnsOfType(ctx, input.dtype(), rows, offsets, input.raw_data(), pieces,
                    /*gather=*/false);
}

// A cheap kernel that forwards every input to the same-numbered output
// (Identity, IdentityN, PlaceholderWithDefault).
class IdentityKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      ctx->set_output(i, ctx->input_value(i));
    }
  }
};

// ---------------------------------------------------------------------------
// Const

Status ConstShape(InferenceContext* c) {
  auto it = c->attrs().find("value");
  if (it == c->attrs().end() || it->second.value_case() != AttrValue::kTensor) {
    return c->InvalidArgument("attr 'value' must be a tensor");
  }
  auto shape = TensorShape::FromProto(it->second.tensor().tensor_shape());
  if (!shape.ok()) {
    return c->InvalidArgument("attr 'value': ", shape.status().message());
  }
  c->set_output(0, *shape);
  return absl::OkStatus();
}

REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape)
    .Doc("Returns a constant tensor: the value of attr `value`.");

class ConstKernel : public OpKernel {
 public:
  explicit ConstKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("value", &value_));
    OP_REQUIRES(
        c, value_.dtype() == c->output_types()[0],
        errors::InvalidArgument("Type mismatch between value (",
                                DataTypeString(value_.dtype()), ") and dtype (",
                                DataTypeString(c->output_types()[0]), ")"));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }

 private:
  Tensor value_;
};
REGISTER_KERNEL_BUILDER(Name("Const").Device(kDeviceCpu), ConstKernel);

// ---------------------------------------------------------------------------
// Placeholder, PlaceholderV2, PlaceholderWithDefault

Status ShapeFromAttr(InferenceContext* c) {
  PartialTensorShape shape;
  RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  c->set_output(0, shape);
  return absl::OkStatus();
}

REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = { unknown_rank: true }")
    .SetShapeFn(ShapeFromAttr)
    .Doc("A placeholder for a value that must be fed when the graph runs.");

REGISTER_OP("PlaceholderV2")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn(ShapeFromAttr)
    .Doc(
        "A placeholder for a value that must be fed (deprecated: use "
        "Placeholder).");

// Runs only when nothing was fed: always an error.
class PlaceholderKernel : public OpKernel {
 public:
  explicit PlaceholderKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("shape", &shape_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    std::string msg =
        absl::StrCat("You must feed a value for placeholder tensor '", name(),
                     "' with dtype ", DataTypeString(output_type(0)));
    if (shape_.dims() > 0)
      absl::StrAppend(&msg, " and shape ", shape_.DebugString());
    ctx->CtxFailure(errors::InvalidArgument(msg));
  }

 private:
  PartialTensorShape shape_;
};
REGISTER_KERNEL_BUILDER(Name("Placeholder").Device(kDeviceCpu),
                        PlaceholderKernel);
REGISTER_KERNEL_BUILDER(Name("PlaceholderV2").Device(kDeviceCpu),
                        PlaceholderKernel);

// The output is the attr's shape, not the input's: a feed may replace the
// default with any value of that (possibly less specific) shape.
Status PlaceholderWithDefaultShape(InferenceContext* c) {
  PartialTensorShape shape;
  RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  if (!shape.IsCompatibleWith(c->input(0))) {
    return c->InvalidArgument(
        "default value of shape ", c->input(0).DebugString(),
        " is not compatible with shape attr ", shape.DebugString());
  }
  c->set_output(0, shape);
  return absl::OkStatus();
}

REGISTER_OP("PlaceholderWithDefault")
    .Input("input: dtype")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn(PlaceholderWithDefaultShape)
    .Doc("Passes `input` through when its output is not fed.");
REGISTER_KERNEL_BUILDER(Name("PlaceholderWithDefault").Device(kDeviceCpu),
                        IdentityKernel);

// ---------------------------------------------------------------------------
// Identity, IdentityN

REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Returns its input unchanged (the same buffer).");
REGISTER_KERNEL_BUILDER(Name("Identity").Device(kDeviceCpu), IdentityKernel);

Status IdentityNShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
  return absl::OkStatus();
}

REGISTER_OP("IdentityN")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type)")
    .SetShapeFn(IdentityNShape)
    .Doc(
        "Returns a list of tensors with the same shapes and contents as the "
        "input.");
REGISTER_KERNEL_BUILDER(Name("IdentityN").Device(kDeviceCpu), IdentityKernel);

// ---------------------------------------------------------------------------
// Reshape

// Resolves the requested shape `dims` (one entry may be -1) for an input of
// shape `in`, with TF's rules: a -1 absorbs the remaining elements, and zero
// dims in the request are left out of that division so shapes like [0, -1]
// still resolve for empty inputs.
StatusOr<TensorShape> ResolveReshape(const TensorShape& in,
                                     std::vector<int64_t> dims) {
  const std::string want = absl::StrCat("[", absl::StrJoin(dims, ","), "]");
  constexpr int64_t kMax = int64_t{1} << 62;
  int unknown = -1;
  bool has_zero = false;
  int64_t product = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d == -1) {
      if (unknown >= 0) {
        return errors::InvalidArgument(
            "only one dimension of the requested shape ", want,
            " may be -1, not both ", unknown, " and ", i);
      }
      unknown = static_cast<int>(i);
    } else if (d < 0) {
      return errors::InvalidArgument("requested shape ", want,
                                     " has negative dimension ", d,
                                     " at index ", i);
    } else if (d == 0) {
      has_zero = true;
    } else {
      if (product > kMax / d) {
        return errors::InvalidArgument("requested shape ", want,
                                       " has too many elements");
      }
      product *= d;
    }
  }
  if (unknown >= 0) {
    // Input elements, leaving out zero dims when the request has one.
    int64_t in_elems = 1;
    bool in_has_zero = false;
    for (int64_t d : in.dim_sizes()) {
      if (d == 0 && has_zero) {
        in_has_zero = true;
        continue;
      }
      if (d != 0 && in_elems > kMax / d) {
        return errors::InvalidArgument("cannot reshape a tensor of shape ",
                                       in.DebugString(), " to ", want);
      }
      in_elems *= d;
    }
    const int64_t missing = in_elems / product;
    if (!in_has_zero && missing * product != in_elems) {
      return errors::InvalidArgument(
          "Input to reshape is a tensor with ", in.num_elements(),
          " values (shape ", in.DebugString(), "), but the requested shape ",
          want, " requires a multiple of ", product);
    }
    dims[unknown] = missing;
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  if (shape.num_elements() != in.num_elements()) {
    return errors::InvalidArgument(
        "Input to reshape is a tensor with ", in.num_elements(),
        " values (shape ", in.DebugString(), "), but the requested shape ",
        want, " has ", shape.num_elements());
  }
  return shape;
}

Status ReshapeShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(1, 1, &unused));
  std::vector<int64_t> dims;
  if (c->GetConstInts(1, &dims)) {
    const PartialTensorShape& in = c->input(0);
    if (in.IsFullyDefined()) {
      StatusOr<TensorShape> full = in.AsTensorShape();  // May overflow.
      if (!full.ok()) return errors::Prefix(full.status(), c->ErrorPrefix());
      auto shape = ResolveReshape(*full, dims);
      if (!shape.ok()) return errors::Prefix(shape.status(), c->ErrorPrefix());
      c->set_output(0, *shape);
      return absl::OkStatus();
    }
    if (std::count(dims.begin(), dims.end(), -1) > 1) {
      return c->InvalidArgument("only one dimension of the requested shape [",
                                absl::StrJoin(dims, ","), "] may be -1");
    }
  }
  PartialTensorShape out;
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(1, &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = DT_INT32")
    .SetShapeFn(ReshapeShape)
    .Doc("Reshapes a tensor (sharing its buffer); one dimension may be -1.");

class ReshapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& sizes = ctx->input(1);
    OP_REQUIRES(ctx, sizes.dims() == 1,
                errors::InvalidArgument("shape must be a vector, not ",
                                        sizes.shape().DebugString()));
    auto shape = ResolveReshape(input.shape(), IntValues(sizes));
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor out;
    out.CopyFrom(input, *shape);
    ctx->set_output(0, std::move(out));
  }
};
REGISTER_KERNEL_BUILDER(Name("Reshape")
                            .Device(kDeviceCpu)
                            .TypeConstraint("Tshape", {DT_INT32, DT_INT64}),
                        ReshapeKernel);

// ---------------------------------------------------------------------------
// ExpandDims

Status ExpandDimsShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const Tensor* dim_t = c->input_tensor(1);
  if (dim_t != nullptr && dim_t->NumElements() != 1) {
    return c->InvalidArgument("dim must hold a single value, got shape ",
                              dim_t->shape().DebugString());
  }
  int64_t dim;
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int rank = in.dims();
  if (!ConstScalar(*c, 1, &dim)) {
    c->set_output(0, PartialTensorShape::UnknownDims(rank + 1));
    return absl::OkStatus();
  }
  int axis;
  if (!CanonicalAxis(dim, rank + 1, &axis)) {
    return c->InvalidArgument("dim ", dim, " is out of range [", -1 - rank,
                              ", ", rank, "] for input of shape ",
                              in.DebugString());
  }
  std::vector<int64_t> dims(in.dim_sizes().begin(), in.dim_sizes().end());
  dims.insert(dims.begin() + axis, 1);
  c->set_output(0, PartialTensorShape(dims));
  return absl::OkStatus();
}

REGISTER_OP("ExpandDims")
    .Input("input: T")
    .Input("dim: Tdim")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tdim: {int32, int64} = DT_INT32")
    .SetShapeFn(ExpandDimsShape)
    .Doc(
        "Inserts a dimension of size 1 at index `dim` (negative counts from "
        "the end).");

class ExpandDimsKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& dim_t = ctx->input(1);
    OP_REQUIRES(
        ctx, dim_t.NumElements() == 1,
        errors::InvalidArgument("dim must hold a single value, got shape ",
                                dim_t.shape().DebugString()));
    const int64_t dim = IntValues(dim_t)[0];
    const int rank = input.dims();
    int axis;
    OP_REQUIRES(ctx, CanonicalAxis(dim, rank + 1, &axis),
                errors::InvalidArgument(
                    "dim ", dim, " is out of range [", -1 - rank, ", ", rank,
                    "] for input of shape ", input.shape().DebugString()));
    TensorShape shape = input.shape();
    shape.InsertDim(axis, 1);
    Tensor out;
    out.CopyFrom(input, shape);
    ctx->set_output(0, std::move(out));
  }
};
REGISTER_KERNEL_BUILDER(Name("ExpandDims")
                            .Device(kDeviceCpu)
                            .TypeConstraint("Tdim", {DT_INT32, DT_INT64}),
                        ExpandDimsKernel);

// ---------------------------------------------------------------------------
// Squeeze

Status SqueezeShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  std::vector<int64_t> squeeze_dims;
  RETURN_IF_ERROR(c->GetAttr("squeeze_dims", &squeeze_dims));
  const int rank = in.dims();
  std::vector<bool> drop(rank, false);
  for (int64_t d : squeeze_dims) {
    int axis;
    if (!CanonicalAxis(d, rank, &axis)) {
      return c->InvalidArgument("squeeze dim ", d, " is out of range ",
                                AxisRange(rank), " for input of shape ",
                                in.DebugString());
    }
    if (in.dim_size(axis) >= 0 && in.dim_size(axis) != 1) {
      return c->InvalidArgument(
          "can not squeeze dim[", axis, "], expected a dimension of 1, got ",
          in.dim_size(axis), " (input shape ", in.DebugString(), ")");
    }
    drop[axis] = true;
  }
  PartialTensorShape out({});
  for (int i = 0; i < rank; ++i) {
    const int64_t d = in.dim_size(i);
    if (squeeze_dims.empty() && d < 0) {
      // Could be 1 (dropped) or not: the rank is unknown.
      c->set_output(0, PartialTensorShape());
      return absl::OkStatus();
    }
    if (drop[i] || (squeeze_dims.empty() && d == 1)) continue;
    out.AddDim(d);
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) >= 0 = []")
    .SetShapeFn(SqueezeShape)
    .Doc(
        "Removes dimensions of size 1: those in `squeeze_dims`, or all if "
        "empty.");

class SqueezeKernel : public OpKernel {
 public:
  explicit SqueezeKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("squeeze_dims", &squeeze_dims_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const int rank = input.dims();
    std::vector<bool> drop(rank, squeeze_dims_.empty());
    for (int64_t d : squeeze_dims_) {
      int axis;
      OP_REQUIRES(ctx, CanonicalAxis(d, rank, &axis),
                  errors::InvalidArgument(
                      "squeeze dim ", d, " is out of range ", AxisRange(rank),
                      " for input of shape ", input.shape().DebugString()));
      OP_REQUIRES(
          ctx, input.dim_size(axis) == 1,
          errors::InvalidArgument("can not squeeze dim[", axis,
                                  "], expected a dimension of 1, got ",
                                  input.dim_size(axis), " (input shape ",
                                  input.shape().DebugString(), ")"));
      drop[axis] = true;
    }
    TensorShape shape;
    for (int i = 0; i < rank; ++i) {
      if (!(drop[i] && input.dim_size(i) == 1)) shape.AddDim(input.dim_size(i));
    }
    Tensor out;
    out.CopyFrom(input, shape);
    ctx->set_output(0, std::move(out));
  }

 private:
  std::vector<int64_t> squeeze_dims_;
};
REGISTER_KERNEL_BUILDER(Name("Squeeze").Device(kDeviceCpu), SqueezeKernel);

// ---------------------------------------------------------------------------
// Shape, ShapeN, Size, Rank

Status ShapeShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) {
    const int rank = c->input(i).dims();  // -1 when unknown.
    c->set_output(i, PartialTensorShape({rank}));
  }
  return absl::OkStatus();
}

REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeShape)
    .Doc("Returns the shape of `input` as a vector.");

REGISTER_OP("ShapeN")
    .Input("input: N * T")
    .Output("output: N * out_type")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeShape)
    .Doc("Returns the shape of each input as a vector.");

// Writes `values` into a new int32 or int64 output, or fails if int32 is too
// small for them.
void SetIntOutput(OpKernelContext* ctx, int i, const TensorShape& shape,
                  Span<const int64_t> values, const char* what) {
  const bool is32 = ctx->expected_output_dtype(i) == DT_INT32;
  for (int64_t v : values) {
    OP_REQUIRES(ctx, !is32 || v <= std::numeric_limits<int32_t>::max(),
                errors::InvalidArgument(what, " value ", v,
                                        " does not fit the int32 output; use "
                                        "out_type int64"));
  }
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(i, shape, &out));
  for (size_t j = 0; j < values.size(); ++j) {
    if (is32) {
      out->data<int32_t>()[j] = static_cast<int32_t>(values[j]);
    } else {
      out->data<int64_t>()[j] = values[j];
    }
  }
}

class ShapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const TensorShape& s = ctx->input(i).shape();
      SetIntOutput(ctx, i, TensorShape({s.dims()}), s.dim_sizes(), "shape");
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("Shape")
                            .Device(kDeviceCpu)
                            .TypeConstraint("out_type", {DT_INT32, DT_INT64}),
                        ShapeKernel);
REGISTER_KERNEL_BUILDER(Name("ShapeN")
                            .Device(kDeviceCpu)
                            .TypeConstraint("out_type", {DT_INT32, DT_INT64}),
                        ShapeKernel);

REGISTER_OP("Size")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Returns the number of elements of `input`.");

class SizeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = ctx->input(0).NumElements();
    SetIntOutput(ctx, 0, TensorShape({}), {n}, "size");
  }
};
REGISTER_KERNEL_BUILDER(Name("Size")
                            .Device(kDeviceCpu)
                            .TypeConstraint("out_type", {DT_INT32, DT_INT64}),
                        SizeKernel);

REGISTER_OP("Rank")
    .Input("input: T")
    .Output("output: int32")
    .Attr("T: type")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Returns the number of dimensions of `input`.");

class RankKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<int32_t>() = ctx->input(0).dims();
  }
};
REGISTER_KERNEL_BUILDER(Name("Rank").Device(kDeviceCpu), RankKernel);

// ---------------------------------------------------------------------------
// Fill, ZerosLike, OnesLike

Status FillShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(0, 1, &unused));
  RETURN_IF_ERROR(c->WithRank(1, 0, &unused));
  std::vector<int64_t> dims;
  if (c->GetConstInts(0, &dims)) {
    for (int64_t d : dims) {
      if (d < 0) {
        return c->InvalidArgument("dims must be non-negative, got [",
                                  absl::StrJoin(dims, ","), "]");
      }
    }
  }
  PartialTensorShape out;
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(0, &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: alltypes")
    .Attr("index_type: {int32, int64} = DT_INT32")
    .SetShapeFn(FillShape)
    .Doc("Creates a tensor of shape `dims` filled with the scalar `value`.");

// out[i] = value for every element, in parallel.
template <typename T>
void FillWith(OpKernelContext* ctx, Tensor* out, const T& value) {
  T* data = out->data<T>();
  ctx->intra_op_threadpool()->ParallelFor(
      out->NumElements(), CopyCost(out->dtype()),
      [&](int64_t b, int64_t e) { std::fill(data + b, data + e, value); });
}

class FillKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims = ctx->input(0);
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, dims.dims() == 1,
                errors::InvalidArgument("dims must be a vector, got shape ",
                                        dims.shape().DebugString()));
    OP_REQUIRES(ctx, value.dims() == 0,
                errors::InvalidArgument("value must be a scalar, got shape ",
                                        value.shape().DebugString()));
    auto shape = TensorShape::FromDims(IntValues(dims));
    OP_REQUIRES(ctx, shape.ok(),
                errors::InvalidArgument("dims: ", shape.status().message()));
    OP_REQUIRES_OK(ctx, CheckByteSize(value.dtype(), *shape));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    DispatchAll(value.dtype(), [&]<typename T>() {
      FillWith<T>(ctx, out, value.scalar<T>());
    });
  }
};
REGISTER_KERNEL_BUILDER(Name("Fill")
                            .Device(kDeviceCpu)
                            .TypeConstraint("T", AllTypes())
                            .TypeConstraint("index_type", {DT_INT32, DT_INT64}),
                        FillKernel);

REGISTER_OP("ZerosLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: alltypes")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Returns a tensor of zeros (empty strings) with the shape of `x`.");

class ZerosLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    if (x.dtype() == DT_STRING) {
      FillWith<tstring>(ctx, out, tstring());
      return;
    }
    // All-zero bytes are zero for every POD type we have.
    char* data = static_cast<char*>(out->raw_data());
    const int64_t elem = DataTypeSize(x.dtype());
    ctx->intra_op_threadpool()->ParallelFor(
        out->NumElements(), CopyCost(x.dtype()), [&](int64_t b, int64_t e) {
          std::memset(data + b * elem, 0, static_cast<size_t>((e - b) * elem));
        });
  }
};
REGISTER_KERNEL_BUILDER(
    Name("ZerosLike").Device(kDeviceCpu).TypeConstraint("T", AllTypes()),
    ZerosLikeKernel);

REGISTER_OP("OnesLike")
    .Input("x: T")
    .Output("y: T")
    .Attr(
        "T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, "
        "int64, complex64, complex128, bool}")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Returns a tensor of ones with the shape of `x`.");

template <typename T>
T One() {
  if constexpr (std::is_same_v<T, half>) {
    return FloatToHalf(1.0f);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return FloatToBFloat16(1.0f);
  } else {
    return T(1);
  }
}

class OnesLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    DispatchPod(x.dtype(),
                [&]<typename T>() { FillWith<T>(ctx, out, One<T>()); });
  }
};
REGISTER_KERNEL_BUILDER(
    Name("OnesLike")
        .Device(kDeviceCpu)
        .TypeConstraint("T", {DT_BFLOAT16, DT_HALF, DT_FLOAT, DT_DOUBLE,
                              DT_INT8, DT_UINT8, DT_INT16, DT_UINT16, DT_INT32,
                              DT_INT64, DT_COMPLEX64, DT_COMPLEX128, DT_BOOL}),
    OnesLikeKernel);

// ---------------------------------------------------------------------------
// Range

// The number of elements of Range(start, limit, delta), TF's formula:
// ceil(|limit - start| / |delta|).
template <typename T>
StatusOr<int64_t> RangeSize(T start, T limit, T delta) {
  constexpr int64_t kMax = int64_t{1} << 62;
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(start) || std::isnan(limit) || std::isnan(delta)) {
      return errors::InvalidArgument(
          "Requires start, limit and delta to be numbers: ", start, "/", limit,
          "/", delta);
    }
  }
  if (delta == 0)
    return errors::InvalidArgument("Requires delta != 0: ", delta);
  if (delta > 0 && start > limit) {
    return errors::InvalidArgument(
        "Requires start <= limit when delta > 0: ", start, "/", limit);
  }
  if (delta < 0 && start < limit) {
    return errors::InvalidArgument(
        "Requires start >= limit when delta < 0: ", start, "/", limit);
  }
  if constexpr (std::is_integral_v<T>) {
    // In uint64 so that extreme int64 ranges cannot overflow.
    const uint64_t diff = start <= limit ? uint64_t(limit) - uint64_t(start)
                                         : uint64_t(start) - uint64_t(limit);
    const uint64_t step =
        delta > 0 ? uint64_t(delta) : uint64_t(0) - uint64_t(delta);
    const uint64_t size = diff / step + (diff % step != 0 ? 1 : 0);
    if (size > static_cast<uint64_t>(kMax)) {
      return errors::InvalidArgument("Range of ", size,
                                     " elements is too large");
    }
    return static_cast<int64_t>(size);
  } else {
    const T size = std::ceil(std::abs((limit - start) / delta));
    if (!(size <= static_cast<T>(kMax))) {
      return errors::InvalidArgument("Range of ", size,
                                     " elements is too large");
    }
    return static_cast<int64_t>(size);
  }
}

template <typename T>
bool DispatchRangeType(DataType dt, T&& fn) {
  switch (dt) {
    case DT_FLOAT:
      fn.template operator()<float>();
      return true;
    case DT_DOUBLE:
      fn.template operator()<double>();
      return true;
    case DT_INT32:
      fn.template operator()<int32_t>();
      return true;
    case DT_INT64:
      fn.template operator()<int64_t>();
      return true;
    default:
      return false;
  }
}

Status RangeShape(InferenceContext* c) {
  PartialTensorShape unused;
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  const Tensor *start = c->input_tensor(0), *limit = c->input_tensor(1),
               *delta = c->input_tensor(2);
  if (start == nullptr || limit == nullptr || delta == nullptr) {
    c->set_output(0, PartialTensorShape({-1}));
    return absl::OkStatus();
  }
  Status s;
  DispatchRangeType(start->dtype(), [&]<typename T>() {
    auto n = RangeSize<T>(start->scalar<T>(), limit->scalar<T>(),
                          delta->scalar<T>());
    if (n.ok()) {
      c->set_output(0, PartialTensorShape({*n}));
    } else {
      s = errors::Prefix(n.status(), c->ErrorPrefix());
    }
  });
  return s;
}

REGISTER_OP("Range")
    .Input("start: Tidx")
    .Input("limit: Tidx")
    .Input("delta: Tidx")
    .Output("output: Tidx")
    .Attr("Tidx: {float, double, int32, int64} = DT_INT32")
    .SetShapeFn(RangeShape)
    .Doc("Returns [start, start + delta, ...] up to but excluding `limit`.");

template <typename T>
class RangeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const char* names[] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; ++i) {
      OP_REQUIRES(
          ctx, ctx->input(i).dims() == 0,
          errors::InvalidArgument(names[i], " must be a scalar, not shape ",
                                  ctx->input(i).shape().DebugString()));
    }
    const T start = ctx->input(0).scalar<T>();
    const T delta = ctx->input(2).scalar<T>();
    auto size = RangeSize<T>(start, ctx->input(1).scalar<T>(), delta);
    OP_REQUIRES_OK(ctx, size.status());
    const TensorShape shape({*size});
    OP_REQUIRES_OK(ctx, CheckByteSize(DataTypeToEnum<T>::value, shape));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    T* data = out->data<T>();
    ctx->intra_op_threadpool()->ParallelFor(
        *size, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            if constexpr (std::is_integral_v<T>) {
              // Wrapping uint64 arithmetic gives the exact in-range value.
              data[i] = static_cast<T>(uint64_t(start) +
                                       uint64_t(i) * uint64_t(delta));
            } else {
              data[i] = start + static_cast<T>(i) * delta;
            }
          }
        });
  }
};
REGISTER_KERNEL_BUILDER(
    Name("Range").Device(kDeviceCpu).TypeConstraint<float>("Tidx"),
    RangeKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("Range").Device(kDeviceCpu).TypeConstraint<double>("Tidx"),
    RangeKernel<double>);
REGISTER_KERNEL_BUILDER(
    Name("Range").Device(kDeviceCpu).TypeConstraint<int32_t>("Tidx"),
    RangeKernel<int32_t>);
REGISTER_KERNEL_BUILDER(
    Name("Range").Device(kDeviceCpu).TypeConstraint<int64_t>("Tidx"),
    RangeKernel<int64_t>);

// ---------------------------------------------------------------------------
// Pack, Unpack

Status PackShape(InferenceContext* c) {
  PartialTensorShape cur = c->input(0);
  for (int i = 1; i < c->num_inputs(); ++i) {
    auto merged = cur.MergeWith(c->input(i));
    if (!merged.ok()) {
      return c->InvalidArgument(
          "shapes of all inputs must match: values[0] shape ",
          c->input(0).DebugString(), " vs. values[", i, "] shape ",
          c->input(i).DebugString());
    }
    cur = *merged;
  }
  if (cur.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  int64_t axis_attr;
  RETURN_IF_ERROR(c->GetAttr("axis", &axis_attr));
  int axis;
  if (!CanonicalAxis(axis_attr, cur.dims() + 1, &axis)) {
    return c->InvalidArgument(
        "axis ", axis_attr, " is out of range ", AxisRange(cur.dims() + 1),
        " for packing inputs of shape ", cur.DebugString());
  }
  std::vector<int64_t> dims(cur.dim_sizes().begin(), cur.dim_sizes().end());
  dims.insert(dims.begin() + axis, c->num_inputs());
  c->set_output(0, PartialTensorShape(dims));
  return absl::OkStatus();
}

REGISTER_OP("Pack")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: alltypes")
    .Attr("axis: int = 0")
    .SetShapeFn(PackShape)
    .Doc(
        "Stacks N tensors of one shape into one tensor of rank + 1 along "
        "`axis`.");

class PackKernel : public OpKernel {
 public:
  explicit PackKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("axis", &axis_));
  }
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const TensorShape& shape0 = ctx->input(0).shape();
    for (int i = 1; i < n; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == shape0,
                  errors::InvalidArgument(
                      "shapes of all inputs must match: values[0] "
                      "shape ",
                      shape0.DebugString(), " vs. values[", i, "] shape ",
                      ctx->input(i).shape().DebugString()));
    }
    int axis;
    OP_REQUIRES(ctx, CanonicalAxis(axis_, shape0.dims() + 1, &axis),
                errors::InvalidArgument("axis ", axis_, " is out of range ",
                                        AxisRange(shape0.dims() + 1),
                                        " for packing inputs of shape ",
                                        shape0.DebugString()));
    TensorShape out_shape = shape0;
    out_shape.InsertDim(axis, n);
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < n; ++i) inputs.push_back(&ctx->input(i));
    const int64_t cols = DimProduct(shape0, axis, shape0.dims());
    GatherColumns(ctx, inputs, DimProduct(shape0, 0, axis),
                  std::vector<int64_t>(n, cols), out_shape);
  }

 private:
  int64_t axis_ = 0;
};
REGISTER_KERNEL_BUILDER(
    Name("Pack").Device(kDeviceCpu).TypeConstraint("T", AllTypes()),
    PackKernel);

Status UnpackShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  PartialTensorShape out;  // Unknown rank unless the input's is known.
  if (!in.unknown_rank()) {
    int64_t axis_attr;
    RETURN_IF_ERROR(c->GetAttr("axis", &axis_attr));
    int axis;
    if (!CanonicalAxis(axis_attr, in.dims(), &axis)) {
      return c->InvalidArgument("axis ", axis_attr, " is out of range ",
                                AxisRange(in.dims()), " for input of shape ",
                                in.DebugString());
    }
    if (in.dim_size(axis) >= 0 && in.dim_size(axis) != c->num_outputs()) {
      return c->InvalidArgument("input shape ", in.DebugString(), " has size ",
                                in.dim_size(axis), " along axis ", axis,
                                " but num is ", c->num_outputs());
    }
    out = PartialTensorShape({});
    for (int i = 0; i < in.dims(); ++i) {
      if (i != axis) out.AddDim(in.dim_size(i));
    }
  }
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, out);
  return absl::OkStatus();
}

REGISTER_OP("Unpack")
    .Input("value: T")
    .Output("output: num * T")
    .Attr("num: int >= 0")
    .Attr("T: alltypes")
    .Attr("axis: int = 0")
    .SetShapeFn(UnpackShape)
    .Doc("Unstacks `value` along `axis` into `num` tensors of rank - 1.");

class UnpackKernel : public OpKernel {
 public:
  explicit UnpackKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("axis", &axis_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const TensorShape& shape = input.shape();
    const int num = ctx->num_outputs();
    int axis;
    OP_REQUIRES(
        ctx, CanonicalAxis(axis_, shape.dims(), &axis),
        errors::InvalidArgument("axis ", axis_, " is out of range ",
                                AxisRange(shape.dims()), " for input of shape ",
                                shape.DebugString()));
    OP_REQUIRES(
        ctx, shape.dim_size(axis) == num,
        errors::InvalidArgument("input shape ", shape.DebugString(),
                                " has size ", shape.dim_size(axis),
                                " along axis ", axis, " but num is ", num));
    TensorShape piece = shape;
    piece.RemoveDim(axis);
    const int64_t cols = DimProduct(shape, axis + 1, shape.dims());
    ScatterColumns(ctx, input, DimProduct(shape, 0, axis),
                   std::vector<int64_t>(num, cols),
                   std::vector<TensorShape>(num, piece));
  }

 private:
  int64_t axis_ = 0;
};
REGISTER_KERNEL_BUILDER(
    Name("Unpack").Device(kDeviceCpu).TypeConstraint("T", AllTypes()),
    UnpackKernel);

// ---------------------------------------------------------------------------
// ConcatV2

Status ConcatV2Shape(InferenceContext* c) {
  const int n = c->num_inputs() - 1;
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(n, 0, &unused));
  // The rank, from any input that knows it; known ranks must agree.
  int rank = -1, first = -1;
  for (int i = 0; i < n; ++i) {
    const int r = c->input(i).dims();
    if (r < 0) continue;
    if (rank < 0) {
      rank = r;
      first = i;
    } else if (r != rank) {
      return c->InvalidArgument("ranks of all inputs must match: values[",
                                first, "] shape ",
                                c->input(first).DebugString(), " vs. values[",
                                i, "] shape ", c->input(i).DebugString());
    }
  }
  if (rank == 0) {
    return c->InvalidArgument("can't concatenate scalars (use Pack instead)");
  }
  int64_t axis_value;
  if (rank < 0 || !ConstScalar(*c, n, &axis_value)) {
    c->set_output(0, rank < 0 ? PartialTensorShape()
                              : PartialTensorShape::UnknownDims(rank));
    return absl::OkStatus();
  }
  int axis;
  if (!CanonicalAxis(axis_value, rank, &axis)) {
    return c->InvalidArgument("axis ", axis_value, " is out of range ",
                              AxisRange(rank), " for inputs of rank ", rank);
  }
  // Merge the other dims; sum the axis dim (unknown if any part is).
  PartialTensorShape out = PartialTensorShape::UnknownDims(rank);
  int64_t axis_size = 0;
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& in = c->input(i);
    if (in.unknown_rank()) {
      axis_size = -1;
      continue;
    }
    for (int j = 0; j < rank; ++j) {
      if (j == axis || in.dim_size(j) < 0) continue;
      if (out.dim_size(j) >= 0 && out.dim_size(j) != in.dim_size(j)) {
        return c->InvalidArgument(
            "dimension ", j, " must match in all inputs (except the axis ",
            axis, "): values[", i, "] shape ", in.DebugString(),
            " vs. earlier inputs' size ", out.dim_size(j));
      }
      out.set_dim(j, in.dim_size(j));
    }
    const int64_t d = in.dim_size(axis);
    axis_size = (axis_size < 0 || d < 0) ? -1 : axis_size + d;
  }
  out.set_dim(axis, axis_size);
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("ConcatV2")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: alltypes")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(ConcatV2Shape)
    .Doc("Concatenates tensors along `axis` (negative counts from the end).");

class ConcatV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const Tensor& axis_t = ctx->input(n);
    OP_REQUIRES(ctx, axis_t.dims() == 0,
                errors::InvalidArgument("axis must be a scalar, got shape ",
                                        axis_t.shape().DebugString()));
    const TensorShape& shape0 = ctx->input(0).shape();
    const int rank = shape0.dims();
    OP_REQUIRES(ctx, rank > 0,
                errors::InvalidArgument(
                    "can't concatenate scalars (use Pack instead)"));
    const int64_t axis_value = IntValues(axis_t)[0];
    int axis;
    OP_REQUIRES(ctx, CanonicalAxis(axis_value, rank, &axis),
                errors::InvalidArgument(
                    "axis ", axis_value, " is out of range ", AxisRange(rank),
                    " for inputs of shape ", shape0.DebugString()));
    std::vector<const Tensor*> inputs;
    std::vector<int64_t> cols;
    const int64_t inner = DimProduct(shape0, axis + 1, rank);
    int64_t axis_size = 0;
    for (int i = 0; i < n; ++i) {
      const TensorShape& s = ctx->input(i).shape();
      OP_REQUIRES(
          ctx, s.dims() == rank,
          errors::InvalidArgument("ranks of all inputs must match: values[0] "
                                  "shape ",
                                  shape0.DebugString(), " vs. values[", i,
                                  "] shape ", s.DebugString()));
      for (int j = 0; j < rank; ++j) {
        OP_REQUIRES(
            ctx, j == axis || s.dim_size(j) == shape0.dim_size(j),
            errors::InvalidArgument(
                "dimension ", j, " must match in all inputs (except the axis ",
                axis, "): values[0] shape ", shape0.DebugString(),
                " vs. values[", i, "] shape ", s.DebugString()));
      }
      inputs.push_back(&ctx->input(i));
      cols.push_back(s.dim_size(axis) * inner);
      axis_size += s.dim_size(axis);
    }
    TensorShape out_shape = shape0;
    out_shape.set_dim(axis, axis_size);
    GatherColumns(ctx, inputs, DimProduct(shape0, 0, axis), cols, out_shape);
  }
};
REGISTER_KERNEL_BUILDER(Name("ConcatV2")
                            .Device(kDeviceCpu)
                            .TypeConstraint("T", AllTypes())
                            .TypeConstraint("Tidx", {DT_INT32, DT_INT64}),
                        ConcatV2Kernel);

// ---------------------------------------------------------------------------
// Split, SplitV

// Splits `input` along `axis` into pieces of the given sizes (which sum to
// its size there).
void SplitAlongAxis(OpKernelContext* ctx, const Tensor& input, int axis,
                    Span<const int64_t> sizes) {
  const TensorShape& shape = input.shape();
  const int64_t inner = DimProduct(shape, axis + 1, shape.dims());
  std::vector<int64_t> cols;
  std::vector<TensorShape> shapes;
  for (int64_t s : sizes) {
    cols.push_back(s * inner);
    shapes.push_back(shape);
    shapes.back().set_dim(axis, s);
  }
  ScatterColumns(ctx, input, DimProduct(shape, 0, axis), cols, shapes);
}

Status SplitShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(0, 0, &unused));
  const PartialTensorShape& in = c->input(1);
  const int num = c->num_outputs();
  PartialTensorShape out;  // Unknown rank unless the input's is known.
  int64_t split_dim;
  if (!in.unknown_rank() && !ConstScalar(*c, 0, &split_dim)) {
    out = PartialTensorShape::UnknownDims(in.dims());
  } else if (!in.unknown_rank()) {
    int axis;
    if (!CanonicalAxis(split_dim, in.dims(), &axis)) {
      return c->InvalidArgument("split_dim ", split_dim, " is out of range ",
                                AxisRange(in.dims()), " for input of shape ",
                                in.DebugString());
    }
    out = in;
    const int64_t size = in.dim_size(axis);
    if (size >= 0 && size % num != 0) {
      return c->InvalidArgument(
          "Number of ways to split should evenly divide the split dimension, "
          "but got "
          "split_dim ",
          axis, " (size = ", size, ") and num_split ", num);
    }
    out.set_dim(axis, size < 0 ? -1 : size / num);
  }
  for (int i = 0; i < num; ++i) c->set_output(i, out);
  return absl::OkStatus();
}

REGISTER_OP("Split")
    .Input("split_dim: int32")
    .Input("value: T")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: alltypes")
    .SetShapeFn(SplitShape)
    .Doc("Splits `value` along `split_dim` into `num_split` equal pieces.");

class SplitKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& split_dim_t = ctx->input(0);
    const Tensor& input = ctx->input(1);
    const int num = ctx->num_outputs();
    OP_REQUIRES(
        ctx, split_dim_t.dims() == 0,
        errors::InvalidArgument("split_dim must be a scalar, got shape ",
                                split_dim_t.shape().DebugString()));
    const int64_t split_dim = split_dim_t.scalar<int32_t>();
    int axis;
    OP_REQUIRES(
        ctx, CanonicalAxis(split_dim, input.dims(), &axis),
        errors::InvalidArgument("split_dim ", split_dim, " is out of range ",
                                AxisRange(input.dims()), " for input of shape ",
                                input.shape().DebugString()));
    const int64_t size = input.dim_size(axis);
    OP_REQUIRES(ctx, size % num == 0,
                errors::InvalidArgument(
                    "Number of ways to split should evenly divide "
                    "the split dimension, but got split_dim ",
                    axis, " (size = ", size, ") and num_split ", num));
    if (num == 1) {
      ctx->set_output(0, input);
      return;
    }
    SplitAlongAxis(ctx, input, axis, std::vector<int64_t>(num, size / num));
  }
};
REGISTER_KERNEL_BUILDER(
    Name("Split").Device(kDeviceCpu).TypeConstraint("T", AllTypes()),
    SplitKernel);

// Checks SplitV's `sizes` for an axis of `dim` elements (-1 when unknown) and
// resolves a -1 entry when `dim` is known.
Status ResolveSplitSizes(std::vector<int64_t>* sizes, int64_t dim, int num) {
  const std::string given = absl::StrCat("[", absl::StrJoin(*sizes, ","), "]");
  if (static_cast<int>(sizes->size()) != num) {
    return errors::InvalidArgument("size_splits ", given,
                                   " must have num_split (", num, ") elements");
  }
  int unknown = -1;
  int64_t total = 0;
  for (int i = 0; i < num; ++i) {
    const int64_t s = (*sizes)[i];
    if (s == -1) {
      if (unknown >= 0) {
        return errors::InvalidArgument("size_splits ", given,
                                       " may contain only one -1");
      }
      unknown = i;
    } else if (s < 0) {
      return errors::InvalidArgument("size_splits ", given,
                                     " has negative size ", s, " at index ", i);
    } else {
      if (dim >= 0 && s > dim - total) {
        return errors::InvalidArgument(
            "size_splits ", given,
            " sum to more than the split dimension's "
            "size ",
            dim);
      }
      total += s;
    }
  }
  if (dim < 0) return absl::OkStatus();
  if (unknown < 0 && total != dim) {
    return errors::InvalidArgument("size_splits ", given, " sum to ", total,
                                   " but the split dimension has size ", dim);
  }
  if (unknown >= 0) (*sizes)[unknown] = dim - total;
  return absl::OkStatus();
}

Status SplitVShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const int num = c->num_outputs();
  if (in.unknown_rank()) {
    for (int i = 0; i < num; ++i) c->set_output(i, PartialTensorShape());
    return absl::OkStatus();
  }
  const int rank = in.dims();
  if (rank == 0) return c->InvalidArgument("can't split a scalar");
  int64_t split_dim;
  if (!ConstScalar(*c, 2, &split_dim)) {
    for (int i = 0; i < num; ++i) {
      c->set_output(i, PartialTensorShape::UnknownDims(rank));
    }
    return absl::OkStatus();
  }
  int axis;
  if (!CanonicalAxis(split_dim, rank, &axis)) {
    return c->InvalidArgument("split_dim ", split_dim, " is out of range ",
                              AxisRange(rank), " for input of shape ",
                              in.DebugString());
  }
  std::vector<int64_t> sizes;
  if (c->GetConstInts(1, &sizes)) {
    Status s = ResolveSplitSizes(&sizes, in.dim_size(axis), num);
    if (!s.ok()) return errors::Prefix(s, c->ErrorPrefix());
  } else {
    sizes.assign(num, -1);
  }
  for (int i = 0; i < num; ++i) {
    PartialTensorShape out = in;
    out.set_dim(axis, sizes[i]);
    c->set_output(i, out);
  }
  return absl::OkStatus();
}

REGISTER_OP("SplitV")
    .Input("value: T")
    .Input("size_splits: Tlen")
    .Input("split_dim: int32")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: alltypes")
    .Attr("Tlen: {int32, int64} = DT_INT64")
    .SetShapeFn(SplitVShape)
    .Doc(
        "Splits `value` along `split_dim` into pieces of the sizes in "
        "`size_splits` "
        "(one may be -1: the rest).");

class SplitVKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& sizes_t = ctx->input(1);
    const Tensor& split_dim_t = ctx->input(2);
    const int num = ctx->num_outputs();
    OP_REQUIRES(ctx, split_dim_t.NumElements() == 1,
                errors::InvalidArgument(
                    "split_dim must hold a single value, got shape ",
                    split_dim_t.shape().DebugString()));
    const int64_t split_dim = split_dim_t.flat<int32_t>()[0];
    int axis;
    OP_REQUIRES(
        ctx, CanonicalAxis(split_dim, input.dims(), &axis),
        errors::InvalidArgument("split_dim ", split_dim, " is out of range ",
                                AxisRange(input.dims()), " for input of shape ",
                                input.shape().DebugString()));
    OP_REQUIRES(
        ctx, sizes_t.dims() == 1,
        errors::InvalidArgument("size_splits must be a vector, got shape ",
                                sizes_t.shape().DebugString()));
    std::vector<int64_t> sizes = IntValues(sizes_t);
    OP_REQUIRES_OK(ctx, ResolveSplitSizes(&sizes, input.dim_size(axis), num));
    if (num == 1) {
      ctx->set_output(0, input);
      return;
    }
    SplitAlongAxis(ctx, input, axis, sizes);
  }
};
REGISTER_KERNEL_BUILDER(Name("SplitV")
                            .Device(kDeviceCpu)
                            .TypeConstraint("T", AllTypes())
                            .TypeConstraint("Tlen", {DT_INT32, DT_INT64}),
                        SplitVKernel);

}  // namespace
}  // namespace runnel
