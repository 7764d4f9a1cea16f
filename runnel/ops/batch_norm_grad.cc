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
#include "runnel/ops/ops_gen.h"

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
  const ops::FusedBatchNormGradV3 g(
      s, dy[0], op.input(0), op.input(1), mean, variance, op.output(5),
      grad::SharedAttrsOf<ops::FusedBatchNormGradV3>(op));
  if (!s.ok()) return s.status();
  dx->push_back(g.x_backprop);
  dx->push_back(g.scale_backprop);
  dx->push_back(g.offset_backprop);
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
    return Output(ops::Mean(s, v, axes, ops::Mean::KeepDims(keep)));
  };
  auto as_channels = [&](const Output& v) {
    return a.channels_first ? ops::Reshape(s, v, grad::Int32s(s, {1, -1, 1, 1}))
                            : v;
  };
  const Output epsilon = grad::Scalar(s, a.epsilon, DT_FLOAT);
  BatchNormGradParts p;
  p.offset_backprop = ops::Sum(s, dy, axes);
  scale = as_channels(scale);
  if (a.is_training) {
    const Output mean_dy = mean(dy);
    const Output mean_x = mean(x);
    const Output var_x =
        mean(ops::SquaredDifference(s, x, ops::StopGradient(s, mean_x)));
    const Output x_offset = ops::Sub(s, x, mean_x);
    const Output var_eps = ops::AddV2(s, var_x, epsilon);
    const Output r = ops::Rsqrt(s, var_eps);
    const Output dy_x_offset = ops::Mul(s, dy, x_offset);
    const Output coef =
        ops::Mul(s, ops::Reciprocal(s, var_eps), mean(dy_x_offset));
    p.x_backprop = ops::Mul(
        s, ops::Mul(s, scale, r),
        ops::Sub(s, ops::Sub(s, dy, mean_dy), ops::Mul(s, coef, x_offset)));
    p.scale_backprop = ops::Mul(
        s, r, ops::Sum(s, dy_x_offset, axes, ops::Sum::KeepDims(keep)));
    if (a.channels_first) {
      p.scale_backprop =
          ops::Reshape(s, p.scale_backprop, grad::Int32s(s, {-1}));
    }
  } else {
    pop_mean = as_channels(pop_mean);
    pop_var = as_channels(pop_var);
    const Output r = ops::Rsqrt(s, ops::AddV2(s, pop_var, epsilon));
    p.scale_backprop = ops::Sum(
        s, ops::Mul(s, ops::Mul(s, dy, ops::Sub(s, x, pop_mean)), r), axes);
    p.x_backprop = ops::Mul(s, ops::Mul(s, dy, scale), r);
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
  const Output dy = ops::Identity(s, op.input(0));
  const Output x = ops::Identity(s, op.input(1));
  const Output scale = ops::Identity(s, op.input(2));
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
