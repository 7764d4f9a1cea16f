// Batch normalisation: FusedBatchNormV3 and its gradient FusedBatchNormGradV3
// (TF's fused_batch_norm_op.cc, CPU semantics).
//
// x is rank 4 in NHWC or NCHW; the per-channel vectors (scale, offset, mean,
// variance) have one entry per channel. Every kernel views x as
// [outer, C, inner]: NHWC is [N*H*W, C, 1] (the inner loop runs over the
// contiguous channels), NCHW is [N, C, H*W].
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runnel/base/threadpool.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Shared helpers

int ChannelDim(const std::string& format) { return format == "NCHW" ? 1 : 3; }

// x viewed as [outer, c, inner]; element (o, ch, i) is at (o*c + ch)*inner+i.
struct Layout {
  int64_t outer = 0;
  int64_t c = 0;
  int64_t inner = 1;
  int64_t per_channel() const { return outer * inner; }
};

Layout MakeLayout(const TensorShape& x, const std::string& format) {
  Layout l;
  if (format == "NCHW") {
    l.outer = x.dim_size(0);
    l.c = x.dim_size(1);
    l.inner = x.dim_size(2) * x.dim_size(3);
  } else {
    l.outer = x.dim_size(0) * x.dim_size(1) * x.dim_size(2);
    l.c = x.dim_size(3);
    l.inner = 1;
  }
  return l;
}

using cpu::ParallelRange;

// Per-channel sums (in double) of f(index, channel) over every element.
template <typename F>
std::vector<double> SumPerChannel(ThreadPool* pool, const Layout& l,
                                  const F& f) {
  const int64_t c = l.c;
  std::vector<double> sums(c, 0.0);
  if (c == 0 || l.per_channel() == 0) return sums;
  if (l.inner == 1) {
    // Rows of c contiguous channels: blocks of rows with private partials.
    const int64_t rows = l.outer;
    int64_t blocks = 1;
    if (pool != nullptr && pool->NumThreads() > 1 && rows * c >= 32768) {
      blocks = std::min<int64_t>(rows, 4 * pool->NumThreads());
    }
    std::vector<double> partial(blocks * c, 0.0);
    auto run = [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double* acc = partial.data() + b * c;
        const int64_t r1 = (b + 1) * rows / blocks;
        for (int64_t r = b * rows / blocks; r < r1; ++r) {
          const int64_t base = r * c;
          for (int64_t ch = 0; ch < c; ++ch) acc[ch] += f(base + ch, ch);
        }
      }
    };
    if (blocks == 1) {
      run(0, 1);
    } else {
      pool->ParallelFor(blocks, rows / blocks * c * 2, run);
    }
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) sums[ch] += partial[b * c + ch];
    }
  } else {
    // NCHW: each channel is `outer` contiguous runs of `inner` elements.
    ParallelRange(pool, c, l.per_channel() * 2, [&](int64_t c0, int64_t c1) {
      for (int64_t ch = c0; ch < c1; ++ch) {
        double s = 0;
        for (int64_t o = 0; o < l.outer; ++o) {
          const int64_t base = (o * c + ch) * l.inner;
          for (int64_t i = 0; i < l.inner; ++i) s += f(base + i, ch);
        }
        sums[ch] = s;
      }
    });
  }
  return sums;
}

// out[k] = (in[k] - m[ch]) * a[ch] + b[ch] for every element k of channel ch.
void AffinePerChannel(ThreadPool* pool, const Layout& l, const float* in,
                      const float* m, const float* a, const float* b,
                      float* out) {
  const int64_t c = l.c;
  if (l.inner == 1) {
    ParallelRange(pool, l.outer, c * 2 + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* x = in + r * c;
        float* y = out + r * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          y[ch] = (x[ch] - m[ch]) * a[ch] + b[ch];
        }
      }
    });
  } else {
    ParallelRange(pool, l.outer * c, l.inner * 2 + 1,
                  [&](int64_t l0, int64_t l1) {
                    for (int64_t line = l0; line < l1; ++line) {
                      const int64_t ch = line % c;
                      const float mv = m[ch], av = a[ch], bv = b[ch];
                      const float* x = in + line * l.inner;
                      float* y = out + line * l.inner;
                      for (int64_t i = 0; i < l.inner; ++i) {
                        y[i] = (x[i] - mv) * av + bv;
                      }
                    }
                  });
  }
}

void FillVec(Tensor* t, float v) {
  float* p = t->data<float>();
  std::fill(p, p + t->NumElements(), v);
}

// Checks that `t` is a vector; when `channels` >= 0 also its length.
Status CheckVector(const Tensor& t, const char* name, int64_t channels,
                   const TensorShape& x) {
  if (t.dims() != 1) {
    return errors::InvalidArgument(
        name, " must be 1-dimensional: ", t.shape().DebugString());
  }
  if (channels >= 0 && t.dim_size(0) != channels) {
    return errors::InvalidArgument(
        name, " must have the same number of elements as the channels of x (",
        channels, "): ", t.shape().DebugString(), " vs. x ", x.DebugString());
  }
  return absl::OkStatus();
}

// Shared shape-function pieces: x of rank 4 (or unknown), vectors of rank 1
// whose known lengths agree with each other and with x's channels. Returns
// the channel count (-1 if unknown) in *channels and x in *x_out.
Status BatchNormInputShapes(InferenceContext* c, const std::vector<int>& vecs,
                            PartialTensorShape* x_out, int64_t* channels) {
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  PartialTensorShape x = c->input(0);
  if (!x.unknown_rank() && x.dims() != 4) {
    return c->InvalidArgument("input must be 4-dimensional: ", x.DebugString());
  }
  if (x.unknown_rank()) x = PartialTensorShape({-1, -1, -1, -1});
  int64_t ch = x.dim_size(ChannelDim(format));
  for (int i : vecs) {
    const PartialTensorShape& v = c->input(i);
    if (v.unknown_rank()) continue;
    if (v.dims() != 1) {
      return c->InvalidArgument("input ", i,
                                " must be 1-dimensional: ", v.DebugString());
    }
    const int64_t n = v.dim_size(0);
    if (n < 0) continue;
    if (ch >= 0 && n != ch) {
      return c->InvalidArgument("input ", i, " has ", n, " elements but x has ",
                                ch, " channels: ", x.DebugString());
    }
    ch = n;
  }
  x.set_dim(ChannelDim(format), ch);
  *x_out = x;
  *channels = ch;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// FusedBatchNormV3

Status FusedBatchNormV3Shape(InferenceContext* c) {
  bool is_training;
  float factor;
  RETURN_IF_ERROR(c->GetAttr("is_training", &is_training));
  RETURN_IF_ERROR(c->GetAttr("exponential_avg_factor", &factor));
  // In training with factor 1 the running mean/variance are unused (TF lets
  // them be empty).
  std::vector<int> vecs = {1, 2};
  if (!is_training || factor != 1.0f) {
    vecs.push_back(3);
    vecs.push_back(4);
  } else {
    for (int i : {3, 4}) {
      const PartialTensorShape& v = c->input(i);
      if (!v.unknown_rank() && v.dims() != 1) {
        return c->InvalidArgument("input ", i,
                                  " must be 1-dimensional: ", v.DebugString());
      }
    }
  }
  PartialTensorShape x;
  int64_t ch;
  RETURN_IF_ERROR(BatchNormInputShapes(c, vecs, &x, &ch));
  c->set_output(0, x);
  for (int i = 1; i <= 4; ++i) c->set_output(i, PartialTensorShape({ch}));
  c->set_output(5, PartialTensorShape());
  return absl::OkStatus();
}

REGISTER_OP("FusedBatchNormV3")
    .Input("x: T")
    .Input("scale: U")
    .Input("offset: U")
    .Input("mean: U")
    .Input("variance: U")
    .Output("y: T")
    .Output("batch_mean: U")
    .Output("batch_variance: U")
    .Output("reserve_space_1: U")
    .Output("reserve_space_2: U")
    .Output("reserve_space_3: U")
    .Attr("T: {float}")
    .Attr("U: {float}")
    .Attr("epsilon: float = 0.0001")
    .Attr("exponential_avg_factor: float = 1.0")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("is_training: bool = true")
    .SetShapeFn(FusedBatchNormV3Shape)
    .Doc(R"doc(Batch normalisation of a 4-D x per channel.
y = (x - m) * scale / sqrt(v + epsilon) + offset. In training m, v are the
batch's mean and (biased) variance over N, H, W; batch_mean/batch_variance
are (1 - f) * mean + f * m and (1 - f) * variance + f * v * n / (n - 1) with
f = exponential_avg_factor, and reserve_space_1/2 hold m and v for the
gradient. In inference m, v are the given mean and variance, which are also
returned. reserve_space_3 is an unused scalar on CPU.)doc");

class FusedBatchNormV3Kernel : public OpKernel {
 public:
  explicit FusedBatchNormV3Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("epsilon", &epsilon_));
    OP_REQUIRES_OK(c, c->GetAttr("exponential_avg_factor", &factor_));
    OP_REQUIRES_OK(c, c->GetAttr("data_format", &format_));
    OP_REQUIRES_OK(c, c->GetAttr("is_training", &is_training_));
    OP_REQUIRES(c, format_ == "NHWC" || format_ == "NCHW",
                errors::InvalidArgument("Invalid data format: ", format_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const Tensor& offset = ctx->input(2);
    const Tensor& mean = ctx->input(3);
    const Tensor& variance = ctx->input(4);
    OP_REQUIRES(ctx, x.dims() == 4,
                errors::InvalidArgument("input must be 4-dimensional: ",
                                        x.shape().DebugString()));
    const int64_t channels = x.dim_size(ChannelDim(format_));
    OP_REQUIRES_OK(ctx, CheckVector(scale, "scale", channels, x.shape()));
    OP_REQUIRES_OK(ctx, CheckVector(offset, "offset", channels, x.shape()));
    const bool use_running = !is_training_ || factor_ != 1.0f;
    const int64_t need = use_running ? channels : -1;
    OP_REQUIRES_OK(ctx, CheckVector(mean, "mean", need, x.shape()));
    OP_REQUIRES_OK(ctx, CheckVector(variance, "variance", need, x.shape()));

    Tensor* y;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &y));
    const TensorShape vec({channels});
    Tensor *out_mean, *out_var, *saved_mean, *saved_var, *reserve3;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, vec, &out_mean));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, vec, &out_var));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, vec, &saved_mean));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, vec, &saved_var));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(5, TensorShape({}), &reserve3));
    reserve3->data<float>()[0] = 0.0f;

    if (x.NumElements() == 0) {
      // TF: an empty batch has NaN statistics.
      const float nan = std::numeric_limits<float>::quiet_NaN();
      FillVec(out_mean, nan);
      FillVec(out_var, nan);
      FillVec(saved_mean, nan);
      FillVec(saved_var, nan);
      return;
    }

    ThreadPool* pool = ctx->intra_op_threadpool();
    const Layout l = MakeLayout(x.shape(), format_);
    const float* xp = x.data<float>();
    const float* sc = scale.data<float>();
    const float* of = offset.data<float>();
    std::vector<float> m(channels), v(channels);
    if (is_training_) {
      const double n = static_cast<double>(l.per_channel());
      std::vector<double> sum = SumPerChannel(
          pool, l, [xp](int64_t k, int64_t) { return double{xp[k]}; });
      std::vector<double> mu(channels);
      for (int64_t ch = 0; ch < channels; ++ch) mu[ch] = sum[ch] / n;
      const double* mup = mu.data();
      std::vector<double> sq =
          SumPerChannel(pool, l, [xp, mup](int64_t k, int64_t ch) {
            const double d = xp[k] - mup[ch];
            return d * d;
          });
      const double bessel = n / std::max(n - 1.0, 1.0);
      const double f = factor_;
      const float* old_mean = mean.data<float>();
      const float* old_var = variance.data<float>();
      for (int64_t ch = 0; ch < channels; ++ch) {
        const double var = sq[ch] / n;
        m[ch] = static_cast<float>(mu[ch]);
        v[ch] = static_cast<float>(var);
        saved_mean->data<float>()[ch] = m[ch];
        saved_var->data<float>()[ch] = v[ch];
        if (factor_ == 1.0f) {
          out_mean->data<float>()[ch] = m[ch];
          out_var->data<float>()[ch] = static_cast<float>(var * bessel);
        } else {
          out_mean->data<float>()[ch] =
              static_cast<float>((1 - f) * old_mean[ch] + f * mu[ch]);
          out_var->data<float>()[ch] =
              static_cast<float>((1 - f) * old_var[ch] + f * bessel * var);
        }
      }
    } else {
      for (int64_t ch = 0; ch < channels; ++ch) {
        m[ch] = mean.data<float>()[ch];
        v[ch] = variance.data<float>()[ch];
        out_mean->data<float>()[ch] = m[ch];
        out_var->data<float>()[ch] = v[ch];
        saved_mean->data<float>()[ch] = m[ch];
        saved_var->data<float>()[ch] = v[ch];
      }
    }
    // y = (x - m) * a + offset with a = scale / sqrt(v + eps).
    std::vector<float> a(channels);
    for (int64_t ch = 0; ch < channels; ++ch) {
      a[ch] = static_cast<float>(sc[ch] / std::sqrt(double{v[ch]} + epsilon_));
    }
    AffinePerChannel(pool, l, xp, m.data(), a.data(), of, y->data<float>());
  }

 private:
  float epsilon_;
  float factor_;
  std::string format_;
  bool is_training_;
};

REGISTER_KERNEL_BUILDER(Name("FusedBatchNormV3")
                            .Device(kDeviceCpu)
                            .TypeConstraint<float>("T")
                            .TypeConstraint<float>("U"),
                        FusedBatchNormV3Kernel);

// ---------------------------------------------------------------------------
// FusedBatchNormGradV3

Status FusedBatchNormGradV3Shape(InferenceContext* c) {
  // y_backprop and x have the same shape.
  const PartialTensorShape& dy = c->input(0);
  const PartialTensorShape& x0 = c->input(1);
  for (const PartialTensorShape* s : {&dy, &x0}) {
    if (!s->unknown_rank() && s->dims() != 4) {
      return c->InvalidArgument("y_backprop and x must be 4-dimensional: ",
                                s->DebugString());
    }
  }
  auto merged = dy.MergeWith(x0);
  if (!merged.ok()) {
    return c->InvalidArgument("x and y_backprop must have the same shape: ",
                              x0.DebugString(), " vs. ", dy.DebugString());
  }
  // BatchNormInputShapes reads input 0 as x: fold the merge in by checking
  // the vectors against the merged shape.
  PartialTensorShape x = *merged;
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (x.unknown_rank()) x = PartialTensorShape({-1, -1, -1, -1});
  int64_t ch = x.dim_size(ChannelDim(format));
  for (int i : {2, 3, 4}) {
    const PartialTensorShape& v = c->input(i);
    if (v.unknown_rank()) continue;
    if (v.dims() != 1) {
      return c->InvalidArgument("input ", i,
                                " must be 1-dimensional: ", v.DebugString());
    }
    const int64_t n = v.dim_size(0);
    if (n < 0) continue;
    if (ch >= 0 && n != ch) {
      return c->InvalidArgument("input ", i, " has ", n, " elements but x has ",
                                ch, " channels: ", x.DebugString());
    }
    ch = n;
  }
  x.set_dim(ChannelDim(format), ch);
  c->set_output(0, x);
  c->set_output(1, PartialTensorShape({ch}));
  c->set_output(2, PartialTensorShape({ch}));
  c->set_output(3, PartialTensorShape({0}));
  c->set_output(4, PartialTensorShape({0}));
  return absl::OkStatus();
}

REGISTER_OP("FusedBatchNormGradV3")
    .Input("y_backprop: T")
    .Input("x: T")
    .Input("scale: float")
    .Input("reserve_space_1: U")
    .Input("reserve_space_2: U")
    .Input("reserve_space_3: U")
    .Output("x_backprop: T")
    .Output("scale_backprop: U")
    .Output("offset_backprop: U")
    .Output("reserve_space_4: U")
    .Output("reserve_space_5: U")
    .Attr("T: {float}")
    .Attr("U: {float}")
    .Attr("epsilon: float = 0.0001")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("is_training: bool = true")
    .SetShapeFn(FusedBatchNormGradV3Shape)
    .Doc(R"doc(The gradient of FusedBatchNormV3.
With m = reserve_space_1, v = reserve_space_2 (the batch mean and biased
variance in training, the population mean and variance in inference),
r = 1 / sqrt(v + epsilon) and means over N, H, W per channel:
offset_backprop = sum(dy), scale_backprop = sum(dy * (x - m) * r);
training: x_backprop = scale * r * (dy - mean(dy) - (x - m) * r^2 *
mean(dy * (x - m))); inference: x_backprop = dy * scale * r.
reserve_space_3 is unused; reserve_space_4/5 are empty.)doc");

class FusedBatchNormGradV3Kernel : public OpKernel {
 public:
  explicit FusedBatchNormGradV3Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("epsilon", &epsilon_));
    OP_REQUIRES_OK(c, c->GetAttr("data_format", &format_));
    OP_REQUIRES_OK(c, c->GetAttr("is_training", &is_training_));
    OP_REQUIRES(c, format_ == "NHWC" || format_ == "NCHW",
                errors::InvalidArgument("Invalid data format: ", format_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& scale = ctx->input(2);
    const Tensor& saved_mean = ctx->input(3);
    const Tensor& saved_var = ctx->input(4);
    OP_REQUIRES(ctx, dy.dims() == 4,
                errors::InvalidArgument("y_backprop must be 4-dimensional: ",
                                        dy.shape().DebugString()));
    OP_REQUIRES(ctx, x.dims() == 4,
                errors::InvalidArgument("x must be 4-dimensional: ",
                                        x.shape().DebugString()));
    OP_REQUIRES(
        ctx, dy.shape() == x.shape(),
        errors::InvalidArgument("x and y_backprop must have the same shape: ",
                                x.shape().DebugString(), " vs. ",
                                dy.shape().DebugString()));
    const int64_t channels = x.dim_size(ChannelDim(format_));
    OP_REQUIRES_OK(ctx, CheckVector(scale, "scale", channels, x.shape()));
    OP_REQUIRES_OK(
        ctx, CheckVector(saved_mean, "reserve_space_1", channels, x.shape()));
    OP_REQUIRES_OK(
        ctx, CheckVector(saved_var, "reserve_space_2", channels, x.shape()));

    Tensor *dx, *dscale, *doffset, *r4, *r5;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &dx));
    const TensorShape vec({channels});
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, vec, &dscale));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, vec, &doffset));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape({0}), &r4));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, TensorShape({0}), &r5));
    if (x.NumElements() == 0) {
      FillVec(dscale, 0.0f);
      FillVec(doffset, 0.0f);
      return;
    }

    ThreadPool* pool = ctx->intra_op_threadpool();
    const Layout l = MakeLayout(x.shape(), format_);
    const float* g = dy.data<float>();
    const float* xp = x.data<float>();
    const float* mp = saved_mean.data<float>();
    const float* sc = scale.data<float>();
    std::vector<double> r(channels);
    for (int64_t ch = 0; ch < channels; ++ch) {
      r[ch] = 1.0 / std::sqrt(double{saved_var.data<float>()[ch]} + epsilon_);
    }
    const std::vector<double> sum_dy = SumPerChannel(
        pool, l, [g](int64_t k, int64_t) { return double{g[k]}; });
    // sum(dy * (x - m)).
    const std::vector<double> sum_dyxc =
        SumPerChannel(pool, l, [g, xp, mp](int64_t k, int64_t ch) {
          return double{g[k]} * (double{xp[k]} - mp[ch]);
        });
    // dx = a * (dy - gm) - bx * (x - m) per channel; training:
    // a = scale*r, gm = mean(dy), bx = a * r^2 * mean(dy*(x - m));
    // inference: gm = bx = 0.
    const double n = static_cast<double>(l.per_channel());
    std::vector<float> a(channels), bx(channels), gm(channels);
    for (int64_t ch = 0; ch < channels; ++ch) {
      doffset->data<float>()[ch] = static_cast<float>(sum_dy[ch]);
      dscale->data<float>()[ch] = static_cast<float>(sum_dyxc[ch] * r[ch]);
      const double k = sc[ch] * r[ch];
      if (is_training_) {
        const double coef = r[ch] * r[ch] * sum_dyxc[ch] / n;
        a[ch] = static_cast<float>(k);
        bx[ch] = static_cast<float>(k * coef);
        gm[ch] = static_cast<float>(sum_dy[ch] / n);
      } else {
        a[ch] = static_cast<float>(k);
        bx[ch] = 0.0f;
        gm[ch] = 0.0f;
      }
    }
    float* out = dx->data<float>();
    const int64_t c = l.c;
    if (l.inner == 1) {
      ParallelRange(pool, l.outer, c * 4 + 1, [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
          const int64_t base = row * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            out[base + ch] = a[ch] * (g[base + ch] - gm[ch]) -
                             bx[ch] * (xp[base + ch] - mp[ch]);
          }
        }
      });
    } else {
      ParallelRange(
          pool, l.outer * c, l.inner * 4 + 1, [&](int64_t l0, int64_t l1) {
            for (int64_t line = l0; line < l1; ++line) {
              const int64_t ch = line % c;
              const float av = a[ch], bv = bx[ch], gv = gm[ch];
              const float mv = mp[ch];
              const int64_t base = line * l.inner;
              for (int64_t i = 0; i < l.inner; ++i) {
                out[base + i] =
                    av * (g[base + i] - gv) - bv * (xp[base + i] - mv);
              }
            }
          });
    }
  }

 private:
  float epsilon_;
  std::string format_;
  bool is_training_;
};

REGISTER_KERNEL_BUILDER(Name("FusedBatchNormGradV3")
                            .Device(kDeviceCpu)
                            .TypeConstraint<float>("T")
                            .TypeConstraint<float>("U"),
                        FusedBatchNormGradV3Kernel);

}  // namespace
}  // namespace runnel
