// Gathers and scatters of slices addressed by N-d index vectors:
// GatherNd, ScatterNd, TensorScatterUpdate, TensorScatterAdd (TensorFlow's
// tf.gather_nd, tf.scatter_nd, tf.tensor_scatter_nd_update/add).
//
// Note [N-d indices]
// indices has shape batch + [ix]: each of its prod(batch) rows addresses a
// slice of a tensor of shape S by its first ix coordinates, so a slice holds
// prod(S[ix:]) elements and the slice data (updates, or the gathered output)
// has shape batch + S[ix:]. Rows are validated and turned into flat slice
// offsets once (SliceOffsets); the loops then move whole slices, with
// std::copy_n of contiguous runs. A bad row is InvalidArgument naming its
// position and value ("indices[1] = [2, 0] does not index into ..."), and
// the executor prefixes the op and node.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/moved_words.h"

namespace runnel {
namespace {

using moved::InData;
using moved::MoveCostNs;
using moved::Moved;
using moved::OutData;

// ---------------------------------------------------------------------------
// Shared helpers

// "[1,2]": the multi-index of flat position `flat` in `shape` ("" for a
// scalar).
std::string IndexString(const TensorShape& shape, int64_t flat) {
  if (shape.dims() == 0) return "";
  std::vector<int64_t> idx(shape.dims());
  for (int i = shape.dims() - 1; i >= 0; --i) {
    const int64_t d = shape.dim_size(i);
    idx[i] = flat % d;
    flat /= d;
  }
  return absl::StrCat("[", absl::StrJoin(idx, ","), "]");
}

// Dims [begin, end) of `s`.
TensorShape SubShape(const TensorShape& s, int begin, int end) {
  TensorShape r;
  for (int i = begin; i < end; ++i) r.AddDim(s.dim_size(i));
  return r;
}

// The layout Note [N-d indices] describes, for indices and a tensor shape.
struct NdLayout {
  int ix = 0;         // Coordinates per index row.
  int64_t rows = 0;   // prod(batch).
  int64_t slice = 1;  // Elements per slice: prod(shape[ix:]).
  TensorShape batch;  // indices.shape[:-1].
};

Status MakeLayout(const Tensor& indices, const TensorShape& shape,
                  absl::string_view shape_name, NdLayout* l) {
  if (indices.dims() < 1) {
    return errors::InvalidArgument(
        "indices must be at least a vector, got "
        "shape ",
        indices.shape().DebugString());
  }
  const int64_t ix = indices.dim_size(indices.dims() - 1);
  if (ix > shape.dims()) {
    return errors::InvalidArgument("indices.shape[-1] must be <= ", shape_name,
                                   " rank, but saw indices "
                                   "shape: ",
                                   indices.shape().DebugString(), " and ",
                                   shape_name, " shape: ", shape.DebugString());
  }
  l->ix = static_cast<int>(ix);
  l->batch = SubShape(indices.shape(), 0, indices.dims() - 1);
  l->rows = l->batch.num_elements();
  l->slice = SubShape(shape, l->ix, shape.dims()).num_elements();
  return absl::OkStatus();
}

// The flat slice offset (in slices) of each index row; InvalidArgument
// for a row outside `shape`'s first ix dims.
template <typename Index>
Status SliceOffsets(const Tensor& indices, const TensorShape& shape,
                    const NdLayout& l, absl::string_view shape_name,
                    std::vector<int64_t>* offsets) {
  const Index* idx = indices.data<Index>();
  // Empty slices move nothing: no offsets are kept (the callers' loops then
  // do nothing), and with ix == 0 there is no index to check either, while
  // `rows` may be huge (indices of shape [2^40, 0]).
  const bool keep = l.slice > 0;
  offsets->clear();
  if (!keep && l.ix == 0) return absl::OkStatus();
  if (keep) offsets->resize(static_cast<size_t>(l.rows));
  for (int64_t r = 0; r < l.rows; ++r) {
    const Index* row = idx + r * l.ix;
    int64_t off = 0;
    for (int d = 0; d < l.ix; ++d) {
      const int64_t v = row[d], limit = shape.dim_size(d);
      if (v < 0 || v >= limit) {
        return errors::InvalidArgument(
            "indices", IndexString(l.batch, r), " = [",
            absl::StrJoin(row, row + l.ix, ", "), "] does not index into ",
            shape_name, " ", shape.DebugString());
      }
      off = off * limit + v;
    }
    if (keep) (*offsets)[r] = off;
  }
  return absl::OkStatus();
}

// Checks that updates has shape indices.shape[:-1] + shape[ix:].
Status CheckUpdatesShape(const Tensor& updates, const TensorShape& shape,
                         const NdLayout& l) {
  TensorShape want = l.batch;
  for (int i = l.ix; i < shape.dims(); ++i) want.AddDim(shape.dim_size(i));
  if (updates.shape() != want) {
    return errors::InvalidArgument(
        "updates must have shape indices.shape[:-1] + shape[", l.ix,
        ":] = ", want.DebugString(), " for output shape ", shape.DebugString(),
        ", got ", updates.shape().DebugString());
  }
  if (shape.num_elements() == 0 && l.rows > 0 && l.slice > 0) {
    return errors::InvalidArgument(
        "Indices and updates specified for empty output shape ",
        shape.DebugString());
  }
  return absl::OkStatus();
}

// The shape function's version of CheckUpdatesShape, over what is known.
Status CheckUpdatesPartialShape(InferenceContext* c,
                                const PartialTensorShape& indices,
                                const PartialTensorShape& updates,
                                const PartialTensorShape& out) {
  if (indices.unknown_rank() || updates.unknown_rank() || out.unknown_rank())
    return absl::OkStatus();
  const int64_t ix = indices.dim_size(indices.dims() - 1);
  if (ix < 0) return absl::OkStatus();
  if (ix > out.dims()) {
    return c->InvalidArgument(
        "indices.shape[-1] must be <= the output rank, but saw indices shape: ",
        indices.DebugString(), " and output shape: ", out.DebugString());
  }
  PartialTensorShape want = PartialTensorShape::UnknownDims(0);
  for (int i = 0; i + 1 < indices.dims(); ++i) want.AddDim(indices.dim_size(i));
  for (int i = static_cast<int>(ix); i < out.dims(); ++i)
    want.AddDim(out.dim_size(i));
  if (!want.IsCompatibleWith(updates)) {
    return c->InvalidArgument(
        "updates must have shape indices.shape[:-1] + shape[", ix,
        ":] = ", want.DebugString(), ", got ", updates.DebugString());
  }
  return absl::OkStatus();
}

#define RUNNEL_SCATTER_ADD_TYPES(M) \
  M(float)                          \
  M(double)                         \
  M(int32_t)                        \
  M(int64_t)                        \
  M(complex64)                      \
  M(complex128)

// ---------------------------------------------------------------------------
// GatherNd

Status GatherNdShape(InferenceContext* c) {
  PartialTensorShape indices;
  RETURN_IF_ERROR(c->WithRankAtLeast(1, 1, &indices));
  const PartialTensorShape& params = c->input(0);
  if (indices.unknown_rank() || params.unknown_rank() ||
      indices.dim_size(indices.dims() - 1) < 0) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int64_t ix = indices.dim_size(indices.dims() - 1);
  if (ix > params.dims()) {
    return c->InvalidArgument(
        "indices.shape[-1] must be <= params.rank, but saw indices shape: ",
        indices.DebugString(), " and params shape: ", params.DebugString());
  }
  PartialTensorShape out = PartialTensorShape::UnknownDims(0);
  for (int i = 0; i + 1 < indices.dims(); ++i) out.AddDim(indices.dim_size(i));
  for (int i = static_cast<int>(ix); i < params.dims(); ++i)
    out.AddDim(params.dim_size(i));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("GatherNd")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Output("output: Tparams")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(GatherNdShape)
    .Doc(R"doc(Gathers slices of `params` addressed by N-d index vectors.

indices has shape batch + [ix]; each row picks params[row[0], ..., row[ix-1]]
(a slice of shape params.shape[ix:]), so output.shape = batch +
params.shape[ix:]. Every coordinate must be in range: a bad row is
InvalidArgument naming it.)doc");

template <typename W, typename Index>
class GatherNdKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    OP_REQUIRES(ctx, params.dims() >= 1,
                errors::InvalidArgument("params must be at least a vector, "
                                        "got shape ",
                                        params.shape().DebugString()));
    NdLayout l;
    OP_REQUIRES_OK(ctx, MakeLayout(indices, params.shape(), "params", &l));
    TensorShape out_shape = l.batch;
    for (int i = l.ix; i < params.dims(); ++i)
      out_shape.AddDim(params.dim_size(i));
    OP_REQUIRES(ctx, params.NumElements() > 0 || out_shape.num_elements() == 0,
                errors::InvalidArgument(
                    "Requested more than 0 entries, but params is empty.  "
                    "Params shape: ",
                    params.shape().DebugString()));
    // The output first: it bounds the offsets below (one per row).
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    std::vector<int64_t> offsets;
    OP_REQUIRES_OK(ctx, SliceOffsets<Index>(indices, params.shape(), l,
                                            "param shape", &offsets));
    if (out_shape.num_elements() == 0) return;
    const W* src = InData<W>(params);
    W* dst = OutData<W>(out);
    const int64_t slice = l.slice;
    cpu::ParallelRange(ctx->intra_op_threadpool(), l.rows,
                       slice * MoveCostNs<W>() + 5, [&](int64_t b, int64_t e) {
                         for (int64_t r = b; r < e; ++r) {
                           std::copy_n(src + offsets[r] * slice, slice,
                                       dst + r * slice);
                         }
                       });
  }
};

#define RUNNEL_REGISTER_GATHER_ND(T)                                \
  REGISTER_KERNEL_BUILDER(Name("GatherNd")                          \
                              .Device(kDeviceCpu)                   \
                              .TypeConstraint<T>("Tparams")         \
                              .TypeConstraint<int32_t>("Tindices"), \
                          GatherNdKernel<Moved<T>, int32_t>);       \
  REGISTER_KERNEL_BUILDER(Name("GatherNd")                          \
                              .Device(kDeviceCpu)                   \
                              .TypeConstraint<T>("Tparams")         \
                              .TypeConstraint<int64_t>("Tindices"), \
                          GatherNdKernel<Moved<T>, int64_t>);
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_GATHER_ND)
#undef RUNNEL_REGISTER_GATHER_ND

// ---------------------------------------------------------------------------
// ScatterNd

Status ScatterNdShape(InferenceContext* c) {
  PartialTensorShape indices, unused, out;
  RETURN_IF_ERROR(c->WithRankAtLeast(0, 1, &indices));
  RETURN_IF_ERROR(c->WithRank(2, 1, &unused));
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(2, &out));
  RETURN_IF_ERROR(CheckUpdatesPartialShape(c, indices, c->input(1), out));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("ScatterNd")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Input("shape: Tindices")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(ScatterNdShape)
    .Doc(R"doc(Scatters `updates` into zeros of `shape` at N-d `indices`.

indices has shape batch + [ix] and updates shape batch + shape[ix:]; each
update slice is added at the position its index row names, so duplicate
rows sum. Every coordinate must be in range.)doc");

// out[offset(r)] += updates[r], slice by slice (serial: rows may repeat).
template <typename T>
void AddSlices(const std::vector<int64_t>& offsets, int64_t slice,
               const T* updates, T* out) {
  for (size_t r = 0; r < offsets.size(); ++r) {
    T* dst = out + offsets[r] * slice;
    const T* src = updates + static_cast<int64_t>(r) * slice;
    for (int64_t j = 0; j < slice; ++j) dst[j] += src[j];
  }
}

template <typename T, typename Index>
class ScatterNdKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& updates = ctx->input(1);
    const Tensor& shape_t = ctx->input(2);
    OP_REQUIRES(ctx, shape_t.dims() == 1,
                errors::InvalidArgument("shape must be a vector, got shape ",
                                        shape_t.shape().DebugString()));
    const Index* sv = shape_t.data<Index>();
    std::vector<int64_t> dims(sv, sv + shape_t.NumElements());
    auto shape = TensorShape::FromDims(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    NdLayout l;
    OP_REQUIRES_OK(ctx, MakeLayout(indices, *shape, "output", &l));
    OP_REQUIRES_OK(ctx, CheckUpdatesShape(updates, *shape, l));
    std::vector<int64_t> offsets;
    OP_REQUIRES_OK(ctx,
                   SliceOffsets<Index>(indices, *shape, l, "shape", &offsets));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T(0));
    AddSlices(offsets, l.slice, updates.data<T>(), dst);
  }
};

#define RUNNEL_REGISTER_SCATTER_ND(T)                               \
  REGISTER_KERNEL_BUILDER(Name("ScatterNd")                         \
                              .Device(kDeviceCpu)                   \
                              .TypeConstraint<T>("T")               \
                              .TypeConstraint<int32_t>("Tindices"), \
                          ScatterNdKernel<T, int32_t>);             \
  REGISTER_KERNEL_BUILDER(Name("ScatterNd")                         \
                              .Device(kDeviceCpu)                   \
                              .TypeConstraint<T>("T")               \
                              .TypeConstraint<int64_t>("Tindices"), \
                          ScatterNdKernel<T, int64_t>);
RUNNEL_SCATTER_ADD_TYPES(RUNNEL_REGISTER_SCATTER_ND)
#undef RUNNEL_REGISTER_SCATTER_ND

// ---------------------------------------------------------------------------
// TensorScatterUpdate, TensorScatterAdd

Status TensorScatterShape(InferenceContext* c) {
  PartialTensorShape indices;
  RETURN_IF_ERROR(c->WithRankAtLeast(1, 1, &indices));
  RETURN_IF_ERROR(
      CheckUpdatesPartialShape(c, indices, c->input(2), c->input(0)));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

REGISTER_OP("TensorScatterUpdate")
    .Input("tensor: T")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(TensorScatterShape)
    .Doc(R"doc(A copy of `tensor` with slices at N-d `indices` replaced.

indices has shape batch + [ix] and updates shape batch + tensor.shape[ix:].
Where rows repeat, the last update wins.)doc");

REGISTER_OP("TensorScatterAdd")
    .Input("tensor: T")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(TensorScatterShape)
    .Doc(R"doc(A copy of `tensor` with `updates` added at N-d `indices`.

indices has shape batch + [ix] and updates shape batch + tensor.shape[ix:];
duplicate rows add up.)doc");

// The shared front: validates, then gives the output (a copy of tensor,
// or tensor's buffer when this kernel holds the only reference) and the
// slice offsets.
template <typename W, typename Index>
bool PrepareTensorScatter(OpKernelContext* ctx, NdLayout* l,
                          std::vector<int64_t>* offsets, Tensor** out) {
  const Tensor& tensor = ctx->input(0);
  const Tensor& indices = ctx->input(1);
  const Tensor& updates = ctx->input(2);
  Status s = MakeLayout(indices, tensor.shape(), "tensor", l);
  if (s.ok()) s = CheckUpdatesShape(updates, tensor.shape(), *l);
  if (s.ok()) {
    s = SliceOffsets<Index>(indices, tensor.shape(), *l, "shape", offsets);
  }
  if (s.ok()) {
    s = ctx->forward_input_or_allocate_output({0}, 0, tensor.shape(), out);
  }
  if (!s.ok()) {
    ctx->SetStatus(s);
    return false;
  }
  if ((*out)->raw_data() != tensor.raw_data()) {
    std::copy_n(InData<W>(tensor), tensor.NumElements(), OutData<W>(*out));
  }
  return true;
}

template <typename W, typename Index>
class TensorScatterUpdateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    NdLayout l;
    std::vector<int64_t> offsets;
    Tensor* out;
    if (!PrepareTensorScatter<W, Index>(ctx, &l, &offsets, &out)) return;
    const W* src = InData<W>(ctx->input(2));
    W* dst = OutData<W>(out);
    for (size_t r = 0; r < offsets.size(); ++r) {
      std::copy_n(src + static_cast<int64_t>(r) * l.slice, l.slice,
                  dst + offsets[r] * l.slice);
    }
  }
};

template <typename T, typename Index>
class TensorScatterAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    NdLayout l;
    std::vector<int64_t> offsets;
    Tensor* out;
    if (!PrepareTensorScatter<T, Index>(ctx, &l, &offsets, &out)) return;
    AddSlices(offsets, l.slice, ctx->input(2).data<T>(), out->data<T>());
  }
};

#define RUNNEL_REGISTER_TENSOR_SCATTER(OP, T, KERNEL_T)             \
  REGISTER_KERNEL_BUILDER(Name(OP)                                  \
                              .Device(kDeviceCpu)                   \
                              .TypeConstraint<T>("T")               \
                              .TypeConstraint<int32_t>("Tindices"), \
                          KERNEL_T<int32_t>);                       \
  REGISTER_KERNEL_BUILDER(Name(OP)                                  \
                              .Device(kDeviceCpu)                   \
                              .TypeConstraint<T>("T")               \
                              .TypeConstraint<int64_t>("Tindices"), \
                          KERNEL_T<int64_t>);
template <typename T>
struct UpdateKernelFor {
  template <typename Index>
  using K = TensorScatterUpdateKernel<Moved<T>, Index>;
};
template <typename T>
struct AddKernelFor {
  template <typename Index>
  using K = TensorScatterAddKernel<T, Index>;
};
#define RUNNEL_REGISTER_UPDATE(T)                          \
  RUNNEL_REGISTER_TENSOR_SCATTER("TensorScatterUpdate", T, \
                                 UpdateKernelFor<T>::K)
#define RUNNEL_REGISTER_ADD(T) \
  RUNNEL_REGISTER_TENSOR_SCATTER("TensorScatterAdd", T, AddKernelFor<T>::K)
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_UPDATE)
RUNNEL_SCATTER_ADD_TYPES(RUNNEL_REGISTER_ADD)
#undef RUNNEL_REGISTER_ADD
#undef RUNNEL_REGISTER_UPDATE
#undef RUNNEL_REGISTER_TENSOR_SCATTER

}  // namespace
}  // namespace runnel
