// The fused LSTM ops of TensorFlow's rnn_ops: LSTMBlockCell (one time step
// of an LSTM layer in one op) and LSTMBlockCellGrad (its element-wise
// backward pass; lstm_grad.cc adds the MatMuls), and BlockLSTM /
// BlockLSTMGrad (the same cell over a whole sequence in one op each, Note
// [Block LSTM]).
//
// Note [LSTM block cell]
// With xh = [x, h_prev] ([batch, input + cell]) and w [input + cell,
// 4 * cell], the gate pre-activations are one product
//   gates = xh · w + b,   columns [i | ci | f | o] (TF's ICFO layout)
// and then, per element,
//   i  = sigmoid(gates_i + cs_prev * wci)          (peephole term optional)
//   ci = tanh(gates_ci)
//   f  = sigmoid(gates_f + forget_bias + cs_prev * wcf)
//   cs = clip(i * ci + f * cs_prev, -cell_clip, cell_clip)  (if cell_clip > 0)
//   co = tanh(cs)
//   o  = sigmoid(gates_o + cs * wco)
//   h  = o * co
// The kernel runs one GEMM (runnel/cpu/gemm.h) into a [batch, 4 * cell]
// scratch buffer and then one fused pass per batch row that evaluates every
// gate with Eigen's vectorised sigmoid/tanh and writes the seven outputs
// directly: no per-gate temporaries. As in TensorFlow, the gradient treats
// the clip as the identity, and only the gradients of cs and h flow back
// (those of i, f, o, ci and co, the saved activations, are ignored).
//
// TensorFlow registers T in {half, float}; we register float and double
// (double for gradient checks; half is not supported).
#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runnel/cpu/cwise.h"
#include "runnel/cpu/gemm.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// ---------------------------------------------------------------------------
// Shapes shared by the cell ops and the sequence ops.

// The known value of a dimension, or -1.
int64_t Dim(const PartialTensorShape& s, int i) {
  return s.unknown_rank() ? -1 : s.dim_size(i);
}

// Merges a known-or-unknown (-1) dimension into *dim; error on a conflict.
Status MergeDim(const InferenceContext& c, int64_t value, const char* what,
                int64_t* dim) {
  if (value < 0) return absl::OkStatus();
  if (*dim >= 0 && *dim != value) {
    std::string shapes;
    for (int k = 0; k < c.num_inputs(); ++k) {
      absl::StrAppend(&shapes, k > 0 ? ", " : "", c.input(k).DebugString());
    }
    return c.InvalidArgument("Inconsistent ", what, ": ", *dim, " vs. ", value,
                             " (input shapes ", shapes, ")");
  }
  *dim = value;
  return absl::OkStatus();
}

// The sizes the eight cell inputs (x, cs_prev, h_prev, w, wci, wcf, wco, b
// from input `first` on) imply, as far as they are known; checks what the
// kernel checks (ranks, consistent sizes, w's row count). x is [batch,
// input] (x_rank 2) or [time, batch, input] (x_rank 3).
struct CellShapeDims {
  int64_t time = -1, batch = -1, cell = -1;
};
Status CellShapes(InferenceContext* c, int first, int x_rank,
                  CellShapeDims* d) {
  PartialTensorShape x, cs_prev, h_prev, w, b, unused;
  RETURN_IF_ERROR(c->WithRank(first, x_rank, &x));
  RETURN_IF_ERROR(c->WithRank(first + 1, 2, &cs_prev));
  RETURN_IF_ERROR(c->WithRank(first + 2, 2, &h_prev));
  RETURN_IF_ERROR(c->WithRank(first + 3, 2, &w));
  for (int k = 4; k < 7; ++k) {
    RETURN_IF_ERROR(c->WithRank(first + k, 1, &unused));
  }
  RETURN_IF_ERROR(c->WithRank(first + 7, 1, &b));
  bool use_peephole = false;
  RETURN_IF_ERROR(c->GetAttr("use_peephole", &use_peephole));
  int64_t* batch = &d->batch;
  int64_t* cell = &d->cell;
  if (x_rank == 3) d->time = Dim(x, 0);
  RETURN_IF_ERROR(MergeDim(*c, Dim(x, x_rank - 2), "batch size", batch));
  RETURN_IF_ERROR(MergeDim(*c, Dim(cs_prev, 0), "batch size", batch));
  RETURN_IF_ERROR(MergeDim(*c, Dim(h_prev, 0), "batch size", batch));
  RETURN_IF_ERROR(MergeDim(*c, Dim(cs_prev, 1), "cell size", cell));
  RETURN_IF_ERROR(MergeDim(*c, Dim(h_prev, 1), "cell size", cell));
  for (const int64_t four_cell : {Dim(w, 1), Dim(b, 0)}) {
    if (four_cell < 0) continue;
    if (four_cell % 4 != 0) {
      return c->InvalidArgument(
          "w.dim_size(1) and b.dim_size(0) must be 4 * "
          "cell_size; got w ",
          w.DebugString(), ", b ", b.DebugString());
    }
    RETURN_IF_ERROR(MergeDim(*c, four_cell / 4, "cell size", cell));
  }
  if (use_peephole) {
    for (int k = 4; k < 7; ++k) {
      RETURN_IF_ERROR(c->WithRank(first + k, 1, &unused));
      RETURN_IF_ERROR(MergeDim(*c, Dim(unused, 0), "peephole size", cell));
    }
  }
  const int64_t input = Dim(x, x_rank - 1);
  if (input >= 0 && *cell >= 0 && Dim(w, 0) >= 0 &&
      Dim(w, 0) != input + *cell) {
    return c->InvalidArgument(
        "w.dim_size(0) != input_size + cell_size: ", Dim(w, 0), " vs. ",
        input + *cell, " (x ", x.DebugString(), ", w ", w.DebugString(), ")");
  }
  return absl::OkStatus();
}

// The checked sizes of the cell inputs in a kernel.
struct CellDims {
  int64_t time = 1, batch = 0, input = 0, cell = 0;
};

Status CheckRank(const Tensor& t, const char* name, int rank) {
  if (t.dims() != rank) {
    return errors::InvalidArgument(name, " must be rank ", rank,
                                   " but has shape ", t.shape().DebugString());
  }
  return absl::OkStatus();
}

Status CheckMatrix(const Tensor& t, const char* name, int64_t rows,
                   int64_t cols) {
  RETURN_IF_ERROR(CheckRank(t, name, 2));
  if (t.dim_size(0) != rows || t.dim_size(1) != cols) {
    return errors::InvalidArgument(name, " must have shape [", rows, ",", cols,
                                   "] but has shape ", t.shape().DebugString());
  }
  return absl::OkStatus();
}

// Validates inputs first..first+7 (x, cs_prev, h_prev, w, wci, wcf, wco,
// b); x has rank x_rank (2, or 3 with time first).
Status CheckCellInputs(OpKernelContext* ctx, int first, int x_rank,
                       bool use_peephole, CellDims* dims) {
  const Tensor& x = ctx->input(first);
  const Tensor& cs_prev = ctx->input(first + 1);
  RETURN_IF_ERROR(CheckRank(x, "x", x_rank));
  RETURN_IF_ERROR(CheckRank(cs_prev, "cs_prev", 2));
  if (x_rank == 3) dims->time = x.dim_size(0);
  dims->batch = x.dim_size(x_rank - 2);
  dims->input = x.dim_size(x_rank - 1);
  dims->cell = cs_prev.dim_size(1);
  const int64_t b = dims->batch, in = dims->input, h = dims->cell;
  if (cs_prev.dim_size(0) != b) {
    return errors::InvalidArgument(
        "cs_prev.dims(0) != batch_size: ", cs_prev.dim_size(0), " vs. ", b,
        " (x ", x.shape().DebugString(), ", cs_prev ",
        cs_prev.shape().DebugString(), ")");
  }
  RETURN_IF_ERROR(CheckMatrix(ctx->input(first + 2), "h_prev", b, h));
  RETURN_IF_ERROR(CheckMatrix(ctx->input(first + 3), "w", in + h, 4 * h));
  static const char* const kPeepholes[] = {"wci", "wcf", "wco"};
  for (int k = 0; k < 3; ++k) {
    const Tensor& p = ctx->input(first + 4 + k);
    RETURN_IF_ERROR(CheckRank(p, kPeepholes[k], 1));
    if (use_peephole && p.dim_size(0) != h) {
      return errors::InvalidArgument(
          kPeepholes[k], " must have shape [", h,
          "] (the cell size) when use_peephole is true, but has shape ",
          p.shape().DebugString());
    }
  }
  const Tensor& bias = ctx->input(first + 7);
  RETURN_IF_ERROR(CheckRank(bias, "b", 1));
  if (bias.dim_size(0) != 4 * h) {
    return errors::InvalidArgument(
        "b.dim_size(0) != cell_size * 4: ", bias.dim_size(0), " vs. ", 4 * h);
  }
  return absl::OkStatus();
}

// The CPU kernels of every op here, for T in {float, double}.
#define REGISTER_LSTM_KERNELS(op, Kernel)                                     \
  REGISTER_KERNEL_BUILDER(                                                    \
      Name(op).Device(kDeviceCpu).TypeConstraint<float>("T"), Kernel<float>); \
  REGISTER_KERNEL_BUILDER(                                                    \
      Name(op).Device(kDeviceCpu).TypeConstraint<double>("T"), Kernel<double>)

constexpr char kCellInputsDoc[] = R"doc(
x: The input to the LSTM cell, shape (batch_size, num_inputs).
cs_prev: Value of the cell state at previous time step.
h_prev: Output of the previous cell at previous time step.
w: The weight matrix, shape (num_inputs + cell_size, 4 * cell_size).
wci: The weight matrix for input gate peephole connection.
wcf: The weight matrix for forget gate peephole connection.
wco: The weight matrix for output gate peephole connection.
b: The bias vector, shape (4 * cell_size).)doc";

// ---------------------------------------------------------------------------
// LSTMBlockCell

Status LSTMBlockCellShape(InferenceContext* c) {
  CellShapeDims d;
  RETURN_IF_ERROR(CellShapes(c, 0, 2, &d));
  for (int k = 0; k < 7; ++k) {
    c->set_output(k, PartialTensorShape({d.batch, d.cell}));
  }
  return absl::OkStatus();
}

REGISTER_OP("LSTMBlockCell")
    .Input("x: T")
    .Input("cs_prev: T")
    .Input("h_prev: T")
    .Input("w: T")
    .Input("wci: T")
    .Input("wcf: T")
    .Input("wco: T")
    .Input("b: T")
    .Output("i: T")
    .Output("cs: T")
    .Output("f: T")
    .Output("o: T")
    .Output("ci: T")
    .Output("co: T")
    .Output("h: T")
    .Attr("forget_bias: float = 1.0")
    .Attr("cell_clip: float = 3.0")
    .Attr("use_peephole: bool = false")
    .Attr("T: {float, double}")
    .SetShapeFn(LSTMBlockCellShape)
    .Doc(absl::StrCat(
        R"doc(Computes the LSTM cell forward propagation for 1 time step.
This implementation uses 1 weight matrix and 1 bias vector, and there's an
optional peephole connection. With xh = [x, h_prev] and the gate columns of
w and b ordered [i, ci, f, o]:
  [i, ci, f, o] = xh * w + b
  i = sigmoid(i + cs_prev .* wci)          (peephole terms if use_peephole)
  f = sigmoid(f + forget_bias + cs_prev .* wcf)
  ci = tanh(ci)
  cs = ci .* i + cs_prev .* f
  cs = clip(cs, -cell_clip, cell_clip)     (only if cell_clip > 0)
  o = sigmoid(o + cs .* wco)
  co = tanh(cs)
  h = co .* o
forget_bias: The forget gate bias.
cell_clip: Value to clip the 'cs' value to; <= 0 disables clipping.
use_peephole: Whether to use peephole weights.
i: The input gate. cs: The cell state before the tanh. f: The forget gate.
o: The output gate. ci: The cell input. co: The cell after the tanh.
h: The output h vector.)doc",
        kCellInputsDoc));

// One batch row of Note [LSTM block cell]: `gates` holds xh · w for the row
// (bias not yet added). `i` may alias h_prev and `o` cs_prev (forwarded
// buffers): h_prev is no longer read, and o is written after the last read
// of cs_prev.
template <typename T>
struct CellRowArgs {
  int64_t cell;
  T forget_bias, cell_clip;
  bool use_peephole;
  const T *wci, *wcf, *wco, *b;
};

template <typename T>
void CellForwardRow(const CellRowArgs<T>& a, const T* gates, const T* cs_prev,
                    T* i, T* cs, T* f, T* o, T* ci, T* co, T* h) {
  const int64_t n = a.cell;
  ConstArrayMap<T> g_i(gates, n), g_c(gates + n, n), g_f(gates + 2 * n, n),
      g_o(gates + 3 * n, n);
  ConstArrayMap<T> b_i(a.b, n), b_c(a.b + n, n), b_f(a.b + 2 * n, n),
      b_o(a.b + 3 * n, n);
  ConstArrayMap<T> csp(cs_prev, n);
  ArrayMap<T> i_m(i, n), cs_m(cs, n), f_m(f, n), o_m(o, n), ci_m(ci, n),
      co_m(co, n), h_m(h, n);
  if (a.use_peephole) {
    ConstArrayMap<T> wci(a.wci, n), wcf(a.wcf, n);
    i_m = (g_i + b_i + csp * wci).logistic();
    f_m = (g_f + b_f + a.forget_bias + csp * wcf).logistic();
  } else {
    i_m = (g_i + b_i).logistic();
    f_m = (g_f + b_f + a.forget_bias).logistic();
  }
  ci_m = (g_c + b_c).tanh();
  cs_m = i_m * ci_m + f_m * csp;
  if (a.cell_clip > T(0)) cs_m = cs_m.max(-a.cell_clip).min(a.cell_clip);
  co_m = cs_m.tanh();
  if (a.use_peephole) {
    ConstArrayMap<T> wco(a.wco, n);
    o_m = (g_o + b_o + cs_m * wco).logistic();
  } else {
    o_m = (g_o + b_o).logistic();
  }
  h_m = o_m * co_m;
}

// The attrs of the forward ops (LSTMBlockCell, BlockLSTM) and the row
// arguments they give CellForwardRow.
class CellForwardKernel : public OpKernel {
 public:
  explicit CellForwardKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("forget_bias", &forget_bias_));
    OP_REQUIRES_OK(c, c->GetAttr("cell_clip", &cell_clip_));
    OP_REQUIRES_OK(c, c->GetAttr("use_peephole", &use_peephole_));
  }

 protected:
  // wci, wcf, wco and b are inputs first_peephole..first_peephole+3.
  template <typename T>
  CellRowArgs<T> RowArgs(OpKernelContext* ctx, int first_peephole,
                         int64_t cell) const {
    return {cell,
            static_cast<T>(forget_bias_),
            static_cast<T>(cell_clip_),
            use_peephole_,
            ctx->input(first_peephole).data<T>(),
            ctx->input(first_peephole + 1).data<T>(),
            ctx->input(first_peephole + 2).data<T>(),
            ctx->input(first_peephole + 3).data<T>()};
  }

  float forget_bias_ = 1.0f;
  float cell_clip_ = 3.0f;
  bool use_peephole_ = false;
};

template <typename T>
class LSTMBlockCellKernel : public CellForwardKernel {
 public:
  using CellForwardKernel::CellForwardKernel;

  void Compute(OpKernelContext* ctx) override {
    CellDims d;
    OP_REQUIRES_OK(ctx, CheckCellInputs(ctx, 0, 2, use_peephole_, &d));
    const TensorShape shape({d.batch, d.cell});
    // i and o may take over h_prev's and cs_prev's buffers (see
    // CellForwardRow for why that is safe).
    Tensor* out[7];
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({2}, 0, shape, &out[0]));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, shape, &out[1]));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, shape, &out[2]));
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({1}, 3, shape, &out[3]));
    for (int k = 4; k < 7; ++k) {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(k, shape, &out[k]));
    }
    if (d.batch == 0 || d.cell == 0) return;

    // xh = [x, h_prev]; gates = xh · w (one GEMM).
    const int64_t xh_cols = d.input + d.cell, gate_cols = 4 * d.cell;
    Tensor xh, gates;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DataTypeToEnum<T>::value,
                                      TensorShape({d.batch, xh_cols}), &xh));
    OP_REQUIRES_OK(
        ctx, ctx->allocate_temp(DataTypeToEnum<T>::value,
                                TensorShape({d.batch, gate_cols}), &gates));
    const T* x = ctx->input(0).data<T>();
    const T* h_prev = ctx->input(2).data<T>();
    T* xh_data = xh.data<T>();
    for (int64_t r = 0; r < d.batch; ++r) {
      if (d.input > 0) {
        std::memcpy(xh_data + r * xh_cols, x + r * d.input,
                    d.input * sizeof(T));
      }
      std::memcpy(xh_data + r * xh_cols + d.input, h_prev + r * d.cell,
                  d.cell * sizeof(T));
    }
    cpu::Gemm(false, false, d.batch, gate_cols, xh_cols, T(1), xh_data, xh_cols,
              ctx->input(3).data<T>(), gate_cols, T(0), gates.data<T>(),
              gate_cols);

    const CellRowArgs<T> args = RowArgs<T>(ctx, 4, d.cell);
    const T* gates_data = gates.data<T>();
    const T* cs_prev = ctx->input(1).data<T>();
    T* o[7];
    for (int k = 0; k < 7; ++k) o[k] = out[k]->data<T>();
    const int64_t n = d.cell;
    // ~5 transcendental functions and ~12 flops per element.
    cpu::ParallelRange(ctx->intra_op_threadpool(), d.batch, 8 * n,
                       [&](int64_t begin, int64_t end) {
                         for (int64_t r = begin; r < end; ++r) {
                           const int64_t off = r * n;
                           CellForwardRow(args, gates_data + r * gate_cols,
                                          cs_prev + off, o[0] + off, o[1] + off,
                                          o[2] + off, o[3] + off, o[4] + off,
                                          o[5] + off, o[6] + off);
                         }
                       });
  }
};

REGISTER_LSTM_KERNELS("LSTMBlockCell", LSTMBlockCellKernel);

// ---------------------------------------------------------------------------
// LSTMBlockCellGrad

Status LSTMBlockCellGradShape(InferenceContext* c) {
  CellShapeDims d;
  RETURN_IF_ERROR(CellShapes(c, 0, 2, &d));
  int64_t batch = d.batch, cell = d.cell;
  PartialTensorShape s;
  for (int k = 8; k < 16; ++k) {
    RETURN_IF_ERROR(c->WithRank(k, 2, &s));
    RETURN_IF_ERROR(MergeDim(*c, Dim(s, 0), "batch size", &batch));
    RETURN_IF_ERROR(MergeDim(*c, Dim(s, 1), "cell size", &cell));
  }
  c->set_output(0, PartialTensorShape({batch, cell}));
  c->set_output(1, PartialTensorShape({batch, cell < 0 ? -1 : 4 * cell}));
  for (int k = 2; k < 5; ++k) c->set_output(k, PartialTensorShape({cell}));
  return absl::OkStatus();
}

REGISTER_OP("LSTMBlockCellGrad")
    .Input("x: T")
    .Input("cs_prev: T")
    .Input("h_prev: T")
    .Input("w: T")
    .Input("wci: T")
    .Input("wcf: T")
    .Input("wco: T")
    .Input("b: T")
    .Input("i: T")
    .Input("cs: T")
    .Input("f: T")
    .Input("o: T")
    .Input("ci: T")
    .Input("co: T")
    .Input("cs_grad: T")
    .Input("h_grad: T")
    .Output("cs_prev_grad: T")
    .Output("dicfo: T")
    .Output("wci_grad: T")
    .Output("wcf_grad: T")
    .Output("wco_grad: T")
    .Attr("use_peephole: bool")
    .Attr("T: {float, double}")
    .SetShapeFn(LSTMBlockCellGradShape)
    .Doc(absl::StrCat(
        R"doc(Computes the LSTM cell backward propagation for 1 timestep.
This implementation is to be used in conjunction of LSTMBlockCell.
i, cs, f, o, ci, co: the corresponding outputs of LSTMBlockCell.
cs_grad: The current gradient of cs. h_grad: The gradient of h vector.
cs_prev_grad: The gradient of cs to be back-propped.
dicfo: The derivative wrt to [i, cs, f, o] (the gate pre-activations, in the
  column layout of w).
wci_grad, wcf_grad, wco_grad: The gradients of the peephole weights (zeros
  when use_peephole is false).
use_peephole: Whether the cell uses peephole connections.)doc",
        kCellInputsDoc));

// One batch row of the backward pass. `cs_prev_grad` may alias cs_grad
// (forwarded): each element is read before it is written.
//   do  = o (1 - o) h_grad co
//   dcs = (1 - co^2) h_grad o + cs_grad [+ do wco]
//   dci = (1 - ci^2) dcs i,  df = f (1 - f) dcs cs_prev,  di = i (1 - i) dcs ci
//   cs_prev_grad = dcs f [+ di wci + df wcf]
template <typename T>
struct GradRowArgs {
  int64_t cell;
  bool use_peephole;
  const T *wci, *wcf, *wco;
};

template <typename T>
void CellBackwardRow(const GradRowArgs<T>& a, const T* const* in, T* dicfo,
                     T* cs_prev_grad) {
  const int64_t n = a.cell;
  // in: cs_prev, i, cs, f, o, ci, co, cs_grad, h_grad (this row).
  ConstArrayMap<T> csp(in[0], n), i(in[1], n), f(in[3], n), o(in[4], n),
      ci(in[5], n), co(in[6], n), cs_grad(in[7], n), h_grad(in[8], n);
  ArrayMap<T> di(dicfo, n), dci(dicfo + n, n), df(dicfo + 2 * n, n),
      d_o(dicfo + 3 * n, n), dcs(cs_prev_grad, n);
  d_o = o * (T(1) - o) * h_grad * co;
  dcs = (T(1) - co * co) * h_grad * o + cs_grad;
  if (a.use_peephole) dcs += d_o * ConstArrayMap<T>(a.wco, n);
  dci = (T(1) - ci * ci) * dcs * i;
  df = f * (T(1) - f) * dcs * csp;
  di = i * (T(1) - i) * dcs * ci;
  if (a.use_peephole) {
    dcs = dcs * f + di * ConstArrayMap<T>(a.wci, n) +
          df * ConstArrayMap<T>(a.wcf, n);
  } else {
    dcs *= f;
  }
}

// wci_grad += sum_rows(di cs_prev), wcf_grad += sum_rows(df cs_prev),
// wco_grad += sum_rows(do cs), over `rows` rows of dicfo [rows, 4n].
template <typename T>
void AccumulatePeepholeGrads(int64_t rows, int64_t n, const T* dicfo,
                             const T* cs_prev, const T* cs, T* wci_grad,
                             T* wcf_grad, T* wco_grad) {
  ArrayMap<T> gi(wci_grad, n), gf(wcf_grad, n), go(wco_grad, n);
  for (int64_t r = 0; r < rows; ++r) {
    const T* g = dicfo + r * 4 * n;
    ConstArrayMap<T> csp(cs_prev + r * n, n), c(cs + r * n, n);
    gi += ConstArrayMap<T>(g, n) * csp;
    gf += ConstArrayMap<T>(g + 2 * n, n) * csp;
    go += ConstArrayMap<T>(g + 3 * n, n) * c;
  }
}

// The attr of the backward ops (LSTMBlockCellGrad, BlockLSTMGrad) and the
// row arguments it gives CellBackwardRow.
class CellGradKernel : public OpKernel {
 public:
  explicit CellGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("use_peephole", &use_peephole_));
  }

 protected:
  // wci, wcf and wco are inputs first_peephole..first_peephole+2.
  template <typename T>
  GradRowArgs<T> RowArgs(OpKernelContext* ctx, int first_peephole,
                         int64_t cell) const {
    return {cell, use_peephole_, ctx->input(first_peephole).data<T>(),
            ctx->input(first_peephole + 1).data<T>(),
            ctx->input(first_peephole + 2).data<T>()};
  }

  bool use_peephole_ = false;
};

template <typename T>
class LSTMBlockCellGradKernel : public CellGradKernel {
 public:
  using CellGradKernel::CellGradKernel;

  void Compute(OpKernelContext* ctx) override {
    CellDims d;
    OP_REQUIRES_OK(ctx, CheckCellInputs(ctx, 0, 2, use_peephole_, &d));
    static const char* const kNames[] = {"i",  "cs", "f",       "o",
                                         "ci", "co", "cs_grad", "h_grad"};
    for (int k = 0; k < 8; ++k) {
      OP_REQUIRES_OK(
          ctx, CheckMatrix(ctx->input(8 + k), kNames[k], d.batch, d.cell));
    }
    const int64_t n = d.cell, gate_cols = 4 * n;
    Tensor *cs_prev_grad, *dicfo, *peep_grad[3];
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                            {14}, 0, TensorShape({d.batch, n}), &cs_prev_grad));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(
                            1, TensorShape({d.batch, gate_cols}), &dicfo));
    for (int k = 0; k < 3; ++k) {
      OP_REQUIRES_OK(
          ctx, ctx->allocate_output(2 + k, TensorShape({n}), &peep_grad[k]));
      std::fill_n(peep_grad[k]->data<T>(), n, T(0));
    }
    if (d.batch == 0 || n == 0) return;

    const GradRowArgs<T> args = RowArgs<T>(ctx, 4, n);
    // cs_prev, then i, cs, f, o, ci, co, cs_grad, h_grad.
    const T* in[9];
    in[0] = ctx->input(1).data<T>();
    for (int k = 0; k < 8; ++k) in[1 + k] = ctx->input(8 + k).data<T>();
    T* dicfo_data = dicfo->data<T>();
    T* cpg = cs_prev_grad->data<T>();
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), d.batch, 4 * n,
        [&](int64_t begin, int64_t end) {
          const T* row[9];
          for (int64_t r = begin; r < end; ++r) {
            for (int k = 0; k < 9; ++k) row[k] = in[k] + r * n;
            CellBackwardRow(args, row, dicfo_data + r * gate_cols, cpg + r * n);
          }
        });
    if (!use_peephole_) return;
    AccumulatePeepholeGrads(d.batch, n, dicfo_data, in[0], in[2],
                            peep_grad[0]->data<T>(), peep_grad[1]->data<T>(),
                            peep_grad[2]->data<T>());
  }
};

REGISTER_LSTM_KERNELS("LSTMBlockCellGrad", LSTMBlockCellGradKernel);

// ---------------------------------------------------------------------------
// BlockLSTM: LSTMBlockCell over a whole sequence in one op.
//
// Note [Block LSTM]
// x is [time, batch, input]; steps t < seq_len_max run the cell with
// (cs_prev, h_prev) = (cs[t-1], h[t-1]) (the inputs for t = 0); outputs of
// steps t >= seq_len_max are zeros. Splitting w into its x rows w_x and h
// rows w_h, the input part of every step is one big product
// X[0:L] · w_x ([L * batch, input] x [input, 4 * cell]) made before the
// loop, and each step only adds h[t-1] · w_h. The gradient runs the steps
// backwards carrying dcs and dh, keeps dicfo of every step, and forms
//   dX = DICFO · w_x^T,   dw_x = X^T · DICFO,   dw_h = H_prev^T · DICFO,
//   db = column sums of DICFO
// as whole-sequence products after the loop (H_prev = [h_prev, h[0..L-2]]).

// A scalar int64 seq_len_max in [0, time].
Status CheckSeqLenMax(const Tensor& t, int64_t time, int64_t* value) {
  if (t.NumElements() != 1 || t.dims() > 1) {
    return errors::InvalidArgument("seq_len_max must be a scalar, got shape ",
                                   t.shape().DebugString());
  }
  *value = t.data<int64_t>()[0];
  if (*value < 0 || *value > time) {
    return errors::InvalidArgument("seq_len_max = ", *value,
                                   " is out of range [0, ", time, "] (x has ",
                                   time, " time steps)");
  }
  return absl::OkStatus();
}

Status BlockLSTMShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRankAtMost(0, 1, &unused));
  CellShapeDims d;
  RETURN_IF_ERROR(CellShapes(c, 1, 3, &d));
  for (int k = 0; k < 7; ++k) {
    c->set_output(k, PartialTensorShape({d.time, d.batch, d.cell}));
  }
  return absl::OkStatus();
}

REGISTER_OP("BlockLSTM")
    .Input("seq_len_max: int64")
    .Input("x: T")
    .Input("cs_prev: T")
    .Input("h_prev: T")
    .Input("w: T")
    .Input("wci: T")
    .Input("wcf: T")
    .Input("wco: T")
    .Input("b: T")
    .Output("i: T")
    .Output("cs: T")
    .Output("f: T")
    .Output("o: T")
    .Output("ci: T")
    .Output("co: T")
    .Output("h: T")
    .Attr("forget_bias: float = 1.0")
    .Attr("cell_clip: float = 3.0")
    .Attr("use_peephole: bool = false")
    .Attr("T: {float, double}")
    .SetShapeFn(BlockLSTMShape)
    .Doc(
        R"doc(Computes the LSTM cell forward propagation for all the time steps.
This is equivalent to applying LSTMBlockCell in a loop, like so:
  for x1 in unpack(x):
    i1, cs1, f1, o1, ci1, co1, h1 = LSTMBlockCell(
      x1, cs_prev, h_prev, w, wci, wcf, wco, b)
    cs_prev = cs1
    h_prev = h1
    i.append(i1) ... h.append(h1)
  return pack(i), pack(cs), pack(f), pack(o), pack(ci), pack(co), pack(h)
Steps at or after seq_len_max are not computed: their outputs are zeros.
seq_len_max: Maximum time length actually used by this input. Outputs are
  padded with zeros beyond this length.
x: The sequence input to the LSTM, shape (timelen, batch_size, num_inputs).
cs_prev: Value of the initial cell state.
h_prev: Initial output of cell (to be used for peephole).
w: The weight matrix. wci, wcf, wco: the peephole weights. b: The bias vector.
forget_bias: The forget gate bias.
cell_clip: Value to clip the 'cs' value to; <= 0 disables clipping.
use_peephole: Whether to use peephole weights.
i, cs, f, o, ci, co, h: the per-step outputs of LSTMBlockCell, stacked on a
  leading time dimension.)doc");

template <typename T>
class BlockLSTMKernel : public CellForwardKernel {
 public:
  using CellForwardKernel::CellForwardKernel;

  void Compute(OpKernelContext* ctx) override {
    CellDims d;
    OP_REQUIRES_OK(ctx, CheckCellInputs(ctx, 1, 3, use_peephole_, &d));
    int64_t steps = 0;
    OP_REQUIRES_OK(ctx, CheckSeqLenMax(ctx->input(0), d.time, &steps));
    const TensorShape shape({d.time, d.batch, d.cell});
    T* out[7];
    for (int k = 0; k < 7; ++k) {
      Tensor* t;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(k, shape, &t));
      out[k] = t->data<T>();
    }
    const int64_t n = d.cell, step_size = d.batch * n;
    for (int k = 0; k < 7; ++k) {
      std::fill(out[k] + steps * step_size, out[k] + d.time * step_size, T(0));
    }
    if (steps == 0 || step_size == 0) return;

    const int64_t gate_cols = 4 * n, rows = steps * d.batch;
    Tensor gates;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DataTypeToEnum<T>::value,
                                      TensorShape({rows, gate_cols}), &gates));
    T* g = gates.data<T>();
    const T* w = ctx->input(4).data<T>();
    const T* w_h = w + d.input * gate_cols;
    // The input part of every step at once: G = X[0:L] · w_x.
    if (d.input > 0) {
      cpu::Gemm(false, false, rows, gate_cols, d.input, T(1),
                ctx->input(1).data<T>(), d.input, w, gate_cols, T(0), g,
                gate_cols);
    } else {
      std::fill_n(g, rows * gate_cols, T(0));
    }
    const CellRowArgs<T> args = RowArgs<T>(ctx, 5, n);
    ThreadPool* pool = ctx->intra_op_threadpool();
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t off = t * step_size;
      const T* h_prev =
          t == 0 ? ctx->input(3).data<T>() : out[6] + off - step_size;
      const T* cs_prev =
          t == 0 ? ctx->input(2).data<T>() : out[1] + off - step_size;
      T* g_t = g + t * d.batch * gate_cols;
      cpu::Gemm(false, false, d.batch, gate_cols, n, T(1), h_prev, n, w_h,
                gate_cols, T(1), g_t, gate_cols);
      cpu::ParallelRange(pool, d.batch, 8 * n, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = off + r * n;
          CellForwardRow(args, g_t + r * gate_cols, cs_prev + r * n, out[0] + o,
                         out[1] + o, out[2] + o, out[3] + o, out[4] + o,
                         out[5] + o, out[6] + o);
        }
      });
    }
  }
};

REGISTER_LSTM_KERNELS("BlockLSTM", BlockLSTMKernel);

// ---------------------------------------------------------------------------
// BlockLSTMGrad

Status BlockLSTMGradShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRankAtMost(0, 1, &unused));
  CellShapeDims d;
  RETURN_IF_ERROR(CellShapes(c, 1, 3, &d));
  PartialTensorShape s;
  for (int k = 9; k < 18; ++k) {
    RETURN_IF_ERROR(c->WithRank(k, 3, &s));
    RETURN_IF_ERROR(MergeDim(*c, Dim(s, 0), "time steps", &d.time));
    RETURN_IF_ERROR(MergeDim(*c, Dim(s, 1), "batch size", &d.batch));
    RETURN_IF_ERROR(MergeDim(*c, Dim(s, 2), "cell size", &d.cell));
  }
  // The gradients have the shapes of x, cs_prev, h_prev, w, wci, wcf, wco, b.
  for (int k = 0; k < 8; ++k) c->set_output(k, c->input(1 + k));
  return absl::OkStatus();
}

REGISTER_OP("BlockLSTMGrad")
    .Input("seq_len_max: int64")
    .Input("x: T")
    .Input("cs_prev: T")
    .Input("h_prev: T")
    .Input("w: T")
    .Input("wci: T")
    .Input("wcf: T")
    .Input("wco: T")
    .Input("b: T")
    .Input("i: T")
    .Input("cs: T")
    .Input("f: T")
    .Input("o: T")
    .Input("ci: T")
    .Input("co: T")
    .Input("h: T")
    .Input("cs_grad: T")
    .Input("h_grad: T")
    .Output("x_grad: T")
    .Output("cs_prev_grad: T")
    .Output("h_prev_grad: T")
    .Output("w_grad: T")
    .Output("wci_grad: T")
    .Output("wcf_grad: T")
    .Output("wco_grad: T")
    .Output("b_grad: T")
    .Attr("use_peephole: bool")
    .Attr("T: {float, double}")
    .SetShapeFn(BlockLSTMGradShape)
    .Doc(
        R"doc(Computes the LSTM cell backward propagation for the entire time sequence.
This implementation is to be used in conjunction of BlockLSTM.
i, cs, f, o, ci, co, h: the outputs of BlockLSTM.
cs_grad, h_grad: The current gradient of cs and h (per time step).
x_grad, cs_prev_grad, h_prev_grad, w_grad, wci_grad, wcf_grad, wco_grad,
b_grad: the gradients of the corresponding inputs (the peephole gradients
are zeros when use_peephole is false; x_grad is zero for steps at or after
seq_len_max).
use_peephole: Whether to use peephole weights.)doc");

template <typename T>
class BlockLSTMGradKernel : public CellGradKernel {
 public:
  using CellGradKernel::CellGradKernel;

  void Compute(OpKernelContext* ctx) override {
    CellDims d;
    OP_REQUIRES_OK(ctx, CheckCellInputs(ctx, 1, 3, use_peephole_, &d));
    int64_t steps = 0;
    OP_REQUIRES_OK(ctx, CheckSeqLenMax(ctx->input(0), d.time, &steps));
    static const char* const kNames[] = {"i",  "cs", "f",       "o",     "ci",
                                         "co", "h",  "cs_grad", "h_grad"};
    const TensorShape seq_shape({d.time, d.batch, d.cell});
    for (int k = 0; k < 9; ++k) {
      const Tensor& t = ctx->input(9 + k);
      OP_REQUIRES(ctx, t.shape() == seq_shape,
                  errors::InvalidArgument(
                      kNames[k], " must have shape ", seq_shape.DebugString(),
                      " but has shape ", t.shape().DebugString()));
    }
    T* grad[8];
    for (int k = 0; k < 8; ++k) {
      Tensor* t;
      OP_REQUIRES_OK(ctx,
                     ctx->allocate_output(k, ctx->input(1 + k).shape(), &t));
      grad[k] = t->data<T>();
      std::fill_n(grad[k], t->NumElements(), T(0));
    }
    const int64_t n = d.cell, step_size = d.batch * n, gate_cols = 4 * n;
    if (steps == 0 || step_size == 0) return;

    const int64_t rows = steps * d.batch;
    Tensor dicfo_t, carry_t;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_temp(DataTypeToEnum<T>::value,
                                TensorShape({rows, gate_cols}), &dicfo_t));
    // cs_grad[t] + dcs carry, h_grad[t] + dh carry.
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DataTypeToEnum<T>::value,
                                      TensorShape({2, d.batch, n}), &carry_t));
    T* dicfo = dicfo_t.data<T>();
    T* cs_grad_t = carry_t.data<T>();
    T* h_grad_t = cs_grad_t + step_size;
    T* dcs_carry = grad[1];  // cs_prev_grad
    T* dh_carry = grad[2];   // h_prev_grad
    const T* seq[9];
    for (int k = 0; k < 9; ++k) seq[k] = ctx->input(9 + k).data<T>();
    const T* w = ctx->input(4).data<T>();
    const T* w_h = w + d.input * gate_cols;
    const GradRowArgs<T> args = RowArgs<T>(ctx, 5, n);
    ThreadPool* pool = ctx->intra_op_threadpool();

    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t off = t * step_size;
      const T* cs_prev =
          t == 0 ? ctx->input(2).data<T>() : seq[1] + off - step_size;
      T* dicfo_step = dicfo + t * d.batch * gate_cols;
      cpu::ParallelRange(pool, d.batch, 5 * n, [&](int64_t begin, int64_t end) {
        const T* row[9];
        for (int64_t r = begin; r < end; ++r) {
          const int64_t e = r * n;
          for (int64_t j = e; j < e + n; ++j) {
            cs_grad_t[j] = seq[7][off + j] + dcs_carry[j];
            h_grad_t[j] = seq[8][off + j] + dh_carry[j];
          }
          row[0] = cs_prev + e;
          for (int k = 0; k < 6; ++k) row[1 + k] = seq[k] + off + e;
          row[7] = cs_grad_t + e;
          row[8] = h_grad_t + e;
          CellBackwardRow(args, row, dicfo_step + r * gate_cols, dcs_carry + e);
        }
      });
      // dh_prev = dicfo · w_h^T.
      cpu::Gemm(false, true, d.batch, n, gate_cols, T(1), dicfo_step, gate_cols,
                w_h, gate_cols, T(0), dh_carry, n);
      if (use_peephole_) {
        AccumulatePeepholeGrads(d.batch, n, dicfo_step, cs_prev, seq[1] + off,
                                grad[4], grad[5], grad[6]);
      }
    }
    // Whole-sequence products (Note [Block LSTM]).
    const T* x = ctx->input(1).data<T>();
    T* w_grad = grad[3];
    if (d.input > 0) {
      cpu::Gemm(false, true, rows, d.input, gate_cols, T(1), dicfo, gate_cols,
                w, gate_cols, T(0), grad[0], d.input);
      cpu::Gemm(true, false, d.input, gate_cols, rows, T(1), x, d.input, dicfo,
                gate_cols, T(0), w_grad, gate_cols);
    }
    T* w_h_grad = w_grad + d.input * gate_cols;
    cpu::Gemm(true, false, n, gate_cols, d.batch, T(1), ctx->input(3).data<T>(),
              n, dicfo, gate_cols, T(0), w_h_grad, gate_cols);
    if (steps > 1) {
      cpu::Gemm(true, false, n, gate_cols, rows - d.batch, T(1), seq[6], n,
                dicfo + d.batch * gate_cols, gate_cols, T(1), w_h_grad,
                gate_cols);
    }
    ArrayMap<T> b_grad(grad[7], gate_cols);
    for (int64_t r = 0; r < rows; ++r) {
      b_grad += ConstArrayMap<T>(dicfo + r * gate_cols, gate_cols);
    }
  }
};

REGISTER_LSTM_KERNELS("BlockLSTMGrad", BlockLSTMGradKernel);

}  // namespace
}  // namespace runnel
