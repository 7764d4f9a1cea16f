// Ops that exist for gradients: StopGradient and PreventGradient (markers
// the gradient walk honours), StridedSliceGrad (the gradient of
// StridedSlice and Slice), and UnsortedSegmentSum (the dense form of the
// sparse gradient of Gather; Note [Sparse gradients] in
// runnel/graph/gradients.h). Names, attrs and semantics follow TensorFlow;
// the ops' own gradients are in gradient_grad.cc.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/cpu/cwise.h"
#include "runnel/cpu/integer.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// StopGradient, PreventGradient: identities for the forward pass.

class PassThroughKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, ctx->input(0));
  }
};

REGISTER_OP("StopGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(R"doc(Stops gradient computation: the output is the input, but no
gradient flows back through it (its contribution to any gradient is zero).)doc");
REGISTER_KERNEL_BUILDER(Name("StopGradient").Device(kDeviceCpu),
                        PassThroughKernel);

REGISTER_OP("PreventGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("message: string = ''")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(R"doc(An identity op that triggers an error if a gradient is requested.

Building a gradient through it is an InvalidArgument error that includes
`message` (e.g. why the gradient would be wrong).)doc");
REGISTER_KERNEL_BUILDER(Name("PreventGradient").Device(kDeviceCpu),
                        PassThroughKernel);

// ---------------------------------------------------------------------------
// StridedSliceGrad: scatters dy into zeros of `shape` at the elements
// StridedSlice(input of `shape`, begin, end, strides, masks) reads.

struct SliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink = 0;
};

bool Bit(int64_t mask, int i) { return i < 63 && ((mask >> i) & 1) != 0; }

// A strided slice resolved against a full shape: one entry per dimension.
struct DenseSlice {
  std::vector<int64_t> begin, strides, count;
  std::vector<int64_t> final_dims;  // The slice's shape.
};

// TF's resolution of a sparse slice spec (ellipsis, new axes, shrinks,
// masks, negative and out-of-range bounds) against `dims`.
Status ResolveSlice(const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end,
                    const std::vector<int64_t>& strides,
                    absl::Span<const int64_t> dims, const SliceMasks& m,
                    DenseSlice* out) {
  // Unsigned: a mask may have its sign bit set.
  const uint64_t ellipsis_bits = static_cast<uint64_t>(m.ellipsis);
  if (ellipsis_bits & (ellipsis_bits - 1)) {
    return errors::InvalidArgument(
        "Multiple ellipses in slice spec not allowed (ellipsis_mask = ",
        m.ellipsis, ")");
  }
  int specs = static_cast<int>(strides.size());
  int64_t ellipsis = m.ellipsis;
  bool seen = false;
  int new_after_ellipsis = 0;
  for (int i = 0; i < specs; ++i) {
    if (seen && Bit(m.new_axis, i)) ++new_after_ellipsis;
    if (Bit(ellipsis, i)) seen = true;
  }
  if (!seen) ellipsis |= int64_t{1} << specs++;  // Implicit trailing "...".
  const int rank = static_cast<int>(dims.size());
  out->begin.assign(rank, 0);
  out->strides.assign(rank, 1);
  out->count.assign(rank, 0);
  out->final_dims.clear();
  std::vector<int64_t> e(rank, 0);
  std::vector<char> bmask(rank, 0), emask(rank, 0), shrink(rank, 0);
  std::vector<int> gather;  // Final dim -> dense dim, or -1 for a new axis.
  int d = 0;
  for (int i = 0; i < specs; ++i) {
    if (Bit(ellipsis, i)) {
      const int stop =
          std::min(rank - (specs - i) + 1 + new_after_ellipsis, rank);
      for (; d < stop; ++d) {
        bmask[d] = emask[d] = 1;
        gather.push_back(d);
      }
    } else if (Bit(m.new_axis, i)) {
      gather.push_back(-1);
    } else {
      if (d == rank) {
        return errors::InvalidArgument("Index out of range using input dim ", d,
                                       "; input has only ", rank, " dims");
      }
      out->begin[d] = begin[i];
      e[d] = end[i];
      out->strides[d] = strides[i];
      bmask[d] = Bit(m.begin, i);
      emask[d] = Bit(m.end, i);
      shrink[d] = Bit(m.shrink, i);
      if (!shrink[d]) gather.push_back(d);
      ++d;
    }
  }
  for (int i = 0; i < rank; ++i) {
    int64_t& b = out->begin[i];
    const int64_t s = out->strides[i], dim = dims[i];
    if (s == 0) {
      return errors::InvalidArgument("strides[", i, "] must be non-zero");
    }
    if (shrink[i]) {
      if (s < 0) {
        return errors::InvalidArgument(
            "only stride 1 allowed on non-range indexing (dimension ", i,
            " has stride ", s, ")");
      }
      const int64_t fwd = b < 0 ? dim + b : b;
      if (fwd < 0 || fwd >= dim) {
        return errors::InvalidArgument("slice index ", b, " of dimension ", i,
                                       " out of bounds (size ", dim, ")");
      }
      b = fwd;
      out->count[i] = 1;
      continue;
    }
    // Valid positions: [0, dim] forward, [-1, dim - 1] backward.
    const int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_end) {
      if (masked) return (s > 0) != is_end ? lo : hi;
      return std::clamp(x < 0 ? dim + x : x, lo, hi);
    };
    b = canonical(b, bmask[i], false);
    const int64_t stop = canonical(e[i], emask[i], true);
    const int64_t span = stop - b;
    out->count[i] = (span == 0 || (span < 0) != (s < 0))
                        ? 0
                        : span / s + (span % s != 0 ? 1 : 0);
  }
  for (int g : gather) out->final_dims.push_back(g < 0 ? 1 : out->count[g]);
  return absl::OkStatus();
}

// The masks are TF's int32 attrs: a value outside int32 is refused, as
// TensorFlow refuses it.
Status GetMasks(const AttrMap& attrs, SliceMasks* m) {
  for (auto [name, mask] :
       {std::pair<const char*, int64_t*>{"begin_mask", &m->begin},
        {"end_mask", &m->end},
        {"ellipsis_mask", &m->ellipsis},
        {"new_axis_mask", &m->new_axis},
        {"shrink_axis_mask", &m->shrink}}) {
    RETURN_IF_ERROR(GetAttr(attrs, name, mask));
    if (*mask < std::numeric_limits<int32_t>::min() ||
        *mask > std::numeric_limits<int32_t>::max()) {
      return errors::InvalidArgument("attr '", name, "' = ", *mask,
                                     " is out of range for an int32");
    }
  }
  return absl::OkStatus();
}

constexpr int64_t kMaxSliceSpecs = 31;

Status StridedSliceGradShape(InferenceContext* c) {
  PartialTensorShape v;
  for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(c->WithRank(i, 1, &v));
  PartialTensorShape out;
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(0, &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("StridedSliceGrad")
    .Input("shape: Index")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Input("dy: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Index: {int32, int64}")
    .Attr("begin_mask: int = 0")
    .Attr("end_mask: int = 0")
    .Attr("ellipsis_mask: int = 0")
    .Attr("new_axis_mask: int = 0")
    .Attr("shrink_axis_mask: int = 0")
    .SetShapeFn(StridedSliceGradShape)
    .Doc(R"doc(Returns the gradient of StridedSlice.

Since StridedSlice cuts out pieces of its input of shape `shape`, its
gradient is zeros of `shape` with `dy` written where the slice came from.
begin, end, strides and the masks are those of the StridedSlice; dy must
have the slice's shape.)doc");

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == DT_INT32) {
    for (int32_t x : t.flat<int32_t>()) v.push_back(x);
  } else {
    for (int64_t x : t.flat<int64_t>()) v.push_back(x);
  }
  return v;
}

template <typename T>
class StridedSliceGradKernel : public OpKernel {
 public:
  explicit StridedSliceGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, GetMasks(c->attrs(), &masks_));
  }

  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 4; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).dims() == 1,
                  errors::InvalidArgument(
                      "shape, begin, end and strides must be vectors; input ",
                      i, " has shape ", ctx->input(i).shape().DebugString()));
    }
    const int64_t specs = ctx->input(1).NumElements();
    OP_REQUIRES(ctx,
                ctx->input(2).NumElements() == specs &&
                    ctx->input(3).NumElements() == specs,
                errors::InvalidArgument(
                    "Expected begin, end, and strides to be 1D equal size "
                    "tensors, but got shapes ",
                    ctx->input(1).shape().DebugString(), ", ",
                    ctx->input(2).shape().DebugString(), ", and ",
                    ctx->input(3).shape().DebugString()));
    OP_REQUIRES(
        ctx, specs <= kMaxSliceSpecs,
        errors::InvalidArgument("at most ", kMaxSliceSpecs,
                                " slice specs are supported, got ", specs));
    const std::vector<int64_t> dims = ReadInts(ctx->input(0));
    StatusOr<TensorShape> shape = TensorShape::FromDims(dims);
    OP_REQUIRES(ctx, shape.ok(),
                errors::InvalidArgument(
                    "shape [", absl::StrJoin(dims, ","),
                    "] is not a valid shape: ", shape.status().message()));
    DenseSlice slice;
    OP_REQUIRES_OK(
        ctx, ResolveSlice(ReadInts(ctx->input(1)), ReadInts(ctx->input(2)),
                          ReadInts(ctx->input(3)), dims, masks_, &slice));
    const Tensor& dy = ctx->input(4);
    OP_REQUIRES(
        ctx, dy.shape() == TensorShape(absl::MakeConstSpan(slice.final_dims)),
        errors::InvalidArgument("shape of dy was ", dy.shape().DebugString(),
                                " instead of [",
                                absl::StrJoin(slice.final_dims, ","), "]"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* o = out->data<T>();
    const int64_t n = out->NumElements();
    if (n > 0) std::memset(static_cast<void*>(o), 0, n * sizeof(T));
    if (dy.NumElements() == 0) return;
    Scatter(dy.data<T>(), dims, slice, o);
  }

 private:
  // o[begin + idx * strides] = dy[idx] for every index idx < count, in
  // row-major order (the order of dy's elements).
  static void Scatter(const T* dy, const std::vector<int64_t>& dims,
                      const DenseSlice& s, T* o) {
    const int rank = static_cast<int>(dims.size());
    if (rank == 0) {
      o[0] = dy[0];
      return;
    }
    std::vector<int64_t> in_stride(rank, 1);
    for (int i = rank - 2; i >= 0; --i) {
      in_stride[i] = in_stride[i + 1] * dims[i + 1];
    }
    std::vector<int64_t> idx(rank, 0);
    const int64_t inner = s.count[rank - 1];
    const int64_t step = s.strides[rank - 1];
    int64_t k = 0;
    while (true) {
      int64_t base = 0;
      for (int i = 0; i < rank; ++i) {
        base += (s.begin[i] + idx[i] * s.strides[i]) * in_stride[i];
      }
      for (int64_t j = 0; j < inner; ++j) o[base + j * step] = dy[k++];
      int i = rank - 2;
      for (; i >= 0; --i) {
        if (++idx[i] < s.count[i]) break;
        idx[i] = 0;
      }
      if (i < 0) return;
    }
  }

  SliceMasks masks_;
};
#define REGISTER_STRIDED_SLICE_GRAD(T)                                        \
  REGISTER_KERNEL_BUILDER(Name("StridedSliceGrad")                            \
                              .Device(kDeviceCpu)                             \
                              .TypeConstraint<T>("T")                         \
                              .TypeConstraint("Index", {DT_INT32, DT_INT64}), \
                          StridedSliceGradKernel<T>)
REGISTER_STRIDED_SLICE_GRAD(float);
REGISTER_STRIDED_SLICE_GRAD(double);
REGISTER_STRIDED_SLICE_GRAD(int32_t);
REGISTER_STRIDED_SLICE_GRAD(int64_t);
#undef REGISTER_STRIDED_SLICE_GRAD

// ---------------------------------------------------------------------------
// UnsortedSegmentSum: output[i, ...] = sum of data[j..., ...] over the j
// with segment_ids[j...] == i.

Status UnsortedSegmentSumShape(InferenceContext* c) {
  const PartialTensorShape& data = c->input(0);
  const PartialTensorShape& ids = c->input(1);
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(2, 0, &unused));
  std::vector<int64_t> n;
  const int64_t segments = c->GetConstInts(2, &n) ? n[0] : -1;
  if (segments < -1) {
    return c->InvalidArgument("num_segments must be non-negative, got ",
                              segments);
  }
  if (data.unknown_rank() || ids.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  if (ids.dims() > data.dims()) {
    return c->InvalidArgument("segment_ids ", ids.DebugString(),
                              " has more dimensions than data ",
                              data.DebugString());
  }
  std::vector<int64_t> prefix(data.dim_sizes().begin(),
                              data.dim_sizes().begin() + ids.dims());
  Status s =
      ids.MergeWith(PartialTensorShape(absl::MakeConstSpan(prefix))).status();
  if (!s.ok()) {
    return c->InvalidArgument(
        "data.shape = ", data.DebugString(),
        " does not start with segment_ids.shape = ", ids.DebugString());
  }
  PartialTensorShape out({segments});
  for (int i = ids.dims(); i < data.dims(); ++i) out.AddDim(data.dim_size(i));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("UnsortedSegmentSum")
    .Input("data: T")
    .Input("segment_ids: Tindices")
    .Input("num_segments: Tnumsegments")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("Tnumsegments: {int32, int64} = DT_INT32")
    .SetShapeFn(UnsortedSegmentSumShape)
    .Doc(R"doc(Computes the sum along segments of a tensor.

output[i, ...] = sum over j with segment_ids[j] == i of data[j, ...], where
segment_ids.shape is a prefix of data.shape (j ranges over its indices) and
output has shape [num_segments] + data.shape[segment_ids.rank:]. Segment
ids need not be sorted; a segment nobody maps to is 0; negative ids are
dropped; an id >= num_segments is an error.)doc");

using cpu::WrapAdd;

template <typename T, typename Index>
class UnsortedSegmentSumKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    const Tensor& num = ctx->input(2);
    OP_REQUIRES(ctx, num.dims() == 0,
                errors::InvalidArgument("num_segments should be a scalar, not "
                                        "shape ",
                                        num.shape().DebugString()));
    const int64_t segments = num.dtype() == DT_INT32
                                 ? int64_t{num.scalar<int32_t>()}
                                 : num.scalar<int64_t>();
    OP_REQUIRES(ctx, segments >= 0,
                errors::InvalidArgument("num_segments must be non-negative, "
                                        "got ",
                                        segments));
    bool prefix = ids.dims() <= data.dims();
    for (int i = 0; prefix && i < ids.dims(); ++i) {
      prefix = ids.dim_size(i) == data.dim_size(i);
    }
    OP_REQUIRES(
        ctx, prefix,
        errors::InvalidArgument("data.shape = ", data.shape().DebugString(),
                                " does not start with segment_ids.shape = ",
                                ids.shape().DebugString()));
    const Index* id = ids.data<Index>();
    const int64_t rows = ids.NumElements();
    for (int64_t j = 0; j < rows; ++j) {
      OP_REQUIRES(
          ctx, id[j] < segments,
          errors::InvalidArgument("segment_ids[", j, "] = ", id[j],
                                  " is out of range [0, ", segments, ")"));
    }
    TensorShape out_shape({segments});
    for (int i = ids.dims(); i < data.dims(); ++i) {
      out_shape.AddDim(data.dim_size(i));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    T* o = out->data<T>();
    std::fill(o, o + out->NumElements(), T(0));
    if (rows == 0 || data.NumElements() == 0) return;
    const int64_t inner = data.NumElements() / rows;
    const T* x = data.data<T>();
    // Shards own column ranges, so no two threads add into one element.
    cpu::ParallelRange(ctx->intra_op_threadpool(), inner, rows,
                       [&](int64_t cb, int64_t ce) {
                         for (int64_t j = 0; j < rows; ++j) {
                           if (id[j] < 0) continue;
                           const T* src = x + j * inner;
                           T* dst = o + id[j] * inner;
                           for (int64_t c = cb; c < ce; ++c) {
                             dst[c] = WrapAdd(dst[c], src[c]);
                           }
                         }
                       });
  }
};
#define REGISTER_SEGMENT_SUM(T, I)                               \
  REGISTER_KERNEL_BUILDER(                                       \
      Name("UnsortedSegmentSum")                                 \
          .Device(kDeviceCpu)                                    \
          .TypeConstraint<T>("T")                                \
          .TypeConstraint<I>("Tindices")                         \
          .TypeConstraint("Tnumsegments", {DT_INT32, DT_INT64}), \
      UnsortedSegmentSumKernel<T, I>)
#define REGISTER_SEGMENT_SUM_ALL(T) \
  REGISTER_SEGMENT_SUM(T, int32_t); \
  REGISTER_SEGMENT_SUM(T, int64_t)
REGISTER_SEGMENT_SUM_ALL(float);
REGISTER_SEGMENT_SUM_ALL(double);
REGISTER_SEGMENT_SUM_ALL(int32_t);
REGISTER_SEGMENT_SUM_ALL(int64_t);
#undef REGISTER_SEGMENT_SUM_ALL
#undef REGISTER_SEGMENT_SUM

}  // namespace
}  // namespace runnel
