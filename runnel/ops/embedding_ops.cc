// Ops for sparse and large models (OSDI §4.2): routing rows to shards and
// back (DynamicPartition, ParallelDynamicStitch), scattered updates of
// reference variables (ScatterUpdate/Add/Sub/Mul/Div/Min/Max) and resource
// variables (ResourceScatter*), unsorted segment reductions
// (UnsortedSegmentMax/Min/Prod; UnsortedSegmentSum is in gradient_ops.cc),
// and the sparse segment reductions of embedding bags (SparseSegmentSum/
// Mean/SqrtN, their WithNumSegments forms and their gradient ops). Names,
// attrs and semantics follow TensorFlow; the gradients are in
// embedding_grad.cc.
//
// Note [Moving rows]
// DynamicPartition, ParallelDynamicStitch and ScatterUpdate never look at
// element values, so they accept every dtype (T: type, as in TF) and move
// elements as opaque words of the dtype's size (Bytes<N>), or as
// std::string / ResourceHandle objects. Their kernels are registered once,
// without a type constraint, and dispatch on the element size at run time.
//
// Note [Scatter order]
// The scatter kernels apply updates in index order, so with duplicate
// indices ScatterUpdate keeps the last value and the arithmetic forms
// combine all of them, as TF's CPU kernels do. All indices are checked
// before any element changes (TF's CPU kernel stops at the first bad index
// with the earlier rows already written). Work is split across threads by
// column ranges, so no two threads touch one element and the per-element
// order is the serial one. Variables are always updated under their lock
// (use_locking only ever adds safety), after a copy-on-write when a reader
// still holds the buffer (Note [Resource variable copy-on-write] in
// runnel/framework/resource_var.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/cpu/cwise.h"
#include "runnel/cpu/integer.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_var.h"
#include "runnel/ops/stitch.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Shared helpers

// Reads an int32/int64 tensor as int64 values.
std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.NumElements()));
  if (t.dtype() == DT_INT32) {
    auto f = t.flat<int32_t>();
    std::copy(f.begin(), f.end(), v.begin());
  } else {
    auto f = t.flat<int64_t>();
    std::copy(f.begin(), f.end(), v.begin());
  }
  return v;
}

// The scalar int32/int64 input `t` (InvalidArgument naming `what` unless it
// is a scalar).
Status ReadNonNegativeScalar(const Tensor& t, const char* what,
                             int64_t* value) {
  if (t.dims() != 0) {
    return errors::InvalidArgument(what, " should be a scalar, got shape ",
                                   t.shape().DebugString());
  }
  *value = t.dtype() == DT_INT32 ? int64_t{t.scalar<int32_t>()}
                                 : t.scalar<int64_t>();
  if (*value < 0) {
    return errors::InvalidArgument(what, " must be non-negative, got ", *value);
  }
  return absl::OkStatus();
}

// The shape-function side of ReadNonNegativeScalar: the value of scalar
// input `input` when it is a known constant, else -1.
Status ConstNonNegativeScalar(InferenceContext* c, int input, const char* what,
                              int64_t* value) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRank(input, 0, &unused));
  *value = -1;
  std::vector<int64_t> v;
  if (c->GetConstInts(input, &v) && v.size() == 1) *value = v[0];
  if (*value < -1) {
    return c->InvalidArgument(what, " must be non-negative, got ", *value);
  }
  return absl::OkStatus();
}

// "[1,0]": the position of flat element `i` in `shape` ("" for a scalar).
std::string IndexString(const TensorShape& shape, int64_t i) {
  if (shape.dims() == 0) return "";
  std::vector<int64_t> pos(shape.dims());
  for (int d = shape.dims() - 1; d >= 0; --d) {
    const int64_t n = std::max<int64_t>(1, shape.dim_size(d));
    pos[d] = i % n;
    i /= n;
  }
  return absl::StrCat("[", absl::StrJoin(pos, ","), "]");
}

bool StartsWith(const TensorShape& shape, const TensorShape& prefix) {
  if (prefix.dims() > shape.dims()) return false;
  for (int d = 0; d < prefix.dims(); ++d) {
    if (shape.dim_size(d) != prefix.dim_size(d)) return false;
  }
  return true;
}

// shape[from:].
TensorShape Tail(const TensorShape& shape, int from) {
  TensorShape out;
  for (int d = from; d < shape.dims(); ++d) out.AddDim(shape.dim_size(d));
  return out;
}

// [rows] + tail, with overflow checked.
StatusOr<TensorShape> RowsThen(int64_t rows, const TensorShape& tail) {
  DimVector dims = {rows};
  for (int64_t d : tail.dim_sizes()) dims.push_back(d);
  return TensorShape::FromDims(dims);
}

// Integer arithmetic that wraps instead of overflowing (TF's kernels wrap
// in practice; signed overflow is undefined behaviour in C++).
using cpu::WrapAdd;
using cpu::WrapMul;
using cpu::WrapSub;

// a / b with b != 0 checked by the caller; lowest / -1 wraps.
template <typename T>
T SafeDiv(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == T(-1)) return WrapSub(T(0), a);
  }
  return a / b;
}

// ---------------------------------------------------------------------------
// Element movement for any dtype (Note [Moving rows])

template <size_t N>
struct [[gnu::may_alias]] Bytes {
  unsigned char b[N];
};

// Calls fn.template operator()<W>() with the word type that moves elements
// of `dt`; false for dtypes that cannot be moved (variant, invalid).
template <typename Fn>
bool DispatchMoved(DataType dt, Fn&& fn) {
  if (dt == DT_STRING) {
    fn.template operator()<tstring>();
    return true;
  }
  if (dt == DT_RESOURCE) {
    fn.template operator()<ResourceHandle>();
    return true;
  }
  switch (DataTypeSize(dt)) {
    case 1:
      fn.template operator()<Bytes<1>>();
      return true;
    case 2:
      fn.template operator()<Bytes<2>>();
      return true;
    case 4:
      fn.template operator()<Bytes<4>>();
      return true;
    case 8:
      fn.template operator()<Bytes<8>>();
      return true;
    case 16:
      fn.template operator()<Bytes<16>>();
      return true;
    default:
      return false;
  }
}

Status UnsupportedDtype(DataType dt) {
  return errors::InvalidArgument("unsupported dtype ", DataTypeString(dt));
}

template <typename W>
int64_t MoveCostNs() {
  return std::is_same_v<W, tstring> || std::is_same_v<W, ResourceHandle>
             ? 40
             : (sizeof(W) <= 8 ? 1 : 2);
}

// ---------------------------------------------------------------------------
// DynamicPartition

Status DynamicPartitionShape(InferenceContext* c) {
  int64_t num_partitions;
  RETURN_IF_ERROR(c->GetAttr("num_partitions", &num_partitions));
  const PartialTensorShape& data = c->input(0);
  const PartialTensorShape& partitions = c->input(1);
  PartialTensorShape out;  // Unknown rank unless both ranks are known.
  if (!data.unknown_rank() && !partitions.unknown_rank()) {
    if (partitions.dims() > data.dims()) {
      return c->InvalidArgument("partitions ", partitions.DebugString(),
                                " has more dimensions than data ",
                                data.DebugString());
    }
    const PartialTensorShape prefix(
        data.dim_sizes().subspan(0, partitions.dims()));
    if (!prefix.IsCompatibleWith(partitions)) {
      return c->InvalidArgument(
          "data.shape = ", data.DebugString(),
          " does not start with partitions.shape = ", partitions.DebugString());
    }
    out = PartialTensorShape({-1});
    for (int d = partitions.dims(); d < data.dims(); ++d) {
      out.AddDim(data.dim_size(d));
    }
  }
  // With the partitions known, each output's row count is known too.
  std::vector<int64_t> counts(num_partitions, 0);
  bool counted = false;
  if (const Tensor* p = c->input_tensor(1);
      p != nullptr && !out.unknown_rank()) {
    counted = true;
    for (int32_t v : p->flat<int32_t>()) {
      if (v < 0 || v >= num_partitions) {
        counted = false;  // The kernel reports it.
        break;
      }
      ++counts[v];
    }
  }
  for (int i = 0; i < c->num_outputs(); ++i) {
    PartialTensorShape o = out;
    if (counted) o.set_dim(0, counts[i]);
    c->set_output(i, o);
  }
  return absl::OkStatus();
}

REGISTER_OP("DynamicPartition")
    .Input("data: T")
    .Input("partitions: int32")
    .Output("outputs: num_partitions * T")
    .Attr("num_partitions: int >= 1")
    .Attr("T: type")
    .SetShapeFn(DynamicPartitionShape)
    .Doc(
        R"doc(Partitions `data` into `num_partitions` tensors using indices from `partitions`.

For each index tuple js of size partitions.ndim, the slice data[js, ...]
becomes part of outputs[partitions[js]], in the order the slices appear in
data (row-major over js): outputs[i].shape = [sum(partitions == i)] +
data.shape[partitions.ndim:]. data.shape must start with partitions.shape,
and every partition must be in [0, num_partitions).)doc");

class DynamicPartitionKernel : public OpKernel {
 public:
  explicit DynamicPartitionKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("num_partitions", &num_partitions_));
    OP_REQUIRES(c, num_partitions_ >= 1,
                errors::InvalidArgument("num_partitions must be at least 1, "
                                        "got ",
                                        num_partitions_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& partitions = ctx->input(1);
    OP_REQUIRES(
        ctx, StartsWith(data.shape(), partitions.shape()),
        errors::InvalidArgument(
            "data.shape must start with partitions.shape, got data.shape = ",
            data.shape().DebugString(),
            ", partitions.shape = ", partitions.shape().DebugString()));
    const int32_t* p = partitions.data<int32_t>();
    const int64_t n = partitions.NumElements();
    // pos[i]: row i's position within its partition.
    std::vector<int64_t> counts(num_partitions_, 0), pos(n);
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES(ctx, p[i] >= 0 && p[i] < num_partitions_,
                  errors::InvalidArgument(
                      "partitions", IndexString(partitions.shape(), i), " = ",
                      p[i], " is not in [0, ", num_partitions_, ")"));
      pos[i] = counts[p[i]]++;
    }
    const TensorShape tail = Tail(data.shape(), partitions.dims());
    std::vector<Tensor*> outs(num_partitions_);
    for (int k = 0; k < num_partitions_; ++k) {
      OP_REQUIRES_OK(
          ctx, ctx->allocate_output(k, *RowsThen(counts[k], tail), &outs[k]));
    }
    const int64_t row = tail.num_elements();
    if (n == 0 || row == 0) return;
    const bool ok = DispatchMoved(data.dtype(), [&]<typename W>() {
      const W* src = static_cast<const W*>(data.raw_data());
      cpu::ParallelRange(ctx->intra_op_threadpool(), n,
                         row * MoveCostNs<W>() + 5, [&](int64_t b, int64_t e) {
                           for (int64_t i = b; i < e; ++i) {
                             W* dst = static_cast<W*>(outs[p[i]]->raw_data());
                             std::copy_n(src + i * row, row,
                                         dst + pos[i] * row);
                           }
                         });
    });
    OP_REQUIRES(ctx, ok, UnsupportedDtype(data.dtype()));
  }

 private:
  int64_t num_partitions_ = 1;
};
REGISTER_KERNEL_BUILDER(Name("DynamicPartition").Device(kDeviceCpu),
                        DynamicPartitionKernel);

// ---------------------------------------------------------------------------
// ParallelDynamicStitch

Status StitchShape(InferenceContext* c) {
  const int n = c->num_inputs() / 2;
  bool all_known = true;
  int64_t max_index = -1;
  PartialTensorShape extra;  // data[m].shape[indices[m].rank:], merged.
  bool extra_set = false;
  for (int m = 0; m < n; ++m) {
    const PartialTensorShape& indices = c->input(m);
    const PartialTensorShape& data = c->input(n + m);
    if (!indices.unknown_rank() && !data.unknown_rank()) {
      if (data.dims() < indices.dims() ||
          !PartialTensorShape(data.dim_sizes().subspan(0, indices.dims()))
               .IsCompatibleWith(indices)) {
        return c->InvalidArgument("data[", m, "].shape = ", data.DebugString(),
                                  " does not start with indices[", m,
                                  "].shape = ", indices.DebugString());
      }
      const PartialTensorShape e(data.dim_sizes().subspan(indices.dims()));
      if (!extra_set) {
        extra = e;
        extra_set = true;
      } else {
        auto merged = extra.MergeWith(e);
        if (!merged.ok()) {
          return c->InvalidArgument(
              "data[", m, "].shape[", indices.dims(), ":] = ", e.DebugString(),
              " differs from the other inputs' ", extra.DebugString());
        }
        extra = *merged;
      }
    }
    if (const Tensor* t = c->input_tensor(m); t != nullptr) {
      for (int32_t v : t->flat<int32_t>()) {
        max_index = std::max<int64_t>(max_index, v);
      }
    } else {
      all_known = false;
    }
  }
  bool any_unknown_rank = false;
  for (int m = 0; m < n; ++m) {
    any_unknown_rank |=
        c->input(m).unknown_rank() || c->input(n + m).unknown_rank();
  }
  if (!extra_set || (any_unknown_rank && extra.unknown_rank())) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  PartialTensorShape out({all_known ? max_index + 1 : -1});
  for (int64_t d : extra.dim_sizes()) out.AddDim(d);
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("ParallelDynamicStitch")
    .Input("indices: N * int32")
    .Input("data: N * T")
    .Output("merged: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .SetShapeFn(StitchShape)
    .Doc(
        R"doc(Interleaves the values from the `data` tensors into a single tensor.

merged[indices[m][i, ..., j], ...] = data[m][i, ..., j, ...], like
DynamicStitch, except that when an index appears more than once the value
kept is not specified (TF may pick any; here the last one wins). Each
data[m] must have shape indices[m].shape + S for one common S; merged has
shape [max(indices) + 1] + S. Rows no index names are zero.)doc");

class ParallelDynamicStitchKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    const Tensor& indices0 = ctx->input(0);
    const Tensor& data0 = ctx->input(n);
    OP_REQUIRES(
        ctx, StartsWith(data0.shape(), indices0.shape()),
        errors::InvalidArgument("data[0].shape = ", data0.shape().DebugString(),
                                " does not start with indices[0].shape = ",
                                indices0.shape().DebugString()));
    const TensorShape extra = Tail(data0.shape(), indices0.dims());
    int64_t max_index = -1;
    for (int m = 0; m < n; ++m) {
      const Tensor& indices = ctx->input(m);
      const Tensor& data = ctx->input(n + m);
      OP_REQUIRES(
          ctx,
          StartsWith(data.shape(), indices.shape()) &&
              Tail(data.shape(), indices.dims()) == extra,
          errors::InvalidArgument(
              "data[", m, "].shape = ", data.shape().DebugString(),
              " must be indices[", m, "].shape = ",
              indices.shape().DebugString(), " + ", extra.DebugString(),
              " (data[0].shape = ", data0.shape().DebugString(),
              ", indices[0].shape = ", indices0.shape().DebugString(), ")"));
      OP_REQUIRES(ctx, data.dtype() == data0.dtype(),
                  errors::InvalidArgument("data[", m, "] has dtype ",
                                          DataTypeString(data.dtype())));
      const int32_t* idx = indices.data<int32_t>();
      for (int64_t j = 0; j < indices.NumElements(); ++j) {
        OP_REQUIRES(ctx, idx[j] >= 0,
                    errors::InvalidArgument("indices[", m, "]",
                                            IndexString(indices.shape(), j),
                                            " = ", idx[j], " is negative"));
        max_index = std::max<int64_t>(max_index, idx[j]);
      }
    }
    auto out_shape = RowsThen(max_index + 1, extra);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    const int64_t rows = max_index + 1, row = extra.num_elements();
    if (rows == 0 || row == 0) return;
    Status status;
    const bool ok = DispatchMoved(data0.dtype(), [&]<typename W>() {
      status = StitchRows(ctx, n, rows, row, static_cast<W*>(out->raw_data()));
    });
    OP_REQUIRES(ctx, ok, UnsupportedDtype(data0.dtype()));
    OP_REQUIRES_OK(ctx, status);
  }
};
REGISTER_KERNEL_BUILDER(Name("ParallelDynamicStitch").Device(kDeviceCpu),
                        ParallelDynamicStitchKernel);

// ---------------------------------------------------------------------------
// Scatter updates (Note [Scatter order])

enum class ScatterOp { kUpdate, kAdd, kSub, kMul, kDiv, kMin, kMax };

template <ScatterOp kOp, typename T>
inline void ScatterApply(T& dst, const T& src) {
  if constexpr (kOp == ScatterOp::kUpdate) {
    dst = src;
  } else if constexpr (kOp == ScatterOp::kAdd) {
    dst = WrapAdd(dst, src);
  } else if constexpr (kOp == ScatterOp::kSub) {
    dst = WrapSub(dst, src);
  } else if constexpr (kOp == ScatterOp::kMul) {
    dst = WrapMul(dst, src);
  } else if constexpr (kOp == ScatterOp::kDiv) {
    dst = SafeDiv(dst, src);
  } else if constexpr (kOp == ScatterOp::kMin) {
    dst = std::min(dst, src);
  } else {
    dst = std::max(dst, src);
  }
}

// updates.shape must be indices.shape + params.shape[1:] or a scalar, and
// every index in [0, params.shape[0]).
Status ValidateScatter(const Tensor& params, const Tensor& indices,
                       const Tensor& updates, std::vector<int64_t>* idx) {
  if (params.dims() < 1) {
    return errors::InvalidArgument("params must be at least 1-D, got shape ",
                                   params.shape().DebugString());
  }
  TensorShape want = indices.shape();
  for (int d = 1; d < params.dims(); ++d) want.AddDim(params.dim_size(d));
  if (updates.dims() != 0 && updates.shape() != want) {
    return errors::InvalidArgument(
        "Must have updates.shape = indices.shape + params.shape[1:] or "
        "updates.shape = [], got updates.shape ",
        updates.shape().DebugString(), ", indices.shape ",
        indices.shape().DebugString(), ", params.shape ",
        params.shape().DebugString());
  }
  *idx = ReadInts(indices);
  const int64_t limit = params.dim_size(0);
  for (size_t i = 0; i < idx->size(); ++i) {
    const int64_t v = (*idx)[i];
    if (v < 0 || v >= limit) {
      return errors::InvalidArgument("indices", IndexString(indices.shape(), i),
                                     " = ", v, " is not in [0, ", limit, ")");
    }
  }
  return absl::OkStatus();
}

// Integer division by zero is an error, not a signal.
template <ScatterOp kOp, typename T>
Status CheckDivisor(const Tensor& updates) {
  if constexpr (kOp == ScatterOp::kDiv && std::is_integral_v<T>) {
    auto u = updates.flat<T>();
    for (size_t i = 0; i < u.size(); ++i) {
      if (u[i] == T(0)) {
        return errors::InvalidArgument("Integer division by zero: updates",
                                       IndexString(updates.shape(), i), " = 0");
      }
    }
  }
  return absl::OkStatus();
}

// params[idx[i], ...] op= updates[i, ...] (or the scalar updates), in index
// order per element. W is the element type (a Bytes word for kUpdate).
template <ScatterOp kOp, typename W>
void ScatterRows(OpKernelContext* ctx, Tensor* params,
                 const std::vector<int64_t>& idx, const Tensor& updates) {
  const int64_t n = static_cast<int64_t>(idx.size());
  if (n == 0 || params->NumElements() == 0) return;
  const int64_t row = params->NumElements() / params->dim_size(0);
  W* p = static_cast<W*>(params->raw_data());
  const W* u = static_cast<const W*>(updates.raw_data());
  const bool scalar = updates.dims() == 0;
  cpu::ParallelRange(ctx->intra_op_threadpool(), row, n * MoveCostNs<W>() + 1,
                     [&](int64_t cb, int64_t ce) {
                       for (int64_t i = 0; i < n; ++i) {
                         W* dst = p + idx[i] * row;
                         if (scalar) {
                           for (int64_t c = cb; c < ce; ++c)
                             ScatterApply<kOp>(dst[c], u[0]);
                         } else {
                           const W* src = u + i * row;
                           for (int64_t c = cb; c < ce; ++c)
                             ScatterApply<kOp>(dst[c], src[c]);
                         }
                       }
                     });
}

// Validates and applies one scatter to `params` (already locked).
template <ScatterOp kOp, typename T>
void DoScatter(OpKernelContext* ctx, Tensor* params, const Tensor& indices,
               const Tensor& updates,
               const std::function<Status()>& prepare_for_update) {
  std::vector<int64_t> idx;
  OP_REQUIRES_OK(ctx, ValidateScatter(*params, indices, updates, &idx));
  OP_REQUIRES(ctx, updates.dtype() == params->dtype(),
              errors::InvalidArgument(
                  "updates has dtype ", DataTypeString(updates.dtype()),
                  " but the variable holds ", DataTypeString(params->dtype())));
  if constexpr (kOp == ScatterOp::kUpdate) {
    OP_REQUIRES_OK(ctx, prepare_for_update());
    const bool ok = DispatchMoved(params->dtype(), [&]<typename W>() {
      ScatterRows<kOp, W>(ctx, params, idx, updates);
    });
    OP_REQUIRES(ctx, ok, UnsupportedDtype(params->dtype()));
  } else {
    OP_REQUIRES_OK(ctx, (CheckDivisor<kOp, T>(updates)));
    OP_REQUIRES_OK(ctx, prepare_for_update());
    ScatterRows<kOp, T>(ctx, params, idx, updates);
  }
}

// Ref forms: ScatterX(ref, indices, updates) -> output_ref.
template <ScatterOp kOp, typename T>
class ScatterKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->input_is_ref(0),
                errors::InvalidArgument("input 0 (ref) must be a variable "
                                        "reference"));
    const Tensor& indices = ctx->input(1);
    const Tensor& updates = ctx->input(2);
    {
      absl::MutexLock l(ctx->input_ref_mutex(0));
      Tensor* params = ctx->mutable_input(0);
      OP_REQUIRES(ctx, params->IsInitialized() && params->dtype() != DT_INVALID,
                  errors::FailedPrecondition(
                      "Attempting to use uninitialized value: the variable "
                      "that ref refers to has not been assigned"));
      DoScatter<kOp, T>(ctx, params, indices, updates, [params]() -> Status {
        if (params->RefCountIsOne()) return absl::OkStatus();
        ASSIGN_OR_RETURN(*params, params->TryDeepCopy());
        return absl::OkStatus();
      });
      if (!ctx->status().ok()) return;
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

// Resource forms: ResourceScatterX(resource, indices, updates).
template <ScatterOp kOp, typename T>
class ResourceScatterKernel : public OpKernel {
 public:
  explicit ResourceScatterKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
  }

  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    const Tensor& indices = ctx->input(1);
    const Tensor& updates = ctx->input(2);
    Var* var = nullptr;
    OP_REQUIRES_OK(ctx, LookupVar(ctx, *h, &var));
    ScopedUnref unref(var);
    absl::MutexLock l(var->mu());
    OP_REQUIRES_OK(ctx, CheckVarInitialized(var, *h, dtype_));
    DoScatter<kOp, T>(ctx, var->tensor(), indices, updates,
                      [var] { return var->PrepareForUpdate(); });
  }

 private:
  DataType dtype_;
};

Status ScatterShape(InferenceContext* c) {
  const PartialTensorShape& var = c->input(0);
  const PartialTensorShape& indices = c->input(1);
  const PartialTensorShape& updates = c->input(2);
  if (!var.unknown_rank() && var.dims() < 1) {
    return c->InvalidArgument("params must be at least 1-D, got shape ",
                              var.DebugString());
  }
  if (!var.unknown_rank() && !indices.unknown_rank() &&
      !updates.unknown_rank() && updates.dims() != 0) {
    PartialTensorShape want = indices;
    for (int d = 1; d < var.dims(); ++d) want.AddDim(var.dim_size(d));
    if (!want.IsCompatibleWith(updates)) {
      return c->InvalidArgument(
          "Must have updates.shape = indices.shape + params.shape[1:] or "
          "updates.shape = [], got updates.shape ",
          updates.DebugString(), ", indices.shape ", indices.DebugString(),
          ", params.shape ", var.DebugString());
    }
  }
  if (c->num_outputs() > 0) c->set_output(0, var);
  return absl::OkStatus();
}

#define RUNNEL_REGISTER_SCATTER_OP(NAME, TYPES, LOCKING, WHAT)                \
  REGISTER_OP(NAME)                                                           \
      .Input("ref: Ref(T)")                                                   \
      .Input("indices: Tindices")                                             \
      .Input("updates: T")                                                    \
      .Output("output_ref: Ref(T)")                                           \
      .Attr("T: " TYPES)                                                      \
      .Attr("Tindices: {int32, int64}")                                       \
      .Attr("use_locking: bool = " LOCKING)                                   \
      .SetShapeFn(ScatterShape)                                               \
      .Doc("Applies sparse updates to a variable reference: " WHAT            \
           ".\n\nFor each i, ref[indices[i], ...] is combined with "          \
           "updates[i, ...] (or the scalar updates), in index order, so "     \
           "duplicate indices all apply. updates.shape must be "              \
           "indices.shape + ref.shape[1:] or []; every index must be in [0, " \
           "ref.shape[0]). Returns the reference. The update always holds "   \
           "the variable's lock.")
#define RUNNEL_REGISTER_RESOURCE_SCATTER_OP(NAME, TYPES, WHAT)                \
  REGISTER_OP(NAME)                                                           \
      .Input("resource: resource")                                            \
      .Input("indices: Tindices")                                             \
      .Input("updates: dtype")                                                \
      .Attr("dtype: " TYPES)                                                  \
      .Attr("Tindices: {int32, int64}")                                       \
      .SetShapeFn(shape_fns::NoOutputs)                                       \
      .Doc("Applies sparse updates to the variable `resource` names: " WHAT   \
           ".\n\nFor each i, var[indices[i], ...] is combined with "          \
           "updates[i, ...] (or the scalar updates), in index order, so "     \
           "duplicate indices all apply. updates.shape must be "              \
           "indices.shape + var.shape[1:] or []; every index must be in [0, " \
           "var.shape[0]).")

#define RUNNEL_REGISTER_SCATTER_KERNELS(NAME, OP, T)                       \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<T>("T"),                \
      ScatterKernel<OP, T>);                                               \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name("Resource" NAME).Device(kDeviceCpu).TypeConstraint<T>("dtype"), \
      ResourceScatterKernel<OP, T>)
#define RUNNEL_REGISTER_SCATTER_FAMILY(NAME, OP, TYPES, WHAT)        \
  RUNNEL_REGISTER_SCATTER_OP(NAME, TYPES, "false", WHAT);            \
  RUNNEL_REGISTER_RESOURCE_SCATTER_OP("Resource" NAME, TYPES, WHAT); \
  RUNNEL_REGISTER_SCATTER_KERNELS(NAME, OP, float);                  \
  RUNNEL_REGISTER_SCATTER_KERNELS(NAME, OP, double);                 \
  RUNNEL_REGISTER_SCATTER_KERNELS(NAME, OP, int32_t);                \
  RUNNEL_REGISTER_SCATTER_KERNELS(NAME, OP, int64_t)

#define RUNNEL_NUMERIC "{float, double, int32, int64}"
RUNNEL_REGISTER_SCATTER_FAMILY("ScatterAdd", ScatterOp::kAdd, RUNNEL_NUMERIC,
                               "ref[indices] += updates");
RUNNEL_REGISTER_SCATTER_FAMILY("ScatterSub", ScatterOp::kSub, RUNNEL_NUMERIC,
                               "ref[indices] -= updates");
RUNNEL_REGISTER_SCATTER_FAMILY("ScatterMul", ScatterOp::kMul, RUNNEL_NUMERIC,
                               "ref[indices] *= updates");
RUNNEL_REGISTER_SCATTER_FAMILY("ScatterDiv", ScatterOp::kDiv, RUNNEL_NUMERIC,
                               "ref[indices] /= updates (integer division "
                               "by zero is an error)");
RUNNEL_REGISTER_SCATTER_FAMILY("ScatterMin", ScatterOp::kMin, RUNNEL_NUMERIC,
                               "ref[indices] = min(ref[indices], updates)");
RUNNEL_REGISTER_SCATTER_FAMILY("ScatterMax", ScatterOp::kMax, RUNNEL_NUMERIC,
                               "ref[indices] = max(ref[indices], updates)");

// ScatterUpdate moves elements of any dtype (Note [Moving rows]); as in TF
// it locks by default.
RUNNEL_REGISTER_SCATTER_OP("ScatterUpdate", "type", "true",
                           "ref[indices] = updates (the last of duplicate "
                           "indices wins)");
RUNNEL_REGISTER_RESOURCE_SCATTER_OP("ResourceScatterUpdate", "type",
                                    "var[indices] = updates (the last of "
                                    "duplicate indices wins)");
REGISTER_KERNEL_BUILDER(Name("ScatterUpdate").Device(kDeviceCpu),
                        ScatterKernel<ScatterOp::kUpdate, void>);
REGISTER_KERNEL_BUILDER(Name("ResourceScatterUpdate").Device(kDeviceCpu),
                        ResourceScatterKernel<ScatterOp::kUpdate, void>);

#undef RUNNEL_REGISTER_SCATTER_FAMILY
#undef RUNNEL_REGISTER_SCATTER_KERNELS
#undef RUNNEL_REGISTER_RESOURCE_SCATTER_OP
#undef RUNNEL_REGISTER_SCATTER_OP

// ---------------------------------------------------------------------------
// UnsortedSegmentMax / Min / Prod

Status UnsortedSegmentShape(InferenceContext* c) {
  const PartialTensorShape& data = c->input(0);
  const PartialTensorShape& ids = c->input(1);
  int64_t segments;
  RETURN_IF_ERROR(ConstNonNegativeScalar(c, 2, "num_segments", &segments));
  if (data.unknown_rank() || ids.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  if (ids.dims() > data.dims() ||
      !PartialTensorShape(data.dim_sizes().subspan(0, ids.dims()))
           .IsCompatibleWith(ids)) {
    return c->InvalidArgument(
        "data.shape = ", data.DebugString(),
        " does not start with segment_ids.shape = ", ids.DebugString());
  }
  PartialTensorShape out({segments});
  for (int i = ids.dims(); i < data.dims(); ++i) out.AddDim(data.dim_size(i));
  c->set_output(0, out);
  return absl::OkStatus();
}

enum class SegmentOp { kMax, kMin, kProd };

template <SegmentOp kOp, typename T>
constexpr T SegmentIdentity() {
  if constexpr (kOp == SegmentOp::kMax) {
    return std::numeric_limits<T>::lowest();
  } else if constexpr (kOp == SegmentOp::kMin) {
    return std::numeric_limits<T>::max();
  } else {
    return T(1);
  }
}

template <SegmentOp kOp, typename T>
inline T SegmentCombine(T a, T b) {
  if constexpr (kOp == SegmentOp::kMax) {
    return std::max(a, b);
  } else if constexpr (kOp == SegmentOp::kMin) {
    return std::min(a, b);
  } else {
    return WrapMul(a, b);
  }
}

template <SegmentOp kOp, typename T>
class UnsortedSegmentReductionKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids_t = ctx->input(1);
    int64_t segments;
    OP_REQUIRES_OK(
        ctx, ReadNonNegativeScalar(ctx->input(2), "num_segments", &segments));
    OP_REQUIRES(
        ctx, StartsWith(data.shape(), ids_t.shape()),
        errors::InvalidArgument("data.shape = ", data.shape().DebugString(),
                                " does not start with segment_ids.shape = ",
                                ids_t.shape().DebugString()));
    const std::vector<int64_t> ids = ReadInts(ids_t);
    for (size_t j = 0; j < ids.size(); ++j) {
      OP_REQUIRES(ctx, ids[j] < segments,
                  errors::InvalidArgument(
                      "segment_ids", IndexString(ids_t.shape(), j), " = ",
                      ids[j], " is out of range [0, ", segments, ")"));
    }
    const TensorShape tail = Tail(data.shape(), ids_t.dims());
    auto out_shape = RowsThen(segments, tail);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), SegmentIdentity<kOp, T>());
    const int64_t rows = static_cast<int64_t>(ids.size());
    const int64_t inner = tail.num_elements();
    if (rows == 0 || inner == 0) return;
    const T* x = data.data<T>();
    // Shards own column ranges, so no two threads combine into one element.
    cpu::ParallelRange(ctx->intra_op_threadpool(), inner, rows,
                       [&](int64_t cb, int64_t ce) {
                         for (int64_t j = 0; j < rows; ++j) {
                           if (ids[j] < 0)
                             continue;  // Negative ids are dropped.
                           const T* src = x + j * inner;
                           T* dst = o + ids[j] * inner;
                           for (int64_t c = cb; c < ce; ++c) {
                             dst[c] = SegmentCombine<kOp, T>(dst[c], src[c]);
                           }
                         }
                       });
  }
};

#define RUNNEL_REGISTER_UNSORTED_SEGMENT(NAME, EMPTY)                         \
  REGISTER_OP(NAME)                                                           \
      .Input("data: T")                                                       \
      .Input("segment_ids: Tindices")                                         \
      .Input("num_segments: Tnumsegments")                                    \
      .Output("output: T")                                                    \
      .Attr("T: {float, double, int32, int64}")                               \
      .Attr("Tindices: {int32, int64}")                                       \
      .Attr("Tnumsegments: {int32, int64} = DT_INT32")                        \
      .SetShapeFn(UnsortedSegmentShape)                                       \
      .Doc("Computes the " NAME                                               \
           " reduction along segments of a tensor.\n\n"                       \
           "output[i, ...] reduces data[j, ...] over every j with "           \
           "segment_ids[j] == i, where segment_ids.shape is a prefix of "     \
           "data.shape and output has shape [num_segments] + "                \
           "data.shape[segment_ids.rank:]. Ids need not be sorted; negative " \
           "ids are dropped; an id >= num_segments is an error. A segment "   \
           "no id maps to is " EMPTY ".")
#define RUNNEL_REGISTER_UNSORTED_SEGMENT_KERNEL(NAME, OP, T)     \
  REGISTER_KERNEL_BUILDER(                                       \
      Name(NAME)                                                 \
          .Device(kDeviceCpu)                                    \
          .TypeConstraint<T>("T")                                \
          .TypeConstraint("Tindices", {DT_INT32, DT_INT64})      \
          .TypeConstraint("Tnumsegments", {DT_INT32, DT_INT64}), \
      UnsortedSegmentReductionKernel<OP, T>)
#define RUNNEL_REGISTER_UNSORTED_SEGMENT_ALL(NAME, OP)        \
  RUNNEL_REGISTER_UNSORTED_SEGMENT_KERNEL(NAME, OP, float);   \
  RUNNEL_REGISTER_UNSORTED_SEGMENT_KERNEL(NAME, OP, double);  \
  RUNNEL_REGISTER_UNSORTED_SEGMENT_KERNEL(NAME, OP, int32_t); \
  RUNNEL_REGISTER_UNSORTED_SEGMENT_KERNEL(NAME, OP, int64_t)

RUNNEL_REGISTER_UNSORTED_SEGMENT("UnsortedSegmentMax",
                                 "the lowest value of T (-inf's stand-in)");
RUNNEL_REGISTER_UNSORTED_SEGMENT_ALL("UnsortedSegmentMax", SegmentOp::kMax);
RUNNEL_REGISTER_UNSORTED_SEGMENT("UnsortedSegmentMin",
                                 "the largest value of T");
RUNNEL_REGISTER_UNSORTED_SEGMENT_ALL("UnsortedSegmentMin", SegmentOp::kMin);
RUNNEL_REGISTER_UNSORTED_SEGMENT("UnsortedSegmentProd", "1");
RUNNEL_REGISTER_UNSORTED_SEGMENT_ALL("UnsortedSegmentProd", SegmentOp::kProd);

#undef RUNNEL_REGISTER_UNSORTED_SEGMENT_ALL
#undef RUNNEL_REGISTER_UNSORTED_SEGMENT_KERNEL
#undef RUNNEL_REGISTER_UNSORTED_SEGMENT

// ---------------------------------------------------------------------------
// SparseSegmentSum / Mean / SqrtN (+ WithNumSegments)

enum class SparseReduce { kSum, kMean, kSqrtN };

// The weight of a segment of `count` rows.
template <SparseReduce kR>
double SegmentScale(int64_t count) {
  if constexpr (kR == SparseReduce::kSum) {
    return 1.0;
  } else if constexpr (kR == SparseReduce::kMean) {
    return 1.0 / static_cast<double>(std::max<int64_t>(count, 1));
  } else {
    return 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(count, 1)));
  }
}

// indices and segment_ids: vectors of one length.
Status CheckIndexVectors(const Tensor& indices, const Tensor& segment_ids) {
  if (indices.dims() != 1) {
    return errors::InvalidArgument("indices should be a vector, got shape ",
                                   indices.shape().DebugString());
  }
  if (segment_ids.dims() != 1) {
    return errors::InvalidArgument("segment_ids should be a vector, got shape ",
                                   segment_ids.shape().DebugString());
  }
  if (indices.NumElements() != segment_ids.NumElements()) {
    return errors::InvalidArgument(
        "segment_ids and indices should have the same size, got ",
        segment_ids.shape().DebugString(), " and ",
        indices.shape().DebugString());
  }
  return absl::OkStatus();
}

// Input 0, named `what`, is at least 1-D; indices and segment_ids (inputs
// 1 and 2) are matching vectors.
Status CheckSparseSegmentInputs(OpKernelContext* ctx, const char* what) {
  const Tensor& t = ctx->input(0);
  if (t.dims() < 1) {
    return errors::InvalidArgument(what, " must be at least 1-D, got shape ",
                                   t.shape().DebugString());
  }
  return CheckIndexVectors(ctx->input(1), ctx->input(2));
}

Status SparseSegmentShapeCommon(InferenceContext* c, int data_input,
                                PartialTensorShape* tail) {
  PartialTensorShape data, indices, ids;
  RETURN_IF_ERROR(c->WithRankAtLeast(data_input, 1, &data));
  RETURN_IF_ERROR(c->WithRank(1, 1, &indices));
  RETURN_IF_ERROR(c->WithRank(2, 1, &ids));
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->Merge(indices, ids, &unused));
  if (data.unknown_rank()) {
    *tail = PartialTensorShape();
  } else {
    *tail = PartialTensorShape(data.dim_sizes().subspan(1));
  }
  return absl::OkStatus();
}

// [rows] + tail (unknown rank if tail is).
PartialTensorShape PartialRowsThen(int64_t rows,
                                   const PartialTensorShape& tail) {
  if (tail.unknown_rank()) return PartialTensorShape();
  PartialTensorShape out({rows});
  for (int64_t d : tail.dim_sizes()) out.AddDim(d);
  return out;
}

Status SparseSegmentShape(InferenceContext* c) {
  PartialTensorShape tail;
  RETURN_IF_ERROR(SparseSegmentShapeCommon(c, 0, &tail));
  int64_t rows = -1;
  std::vector<int64_t> ids;
  if (c->GetConstInts(2, &ids)) {
    // Ids the kernel refuses (negative, or too large for a row count)
    // leave the row count unknown here.
    if (ids.empty()) {
      rows = 0;
    } else if (ids.back() >= 0 &&
               ids.back() < std::numeric_limits<int64_t>::max()) {
      rows = ids.back() + 1;
    }
  }
  c->set_output(0, PartialRowsThen(rows, tail));
  return absl::OkStatus();
}

// The output has as many rows as scalar input 3, named `what`, says.
Status SparseSegmentRowsFromInput3Shape(InferenceContext* c, const char* what) {
  PartialTensorShape tail;
  RETURN_IF_ERROR(SparseSegmentShapeCommon(c, 0, &tail));
  int64_t rows;
  RETURN_IF_ERROR(ConstNonNegativeScalar(c, 3, what, &rows));
  c->set_output(0, PartialRowsThen(rows, tail));
  return absl::OkStatus();
}

Status SparseSegmentWithNumSegmentsShape(InferenceContext* c) {
  return SparseSegmentRowsFromInput3Shape(c, "num_segments");
}

template <typename T, SparseReduce kR, bool kWithNumSegments>
class SparseSegmentReductionKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& segment_ids = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckSparseSegmentInputs(ctx, "data"));
    int64_t num_segments = -1;
    if constexpr (kWithNumSegments) {
      OP_REQUIRES_OK(ctx, ReadNonNegativeScalar(ctx->input(3), "num_segments",
                                                &num_segments));
    }
    const std::vector<int64_t> idx = ReadInts(indices);
    const std::vector<int64_t> ids = ReadInts(segment_ids);
    const int64_t n = static_cast<int64_t>(idx.size());
    const int64_t limit = data.dim_size(0);
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES(ctx, idx[i] >= 0 && idx[i] < limit,
                  errors::InvalidArgument("indices[", i, "] = ", idx[i],
                                          " is not in [0, ", limit, ")"));
      OP_REQUIRES(ctx, ids[i] >= 0,
                  errors::InvalidArgument("segment_ids[", i, "] = ", ids[i],
                                          " is negative"));
      OP_REQUIRES(ctx, i == 0 || ids[i - 1] <= ids[i],
                  errors::InvalidArgument(
                      "segment ids are not increasing: segment_ids[", i - 1,
                      "] = ", ids[i > 0 ? i - 1 : 0], " > segment_ids[", i,
                      "] = ", ids[i]));
    }
    // The last id is the largest; the row count is one more.
    OP_REQUIRES(ctx, n == 0 || ids.back() < std::numeric_limits<int64_t>::max(),
                errors::InvalidArgument("segment_ids[", n - 1,
                                        "] = ", ids[n > 0 ? n - 1 : 0],
                                        " is too large for a row count"));
    int64_t rows = n == 0 ? 0 : ids.back() + 1;
    if constexpr (kWithNumSegments) {
      OP_REQUIRES(
          ctx, rows <= num_segments,
          errors::InvalidArgument("segment_ids[", n - 1, "] = ", rows - 1,
                                  " is out of range [0, ", num_segments, ")"));
      rows = num_segments;
    }
    const TensorShape tail = Tail(data.shape(), 1);
    auto out_shape = RowsThen(rows, tail);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), T(0));
    const int64_t inner = tail.num_elements();
    if (n == 0 || inner == 0) return;
    // Runs of equal ids: run r covers positions [starts[r], starts[r + 1]).
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || ids[i] != ids[i - 1]) starts.push_back(i);
    }
    starts.push_back(n);
    const int64_t runs = static_cast<int64_t>(starts.size()) - 1;
    const T* x = data.data<T>();
    cpu::ParallelRange(ctx->intra_op_threadpool(), runs, (n / runs + 1) * inner,
                       [&](int64_t b, int64_t e) {
                         for (int64_t r = b; r < e; ++r) {
                           T* dst = o + ids[starts[r]] * inner;
                           for (int64_t i = starts[r]; i < starts[r + 1]; ++i) {
                             const T* src = x + idx[i] * inner;
                             for (int64_t c = 0; c < inner; ++c)
                               dst[c] = WrapAdd(dst[c], src[c]);
                           }
                           if constexpr (kR != SparseReduce::kSum) {
                             const T scale = static_cast<T>(
                                 SegmentScale<kR>(starts[r + 1] - starts[r]));
                             for (int64_t c = 0; c < inner; ++c)
                               dst[c] *= scale;
                           }
                         }
                       });
  }
};

// ---------------------------------------------------------------------------
// SparseSegmentSumGrad / MeanGrad / SqrtNGrad

Status SparseSegmentGradShape(InferenceContext* c) {
  return SparseSegmentRowsFromInput3Shape(c, "output_dim0");
}

template <typename T, SparseReduce kR>
class SparseSegmentGradKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& segment_ids = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckSparseSegmentInputs(ctx, "grad"));
    int64_t dim0;
    OP_REQUIRES_OK(ctx,
                   ReadNonNegativeScalar(ctx->input(3), "output_dim0", &dim0));
    const std::vector<int64_t> idx = ReadInts(indices);
    const std::vector<int64_t> ids = ReadInts(segment_ids);
    const int64_t n = static_cast<int64_t>(idx.size());
    const int64_t segments = grad.dim_size(0);
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES(
          ctx, idx[i] >= 0 && idx[i] < dim0,
          errors::InvalidArgument("indices[", i, "] = ", idx[i],
                                  " is not in [0, output_dim0 = ", dim0, ")"));
      OP_REQUIRES(ctx, ids[i] >= 0 && ids[i] < segments,
                  errors::InvalidArgument("segment_ids[", i, "] = ", ids[i],
                                          " is not in [0, ", segments,
                                          ") (grad.shape[0])"));
    }
    const TensorShape tail = Tail(grad.shape(), 1);
    auto out_shape = RowsThen(dim0, tail);
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), T(0));
    const int64_t inner = tail.num_elements();
    // Only now is grad known to hold data, so `segments` rows are real (an
    // empty grad of shape [2^40, 0] must not size the counts).
    if (n == 0 || inner == 0) return;
    std::vector<int64_t> counts(segments, 0);
    for (int64_t i = 0; i < n; ++i) ++counts[ids[i]];
    std::vector<T> scale(segments);
    for (int64_t s = 0; s < segments; ++s) {
      scale[s] = static_cast<T>(SegmentScale<kR>(counts[s]));
    }
    const T* g = grad.data<T>();
    // Shards own column ranges: indices may repeat.
    cpu::ParallelRange(ctx->intra_op_threadpool(), inner, n,
                       [&](int64_t cb, int64_t ce) {
                         for (int64_t i = 0; i < n; ++i) {
                           const T* src = g + ids[i] * inner;
                           T* dst = o + idx[i] * inner;
                           const T w = scale[ids[i]];
                           for (int64_t c = cb; c < ce; ++c)
                             dst[c] += src[c] * w;
                         }
                       });
  }
};

#define RUNNEL_SPARSE_SEGMENT_ATTRS(TYPES)     \
  Attr("T: " TYPES)                            \
      .Attr("Tidx: {int32, int64} = DT_INT32") \
      .Attr("Tsegmentids: {int32, int64} = DT_INT32")

#define RUNNEL_REGISTER_SPARSE_SEGMENT_OPS(NAME, TYPES, WHAT)                 \
  REGISTER_OP("SparseSegment" NAME)                                           \
      .Input("data: T")                                                       \
      .Input("indices: Tidx")                                                 \
      .Input("segment_ids: Tsegmentids")                                      \
      .Output("output: T")                                                    \
      .RUNNEL_SPARSE_SEGMENT_ATTRS(TYPES)                                     \
      .SetShapeFn(SparseSegmentShape)                                         \
      .Doc("Computes the " WHAT                                               \
           " along sparse segments of a tensor.\n\n"                          \
           "output[s, ...] = the " WHAT                                       \
           " of data[indices[i], ...] over the "                              \
           "i with segment_ids[i] == s. indices and segment_ids are vectors " \
           "of one length; segment_ids must be sorted and non-negative; "     \
           "output has segment_ids[-1] + 1 rows (0 if empty) and segments "   \
           "no id names are zero.");                                          \
  REGISTER_OP("SparseSegment" NAME "WithNumSegments")                         \
      .Input("data: T")                                                       \
      .Input("indices: Tidx")                                                 \
      .Input("segment_ids: Tsegmentids")                                      \
      .Input("num_segments: Tnumsegments")                                    \
      .Output("output: T")                                                    \
      .Attr("T: " TYPES)                                                      \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                \
      .Attr("Tnumsegments: {int32, int64} = DT_INT32")                        \
      .Attr("Tsegmentids: {int32, int64} = DT_INT32")                         \
      .SetShapeFn(SparseSegmentWithNumSegmentsShape)                          \
      .Doc("Computes the " WHAT                                               \
           " along sparse segments of a tensor, with "                        \
           "num_segments output rows.\n\nLike SparseSegment" NAME             \
           ", but output has num_segments rows (every segment id must be "    \
           "below it); segments no id names are zero.");                      \
  REGISTER_OP("SparseSegment" NAME "Grad")                                    \
      .Input("grad: T")                                                       \
      .Input("indices: Tidx")                                                 \
      .Input("segment_ids: Tsegmentids")                                      \
      .Input("output_dim0: int32")                                            \
      .Output("output: T")                                                    \
      .Attr("T: {float, double}")                                             \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                \
      .Attr("Tsegmentids: {int32, int64} = DT_INT32")                         \
      .SetShapeFn(SparseSegmentGradShape)                                     \
      .Doc("Computes gradients for SparseSegment" NAME                        \
           ".\n\noutput has "                                                 \
           "grad's shape except for dimension 0, which is output_dim0 (the "  \
           "rows of the forward op's data): output[indices[i], ...] += "      \
           "grad[segment_ids[i], ...] times the segment's weight (1 for "     \
           "the sum, 1/n for the mean, 1/sqrt(n) for sqrt_n, n the "          \
           "segment's size).")

RUNNEL_REGISTER_SPARSE_SEGMENT_OPS("Sum", RUNNEL_NUMERIC, "sum");
RUNNEL_REGISTER_SPARSE_SEGMENT_OPS("Mean", "{float, double}", "mean");
RUNNEL_REGISTER_SPARSE_SEGMENT_OPS("SqrtN", "{float, double}",
                                   "sum divided by the square root of the "
                                   "segment's size");
#undef RUNNEL_REGISTER_SPARSE_SEGMENT_OPS
#undef RUNNEL_SPARSE_SEGMENT_ATTRS
#undef RUNNEL_NUMERIC

#define RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS(NAME, R, T)                  \
  REGISTER_KERNEL_BUILDER(                                                  \
      Name("SparseSegment" NAME).Device(kDeviceCpu).TypeConstraint<T>("T"), \
      SparseSegmentReductionKernel<T, R, false>);                           \
  REGISTER_KERNEL_BUILDER(Name("SparseSegment" NAME "WithNumSegments")      \
                              .Device(kDeviceCpu)                           \
                              .TypeConstraint<T>("T"),                      \
                          SparseSegmentReductionKernel<T, R, true>)
#define RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL(NAME, R, T) \
  REGISTER_KERNEL_BUILDER(Name("SparseSegment" NAME "Grad")    \
                              .Device(kDeviceCpu)              \
                              .TypeConstraint<T>("T"),         \
                          SparseSegmentGradKernel<T, R>)

RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("Sum", SparseReduce::kSum, float);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("Sum", SparseReduce::kSum, double);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("Sum", SparseReduce::kSum, int32_t);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("Sum", SparseReduce::kSum, int64_t);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("Mean", SparseReduce::kMean, float);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("Mean", SparseReduce::kMean, double);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("SqrtN", SparseReduce::kSqrtN, float);
RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS("SqrtN", SparseReduce::kSqrtN, double);
RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL("Sum", SparseReduce::kSum, float);
RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL("Sum", SparseReduce::kSum, double);
RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL("Mean", SparseReduce::kMean, float);
RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL("Mean", SparseReduce::kMean, double);
RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL("SqrtN", SparseReduce::kSqrtN,
                                           float);
RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL("SqrtN", SparseReduce::kSqrtN,
                                           double);
#undef RUNNEL_REGISTER_SPARSE_SEGMENT_GRAD_KERNEL
#undef RUNNEL_REGISTER_SPARSE_SEGMENT_KERNELS

}  // namespace
}  // namespace runnel
