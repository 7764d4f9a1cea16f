// Matrix products: MatMul (rank-2) and BatchMatMulV2 (batched, with NumPy
// broadcasting of the batch dimensions). Both run on runnel/cpu/gemm.h.
#include <algorithm>
#include <vector>

#include "runnel/cpu/gemm.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/fusion_attrs.h"

namespace runnel {
namespace {

std::string MatrixSizeError(const PartialTensorShape& a,
                            const PartialTensorShape& b) {
  return absl::StrCat("Matrix size-incompatible: In[0]: ", a.DebugString(),
                      ", In[1]: ", b.DebugString());
}

// Leading dimension of a stored row-major matrix with `cols` columns; GEMM
// wants >= 1 even for empty matrices.
int64_t LeadingDim(int64_t cols) { return std::max<int64_t>(1, cols); }

// ---------------------------------------------------------------------------
// MatMul

Status MatMulShape(InferenceContext* c) {
  const PartialTensorShape& a = c->input(0);
  const PartialTensorShape& b = c->input(1);
  for (int i = 0; i < 2; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (!s.unknown_rank() && s.dims() != 2) {
      return c->InvalidArgument("In[", i,
                                "] is not a matrix. Instead it has shape ",
                                s.DebugString());
    }
  }
  bool transpose_a, transpose_b;
  RETURN_IF_ERROR(c->GetAttr("transpose_a", &transpose_a));
  RETURN_IF_ERROR(c->GetAttr("transpose_b", &transpose_b));
  auto dim = [](const PartialTensorShape& s, int i) -> int64_t {
    return s.unknown_rank() ? -1 : s.dim_size(i);
  };
  const int64_t rows = dim(a, transpose_a ? 1 : 0);
  const int64_t cols = dim(b, transpose_b ? 0 : 1);
  const int64_t inner_a = dim(a, transpose_a ? 0 : 1);
  const int64_t inner_b = dim(b, transpose_b ? 1 : 0);
  if (inner_a >= 0 && inner_b >= 0 && inner_a != inner_b) {
    return c->InvalidArgument(MatrixSizeError(a, b));
  }
  c->set_output(0, PartialTensorShape({rows, cols}));
  return absl::OkStatus();
}

REGISTER_OP("MatMul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {float, double, int32, int64}")
    .Attr("grad_a: bool = false")
    .Attr("grad_b: bool = false")
    .SetShapeFn(MatMulShape)
    .Doc(R"doc(Multiplies the matrix "a" by the matrix "b".
The inputs must be two-dimensional matrices and the inner dimension of "a"
(after being transposed if transpose_a is true) must match the outer dimension
of "b" (after being transposed if transpose_b is true). grad_a and grad_b are
hints that the product is part of a gradient computation; they do not change
the result.)doc");

template <typename T>
class MatMulKernel : public OpKernel {
 public:
  explicit MatMulKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("transpose_a", &transpose_a_));
    OP_REQUIRES_OK(c, c->GetAttr("transpose_b", &transpose_b_));
    // Set by the bfloat16 pass (runnel/graph/mixed_precision.h): compute in
    // bf16 with fp32 accumulation where the CPU can.
    if (!c->GetAttr(kBf16ComputeAttr, &bf16_).ok()) bf16_ = false;
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(
        ctx, a.dims() == 2,
        errors::InvalidArgument("In[0] is not a matrix. Instead it has shape ",
                                a.shape().DebugString()));
    OP_REQUIRES(
        ctx, b.dims() == 2,
        errors::InvalidArgument("In[1] is not a matrix. Instead it has shape ",
                                b.shape().DebugString()));
    const int64_t m = a.dim_size(transpose_a_ ? 1 : 0);
    const int64_t k = a.dim_size(transpose_a_ ? 0 : 1);
    const int64_t n = b.dim_size(transpose_b_ ? 0 : 1);
    OP_REQUIRES(ctx, k == b.dim_size(transpose_b_ ? 1 : 0),
                errors::InvalidArgument(MatrixSizeError(a.shape(), b.shape())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({m, n}), &out));
    if (out->NumElements() == 0) return;
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_ &&
          cpu::GemmBf16(transpose_a_, transpose_b_, m, n, k, a.data<T>(),
                        LeadingDim(a.dim_size(1)), b.data<T>(),
                        LeadingDim(b.dim_size(1)), out->data<T>(), n)) {
        return;
      }
    }
    cpu::Gemm(transpose_a_, transpose_b_, m, n, k, T(1), a.data<T>(),
              LeadingDim(a.dim_size(1)), b.data<T>(), LeadingDim(b.dim_size(1)),
              T(0), out->data<T>(), n);
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
  bool bf16_ = false;
};

#define REGISTER_MATMUL(T)                                      \
  REGISTER_KERNEL_BUILDER(                                      \
      Name("MatMul").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      MatMulKernel<T>)
REGISTER_MATMUL(float);
REGISTER_MATMUL(double);
REGISTER_MATMUL(int32_t);
REGISTER_MATMUL(int64_t);
#undef REGISTER_MATMUL

// ---------------------------------------------------------------------------
// _FusedMatMul: TensorFlow's remapper fusion of MatMul + BiasAdd [+ an
// activation] (runnel/graph/remapper.h makes it; runnel/ops/fusion_attrs.h
// has the attrs): the product, then bias and activation in one pass over it
// while it is in cache.

REGISTER_OP("_FusedMatMul")
    .Input("a: T")
    .Input("b: T")
    .Input("args: num_args * T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {float, double}")
    .Attr("num_args: int >= 0")
    .Attr("fused_ops: list(string) = []")
    .Attr("epsilon: float = 0.0001")
    .Attr("leakyrelu_alpha: float = 0.2")
    .SetShapeFn(MatMulShape)
    .Doc(R"doc(MatMul followed by the ops named in fused_ops, in one kernel.
fused_ops is ["BiasAdd"] or ["BiasAdd", A] for A in Relu, Relu6, Elu,
LeakyRelu, Tanh, Sigmoid; args is [bias], a vector with one value per column
of the product. An internal op: the graph optimizer makes it.)doc");

template <typename T>
class FusedMatMulKernel : public MatMulKernel<T> {
 public:
  explicit FusedMatMulKernel(OpKernelConstruction* c) : MatMulKernel<T>(c) {
    OP_REQUIRES_OK(c,
                   ParseFusionAttrs(*c, /*allow_batch_norm=*/false, &fusion_));
  }

  void Compute(OpKernelContext* ctx) override {
    MatMulKernel<T>::Compute(ctx);
    if (!ctx->status().ok()) return;
    Tensor* out = ctx->mutable_output(0);
    OP_REQUIRES_OK(ctx, ApplyFusion<T>(ctx, fusion_, out->data<T>(),
                                       out->dim_size(0), out->dim_size(1),
                                       /*inner=*/1));
  }

 private:
  FusionAttrs fusion_;
};

REGISTER_KERNEL_BUILDER(
    Name("_FusedMatMul").Device(kDeviceCpu).TypeConstraint<float>("T"),
    FusedMatMulKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("_FusedMatMul").Device(kDeviceCpu).TypeConstraint<double>("T"),
    FusedMatMulKernel<double>);

// ---------------------------------------------------------------------------
// BatchMatMulV2

// The batch dimensions of a shape of rank >= 2 (all but the last two).
PartialTensorShape BatchDims(const PartialTensorShape& s) {
  PartialTensorShape r({});
  for (int i = 0; i + 2 < s.dims(); ++i) r.AddDim(s.dim_size(i));
  return r;
}

Status BatchMatMulV2Shape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  const PartialTensorShape& y = c->input(1);
  for (int i = 0; i < 2; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (!s.unknown_rank() && s.dims() < 2) {
      return c->InvalidArgument("In[", i, "] ndims must be >= 2: ", s.dims(),
                                " (shape ", s.DebugString(), ")");
    }
  }
  bool adj_x, adj_y;
  RETURN_IF_ERROR(c->GetAttr("adj_x", &adj_x));
  RETURN_IF_ERROR(c->GetAttr("adj_y", &adj_y));
  auto dim_from_end = [](const PartialTensorShape& s, int i) -> int64_t {
    return s.unknown_rank() ? -1 : s.dim_size(s.dims() - i);
  };
  const int64_t inner_x = dim_from_end(x, adj_x ? 2 : 1);
  const int64_t inner_y = dim_from_end(y, adj_y ? 1 : 2);
  if (inner_x >= 0 && inner_y >= 0 && inner_x != inner_y) {
    return c->InvalidArgument(MatrixSizeError(x, y));
  }
  if (x.unknown_rank() || y.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  PartialTensorShape out;
  Status s = shape_fns::BroadcastShapes(*c, BatchDims(x), BatchDims(y), &out);
  if (!s.ok()) {
    return c->InvalidArgument(
        "In[0] and In[1] must have compatible batch dimensions: ",
        x.DebugString(), " vs. ", y.DebugString());
  }
  out.AddDim(dim_from_end(x, adj_x ? 1 : 2));
  out.AddDim(dim_from_end(y, adj_y ? 2 : 1));
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("BatchMatMulV2")
    .Input("x: T")
    .Input("y: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("adj_x: bool = false")
    .Attr("adj_y: bool = false")
    .Attr("grad_x: bool = false")
    .Attr("grad_y: bool = false")
    .SetShapeFn(BatchMatMulV2Shape)
    .Doc(R"doc(Multiplies slices of two tensors in batches.
x has shape [..., r_x, c_x] and y [..., r_y, c_y]; each slice may be adjointed
(transposed, for real types) with adj_x / adj_y. The batch dimensions `...`
broadcast like NumPy's. The output is [..., r_o, c_o] with r_o = c_x if adj_x
else r_x and c_o = r_y if adj_y else c_y. grad_x and grad_y are hints that the
product is part of a gradient computation; they do not change the result.)doc");

// The broadcast of x's and y's batch dimensions: output batch b (row-major
// over out_dims) reads matrix XIndex(b) of x and YIndex(b) of y.
struct BatchPlan {
  TensorShape out_batch;
  std::vector<int64_t> out_dims, x_strides, y_strides;  // Stride 0: broadcast.

  int64_t XIndex(int64_t b) const { return Index(b, x_strides); }
  int64_t YIndex(int64_t b) const { return Index(b, y_strides); }

 private:
  int64_t Index(int64_t b, const std::vector<int64_t>& strides) const {
    int64_t index = 0;
    for (int i = static_cast<int>(out_dims.size()) - 1; i >= 0 && b > 0; --i) {
      index += (b % out_dims[i]) * strides[i];
      b /= out_dims[i];
    }
    return index;
  }
};

// Broadcasts the batch dims of `x` and `y` (ranks >= 2). Returns false if
// they are incompatible.
bool MakeBatchPlan(const TensorShape& x, const TensorShape& y,
                   BatchPlan* plan) {
  const int xr = x.dims() - 2, yr = y.dims() - 2;
  const int rank = std::max(xr, yr);
  std::vector<int64_t> xd(rank, 1), yd(rank, 1);
  plan->out_dims.assign(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int xi = i - (rank - xr), yi = i - (rank - yr);
    if (xi >= 0) xd[i] = x.dim_size(xi);
    if (yi >= 0) yd[i] = y.dim_size(yi);
    if (xd[i] != yd[i] && xd[i] != 1 && yd[i] != 1) return false;
    plan->out_dims[i] = xd[i] == 1 ? yd[i] : xd[i];
  }
  plan->out_batch = TensorShape(absl::MakeConstSpan(plan->out_dims));
  plan->x_strides.assign(rank, 0);
  plan->y_strides.assign(rank, 0);
  for (int64_t i = rank - 1, sx = 1, sy = 1; i >= 0; --i) {
    if (xd[i] != 1) plan->x_strides[i] = sx;
    if (yd[i] != 1) plan->y_strides[i] = sy;
    sx *= xd[i];
    sy *= yd[i];
  }
  return true;
}

template <typename T>
class BatchMatMulV2Kernel : public OpKernel {
 public:
  explicit BatchMatMulV2Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("adj_x", &adj_x_));
    OP_REQUIRES_OK(c, c->GetAttr("adj_y", &adj_y_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    OP_REQUIRES(
        ctx, x.dims() >= 2,
        errors::InvalidArgument("In[0] ndims must be >= 2: ", x.dims(),
                                " (shape ", x.shape().DebugString(), ")"));
    OP_REQUIRES(
        ctx, y.dims() >= 2,
        errors::InvalidArgument("In[1] ndims must be >= 2: ", y.dims(),
                                " (shape ", y.shape().DebugString(), ")"));
    const int64_t x_rows = x.dim_size(x.dims() - 2),
                  x_cols = x.dim_size(x.dims() - 1);
    const int64_t y_rows = y.dim_size(y.dims() - 2),
                  y_cols = y.dim_size(y.dims() - 1);
    const int64_t m = adj_x_ ? x_cols : x_rows;
    const int64_t k = adj_x_ ? x_rows : x_cols;
    const int64_t n = adj_y_ ? y_rows : y_cols;
    OP_REQUIRES(ctx, k == (adj_y_ ? y_cols : y_rows),
                errors::InvalidArgument(MatrixSizeError(x.shape(), y.shape())));
    BatchPlan plan;
    OP_REQUIRES(ctx, MakeBatchPlan(x.shape(), y.shape(), &plan),
                errors::InvalidArgument(
                    "In[0] and In[1] must have compatible batch dimensions: ",
                    x.shape().DebugString(), " vs. ", y.shape().DebugString()));
    TensorShape out_shape = plan.out_batch;
    out_shape.AddDim(m);
    out_shape.AddDim(n);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;

    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* outp = out->data<T>();
    const int64_t lda = LeadingDim(x_cols), ldb = LeadingDim(y_cols);
    const int64_t batches = plan.out_batch.num_elements();
    const int64_t x_stride = x_rows * x_cols, y_stride = y_rows * y_cols;

    // A single y matrix (its batch dims are all 1, so x is not broadcast):
    // the batch folds into the rows of one product, [batches * m, k] x [k, n].
    int64_t y_batch = 1;
    for (int i = 0; i + 2 < y.dims(); ++i) y_batch *= y.dim_size(i);
    if (!adj_x_ && y_batch == 1) {
      cpu::Gemm(false, adj_y_, batches * m, n, k, T(1), xp, lda, yp, ldb, T(0),
                outp, n);
      return;
    }

    auto one = [&](int64_t b, int max_threads) {
      cpu::Gemm(adj_x_, adj_y_, m, n, k, T(1), xp + plan.XIndex(b) * x_stride,
                lda, yp + plan.YIndex(b) * y_stride, ldb, T(0),
                outp + b * m * n, n, max_threads);
    };
    // Big products thread inside GEMM; many small ones split over the pool.
    const double work = static_cast<double>(m) * n * k;
    ThreadPool* pool = ctx->intra_op_threadpool();
    if (work >= 128.0 * 128.0 * 128.0 || batches == 1 || pool == nullptr) {
      for (int64_t b = 0; b < batches; ++b) one(b, 0);
      return;
    }
    const int64_t cost_ns = 100 + static_cast<int64_t>(work / 50);
    pool->ParallelFor(batches, cost_ns, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) one(b, 1);
    });
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
};

#define REGISTER_BATCH_MATMUL(T)                                       \
  REGISTER_KERNEL_BUILDER(                                             \
      Name("BatchMatMulV2").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      BatchMatMulV2Kernel<T>)
REGISTER_BATCH_MATMUL(float);
REGISTER_BATCH_MATMUL(double);
REGISTER_BATCH_MATMUL(int32_t);
REGISTER_BATCH_MATMUL(int64_t);
#undef REGISTER_BATCH_MATMUL

}  // namespace
}  // namespace runnel
