// The attrs of the fused contractions TensorFlow's remapper makes
// (_FusedMatMul in matmul_ops.cc, _FusedConv2D in conv_ops.cc;
// runnel/graph/remapper.h makes them here): fused_ops, num_args, epsilon,
// leakyrelu_alpha, read and validated once per kernel, and the epilogue
// they describe applied to a product (cpu::BiasActivation). Private to
// runnel/ops.
//
// fused_ops is ["BiasAdd"] or ["BiasAdd", A] with args = [bias], or (for
// convolutions) ["FusedBatchNorm"] or ["FusedBatchNorm", A] with args =
// [scale, offset, mean, variance] (inference batch norm), where A is one of
// Relu, Relu6, Elu, LeakyRelu, Tanh, Sigmoid. Anything else is
// InvalidArgument ("unsupported fusion ...") at kernel construction.
#ifndef RUNNEL_OPS_FUSION_ATTRS_H_
#define RUNNEL_OPS_FUSION_ATTRS_H_

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/cpu/bias_activation.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/tensor.h"

namespace runnel {

struct FusionAttrs {
  bool batch_norm = false;  // FusedBatchNorm instead of BiasAdd.
  cpu::FusedActivation activation = cpu::FusedActivation::kNone;
  float epsilon = 1e-4f;
  float leakyrelu_alpha = 0.2f;
  int num_args = 0;
};

// The activation a fused_ops entry names, or false.
inline bool ParseFusedActivation(const std::string& name,
                                 cpu::FusedActivation* act) {
  using A = cpu::FusedActivation;
  static const std::pair<const char*, A> kNames[] = {
      {"Relu", A::kRelu}, {"Relu6", A::kRelu6},
      {"Elu", A::kElu},   {"LeakyRelu", A::kLeakyRelu},
      {"Tanh", A::kTanh}, {"Sigmoid", A::kSigmoid},
  };
  for (const auto& [n, a] : kNames) {
    if (name == n) {
      *act = a;
      return true;
    }
  }
  return false;
}

inline Status ParseFusionAttrs(const OpKernelConstruction& c,
                               bool allow_batch_norm, FusionAttrs* f) {
  std::vector<std::string> ops;
  int64_t num_args = 0;
  RETURN_IF_ERROR(c.GetAttr("fused_ops", &ops));
  RETURN_IF_ERROR(c.GetAttr("num_args", &num_args));
  RETURN_IF_ERROR(c.GetAttr("epsilon", &f->epsilon));
  RETURN_IF_ERROR(c.GetAttr("leakyrelu_alpha", &f->leakyrelu_alpha));
  const auto unsupported = [&] {
    return errors::InvalidArgument("unsupported fusion [",
                                   absl::StrJoin(ops, ", "), "] with ",
                                   num_args, " args");
  };
  if (ops.empty() || ops.size() > 2) return unsupported();
  if (ops[0] == "BiasAdd") {
    f->batch_norm = false;
  } else if (ops[0] == "FusedBatchNorm" && allow_batch_norm) {
    f->batch_norm = true;
  } else {
    return unsupported();
  }
  if (num_args != (f->batch_norm ? 4 : 1)) return unsupported();
  f->num_args = static_cast<int>(num_args);
  if (ops.size() == 2 && !ParseFusedActivation(ops[1], &f->activation)) {
    return unsupported();
  }
  if (f->batch_norm && !(f->epsilon >= 0)) {
    return errors::InvalidArgument("epsilon must be >= 0, got ", f->epsilon);
  }
  return absl::OkStatus();
}

// Applies the fusion's epilogue in place to `y`, viewed as [outer, channels,
// inner], with the op's args (inputs 2 .. 2 + num_args of `ctx`): each a
// vector of `channels` values, else InvalidArgument naming it.
template <typename T>
Status ApplyFusion(OpKernelContext* ctx, const FusionAttrs& f, T* y,
                   int64_t outer, int64_t channels, int64_t inner) {
  static const char* const kBiasNames[] = {"bias"};
  static const char* const kBatchNormNames[] = {"scale", "offset", "mean",
                                                "variance"};
  for (int i = 0; i < f.num_args; ++i) {
    const Tensor& arg = ctx->input(2 + i);
    if (arg.dims() != 1 || arg.dim_size(0) != channels) {
      return errors::InvalidArgument(
          f.batch_norm ? kBatchNormNames[i] : kBiasNames[i],
          " must be a vector of ", channels,
          " values (the output's channels), "
          "got shape ",
          arg.shape().DebugString());
    }
  }
  ThreadPool* pool = ctx->intra_op_threadpool();
  const T alpha = static_cast<T>(f.leakyrelu_alpha);
  if (!f.batch_norm) {
    cpu::BiasActivation<T>(y, outer, channels, inner, ctx->input(2).data<T>(),
                           nullptr, f.activation, alpha, pool);
    return absl::OkStatus();
  }
  // Inference batch norm: y * s + (offset - mean * s), s = scale / sqrt(var
  // + epsilon).
  const T* scale = ctx->input(2).data<T>();
  const T* offset = ctx->input(3).data<T>();
  const T* mean = ctx->input(4).data<T>();
  const T* variance = ctx->input(5).data<T>();
  std::vector<T> s(channels), shift(channels);
  for (int64_t c = 0; c < channels; ++c) {
    s[c] = scale[c] / std::sqrt(variance[c] + static_cast<T>(f.epsilon));
    shift[c] = offset[c] - mean[c] * s[c];
  }
  cpu::BiasActivation<T>(y, outer, channels, inner, shift.data(), s.data(),
                         f.activation, alpha, pool);
  return absl::OkStatus();
}

}  // namespace runnel

#endif  // RUNNEL_OPS_FUSION_ATTRS_H_
