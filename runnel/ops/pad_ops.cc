// Ops that extend, mirror, reverse or broadcast a tensor along its dims:
// Pad, PadV2, MirrorPad, MirrorPadGrad, ReverseV2, ReverseSequence,
// BroadcastTo (TensorFlow's tf.pad, tf.reverse, tf.reverse_sequence,
// tf.broadcast_to).
//
// Note [Dim maps]
// Pad, MirrorPad, ReverseV2 and BroadcastTo all read output element o from
// input element sum_d map[d][o[d]] * stride[d], with map[d][i] = -1 meaning
// "the pad value". MapPlan holds the maps; its innermost dim is cut into
// runs whose source step is +1 (std::copy_n), -1 (std::reverse_copy), 0 (a
// broadcast: std::fill_n) or a pad (std::fill_n of the value), so the hot
// loop moves whole runs and each kernel only builds its maps. Values move as
// words (runnel/ops/moved_words.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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
// Map plans (Note [Dim maps])

using DimMap = std::vector<int64_t>;

struct Run {
  int64_t out_begin, length, src, step;  // step 2: the pad value.
};
constexpr int64_t kPadStep = 2;

// The runs of the innermost map.
std::vector<Run> MakeRuns(const DimMap& m) {
  std::vector<Run> runs;
  for (int64_t i = 0; i < static_cast<int64_t>(m.size());) {
    Run r{i, 1, m[i], m[i] < 0 ? kPadStep : 1};
    if (i + 1 < static_cast<int64_t>(m.size()) && m[i] >= 0 && m[i + 1] >= 0) {
      const int64_t d = m[i + 1] - m[i];
      if (d >= -1 && d <= 1) r.step = d;
    }
    int64_t j = i + 1;
    while (j < static_cast<int64_t>(m.size()) &&
           (r.step == kPadStep ? m[j] < 0
                               : m[j] >= 0 && m[j] == m[j - 1] + r.step)) {
      ++j;
    }
    r.length = j - i;
    runs.push_back(r);
    i = j;
  }
  return runs;
}

// out (of shape maps[d].size()) from in (of shape in_shape, same rank).
template <typename W>
void GatherByMaps(OpKernelContext* ctx, const W* in,
                  const TensorShape& in_shape, const std::vector<DimMap>& maps,
                  const W& pad, W* out) {
  const int r = in_shape.dims();
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<int64_t> stride(r, 1);
  for (int d = r - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * in_shape.dim_size(d + 1);
  const std::vector<Run> runs = MakeRuns(maps[r - 1]);
  const int64_t inner = static_cast<int64_t>(maps[r - 1].size());
  int64_t rows = 1;
  for (int d = 0; d + 1 < r; ++d) rows *= static_cast<int64_t>(maps[d].size());
  if (rows == 0 || inner == 0) return;
  cpu::ParallelRange(ctx->intra_op_threadpool(), rows,
                     inner * MoveCostNs<W>() + 5, [&](int64_t b, int64_t e) {
                       for (int64_t row = b; row < e; ++row) {
                         int64_t src = 0, rem = row;
                         bool padded = false;
                         for (int d = r - 2; d >= 0; --d) {
                           const int64_t n =
                               static_cast<int64_t>(maps[d].size());
                           const int64_t m = maps[d][rem % n];
                           rem /= n;
                           if (m < 0) padded = true;
                           src += m * stride[d];
                         }
                         W* dst = out + row * inner;
                         if (padded) {
                           std::fill_n(dst, inner, pad);
                           continue;
                         }
                         const W* s = in + src;
                         for (const Run& run : runs) {
                           W* o = dst + run.out_begin;
                           if (run.step == 1) {
                             std::copy_n(s + run.src, run.length, o);
                           } else if (run.step == -1) {
                             std::reverse_copy(s + run.src - run.length + 1,
                                               s + run.src + 1, o);
                           } else if (run.step == 0) {
                             std::fill_n(o, run.length, s[run.src]);
                           } else {
                             std::fill_n(o, run.length, pad);
                           }
                         }
                       }
                     });
}

// Reads a [rank, 2] int32/int64 paddings tensor.
template <typename Index>
std::vector<std::pair<int64_t, int64_t>> ReadPaddings(const Tensor& p) {
  std::vector<std::pair<int64_t, int64_t>> v(p.dim_size(0));
  const Index* d = p.data<Index>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = {d[2 * i], d[2 * i + 1]};
  return v;
}

Status CheckPaddingsShape(const Tensor& input, const Tensor& paddings) {
  if (paddings.dims() != 2 || paddings.dim_size(1) != 2) {
    return errors::InvalidArgument("paddings must be a matrix with 2 columns: ",
                                   paddings.shape().DebugString());
  }
  if (paddings.dim_size(0) != input.dims()) {
    return errors::InvalidArgument(
        "The first dimension of paddings must be the rank of inputs",
        paddings.shape().DebugString(), " ", input.shape().DebugString());
  }
  return absl::OkStatus();
}

// REFLECT paddings must be less than the dim size, SYMMETRIC ones no
// greater.
Status CheckMirrorPaddings(int64_t n, int64_t before, int64_t after,
                           bool reflect, int dim) {
  if (before < 0 || after < 0) {
    return errors::InvalidArgument("Paddings must be non-negative: ", before,
                                   " ", after);
  }
  const int64_t limit = reflect ? n - 1 : n;
  if (before > limit || after > limit) {
    return reflect
               ? errors::InvalidArgument(
                     "paddings must be less than the dimension size: ", before,
                     ", ", after, " not less than ", n, " (dimension ", dim,
                     ")")
               : errors::InvalidArgument(
                     "paddings must be no greater than the dimension "
                     "size: ",
                     before, ", ", after, " greater than ", n, " (dimension ",
                     dim, ")");
  }
  return absl::OkStatus();
}

// Shape function of the pads: input dims plus (or, for MirrorPadGrad,
// minus) the paddings where both are known.
// mirror_edge: -1 for a constant pad, else 1 (REFLECT) or 0 (SYMMETRIC):
// paddings may not exceed a known dim size minus it.
Status PadShapeImpl(InferenceContext* c, int sign, int mirror_edge) {
  PartialTensorShape paddings;
  RETURN_IF_ERROR(c->WithRank(1, 2, &paddings));
  if (paddings.dim_size(1) >= 0 && paddings.dim_size(1) != 2) {
    return c->InvalidArgument("paddings must be a matrix with 2 columns: ",
                              paddings.DebugString());
  }
  PartialTensorShape in = c->input(0);
  if (in.unknown_rank()) {
    if (paddings.dim_size(0) < 0) {
      c->set_output(0, PartialTensorShape());
      return absl::OkStatus();
    }
    in =
        PartialTensorShape::UnknownDims(static_cast<int>(paddings.dim_size(0)));
  } else if (paddings.dim_size(0) >= 0 && paddings.dim_size(0) != in.dims()) {
    return c->InvalidArgument(
        "The first dimension of paddings must be the rank of inputs",
        paddings.DebugString(), " ", in.DebugString());
  }
  std::vector<int64_t> p;
  PartialTensorShape out = PartialTensorShape::UnknownDims(in.dims());
  if (c->GetConstInts(1, &p) &&
      p.size() == static_cast<size_t>(2 * in.dims())) {
    for (int d = 0; d < in.dims(); ++d) {
      if (p[2 * d] < 0 || p[2 * d + 1] < 0) {
        return c->InvalidArgument("Paddings must be non-negative: ", p[2 * d],
                                  " ", p[2 * d + 1]);
      }
      if (in.dim_size(d) < 0) continue;
      if (mirror_edge >= 0) {
        Status st = CheckMirrorPaddings(in.dim_size(d), p[2 * d], p[2 * d + 1],
                                        mirror_edge == 1, d);
        if (!st.ok()) return errors::Prefix(st, c->ErrorPrefix());
      }
      out.set_dim(d, in.dim_size(d) + sign * (p[2 * d] + p[2 * d + 1]));
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}
Status PadShape(InferenceContext* c) { return PadShapeImpl(c, 1, -1); }
Status MirrorPadShape(InferenceContext* c) {
  std::string mode;
  RETURN_IF_ERROR(c->GetAttr("mode", &mode));
  return PadShapeImpl(c, 1, mode == "REFLECT" ? 1 : 0);
}
Status PadGradShape(InferenceContext* c) { return PadShapeImpl(c, -1, -1); }

// ---------------------------------------------------------------------------
// Pad, PadV2

REGISTER_OP("Pad")
    .Input("input: T")
    .Input("paddings: Tpaddings")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .SetShapeFn(PadShape)
    .Doc(R"doc(Pads a tensor with zeros.

paddings is [rank(input), 2]: paddings[d] = [before, after] elements added
on either side of dimension d, so output.shape[d] = before +
input.shape[d] + after. Paddings must be non-negative.)doc");

REGISTER_OP("PadV2")
    .Input("input: T")
    .Input("paddings: Tpaddings")
    .Input("constant_values: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .SetShapeFn(PadShape)
    .Doc(R"doc(Pads a tensor with a scalar constant_values.

As Pad, but the new elements are constant_values.)doc");

template <typename W, typename Index>
class PadKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& paddings = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckPaddingsShape(input, paddings));
    W pad{};
    if (ctx->num_inputs() == 3) {
      const Tensor& c = ctx->input(2);
      OP_REQUIRES(
          ctx, c.dims() == 0,
          errors::InvalidArgument("constant_values must be a scalar. Found: ",
                                  c.shape().DebugString()));
      pad = InData<W>(c)[0];
    }
    const auto p = ReadPaddings<Index>(paddings);
    TensorShape out_shape;
    std::vector<DimMap> maps(input.dims());
    for (int d = 0; d < input.dims(); ++d) {
      const auto [before, after] = p[d];
      OP_REQUIRES(ctx, before >= 0 && after >= 0,
                  errors::InvalidArgument(
                      "Paddings must be non-negative: ", before, " ", after));
      const int64_t n = input.dim_size(d);
      DimMap& m = maps[d];
      m.assign(before, -1);
      for (int64_t i = 0; i < n; ++i) m.push_back(i);
      m.insert(m.end(), after, -1);
      out_shape.AddDim(before + n + after);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() == 0) return;
    if (input.NumElements() == 0) {
      std::fill_n(OutData<W>(out), out_shape.num_elements(), pad);
      return;
    }
    GatherByMaps<W>(ctx, InData<W>(input), input.shape(), maps, pad,
                    OutData<W>(out));
  }
};

#define RUNNEL_REGISTER_PAD_I(OP, T, I)                        \
  REGISTER_KERNEL_BUILDER(Name(OP)                             \
                              .Device(kDeviceCpu)              \
                              .TypeConstraint<T>("T")          \
                              .TypeConstraint<I>("Tpaddings"), \
                          PadKernel<Moved<T>, I>);
#define RUNNEL_REGISTER_PAD(T)               \
  RUNNEL_REGISTER_PAD_I("Pad", T, int32_t)   \
  RUNNEL_REGISTER_PAD_I("Pad", T, int64_t)   \
  RUNNEL_REGISTER_PAD_I("PadV2", T, int32_t) \
  RUNNEL_REGISTER_PAD_I("PadV2", T, int64_t)
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_PAD)
#undef RUNNEL_REGISTER_PAD

// ---------------------------------------------------------------------------
// MirrorPad, MirrorPadGrad

REGISTER_OP("MirrorPad")
    .Input("input: T")
    .Input("paddings: Tpaddings")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .Attr("mode: {'REFLECT', 'SYMMETRIC'}")
    .SetShapeFn(MirrorPadShape)
    .Doc(R"doc(Pads a tensor with mirrored values.

REFLECT mirrors without the border element ([1,2,3] padded by 2 on the left
gives [3,2,1,2,3]), so paddings must be less than the dimension size;
SYMMETRIC mirrors with it ([2,1,1,2,3]), so paddings may equal it.)doc");

REGISTER_OP("MirrorPadGrad")
    .Input("input: T")
    .Input("paddings: Tpaddings")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .Attr("mode: {'REFLECT', 'SYMMETRIC'}")
    .SetShapeFn(PadGradShape)
    .Doc(R"doc(The gradient of MirrorPad: folds the padded margins back in.

input has MirrorPad's output shape; each of its elements is added to the
element of the unpadded tensor it was mirrored from.)doc");

// The source index of each position of a mirror-padded dim of size n.
StatusOr<DimMap> MirrorMap(int64_t n, int64_t before, int64_t after,
                           bool reflect, int dim) {
  RETURN_IF_ERROR(CheckMirrorPaddings(n, before, after, reflect, dim));
  DimMap m;
  m.reserve(before + n + after);
  const int64_t off = reflect ? 0 : 1;
  for (int64_t i = -before; i < n + after; ++i) {
    if (i < 0) {
      m.push_back(-i - off);
    } else if (i >= n) {
      m.push_back(2 * n - 2 - i + off);
    } else {
      m.push_back(i);
    }
  }
  return m;
}

class MirrorPadBase : public OpKernel {
 public:
  explicit MirrorPadBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string mode;
    OP_REQUIRES_OK(c, c->GetAttr("mode", &mode));
    reflect_ = mode == "REFLECT";
  }

 protected:
  // The maps for an unpadded tensor of shape `shape`.
  template <typename Index>
  Status Maps(const Tensor& paddings, const TensorShape& shape,
              std::vector<DimMap>* maps) const {
    const auto p = ReadPaddings<Index>(paddings);
    maps->clear();
    for (int d = 0; d < shape.dims(); ++d) {
      ASSIGN_OR_RETURN(DimMap m, MirrorMap(shape.dim_size(d), p[d].first,
                                           p[d].second, reflect_, d));
      maps->push_back(std::move(m));
    }
    return absl::OkStatus();
  }

  bool reflect_ = true;
};

template <typename W, typename Index>
class MirrorPadKernel : public MirrorPadBase {
 public:
  using MirrorPadBase::MirrorPadBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& paddings = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckPaddingsShape(input, paddings));
    std::vector<DimMap> maps;
    OP_REQUIRES_OK(ctx, Maps<Index>(paddings, input.shape(), &maps));
    TensorShape out_shape;
    for (const DimMap& m : maps)
      out_shape.AddDim(static_cast<int64_t>(m.size()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() == 0) return;
    GatherByMaps<W>(ctx, InData<W>(input), input.shape(), maps, W{},
                    OutData<W>(out));
  }
};

template <typename T, typename Index>
class MirrorPadGradKernel : public MirrorPadBase {
 public:
  using MirrorPadBase::MirrorPadBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& paddings = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckPaddingsShape(dy, paddings));
    const auto p = ReadPaddings<Index>(paddings);
    TensorShape out_shape;
    for (int d = 0; d < dy.dims(); ++d) {
      const int64_t n = dy.dim_size(d) - p[d].first - p[d].second;
      OP_REQUIRES(
          ctx, p[d].first >= 0 && p[d].second >= 0 && n >= 0,
          errors::InvalidArgument("paddings ", p[d].first, ", ", p[d].second,
                                  " do not fit input dimension ", d,
                                  " of size ", dy.dim_size(d)));
      out_shape.AddDim(n);
    }
    std::vector<DimMap> maps;
    OP_REQUIRES_OK(ctx, Maps<Index>(paddings, out_shape, &maps));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    T* dx = out->data<T>();
    std::fill_n(dx, out_shape.num_elements(), T(0));
    if (dy.NumElements() == 0) return;
    const T* g = dy.data<T>();
    const int r = dy.dims();
    if (r == 0) {
      dx[0] = g[0];
      return;
    }
    // dx[map(o)] += dy[o], row by row of dy (serial: rows fold onto rows).
    std::vector<int64_t> stride(r, 1);
    for (int d = r - 2; d >= 0; --d)
      stride[d] = stride[d + 1] * out_shape.dim_size(d + 1);
    const DimMap& last = maps[r - 1];
    const int64_t inner = dy.dim_size(r - 1);
    const int64_t rows = dy.NumElements() / inner;
    for (int64_t row = 0; row < rows; ++row) {
      int64_t dst = 0, rem = row;
      for (int d = r - 2; d >= 0; --d) {
        const int64_t n = dy.dim_size(d);
        dst += maps[d][rem % n] * stride[d];
        rem /= n;
      }
      const T* src = g + row * inner;
      T* o = dx + dst;
      for (int64_t j = 0; j < inner; ++j) o[last[j]] += src[j];
    }
  }
};

#define RUNNEL_REGISTER_MIRROR_I(T, I)                         \
  REGISTER_KERNEL_BUILDER(Name("MirrorPad")                    \
                              .Device(kDeviceCpu)              \
                              .TypeConstraint<T>("T")          \
                              .TypeConstraint<I>("Tpaddings"), \
                          MirrorPadKernel<Moved<T>, I>);
#define RUNNEL_REGISTER_MIRROR(T)      \
  RUNNEL_REGISTER_MIRROR_I(T, int32_t) \
  RUNNEL_REGISTER_MIRROR_I(T, int64_t)
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_MIRROR)
#define RUNNEL_REGISTER_MIRROR_GRAD_I(T, I)                    \
  REGISTER_KERNEL_BUILDER(Name("MirrorPadGrad")                \
                              .Device(kDeviceCpu)              \
                              .TypeConstraint<T>("T")          \
                              .TypeConstraint<I>("Tpaddings"), \
                          MirrorPadGradKernel<T, I>);
#define RUNNEL_REGISTER_MIRROR_GRAD(T)      \
  RUNNEL_REGISTER_MIRROR_GRAD_I(T, int32_t) \
  RUNNEL_REGISTER_MIRROR_GRAD_I(T, int64_t)
RUNNEL_REGISTER_MIRROR_GRAD(float)
RUNNEL_REGISTER_MIRROR_GRAD(double)
RUNNEL_REGISTER_MIRROR_GRAD(int32_t)
RUNNEL_REGISTER_MIRROR_GRAD(int64_t)
RUNNEL_REGISTER_MIRROR_GRAD(complex64)
RUNNEL_REGISTER_MIRROR_GRAD(complex128)
#undef RUNNEL_REGISTER_MIRROR_GRAD
#undef RUNNEL_REGISTER_MIRROR_GRAD_I
#undef RUNNEL_REGISTER_MIRROR
#undef RUNNEL_REGISTER_MIRROR_I

// ---------------------------------------------------------------------------
// ReverseV2

REGISTER_OP("ReverseV2")
    .Input("tensor: T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .Attr("T: alltypes")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(R"doc(Reverses the dimensions of `tensor` listed in `axis`.

axis is a vector of distinct dimensions in [-rank, rank).)doc");

template <typename W, typename Index>
class ReverseV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& axis = ctx->input(1);
    OP_REQUIRES(ctx, axis.dims() == 1,
                errors::InvalidArgument("'axis' must be 1-dimensional but got ",
                                        axis.shape().DebugString()));
    const int r = input.dims();
    std::vector<bool> rev(r, false);
    const Index* a = axis.data<Index>();
    for (int64_t i = 0; i < axis.NumElements(); ++i) {
      int64_t d = a[i];
      OP_REQUIRES(ctx, d >= -r && d < r,
                  errors::InvalidArgument("'axis'[", i, "] = ", d,
                                          " is out of valid range [", -r, ", ",
                                          r - 1, "]"));
      if (d < 0) d += r;
      OP_REQUIRES(
          ctx, !rev[d],
          errors::InvalidArgument("axis ", d, " specified more than once."));
      rev[d] = true;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    if (input.NumElements() == 0) return;
    std::vector<DimMap> maps(r);
    for (int d = 0; d < r; ++d) {
      const int64_t n = input.dim_size(d);
      for (int64_t i = 0; i < n; ++i) maps[d].push_back(rev[d] ? n - 1 - i : i);
    }
    GatherByMaps<W>(ctx, InData<W>(input), input.shape(), maps, W{},
                    OutData<W>(out));
  }
};

#define RUNNEL_REGISTER_REVERSE_I(T, I)                   \
  REGISTER_KERNEL_BUILDER(Name("ReverseV2")               \
                              .Device(kDeviceCpu)         \
                              .TypeConstraint<T>("T")     \
                              .TypeConstraint<I>("Tidx"), \
                          ReverseV2Kernel<Moved<T>, I>);
#define RUNNEL_REGISTER_REVERSE(T)      \
  RUNNEL_REGISTER_REVERSE_I(T, int32_t) \
  RUNNEL_REGISTER_REVERSE_I(T, int64_t)
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_REVERSE)
#undef RUNNEL_REGISTER_REVERSE
#undef RUNNEL_REGISTER_REVERSE_I

// ---------------------------------------------------------------------------
// ReverseSequence

Status ReverseSequenceShape(InferenceContext* c) {
  PartialTensorShape lengths;
  RETURN_IF_ERROR(c->WithRank(1, 1, &lengths));
  const PartialTensorShape& in = c->input(0);
  int64_t seq_dim, batch_dim;
  RETURN_IF_ERROR(c->GetAttr("seq_dim", &seq_dim));
  RETURN_IF_ERROR(c->GetAttr("batch_dim", &batch_dim));
  if (in.unknown_rank()) {
    c->set_output(0, in);
    return absl::OkStatus();
  }
  const int64_t r = in.dims();
  if (batch_dim < 0) batch_dim += r;
  if (seq_dim < 0) seq_dim += r;
  if (seq_dim == batch_dim) {
    return c->InvalidArgument("seq_dim must not equal batch_dim: ", seq_dim);
  }
  if (seq_dim < 0 || seq_dim >= r) {
    return c->InvalidArgument("seq_dim must be < input rank: ", seq_dim,
                              " vs. ", r);
  }
  if (batch_dim < 0 || batch_dim >= r) {
    return c->InvalidArgument("batch_dim must be < input rank: ", batch_dim,
                              " vs. ", r);
  }
  PartialTensorShape out = in;
  const int64_t b = in.dim_size(static_cast<int>(batch_dim)),
                l = lengths.dim_size(0);
  if (b >= 0 && l >= 0 && b != l) {
    return c->InvalidArgument("Length of seq_lengths != input.dims(", batch_dim,
                              "), (", l, " vs. ", b, ")");
  }
  if (b < 0) out.set_dim(static_cast<int>(batch_dim), l);
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("ReverseSequence")
    .Input("input: T")
    .Input("seq_lengths: Tlen")
    .Output("output: T")
    .Attr("seq_dim: int")
    .Attr("batch_dim: int = 0")
    .Attr("T: type")
    .Attr("Tlen: {int32, int64} = DT_INT64")
    .SetShapeFn(ReverseSequenceShape)
    .Doc(R"doc(Reverses variable-length slices.

For each b along batch_dim, the first seq_lengths[b] elements along seq_dim
are reversed; the rest are copied. Each length must be in
[0, input.shape[seq_dim]].)doc");

template <typename W, typename Len>
class ReverseSequenceKernel : public OpKernel {
 public:
  explicit ReverseSequenceKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("seq_dim", &seq_dim_));
    OP_REQUIRES_OK(c, c->GetAttr("batch_dim", &batch_dim_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& lengths = ctx->input(1);
    const int64_t r = input.dims();
    const int64_t sd = seq_dim_ < 0 ? seq_dim_ + r : seq_dim_;
    const int64_t bd = batch_dim_ < 0 ? batch_dim_ + r : batch_dim_;
    OP_REQUIRES(ctx, sd != bd,
                errors::InvalidArgument("seq_dim must not equal batch_dim: ",
                                        seq_dim_));
    OP_REQUIRES(ctx, sd >= 0 && sd < r,
                errors::InvalidArgument("Invalid seq_dim ", seq_dim_,
                                        " for input of rank ", r));
    OP_REQUIRES(ctx, bd >= 0 && bd < r,
                errors::InvalidArgument("Invalid batch_dim ", batch_dim_,
                                        " for input of rank ", r));
    OP_REQUIRES(ctx, lengths.dims() == 1,
                errors::InvalidArgument("seq_lengths must be 1-dim, not ",
                                        lengths.dims()));
    const int64_t nb = input.dim_size(static_cast<int>(bd));
    const int64_t ns = input.dim_size(static_cast<int>(sd));
    OP_REQUIRES(ctx, lengths.NumElements() == nb,
                errors::InvalidArgument("Length of seq_lengths != input.dims(",
                                        bd, "), (", lengths.NumElements(),
                                        " vs. ", nb, ")"));
    const Len* len = lengths.data<Len>();
    for (int64_t b = 0; b < nb; ++b) {
      OP_REQUIRES(ctx, len[b] >= 0 && len[b] <= ns,
                  errors::InvalidArgument(
                      "seq_lengths[", b, "] = ", len[b], " is not in [0, ", ns,
                      "] (input.dims(", sd, ") = ", ns, ")"));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    if (input.NumElements() == 0) return;
    // Blocks of `inner` contiguous elements past both dims move whole.
    const int last = static_cast<int>(std::max(sd, bd));
    int64_t inner = 1;
    for (int d = last + 1; d < r; ++d) inner *= input.dim_size(d);
    int64_t s_stride = 1, b_stride = 1;  // In blocks.
    for (int d = last; d > sd; --d) s_stride *= input.dim_size(d);
    for (int d = last; d > bd; --d) b_stride *= input.dim_size(d);
    const W* src = InData<W>(input);
    W* dst = OutData<W>(out);
    const int64_t blocks = input.NumElements() / inner;
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), blocks, inner * MoveCostNs<W>() + 5,
        [&](int64_t b0, int64_t b1) {
          for (int64_t k = b0; k < b1; ++k) {
            const int64_t s = (k / s_stride) % ns, b = (k / b_stride) % nb;
            const int64_t from =
                s < len[b] ? k + (len[b] - 1 - 2 * s) * s_stride : k;
            std::copy_n(src + from * inner, inner, dst + k * inner);
          }
        });
  }

 private:
  int64_t seq_dim_ = 0, batch_dim_ = 0;
};

#define RUNNEL_REGISTER_REVSEQ_I(T, I)                    \
  REGISTER_KERNEL_BUILDER(Name("ReverseSequence")         \
                              .Device(kDeviceCpu)         \
                              .TypeConstraint<T>("T")     \
                              .TypeConstraint<I>("Tlen"), \
                          ReverseSequenceKernel<Moved<T>, I>);
#define RUNNEL_REGISTER_REVSEQ(T)      \
  RUNNEL_REGISTER_REVSEQ_I(T, int32_t) \
  RUNNEL_REGISTER_REVSEQ_I(T, int64_t)
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_REVSEQ)
#undef RUNNEL_REGISTER_REVSEQ
#undef RUNNEL_REGISTER_REVSEQ_I

// ---------------------------------------------------------------------------
// BroadcastTo

Status BroadcastToShape(InferenceContext* c) {
  PartialTensorShape out, unused;
  RETURN_IF_ERROR(c->WithRank(1, 1, &unused));
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(1, &out));
  const PartialTensorShape& in = c->input(0);
  if (!in.unknown_rank() && !out.unknown_rank()) {
    if (in.dims() > out.dims()) {
      return c->InvalidArgument("Rank of input (", in.dims(),
                                ") must be no greater than rank of output "
                                "shape (",
                                out.dims(), ").");
    }
    const int lead = out.dims() - in.dims();
    for (int i = 0; i < in.dims(); ++i) {
      const int64_t a = in.dim_size(i), b = out.dim_size(lead + i);
      if (a >= 0 && b >= 0 && a != 1 && a != b) {
        return c->InvalidArgument("Incompatible shapes: ", in.DebugString(),
                                  " vs. ", out.DebugString());
      }
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("BroadcastTo")
    .Input("input: T")
    .Input("shape: Tidx")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastToShape)
    .Doc(R"doc(Broadcasts `input` to `shape` (NumPy rules).

input's dims align with the last dims of shape; each must equal its
counterpart or be 1.)doc");

template <typename W, typename Index>
class BroadcastToKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& shape_t = ctx->input(1);
    OP_REQUIRES(ctx, shape_t.dims() == 1,
                errors::InvalidArgument("shape must be a vector, got shape ",
                                        shape_t.shape().DebugString()));
    const Index* sv = shape_t.data<Index>();
    auto shape = TensorShape::FromDims(
        std::vector<int64_t>(sv, sv + shape_t.NumElements()));
    OP_REQUIRES_OK(ctx, shape.status());
    const int r = shape->dims(), lead = r - input.dims();
    OP_REQUIRES(
        ctx, lead >= 0,
        errors::InvalidArgument(
            "Rank of input (", input.dims(),
            ") must be no greater than rank of output shape (", r, ")."));
    TensorShape in_shape;  // input's shape with leading 1s, rank r.
    for (int d = 0; d < r; ++d) {
      const int64_t a = d < lead ? 1 : input.dim_size(d - lead);
      const int64_t b = shape->dim_size(d);
      OP_REQUIRES(ctx, a == b || a == 1,
                  errors::InvalidArgument(
                      "Incompatible shapes: ", input.shape().DebugString(),
                      " vs. ", shape->DebugString()));
      in_shape.AddDim(a);
    }
    if (*shape == input.shape()) {
      ctx->set_output(0, input);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    // Only now are the per-dimension maps bounded by the output's size: an
    // empty [2^40, 0] output must not size a 2^40-entry map.
    if (shape->num_elements() == 0) return;
    std::vector<DimMap> maps(r);
    for (int d = 0; d < r; ++d) {
      const bool one = in_shape.dim_size(d) == 1;
      for (int64_t i = 0; i < shape->dim_size(d); ++i) {
        maps[d].push_back(one ? 0 : i);
      }
    }
    GatherByMaps<W>(ctx, InData<W>(input), in_shape, maps, W{},
                    OutData<W>(out));
  }
};

#define RUNNEL_REGISTER_BCAST_I(T, I)                     \
  REGISTER_KERNEL_BUILDER(Name("BroadcastTo")             \
                              .Device(kDeviceCpu)         \
                              .TypeConstraint<T>("T")     \
                              .TypeConstraint<I>("Tidx"), \
                          BroadcastToKernel<Moved<T>, I>);
#define RUNNEL_REGISTER_BCAST(T)      \
  RUNNEL_REGISTER_BCAST_I(T, int32_t) \
  RUNNEL_REGISTER_BCAST_I(T, int64_t)
RUNNEL_FOR_MOVED_TYPES(RUNNEL_REGISTER_BCAST)
#undef RUNNEL_REGISTER_BCAST
#undef RUNNEL_REGISTER_BCAST_I

}  // namespace
}  // namespace runnel
