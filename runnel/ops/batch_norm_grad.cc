// Gradients of batch normalisation (batch_norm_ops.cc).
//
// FusedBatchNormV3: TF's _FusedBatchNormV3Grad. Only y's gradient flows back
// (the batch and running statistics outputs pass none on), to x, scale and
// offset; the mean and variance inputs get none.
//
// FusedBatchNormGradV3: TF's _FusedBatchNormGradGrad. The first-order
// gradient is rebuilt from ordinary ops (TF's _BatchNormGrad, which in
// training recomputes the batch statistics from x instead of reading the
// saved ones) and differentiated symbolically with respect to y_backprop, x
// and scale; the saved statistics get no gradient.
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// Training: FusedBatchNormGradV3 with the saved batch statistics
// (reserve_space_1/2); inference: with the given mean and variance.
Status FusedBatchNormV3Grad(const Scope& s, const Operation& op,
                            const Outputs& dy, Outputs* dx) {
  bool is_training = true;
  // A node built without the attr has TF's default (true).
  GetAttr(op.node()->attrs(), "is_training", &is_training).IgnoreError();
  const Output mean = is_training ? op.output(3) : op.input(3);
  const Output variance = is_training ? op.output(4) : op.input(4);
  Operation g = grad::MakeOperation(
      s, "FusedBatchNormGradV3",
      {dy[0], op.input(0), op.input(1), mean, variance, op.output(5)},
      grad::SharedAttrs(op, "FusedBatchNormGradV3"));
  if (!s.ok()) return s.status();
  dx->push_back(g.output(0));
  dx->push_back(g.output(1));
  dx->push_back(g.output(2));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("FusedBatchNormV3", FusedBatchNormV3Grad);

struct BatchNormGradAttrs {
  float epsilon = 0.0001f;
  bool channels_first = false;
  bool is_training = true;
};

// The outputs of FusedBatchNormGradV3 as ordinary ops (TF's _BatchNormGrad).
struct BatchNormGradParts {
  Output x_backprop, scale_backprop, offset_backprop;
};

// With per-channel means over N, H, W and r = rsqrt(var + epsilon):
//   training (mean, var of x itself; var's dependence through the mean is
//   cut, as its derivative there is zero):
//     dx = scale * r * (dy - mean(dy) - (x - mean) * r^2 * mean(dy * (x -
//     mean))), dscale = r * sum(dy * (x - mean)), doffset = sum(dy);
//   inference (the given mean and var):
//     dx = dy * scale * r, dscale = sum(dy * (x - mean) * r),
//     doffset = sum(dy).
// NCHW keeps the reduced dimensions so the per-channel vectors broadcast
// as [1, C, 1, 1].
BatchNormGradParts BatchNormGradComposite(const Scope& s,
                                          const BatchNormGradAttrs& a,
                                          const Output& dy, const Output& x,
                                          Output scale, Output pop_mean,
                                          Output pop_var) {
  const bool keep = a.channels_first;
  const Output axes = a.channels_first ? grad::Int32s(s, {0, 2, 3})
                                       : grad::Int32s(s, {0, 1, 2});
  auto mean = [&](const Output& v) {
    return grad::MakeOp(s, "Mean", {v, axes},
                        {{"keep_dims", MakeAttrValue(keep)}});
  };
  auto as_channels = [&](const Output& v) {
    return a.channels_first
               ? grad::Reshape(s, v, grad::Int32s(s, {1, -1, 1, 1}))
               : v;
  };
  const Output epsilon = grad::Scalar(s, a.epsilon, DT_FLOAT);
  BatchNormGradParts p;
  p.offset_backprop = grad::Sum(s, dy, axes);
  scale = as_channels(scale);
  if (a.is_training) {
    const Output mean_dy = mean(dy);
    const Output mean_x = mean(x);
    const Output var_x =
        mean(grad::MakeOp(s, "SquaredDifference",
                          {x, grad::MakeOp(s, "StopGradient", {mean_x})}));
    const Output x_offset = grad::Sub(s, x, mean_x);
    const Output var_eps = grad::Add(s, var_x, epsilon);
    const Output r = grad::MakeOp(s, "Rsqrt", {var_eps});
    const Output dy_x_offset = grad::Mul(s, dy, x_offset);
    const Output coef =
        grad::Mul(s, grad::Reciprocal(s, var_eps), mean(dy_x_offset));
    p.x_backprop = grad::Mul(
        s, grad::Mul(s, scale, r),
        grad::Sub(s, grad::Sub(s, dy, mean_dy), grad::Mul(s, coef, x_offset)));
    p.scale_backprop = grad::Mul(s, r, grad::Sum(s, dy_x_offset, axes, keep));
    if (a.channels_first) {
      p.scale_backprop =
          grad::Reshape(s, p.scale_backprop, grad::Int32s(s, {-1}));
    }
  } else {
    pop_mean = as_channels(pop_mean);
    pop_var = as_channels(pop_var);
    const Output r = grad::MakeOp(s, "Rsqrt", {grad::Add(s, pop_var, epsilon)});
    p.scale_backprop = grad::Sum(
        s, grad::Mul(s, grad::Mul(s, dy, grad::Sub(s, x, pop_mean)), r), axes);
    p.x_backprop = grad::Mul(s, grad::Mul(s, dy, scale), r);
  }
  return p;
}

// Second order: the gradients of (x_backprop, scale_backprop,
// offset_backprop) with respect to (y_backprop, x, scale), through the
// composite above; the reserve spaces get none.
Status FusedBatchNormGradV3Grad(const Scope& s, const Operation& op,
                                const Outputs& dd, Outputs* dx) {
  BatchNormGradAttrs a;
  std::string format = "NHWC";
  const AttrMap& attrs = op.node()->attrs();
  // A node built without an attr has TF's default.
  GetAttr(attrs, "epsilon", &a.epsilon).IgnoreError();
  GetAttr(attrs, "data_format", &format).IgnoreError();
  GetAttr(attrs, "is_training", &a.is_training).IgnoreError();
  if (format != "NHWC" && format != "NCHW") {
    return errors::InvalidArgument(
        "gradient of FusedBatchNormGradV3: unsupported data_format ", format);
  }
  a.channels_first = format == "NCHW";
  // Fresh nodes for the differentiated inputs: the inner walk stops at
  // them, so it gives partial derivatives even when the inputs depend on
  // one another (y_backprop usually depends on x) or are the same tensor.
  const Output dy = grad::Identity(s, op.input(0));
  const Output x = grad::Identity(s, op.input(1));
  const Output scale = grad::Identity(s, op.input(2));
  const BatchNormGradParts p =
      BatchNormGradComposite(s, a, dy, x, scale, op.input(3), op.input(4));
  RETURN_IF_ERROR(s.status());
  GradientOptions options;
  options.stop_at_inputs = true;
  Outputs g;
  RETURN_IF_ERROR(AddSymbolicGradients(
      s, {p.x_backprop, p.scale_backprop, p.offset_backprop}, {dy, x, scale},
      {dd[0], dd[1], dd[2]}, options, &g));
  dx->push_back(g[0]);
  dx->push_back(g[1]);
  dx->push_back(g[2]);
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("FusedBatchNormGradV3", FusedBatchNormGradV3Grad);

}  // namespace
}  // namespace runnel
