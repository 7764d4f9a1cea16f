// Ops that select, reorder or replicate elements without computing on them:
// Slice, StridedSlice, Transpose, Tile, GatherV2, OneHot, DynamicStitch.
//
// Note [Moving words]
// These kernels never look at element values, so each POD dtype moves as an
// opaque word of its size (Word<uint8_t> ... Word16) and each kernel is
// compiled once per element size rather than once per dtype; strings move as
// std::string. The word types are declared may_alias, so reading a float
// buffer through Word<uint32_t> is well defined.
//
// Note [Copy plans]
// Slice, StridedSlice, Tile and Transpose all reduce to one primitive: for
// every output element, in row-major order, read the input at
// offset + sum(index[d] * stride[d]). A CopyPlan holds those output dims,
// input strides (possibly negative for reversed slices, or zero for tiled
// repeats) and the offset. Simplify() drops unit dims and merges dims that
// are contiguous in the input, so the innermost loop is as long as possible
// and is a memcpy whenever its stride is 1.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/stitch.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Shared helpers

template <typename Bits>
struct [[gnu::may_alias]] Word {
  Bits v;
};
struct [[gnu::may_alias]] Word16 {
  uint64_t v[2];
};

// The type a kernel for dtype T moves (Note [Moving words]).
template <typename T>
using PodWord = std::conditional_t<
    sizeof(T) == 1, Word<uint8_t>,
    std::conditional_t<
        sizeof(T) == 2, Word<uint16_t>,
        std::conditional_t<
            sizeof(T) == 4, Word<uint32_t>,
            std::conditional_t<sizeof(T) == 8, Word<uint64_t>, Word16>>>>;
template <typename T>
using Moved =
    std::conditional_t<std::is_same_v<T, tstring>, tstring, PodWord<T>>;
static_assert(sizeof(PodWord<complex128>) == 16 && sizeof(PodWord<half>) == 2);

// Every dtype the data-movement ops register: the types "alltypes" names.
#define RUNNEL_FOR_ALL_TYPES(M) \
  M(bool)                       \
  M(half)                       \
  M(bfloat16)                   \
  M(float)                      \
  M(double)                     \
  M(int8_t)                     \
  M(int16_t)                    \
  M(int32_t)                    \
  M(int64_t)                    \
  M(uint8_t)                    \
  M(uint16_t)                   \
  M(uint32_t)                   \
  M(uint64_t)                   \
  M(complex64)                  \
  M(complex128)                 \
  M(tstring)

template <typename W>
const W* InData(const Tensor& t) {
  return static_cast<const W*>(t.raw_data());
}
template <typename W>
W* OutData(Tensor* t) {
  return static_cast<W*>(t->raw_data());
}

// Rough cost of moving one element, for ParallelFor.
template <typename W>
constexpr int64_t MoveCostNs() {
  return std::is_same_v<W, tstring> ? 40 : (sizeof(W) <= 8 ? 1 : 2);
}

// Reads an int32/int64 tensor as int64 values.
std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v;
  v.reserve(t.NumElements());
  if (t.dtype() == DT_INT32) {
    for (int32_t x : t.flat<int32_t>()) v.push_back(x);
  } else {
    for (int64_t x : t.flat<int64_t>()) v.push_back(x);
  }
  return v;
}

// Row-major element strides of `shape`.
DimVector Strides(const TensorShape& shape) {
  DimVector s(shape.dims());
  int64_t acc = 1;
  for (int i = shape.dims() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape.dim_size(i);
  }
  return s;
}

// "[1,2]": the multi-index of flat position `flat` in `shape` ("" for a
// scalar).
std::string IndexString(const TensorShape& shape, int64_t flat) {
  if (shape.dims() == 0) return "";
  DimVector idx(shape.dims());
  for (int i = shape.dims() - 1; i >= 0; --i) {
    const int64_t d = shape.dim_size(i);
    idx[i] = flat % d;
    flat /= d;
  }
  return absl::StrCat("[", absl::StrJoin(idx, ","), "]");
}

// A known-rank shape made of dims [start, end) of `s` (whose rank is known).
PartialTensorShape SubShape(const PartialTensorShape& s, int start, int end) {
  PartialTensorShape r = PartialTensorShape::UnknownDims(0);
  for (int i = start; i < end; ++i) r.AddDim(s.dim_size(i));
  return r;
}

// a + b, or unknown rank if either is.
PartialTensorShape Concat(const PartialTensorShape& a,
                          const PartialTensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return PartialTensorShape();
  PartialTensorShape r = a;
  for (int64_t d : b.dim_sizes()) r.AddDim(d);
  return r;
}

// ---------------------------------------------------------------------------
// Copy plans (Note [Copy plans])

struct CopyPlan {
  DimVector dims;      // Output dims, row-major.
  DimVector strides;   // Input stride (in elements) of each output dim.
  int64_t offset = 0;  // Input position of output element 0.
};

void Simplify(CopyPlan* p) {
  DimVector dims, strides;
  for (size_t i = 0; i < p->dims.size(); ++i) {
    if (p->dims[i] == 1) continue;
    if (!dims.empty() && strides.back() == p->strides[i] * p->dims[i]) {
      dims.back() *= p->dims[i];
      strides.back() = p->strides[i];
      continue;
    }
    dims.push_back(p->dims[i]);
    strides.push_back(p->strides[i]);
  }
  p->dims = std::move(dims);
  p->strides = std::move(strides);
}

template <typename W>
void CopyRow(const W* in, int64_t stride, int64_t n, W* out) {
  if (stride == 1) {
    std::copy_n(in, n, out);
  } else if (stride == 0) {
    std::fill_n(out, n, *in);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = in[i * stride];
  }
}

// Rows of the simplified plan are copied with CopyRow; the outer index is an
// odometer so each shard divides only once.
template <typename W>
void RunRowCopy(OpKernelContext* ctx, const W* in, const CopyPlan& p, W* out) {
  const int r = static_cast<int>(p.dims.size());
  if (r == 0) {
    out[0] = in[p.offset];
    return;
  }
  const int64_t n = p.dims[r - 1], s = p.strides[r - 1];
  int64_t rows = 1;
  for (int d = 0; d + 1 < r; ++d) rows *= p.dims[d];
  cpu::ParallelRange(ctx->intra_op_threadpool(), rows, n * MoveCostNs<W>() + 5,
                     [&](int64_t b, int64_t e) {
                       DimVector idx(r - 1);
                       int64_t off = p.offset, rem = b;
                       for (int d = r - 2; d >= 0; --d) {
                         idx[d] = rem % p.dims[d];
                         rem /= p.dims[d];
                         off += idx[d] * p.strides[d];
                       }
                       for (int64_t row = b; row < e; ++row) {
                         CopyRow(in + off, s, n, out + row * n);
                         for (int d = r - 2; d >= 0; --d) {
                           off += p.strides[d];
                           if (++idx[d] < p.dims[d]) break;
                           off -= p.strides[d] * p.dims[d];
                           idx[d] = 0;
                         }
                       }
                     });
}

// Transpose-like plans: the innermost output dim is strided in the input but
// some other output dim j is contiguous there. Copying square tiles of
// (j, last) keeps both the reads and the writes within a few cache lines.
template <typename W>
void RunTiledCopy(OpKernelContext* ctx, const W* in, const CopyPlan& p, int j,
                  W* out) {
  constexpr int64_t kTile =
      std::is_same_v<W, tstring> ? 8 : std::max<int64_t>(8, 64 / sizeof(W));
  const int r = static_cast<int>(p.dims.size());
  DimVector out_strides(r);
  int64_t acc = 1;
  for (int d = r - 1; d >= 0; --d) {
    out_strides[d] = acc;
    acc *= p.dims[d];
  }
  std::vector<int> outer;  // Dims other than j and the last.
  int64_t outer_count = 1;
  for (int d = 0; d + 1 < r; ++d) {
    if (d != j) {
      outer.push_back(d);
      outer_count *= p.dims[d];
    }
  }
  const int64_t a_size = p.dims[j], a_ostride = out_strides[j];
  const int64_t b_size = p.dims[r - 1], b_istride = p.strides[r - 1];
  const int64_t a_tiles = (a_size + kTile - 1) / kTile;
  cpu::ParallelRange(
      ctx->intra_op_threadpool(), outer_count * a_tiles,
      kTile * b_size * MoveCostNs<W>() * 2, [&](int64_t ub, int64_t ue) {
        for (int64_t u = ub; u < ue; ++u) {
          int64_t rem = u / a_tiles;
          int64_t in_off = p.offset, out_off = 0;
          for (int k = static_cast<int>(outer.size()) - 1; k >= 0; --k) {
            const int d = outer[k];
            const int64_t i = rem % p.dims[d];
            rem /= p.dims[d];
            in_off += i * p.strides[d];
            out_off += i * out_strides[d];
          }
          const int64_t a0 = (u % a_tiles) * kTile;
          const int64_t a1 = std::min(a_size, a0 + kTile);
          for (int64_t b0 = 0; b0 < b_size; b0 += kTile) {
            const int64_t b1 = std::min(b_size, b0 + kTile);
            for (int64_t a = a0; a < a1; ++a) {
              const W* src = in + in_off + a;
              W* dst = out + out_off + a * a_ostride;
              for (int64_t b = b0; b < b1; ++b) dst[b] = src[b * b_istride];
            }
          }
        }
      });
}

// Fills `out` (plan.dims elements, at least one) from `in` per the plan.
template <typename W>
void StridedCopy(OpKernelContext* ctx, const W* in, CopyPlan plan, W* out) {
  Simplify(&plan);
  const int r = static_cast<int>(plan.dims.size());
  if (r >= 2 && plan.strides[r - 1] != 1 && plan.dims[r - 1] > 1) {
    for (int j = r - 2; j >= 0; --j) {
      if (plan.strides[j] == 1) {
        RunTiledCopy(ctx, in, plan, j, out);
        return;
      }
    }
  }
  RunRowCopy(ctx, in, plan, out);
}

// Output = input rows [begin, end) along dim 0, sharing the input's buffer,
// when that slice starts on a 64-byte boundary (kernels downstream may rely
// on the alignment every fresh buffer has).
template <typename W>
bool ShareDim0Slice(OpKernelContext* ctx, const Tensor& input, int64_t begin,
                    int64_t end, const TensorShape& out_shape) {
  if (input.dims() == 0 || begin >= end || !input.IsInitialized()) return false;
  const int64_t row_elems = input.NumElements() / input.dim_size(0);
  if ((begin * row_elems * static_cast<int64_t>(sizeof(W))) % 64 != 0) {
    return false;
  }
  Tensor out;
  if (!out.CopyFrom(input.Slice(begin, end), out_shape)) return false;
  ctx->set_output(0, std::move(out));
  return true;
}

// Output = input (same buffer) viewed with `shape`.
void ForwardInput(OpKernelContext* ctx, const Tensor& input,
                  const TensorShape& shape) {
  Tensor out;
  if (out.CopyFrom(input, shape)) {
    ctx->set_output(0, std::move(out));
  } else {
    ctx->CtxFailure(errors::Internal("cannot view ",
                                     input.shape().DebugString(), " as ",
                                     shape.DebugString()));
  }
}

constexpr char kAllTypes[] = "T: alltypes";

// ---------------------------------------------------------------------------
// Slice

Status SliceShape(InferenceContext* c) {
  const PartialTensorShape& input = c->input(0);
  PartialTensorShape begin_shape, size_shape, merged;
  RETURN_IF_ERROR(c->WithRank(1, 1, &begin_shape));
  RETURN_IF_ERROR(c->WithRank(2, 1, &size_shape));
  RETURN_IF_ERROR(c->Merge(begin_shape, size_shape, &merged));
  int64_t rank = merged.dim_size(0);
  if (rank >= 0 && input.dims() >= 0 && input.dims() != rank) {
    return c->InvalidArgument("begin and size have ", rank,
                              " elements but the input has shape ",
                              input.DebugString());
  }
  if (rank < 0) rank = input.dims();
  std::vector<int64_t> begin, size;
  const bool have_begin = c->GetConstInts(1, &begin);
  const bool have_size = c->GetConstInts(2, &size);
  if (rank < 0 && have_size) rank = static_cast<int64_t>(size.size());
  if (rank < 0) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  PartialTensorShape out =
      PartialTensorShape::UnknownDims(static_cast<int>(rank));
  if (have_size) {
    for (int i = 0; i < rank; ++i) {
      if (size[i] >= 0) {
        out.set_dim(i, size[i]);
      } else if (size[i] < -1) {
        return c->InvalidArgument("size[", i, "] = ", size[i],
                                  " must be >= -1");
      } else if (have_begin && input.dims() == rank && input.dim_size(i) >= 0 &&
                 begin[i] >= 0 && begin[i] <= input.dim_size(i)) {
        out.set_dim(i, input.dim_size(i) - begin[i]);
      }
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("Slice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("size: Index")
    .Output("output: T")
    .Attr(kAllTypes)
    .Attr("Index: {int32, int64}")
    .SetShapeFn(SliceShape)
    .Doc(
        R"doc(Returns a slice of `input`: `size[i]` elements of dimension i from `begin[i]`.

`size[i] = -1` takes everything from `begin[i]` to the end of dimension i.
Requires 0 <= begin[i] <= begin[i] + size[i] <= input.shape[i].)doc");

template <typename W>
class SliceKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& begin_t = ctx->input(1);
    const Tensor& size_in = ctx->input(2);
    const int rank = input.dims();
    OP_REQUIRES(
        ctx,
        begin_t.dims() == 1 && size_in.dims() == 1 &&
            begin_t.NumElements() == rank && size_in.NumElements() == rank,
        errors::InvalidArgument(
            "Expected begin and size arguments to be 1-D tensors of size ",
            rank, ", but got shapes ", begin_t.shape().DebugString(), " and ",
            size_in.shape().DebugString(), " instead (input has shape ",
            input.shape().DebugString(), ")"));
    const std::vector<int64_t> begin = ReadInts(begin_t);
    std::vector<int64_t> size = ReadInts(size_in);
    bool identity = true, dim0_only = true;
    for (int i = 0; i < rank; ++i) {
      const int64_t dim = input.dim_size(i), b = begin[i];
      OP_REQUIRES(ctx, 0 <= b && b <= dim,
                  errors::InvalidArgument(
                      "Expected begin[", i, "] in [0, ", dim, "], but got ", b,
                      " (input shape ", input.shape().DebugString(), ")"));
      if (size[i] == -1) size[i] = dim - b;
      OP_REQUIRES(ctx, 0 <= size[i] && size[i] <= dim - b,
                  errors::InvalidArgument(
                      "Expected size[", i, "] in [0, ", dim - b, "], but got ",
                      size[i], " (input shape ", input.shape().DebugString(),
                      ", begin[", i, "] = ", b, ")"));
      const bool all = b == 0 && size[i] == dim;
      identity &= all;
      if (i > 0) dim0_only &= all;
    }
    const TensorShape out_shape{absl::Span<const int64_t>(size)};
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    if (dim0_only && ShareDim0Slice<W>(ctx, input, begin[0], begin[0] + size[0],
                                       out_shape)) {
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() == 0) return;
    const DimVector in_strides = Strides(input.shape());
    CopyPlan plan;
    for (int i = 0; i < rank; ++i) {
      plan.dims.push_back(size[i]);
      plan.strides.push_back(in_strides[i]);
      plan.offset += begin[i] * in_strides[i];
    }
    StridedCopy(ctx, InData<W>(input), std::move(plan), OutData<W>(out));
  }
};

#define RUNNEL_REGISTER_SLICE(T)                               \
  REGISTER_KERNEL_BUILDER(                                     \
      Name("Slice").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      SliceKernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_SLICE)
#undef RUNNEL_REGISTER_SLICE

// ---------------------------------------------------------------------------
// StridedSlice

// The sparse spec (one entry per begin/end/strides element, with masks)
// expanded to one entry per input dimension, following TensorFlow's
// ValidateStridedSliceOp.
struct DenseSlice {
  DimVector begin, end, strides;  // Canonical, per input dim.
  DimVector processing;           // Per input dim; -1 if unknown.
  DimVector final_dims;           // Output dims; -1 if unknown.
  bool is_identity = true;        // Output == input (maybe reshaped).
  bool slice_dim0 = true;         // Only dim 0 is restricted, with stride 1.
};

struct SliceMasks {
  uint32_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink = 0;
};

constexpr int kShrinkAxis = -1, kNewAxis = -2;

bool Bit(uint32_t mask, int i) { return i < 32 && ((mask >> i) & 1u) != 0; }

// `begin` / `end` may be null when unknown (shape inference); `input_dims`
// may hold -1 for unknown dims. Errors are InvalidArgument.
Status ValidateStridedSlice(const std::vector<int64_t>* begin,
                            const std::vector<int64_t>* end,
                            const std::vector<int64_t>& strides,
                            absl::Span<const int64_t> input_dims,
                            SliceMasks masks, DenseSlice* out) {
  if (masks.ellipsis & (masks.ellipsis - 1)) {
    return errors::InvalidArgument(
        "Multiple ellipses in slice spec not allowed (ellipsis_mask = ",
        masks.ellipsis, ")");
  }
  // Step 1: count the new axes after the ellipsis; add an implicit trailing
  // ellipsis if there is none.
  int sparse_dims = static_cast<int>(strides.size());
  bool ellipsis_seen = false;
  int new_axes_after_ellipsis = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (ellipsis_seen && Bit(masks.new_axis, i)) ++new_axes_after_ellipsis;
    if (Bit(masks.ellipsis, i)) ellipsis_seen = true;
  }
  uint32_t ellipsis = masks.ellipsis;
  if (!ellipsis_seen) {
    ellipsis |= 1u << sparse_dims;
    ++sparse_dims;
  }
  // Step 2: the dense spec, one entry per input dimension.
  const int dims = static_cast<int>(input_dims.size());
  out->begin.assign(dims, 0);
  out->end.assign(dims, 0);
  out->strides.assign(dims, 1);
  std::vector<char> begin_masked(dims, 0), end_masked(dims, 0), shrink(dims, 0);
  std::vector<int> gather;  // Per output dim: a dense index, or kNewAxis.
  int full = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (Bit(ellipsis, i)) {
      const int next = std::min(
          dims - (sparse_dims - i) + 1 + new_axes_after_ellipsis, dims);
      for (; full < next; ++full) {
        begin_masked[full] = end_masked[full] = 1;
        gather.push_back(full);
      }
    } else if (Bit(masks.new_axis, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full == dims) {
        return errors::InvalidArgument("Index out of range using input dim ",
                                       full, "; input has only ", dims,
                                       " dims");
      }
      if (begin != nullptr) out->begin[full] = (*begin)[i];
      if (end != nullptr) out->end[full] = (*end)[i];
      out->strides[full] = strides[i];
      begin_masked[full] = Bit(masks.begin, i);
      end_masked[full] = Bit(masks.end, i);
      if (Bit(masks.shrink, i)) {
        gather.push_back(kShrinkAxis);
        shrink[full] = 1;
      } else {
        gather.push_back(full);
      }
      ++full;
    }
  }
  // Step 3: make masked and negative bounds explicit, clamp, bounds-check
  // shrunk indices, and compute each dimension's extent.
  const bool known = begin != nullptr && end != nullptr;
  out->processing.clear();
  out->is_identity = out->slice_dim0 = true;
  for (int i = 0; i < dims; ++i) {
    int64_t& b = out->begin[i];
    int64_t& e = out->end[i];
    const int64_t s = out->strides[i];
    const int64_t dim = input_dims[i];
    if (s == 0) {
      return errors::InvalidArgument("strides[", i, "] must be non-zero");
    }
    if (dim < 0) {
      out->processing.push_back(shrink[i] ? 1 : -1);
      continue;
    }
    if (shrink[i] && s < 0) {
      return errors::InvalidArgument(
          "only stride 1 allowed on non-range indexing (dimension ", i,
          " has stride ", s, ")");
    }
    // Valid positions are [0, dim] going forward and [-1, dim - 1] going
    // backward (one past either end).
    const int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_end) {
      if (masked) return (s > 0) != is_end ? lo : hi;
      const int64_t fwd = x < 0 ? dim + x : x;
      return std::clamp(fwd, lo, hi);
    };
    const bool both_masked = begin_masked[i] && end_masked[i];
    if (known) {
      if (shrink[i]) {
        const int64_t fwd = b < 0 ? dim + b : b;
        if (fwd < 0 || fwd >= dim) {
          return errors::InvalidArgument("slice index ", b, " of dimension ", i,
                                         " out of bounds (size ", dim, ")");
        }
        b = fwd;
        e = fwd + 1;
      } else {
        b = canonical(b, begin_masked[i], false);
        e = canonical(e, end_masked[i], true);
      }
      const bool take_all = s == 1 && b == 0 && e == dim;
      out->is_identity &= take_all;
      out->slice_dim0 &= (i == 0 && s == 1) || take_all;
    } else {
      out->is_identity &= s == 1 && both_masked;
      out->slice_dim0 &= (i == 0 && s == 1) || both_masked;
    }
    int64_t interval = 0;
    bool known_interval = false;
    if (known) {
      interval = e - b;
      known_interval = true;
    } else if (shrink[i]) {
      interval = 1;
      known_interval = true;
    } else if (both_masked && dim > 0) {
      interval = s < 0 ? -dim : dim;
      known_interval = true;
    }
    if (!known_interval) {
      out->processing.push_back(-1);
    } else if (interval == 0 || ((interval < 0) != (s < 0))) {
      out->processing.push_back(0);
    } else {
      out->processing.push_back(interval / s + (interval % s != 0 ? 1 : 0));
    }
  }
  // Step 4: the final shape drops shrunk dims and adds new axes.
  out->final_dims.clear();
  for (int g : gather) {
    if (g >= 0) {
      out->final_dims.push_back(out->processing[g]);
    } else if (g == kNewAxis) {
      out->final_dims.push_back(1);
    }
  }
  return absl::OkStatus();
}

Status GetSliceMasks(const AttrMap& attrs, SliceMasks* m) {
  int64_t v;
  RETURN_IF_ERROR(GetAttr(attrs, "begin_mask", &v));
  m->begin = static_cast<uint32_t>(v);
  RETURN_IF_ERROR(GetAttr(attrs, "end_mask", &v));
  m->end = static_cast<uint32_t>(v);
  RETURN_IF_ERROR(GetAttr(attrs, "ellipsis_mask", &v));
  m->ellipsis = static_cast<uint32_t>(v);
  RETURN_IF_ERROR(GetAttr(attrs, "new_axis_mask", &v));
  m->new_axis = static_cast<uint32_t>(v);
  RETURN_IF_ERROR(GetAttr(attrs, "shrink_axis_mask", &v));
  m->shrink = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

// Masks are 32 bits wide and one bit may be the implicit ellipsis.
constexpr int64_t kMaxSliceSpecs = 31;

Status StridedSliceShape(InferenceContext* c) {
  PartialTensorShape b, e, s, merged;
  RETURN_IF_ERROR(c->WithRank(1, 1, &b));
  RETURN_IF_ERROR(c->WithRank(2, 1, &e));
  RETURN_IF_ERROR(c->WithRank(3, 1, &s));
  RETURN_IF_ERROR(c->Merge(b, e, &merged));
  RETURN_IF_ERROR(c->Merge(merged, s, &merged));
  const int64_t sparse_dims = merged.dim_size(0);
  if (sparse_dims > kMaxSliceSpecs) {
    return c->InvalidArgument("at most ", kMaxSliceSpecs,
                              " slice specs are supported, got ", sparse_dims);
  }
  std::vector<int64_t> strides, begin, end;
  const PartialTensorShape& input = c->input(0);
  if (input.unknown_rank() || sparse_dims < 0 ||
      !c->GetConstInts(3, &strides)) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const bool have_begin = c->GetConstInts(1, &begin);
  const bool have_end = c->GetConstInts(2, &end);
  SliceMasks masks;
  RETURN_IF_ERROR(GetSliceMasks(c->attrs(), &masks));
  DenseSlice dense;
  Status st = ValidateStridedSlice(have_begin ? &begin : nullptr,
                                   have_end ? &end : nullptr, strides,
                                   input.dim_sizes(), masks, &dense);
  if (!st.ok()) return c->InvalidArgument(st.message());
  c->set_output(
      0, PartialTensorShape(absl::Span<const int64_t>(dense.final_dims)));
  return absl::OkStatus();
}

REGISTER_OP("StridedSlice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Output("output: T")
    .Attr(kAllTypes)
    .Attr("Index: {int32, int64}")
    .Attr("begin_mask: int = 0")
    .Attr("end_mask: int = 0")
    .Attr("ellipsis_mask: int = 0")
    .Attr("new_axis_mask: int = 0")
    .Attr("shrink_axis_mask: int = 0")
    .SetShapeFn(StridedSliceShape)
    .Doc(
        R"doc(Returns a strided slice of `input`: NumPy's `input[begin:end:strides, ...]`.

Entry i of begin/end/strides is the i-th slice spec. Bit i of `begin_mask`
(`end_mask`) ignores begin[i] (end[i]) and takes the fullest range; bit i of
`ellipsis_mask` makes spec i an ellipsis (`...`, at most one); bit i of
`new_axis_mask` inserts a size-1 dimension (`tf.newaxis`); bit i of
`shrink_axis_mask` takes the single index begin[i] and drops the dimension.
Negative indices count from the end; out-of-range bounds are clamped,
except for shrunk dimensions, where they are an error. Strides may be
negative but not zero.)doc");

template <typename W>
class StridedSliceKernel : public OpKernel {
 public:
  explicit StridedSliceKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, GetSliceMasks(c->attrs(), &masks_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& begin_t = ctx->input(1);
    const Tensor& end_t = ctx->input(2);
    const Tensor& strides_t = ctx->input(3);
    OP_REQUIRES(
        ctx,
        begin_t.dims() == 1 && end_t.dims() == 1 && strides_t.dims() == 1 &&
            begin_t.NumElements() == strides_t.NumElements() &&
            end_t.NumElements() == strides_t.NumElements(),
        errors::InvalidArgument(
            "Expected begin, end, and strides to be 1D equal size "
            "tensors, but got shapes ",
            begin_t.shape().DebugString(), ", ", end_t.shape().DebugString(),
            ", and ", strides_t.shape().DebugString(), " instead."));
    OP_REQUIRES(ctx, strides_t.NumElements() <= kMaxSliceSpecs,
                errors::InvalidArgument("at most ", kMaxSliceSpecs,
                                        " slice specs are supported, got ",
                                        strides_t.NumElements()));
    const std::vector<int64_t> begin = ReadInts(begin_t), end = ReadInts(end_t),
                               strides = ReadInts(strides_t);
    DenseSlice d;
    Status st = ValidateStridedSlice(&begin, &end, strides,
                                     input.shape().dim_sizes(), masks_, &d);
    OP_REQUIRES(ctx, st.ok(),
                errors::InvalidArgument(st.message(), " (input shape ",
                                        input.shape().DebugString(), ")"));
    const TensorShape out_shape{absl::Span<const int64_t>(d.final_dims)};
    if (d.is_identity) {
      ForwardInput(ctx, input, out_shape);
      return;
    }
    if (d.slice_dim0 &&
        ShareDim0Slice<W>(ctx, input, d.begin[0], d.end[0], out_shape)) {
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() == 0) return;
    const DimVector in_strides = Strides(input.shape());
    CopyPlan plan;
    for (int i = 0; i < input.dims(); ++i) {
      plan.dims.push_back(d.processing[i]);
      // A single-element dim is never stepped (and its stride may be huge).
      plan.strides.push_back(
          d.processing[i] == 1 ? 0 : in_strides[i] * d.strides[i]);
      plan.offset += d.begin[i] * in_strides[i];
    }
    StridedCopy(ctx, InData<W>(input), std::move(plan), OutData<W>(out));
  }

 private:
  SliceMasks masks_;
};

#define RUNNEL_REGISTER_STRIDED_SLICE(T)                              \
  REGISTER_KERNEL_BUILDER(                                            \
      Name("StridedSlice").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      StridedSliceKernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_STRIDED_SLICE)
#undef RUNNEL_REGISTER_STRIDED_SLICE

// ---------------------------------------------------------------------------
// Transpose

// Checks that `perm` is a permutation of [0, rank).
Status ValidatePerm(const std::vector<int64_t>& perm, int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank) {
    return errors::InvalidArgument("transpose expects a vector of size ", rank,
                                   ". But input(1) is a vector of size ",
                                   perm.size());
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank) {
      return errors::InvalidArgument("perm value ", p, " is out of range [0, ",
                                     rank, ") in perm [",
                                     absl::StrJoin(perm, ","), "]");
    }
    if (seen[p]) {
      return errors::InvalidArgument("perm value ", p,
                                     " is duplicated in perm [",
                                     absl::StrJoin(perm, ","), "]");
    }
    seen[p] = true;
  }
  return absl::OkStatus();
}

Status TransposeShape(InferenceContext* c) {
  const PartialTensorShape& input = c->input(0);
  PartialTensorShape perm_shape;
  RETURN_IF_ERROR(c->WithRank(1, 1, &perm_shape));
  std::vector<int64_t> perm;
  const bool have_perm = c->GetConstInts(1, &perm);
  int64_t rank = input.dims();
  if (rank < 0) rank = perm_shape.dim_size(0);
  if (rank < 0 && have_perm) rank = static_cast<int64_t>(perm.size());
  if (rank < 0) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  if (perm_shape.dim_size(0) >= 0 && perm_shape.dim_size(0) != rank) {
    return c->InvalidArgument("perm has ", perm_shape.dim_size(0),
                              " elements but the input has shape ",
                              input.DebugString());
  }
  if (input.unknown_rank() && rank < 2) {
    // Rank 0 and 1 are both unchanged by any valid perm.
    c->set_output(0, PartialTensorShape::UnknownDims(static_cast<int>(rank)));
    return absl::OkStatus();
  }
  PartialTensorShape out =
      PartialTensorShape::UnknownDims(static_cast<int>(rank));
  if (have_perm) {
    Status st = ValidatePerm(perm, rank);
    if (!st.ok()) return c->InvalidArgument(st.message());
    if (!input.unknown_rank()) {
      for (int i = 0; i < rank; ++i) out.set_dim(i, input.dim_size(perm[i]));
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("Transpose")
    .Input("x: T")
    .Input("perm: Tperm")
    .Output("y: T")
    .Attr(kAllTypes)
    .Attr("Tperm: {int32, int64} = DT_INT32")
    .SetShapeFn(TransposeShape)
    .Doc(R"doc(Permutes the dimensions of `x`: y.shape[i] = x.shape[perm[i]].

`perm` must be a permutation of [0, rank(x)).)doc");

template <typename W>
class TransposeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& perm_t = ctx->input(1);
    OP_REQUIRES(ctx, perm_t.dims() == 1,
                errors::InvalidArgument("perm must be a vector, got shape ",
                                        perm_t.shape().DebugString()));
    const std::vector<int64_t> perm = ReadInts(perm_t);
    Status st = ValidatePerm(perm, input.dims());
    OP_REQUIRES(ctx, st.ok(),
                errors::InvalidArgument(st.message(), " (input shape ",
                                        input.shape().DebugString(), ")"));
    const int rank = input.dims();
    TensorShape out_shape;
    bool identity = true;
    for (int i = 0; i < rank; ++i) {
      out_shape.AddDim(input.dim_size(perm[i]));
      identity &= perm[i] == i;
    }
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() == 0) return;
    const DimVector in_strides = Strides(input.shape());
    CopyPlan plan;
    for (int i = 0; i < rank; ++i) {
      plan.dims.push_back(out_shape.dim_size(i));
      plan.strides.push_back(in_strides[perm[i]]);
    }
    StridedCopy(ctx, InData<W>(input), std::move(plan), OutData<W>(out));
  }
};

#define RUNNEL_REGISTER_TRANSPOSE(T)                               \
  REGISTER_KERNEL_BUILDER(                                         \
      Name("Transpose").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      TransposeKernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_TRANSPOSE)
#undef RUNNEL_REGISTER_TRANSPOSE

// ---------------------------------------------------------------------------
// Tile

Status TileShape(InferenceContext* c) {
  const PartialTensorShape& input = c->input(0);
  PartialTensorShape mult_shape;
  RETURN_IF_ERROR(c->WithRank(1, 1, &mult_shape));
  int64_t rank = input.dims();
  const int64_t n = mult_shape.dim_size(0);
  if (rank >= 0 && n >= 0 && n != rank) {
    return c->InvalidArgument("multiples has ", n,
                              " elements but the input has shape ",
                              input.DebugString());
  }
  if (rank < 0) rank = n;
  if (rank < 0) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  std::vector<int64_t> mult;
  const bool have_mult = c->GetConstInts(1, &mult);
  PartialTensorShape out =
      PartialTensorShape::UnknownDims(static_cast<int>(rank));
  for (int i = 0; i < rank; ++i) {
    const int64_t m = have_mult ? mult[i] : -1;
    if (have_mult && m < 0) {
      return c->InvalidArgument("Expected multiples[", i, "] >= 0, but got ",
                                m);
    }
    const int64_t d = input.unknown_rank() ? -1 : input.dim_size(i);
    if (m == 0 || d == 0) {
      out.set_dim(i, 0);
    } else if (m > 0 && d > 0 && d <= std::numeric_limits<int64_t>::max() / m) {
      out.set_dim(i, d * m);
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("Tile")
    .Input("input: T")
    .Input("multiples: Tmultiples")
    .Output("output: T")
    .Attr(kAllTypes)
    .Attr("Tmultiples: {int32, int64} = DT_INT32")
    .SetShapeFn(TileShape)
    .Doc(R"doc(Repeats `input` `multiples[i]` times along dimension i.

output.shape[i] = input.shape[i] * multiples[i]; multiples must be >= 0.)doc");

template <typename W>
class TileKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& mult_t = ctx->input(1);
    const int rank = input.dims();
    OP_REQUIRES(ctx, mult_t.dims() == 1 && mult_t.NumElements() == rank,
                errors::InvalidArgument(
                    "Expected multiples argument to be a vector of length ",
                    rank, " but got shape ", mult_t.shape().DebugString(),
                    " (input shape ", input.shape().DebugString(), ")"));
    const std::vector<int64_t> mult = ReadInts(mult_t);
    DimVector out_dims;
    bool identity = true;
    for (int i = 0; i < rank; ++i) {
      const int64_t d = input.dim_size(i), m = mult[i];
      OP_REQUIRES(ctx, m >= 0,
                  errors::InvalidArgument("Expected multiples[", i,
                                          "] >= 0, but got ", m));
      OP_REQUIRES(ctx, m == 0 || d <= std::numeric_limits<int64_t>::max() / m,
                  errors::InvalidArgument(
                      "Tiling ", input.shape().DebugString(), " by [",
                      absl::StrJoin(mult, ","), "] overflows"));
      out_dims.push_back(d * m);
      identity &= m == 1;
    }
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    auto out_shape = TensorShape::FromDims(out_dims);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out_shape->num_elements() == 0) return;
    // Output dim i is (repeat, position) with input strides (0, stride[i]).
    const DimVector in_strides = Strides(input.shape());
    CopyPlan plan;
    for (int i = 0; i < rank; ++i) {
      plan.dims.push_back(mult[i]);
      plan.strides.push_back(0);
      plan.dims.push_back(input.dim_size(i));
      plan.strides.push_back(in_strides[i]);
    }
    StridedCopy(ctx, InData<W>(input), std::move(plan), OutData<W>(out));
  }
};

#define RUNNEL_REGISTER_TILE(T)                               \
  REGISTER_KERNEL_BUILDER(                                    \
      Name("Tile").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      TileKernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_TILE)
#undef RUNNEL_REGISTER_TILE

// ---------------------------------------------------------------------------
// GatherV2

Status GatherV2Shape(InferenceContext* c) {
  PartialTensorShape params, unused;
  RETURN_IF_ERROR(c->WithRankAtLeast(0, 1, &params));
  RETURN_IF_ERROR(c->WithRank(2, 0, &unused));
  const PartialTensorShape& indices = c->input(1);
  int64_t batch_dims;
  RETURN_IF_ERROR(c->GetAttr("batch_dims", &batch_dims));
  if (params.unknown_rank() || indices.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int64_t p_rank = params.dims(), i_rank = indices.dims();
  if (batch_dims < -i_rank || batch_dims > i_rank) {
    return c->InvalidArgument("Expected batch_dims in the range [", -i_rank,
                              ", ", i_rank, "], but got ", batch_dims);
  }
  if (batch_dims < 0) batch_dims += i_rank;
  if (batch_dims >= p_rank && batch_dims != 0) {
    return c->InvalidArgument("batch_dims (", batch_dims,
                              ") must be less than rank(params) (", p_rank,
                              ")");
  }
  std::vector<int64_t> axis_v;
  if (!c->GetConstInts(2, &axis_v)) {
    c->set_output(0, PartialTensorShape::UnknownDims(
                         static_cast<int>(p_rank + i_rank - 1 - batch_dims)));
    return absl::OkStatus();
  }
  int64_t axis = axis_v[0];
  if (axis < -p_rank || axis >= p_rank) {
    return c->InvalidArgument("Expected axis in the range [", -p_rank, ", ",
                              p_rank, "), but got ", axis);
  }
  if (axis < 0) axis += p_rank;
  if (axis < batch_dims) {
    return c->InvalidArgument("batch_dims (", batch_dims,
                              ") must be less than or equal to axis (", axis,
                              ")");
  }
  PartialTensorShape out = SubShape(params, 0, static_cast<int>(axis));
  out = Concat(out, SubShape(indices, static_cast<int>(batch_dims),
                             static_cast<int>(i_rank)));
  out = Concat(out, SubShape(params, static_cast<int>(axis) + 1,
                             static_cast<int>(p_rank)));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("batch_dims: int = 0")
    .Attr("Tparams: alltypes")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn(GatherV2Shape)
    .Doc(R"doc(Gathers slices of `params` along `axis` at positions `indices`.

output.shape = params.shape[:axis] + indices.shape[batch_dims:] +
params.shape[axis + 1:]. With batch_dims = b, the first b dimensions of
params and indices are batch dimensions gathered pairwise. Every index must
be in [0, params.shape[axis]).)doc");

template <typename W>
class GatherV2Kernel : public OpKernel {
 public:
  explicit GatherV2Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("batch_dims", &batch_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& axis_t = ctx->input(2);
    OP_REQUIRES(ctx, params.dims() >= 1,
                errors::InvalidArgument(
                    "params must be at least 1 dimensional, got shape ",
                    params.shape().DebugString()));
    OP_REQUIRES(ctx, axis_t.dims() == 0,
                errors::InvalidArgument("axis must be scalar, got shape ",
                                        axis_t.shape().DebugString()));
    const int p_rank = params.dims(), i_rank = indices.dims();
    int64_t axis = ReadInts(axis_t)[0];
    OP_REQUIRES(
        ctx, axis >= -p_rank && axis < p_rank,
        errors::InvalidArgument("Expected axis in the range [", -p_rank, ", ",
                                p_rank, "), but got ", axis, " (params shape ",
                                params.shape().DebugString(), ")"));
    if (axis < 0) axis += p_rank;
    int64_t batch_dims = batch_dims_;
    if (batch_dims != 0) {
      OP_REQUIRES(
          ctx, batch_dims >= -i_rank && batch_dims <= i_rank,
          errors::InvalidArgument("Expected batch_dims in the range [", -i_rank,
                                  ", ", i_rank, "], but got ", batch_dims));
      if (batch_dims < 0) batch_dims += i_rank;
      OP_REQUIRES(ctx, batch_dims < p_rank,
                  errors::InvalidArgument("batch_dims (", batch_dims,
                                          ") must be less than rank(params) (",
                                          p_rank, ")"));
      OP_REQUIRES(ctx, axis >= batch_dims,
                  errors::InvalidArgument(
                      "batch_dims (", batch_dims,
                      ") must be less than or equal to axis (", axis, ")"));
      for (int i = 0; i < batch_dims; ++i) {
        OP_REQUIRES(ctx, params.dim_size(i) == indices.dim_size(i),
                    errors::InvalidArgument(
                        "params.shape[", i, "]: ", params.dim_size(i),
                        " should be equal to indices.shape[", i,
                        "]: ", indices.dim_size(i)));
      }
    }
    const int64_t limit = params.dim_size(static_cast<int>(axis));
    if (indices.dtype() == DT_INT32) {
      Gather<int32_t>(ctx, indices.flat<int32_t>(), params, indices, axis,
                      batch_dims, limit);
    } else {
      Gather<int64_t>(ctx, indices.flat<int64_t>(), params, indices, axis,
                      batch_dims, limit);
    }
  }

 private:
  template <typename Index>
  void Gather(OpKernelContext* ctx, absl::Span<const Index> idx,
              const Tensor& params, const Tensor& indices, int64_t axis,
              int64_t batch_dims, int64_t limit) {
    for (size_t i = 0; i < idx.size(); ++i) {
      OP_REQUIRES(ctx, idx[i] >= 0 && static_cast<int64_t>(idx[i]) < limit,
                  errors::InvalidArgument(
                      "indices", IndexString(indices.shape(), i), " = ", idx[i],
                      " is not in [0, ", limit, ")"));
    }
    TensorShape out_shape;
    int64_t batch = 1, outer = 1, inner = 1, n = 1;
    for (int i = 0; i < axis; ++i) {
      out_shape.AddDim(params.dim_size(i));
      (i < batch_dims ? batch : outer) *= params.dim_size(i);
    }
    for (int i = static_cast<int>(batch_dims); i < indices.dims(); ++i) {
      out_shape.AddDim(indices.dim_size(i));
      n *= indices.dim_size(i);
    }
    for (int i = static_cast<int>(axis) + 1; i < params.dims(); ++i) {
      out_shape.AddDim(params.dim_size(i));
      inner *= params.dim_size(i);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() == 0) return;
    const W* src = InData<W>(params);
    W* dst = OutData<W>(out);
    // Output row r = ((b * outer) + o) * n + k copies params row
    // ((b * outer) + o) * limit + idx[b * n + k].
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), batch * outer * n,
        inner * MoveCostNs<W>() + 5, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t k = r % n, bo = r / n;
            const int64_t b = bo / outer;
            const int64_t row = bo * limit + idx[b * n + k];
            std::copy_n(src + row * inner, inner, dst + r * inner);
          }
        });
  }

  int64_t batch_dims_ = 0;
};

#define RUNNEL_REGISTER_GATHER(T)                                       \
  REGISTER_KERNEL_BUILDER(                                              \
      Name("GatherV2").Device(kDeviceCpu).TypeConstraint<T>("Tparams"), \
      GatherV2Kernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_GATHER)
#undef RUNNEL_REGISTER_GATHER

// ---------------------------------------------------------------------------
// OneHot

Status OneHotShape(InferenceContext* c) {
  int64_t axis;
  RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(1, 0, &unused));
  RETURN_IF_ERROR(c->WithRank(2, 0, &unused));
  RETURN_IF_ERROR(c->WithRank(3, 0, &unused));
  const PartialTensorShape& indices = c->input(0);
  if (axis < -1) {
    return c->InvalidArgument("Expected axis to be -1 or non-negative, got ",
                              axis);
  }
  int64_t depth = -1;
  std::vector<int64_t> depth_v;
  if (c->GetConstInts(1, &depth_v)) {
    depth = depth_v[0];
    if (depth < 0)
      return c->InvalidArgument("depth must be non-negative, got: ", depth);
  }
  if (indices.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int rank = indices.dims();
  if (axis > rank) {
    return c->InvalidArgument("Expected axis to be -1 or between [0, ",
                              rank + 1, "), but received ", axis);
  }
  const int at = axis == -1 ? rank : static_cast<int>(axis);
  PartialTensorShape out = SubShape(indices, 0, at);
  out.AddDim(depth);
  c->set_output(0, Concat(out, SubShape(indices, at, rank)));
  return absl::OkStatus();
}

REGISTER_OP("OneHot")
    .Input("indices: TI")
    .Input("depth: int32")
    .Input("on_value: T")
    .Input("off_value: T")
    .Output("output: T")
    .Attr("axis: int = -1")
    .Attr(kAllTypes)
    .Attr("TI: {uint8, int8, int32, int64} = DT_INT64")
    .SetShapeFn(OneHotShape)
    .Doc(
        R"doc(Returns a one-hot tensor: a new dimension of size `depth` at `axis`.

output[..., j, ...] = on_value where indices[...] == j, else off_value. An
index outside [0, depth) gives a row of off_value. axis = -1 appends the new
dimension.)doc");

template <typename W>
class OneHotKernel : public OpKernel {
 public:
  explicit OneHotKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("axis", &axis_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& depth_t = ctx->input(1);
    const Tensor& on_t = ctx->input(2);
    const Tensor& off_t = ctx->input(3);
    const int rank = indices.dims();
    OP_REQUIRES(ctx, axis_ == -1 || (axis_ >= 0 && axis_ <= rank),
                errors::InvalidArgument(
                    "Expected axis to be -1 or between [0, ", rank + 1,
                    "). But received: ", axis_, " (indices shape ",
                    indices.shape().DebugString(), ")"));
    OP_REQUIRES(ctx, depth_t.dims() == 0,
                errors::InvalidArgument("depth must be a scalar, but got: ",
                                        depth_t.shape().DebugString()));
    OP_REQUIRES(ctx, on_t.dims() == 0,
                errors::InvalidArgument("on_value must be a scalar, but got: ",
                                        on_t.shape().DebugString()));
    OP_REQUIRES(ctx, off_t.dims() == 0,
                errors::InvalidArgument("off_value must be a scalar, but got: ",
                                        off_t.shape().DebugString()));
    const int64_t depth = depth_t.scalar<int32_t>();
    OP_REQUIRES(
        ctx, depth >= 0,
        errors::InvalidArgument("depth must be non-negative, got: ", depth));
    const int at = axis_ == -1 ? rank : static_cast<int>(axis_);
    DimVector dims(indices.shape().dim_sizes().begin(),
                   indices.shape().dim_sizes().end());
    dims.insert(dims.begin() + at, depth);
    auto out_shape = TensorShape::FromDims(dims);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out_shape->num_elements() == 0) return;
    int64_t prefix = 1, suffix = 1;
    for (int i = 0; i < at; ++i) prefix *= indices.dim_size(i);
    for (int i = at; i < rank; ++i) suffix *= indices.dim_size(i);
    switch (indices.dtype()) {
      case DT_UINT8:
        Fill<uint8_t>(ctx, indices, prefix, depth, suffix, on_t, off_t, out);
        break;
      case DT_INT8:
        Fill<int8_t>(ctx, indices, prefix, depth, suffix, on_t, off_t, out);
        break;
      case DT_INT32:
        Fill<int32_t>(ctx, indices, prefix, depth, suffix, on_t, off_t, out);
        break;
      default:
        Fill<int64_t>(ctx, indices, prefix, depth, suffix, on_t, off_t, out);
        break;
    }
  }

 private:
  // out[p, d, s] = indices[p, s] == d ? on : off.
  template <typename Index>
  static void Fill(OpKernelContext* ctx, const Tensor& indices, int64_t prefix,
                   int64_t depth, int64_t suffix, const Tensor& on_t,
                   const Tensor& off_t, Tensor* out) {
    const Index* idx = static_cast<const Index*>(indices.raw_data());
    const W on = *InData<W>(on_t), off = *InData<W>(off_t);
    W* dst = OutData<W>(out);
    const int64_t block = depth * suffix;
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), prefix, block * MoveCostNs<W>() + suffix,
        [&](int64_t p0, int64_t p1) {
          for (int64_t p = p0; p < p1; ++p) {
            W* o = dst + p * block;
            std::fill_n(o, block, off);
            for (int64_t s = 0; s < suffix; ++s) {
              const int64_t v = static_cast<int64_t>(idx[p * suffix + s]);
              if (v >= 0 && v < depth) o[v * suffix + s] = on;
            }
          }
        });
  }

  int64_t axis_ = -1;
};

#define RUNNEL_REGISTER_ONE_HOT(T)                              \
  REGISTER_KERNEL_BUILDER(                                      \
      Name("OneHot").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      OneHotKernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_ONE_HOT)
#undef RUNNEL_REGISTER_ONE_HOT

// ---------------------------------------------------------------------------
// DynamicStitch

Status DynamicStitchShape(InferenceContext* c) {
  int64_t n;
  RETURN_IF_ERROR(c->GetAttr("N", &n));
  bool all_known = true;
  int64_t max_index = -1;
  PartialTensorShape extra;  // data.shape[indices.rank:], merged.
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& indices = c->input(i);
    const PartialTensorShape& data = c->input(static_cast<int>(n) + i);
    std::vector<int64_t> values;
    if (c->GetConstInts(i, &values)) {
      for (int64_t v : values) max_index = std::max(max_index, v);
    } else {
      all_known = false;
    }
    if (indices.unknown_rank()) continue;
    const int k = indices.dims();
    PartialTensorShape unused;
    RETURN_IF_ERROR(c->WithRankAtLeast(static_cast<int>(n) + i, k, &unused));
    if (data.unknown_rank()) continue;
    PartialTensorShape prefix;
    Status st = c->Merge(SubShape(data, 0, k), indices, &prefix);
    if (!st.ok()) {
      return c->InvalidArgument("data[", i, "].shape = ", data.DebugString(),
                                " does not start with indices[", i,
                                "].shape = ", indices.DebugString());
    }
    PartialTensorShape rest = SubShape(data, k, data.dims());
    st = c->Merge(extra, rest, &extra);
    if (!st.ok()) {
      return c->InvalidArgument(
          "data[", i, "].shape[", k, ":] = ", rest.DebugString(),
          " differs from the other inputs' ", extra.DebugString());
    }
  }
  PartialTensorShape out = PartialTensorShape::UnknownDims(0);
  out.AddDim(all_known ? max_index + 1 : -1);
  c->set_output(0, Concat(out, extra));
  return absl::OkStatus();
}

REGISTER_OP("DynamicStitch")
    .Input("indices: N * int32")
    .Input("data: N * T")
    .Output("merged: T")
    .Attr("N: int >= 1")
    .Attr(kAllTypes)
    .SetShapeFn(DynamicStitchShape)
    .Doc(
        R"doc(Interleaves the values of the `data` tensors into a single tensor.

merged[indices[m][i, ..., j], ...] = data[m][i, ..., j, ...]. Each data[m]
must have shape indices[m].shape + S for one common S; merged has shape
[max(indices) + 1] + S. Where an index appears more than once, the last
(highest m, then latest position) wins. Rows no index names are zero.)doc");

template <typename W>
class DynamicStitchKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    const Tensor& indices0 = ctx->input(0);
    const Tensor& data0 = ctx->input(n);
    int64_t max_index = -1;
    for (int m = 0; m < n; ++m) {
      const Tensor& indices = ctx->input(m);
      const Tensor& data = ctx->input(n + m);
      bool starts_with = data.dims() >= indices.dims();
      for (int d = 0; starts_with && d < indices.dims(); ++d) {
        starts_with = data.dim_size(d) == indices.dim_size(d);
      }
      OP_REQUIRES(ctx, starts_with,
                  errors::InvalidArgument(
                      "data[", m, "].shape = ", data.shape().DebugString(),
                      " does not start with indices[", m,
                      "].shape = ", indices.shape().DebugString()));
      bool same_extra =
          data.dims() - indices.dims() == data0.dims() - indices0.dims();
      for (int d = 0; same_extra && d < data.dims() - indices.dims(); ++d) {
        same_extra = data.dim_size(indices.dims() + d) ==
                     data0.dim_size(indices0.dims() + d);
      }
      OP_REQUIRES(
          ctx, same_extra,
          errors::InvalidArgument(
              "Need data[0].shape[", indices0.dims(), ":] = data[", m,
              "].shape[", indices.dims(),
              ":], got data[0].shape = ", data0.shape().DebugString(),
              ", data[", m, "].shape = ", data.shape().DebugString(),
              ", indices[0].shape = ", indices0.shape().DebugString(),
              ", indices[", m, "].shape = ", indices.shape().DebugString()));
      auto idx = indices.flat<int32_t>();
      for (size_t j = 0; j < idx.size(); ++j) {
        OP_REQUIRES(ctx, idx[j] >= 0,
                    errors::InvalidArgument("indices[", m, "]",
                                            IndexString(indices.shape(), j),
                                            " = ", idx[j], " is negative"));
        max_index = std::max<int64_t>(max_index, idx[j]);
      }
    }
    DimVector out_dims = {max_index + 1};
    int64_t row = 1;
    for (int d = indices0.dims(); d < data0.dims(); ++d) {
      out_dims.push_back(data0.dim_size(d));
      row *= data0.dim_size(d);
    }
    auto out_shape = TensorShape::FromDims(out_dims);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out_shape->num_elements() == 0) return;
    OP_REQUIRES_OK(ctx,
                   StitchRows(ctx, n, max_index + 1, row, OutData<W>(out)));
  }
};

#define RUNNEL_REGISTER_DYNAMIC_STITCH(T)                              \
  REGISTER_KERNEL_BUILDER(                                             \
      Name("DynamicStitch").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      DynamicStitchKernel<Moved<T>>);
RUNNEL_FOR_ALL_TYPES(RUNNEL_REGISTER_DYNAMIC_STITCH)
#undef RUNNEL_REGISTER_DYNAMIC_STITCH

#undef RUNNEL_FOR_ALL_TYPES

}  // namespace
}  // namespace runnel
