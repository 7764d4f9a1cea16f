// Image and audio summaries, TensorFlow's TF1 ops: ImageSummary (images as
// PNG), AudioSummaryV2 and AudioSummary (audio as 16-bit WAV). Each outputs
// a serialized Summary (proto/summary.proto) whose values a FileWriter puts
// in an event file, where TensorBoard shows them.
//
// Note [Summary tags]: as in TensorFlow, the tags depend on the number of
// outputs requested, not produced: "<tag>/image" (or "/audio") when
// max_images (max_outputs) is 1, else "<tag>/image/0", "<tag>/image/1", ...
// for the first min(max, batch) batch elements.
//
// None of these ops is differentiable: the output is a string.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "proto/summary.pb.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/png.h"
#include "runnel/io/wav.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Shared checks, used by the shape functions (on what is known) and by the
// kernels (graphs imported from GraphDefs skip shape functions).

// TensorFlow's IsLegacyScalar: a scalar, or a vector of one element.
Status CheckTagShape(const PartialTensorShape& s) {
  if (s.dims() <= 0) return absl::OkStatus();  // Unknown rank, or a scalar.
  if (s.dims() == 1 && s.dim_size(0) <= 1 && s.dim_size(0) != 0) {
    return absl::OkStatus();
  }
  return errors::InvalidArgument("tag must be a scalar, got shape ",
                                 s.DebugString());
}

std::string SummaryTag(const std::string& base, const char* kind,
                       int64_t max_outputs, int64_t i) {
  return max_outputs > 1 ? absl::StrCat(base, "/", kind, "/", i)
                         : absl::StrCat(base, "/", kind);
}

Status SerializeSummary(const Summary& summary, OpKernelContext* ctx) {
  if (summary.ByteSizeLong() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return errors::InvalidArgument("the summary would be ",
                                   summary.ByteSizeLong(),
                                   " bytes, more than a protobuf can hold");
  }
  Tensor* out;
  RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape({}), &out));
  if (!summary.SerializeToString(&out->scalar<tstring>())) {
    return errors::Internal("serializing the Summary failed");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// ImageSummary

// 4-D [batch, height, width, channels] with channels 1, 3 or 4.
Status CheckImageShape(const PartialTensorShape& s) {
  if (s.unknown_rank()) return absl::OkStatus();
  const int64_t depth = s.dims() == 4 ? s.dim_size(3) : 0;
  if (s.dims() != 4 ||
      (depth != -1 && depth != 1 && depth != 3 && depth != 4)) {
    return errors::InvalidArgument(
        "tensor must be 4-D [batch, height, width, channels] with 1, 3 or 4 "
        "channels, got shape ",
        s.DebugString());
  }
  // TensorFlow's limits: the casts to int and h * w cannot overflow.
  constexpr int64_t k2To31 = int64_t{1} << 31;
  const int64_t b = s.dim_size(0), h = s.dim_size(1), w = s.dim_size(2);
  if (b >= k2To31 || h >= k2To31 || w >= k2To31 ||
      (h > 0 && w > 0 && h * w >= (int64_t{1} << 29))) {
    return errors::InvalidArgument("tensor too large for an image summary: ",
                                   s.DebugString());
  }
  return absl::OkStatus();
}

Status ImageSummaryShape(InferenceContext* c) {
  for (Status s : {CheckTagShape(c->input(0)), CheckImageShape(c->input(1))}) {
    if (!s.ok()) return errors::Prefix(s, c->ErrorPrefix());
  }
  return shape_fns::ScalarShape(c);
}

OpDefBuilder ImageSummaryDef() {
  return OpDefBuilder("ImageSummary")
      .Input("tag: string")
      .Input("tensor: T")
      .Output("summary: string")
      .Attr("max_images: int >= 1 = 3")
      .Attr("T: {uint8, float, half, float64} = DT_FLOAT")
      .Attr("bad_color: tensor")  // Its default: Note [bad_color default].
      .SetShapeFn(ImageSummaryShape)
      .Doc(R"doc(Outputs a Summary protocol buffer with images, encoded as PNG.

`tensor` is [batch_size, height, width, channels] with channels 1
(grayscale), 3 (RGB) or 4 (RGBA); the first `max_images` batch elements
become one Summary value each, tagged '<tag>/image' when max_images is 1 and
'<tag>/image/0', '<tag>/image/1', ... otherwise, holding the image's height,
width, colorspace (= channels) and PNG bytes.

uint8 images are stored as they are. Floating-point images are mapped to
[0, 255] one image at a time, from their finite pixels (a pixel is finite
when all its channels are): if none is negative, by 255 / max (so the
largest becomes 255); otherwise by 127 / max(|min|, |max|) after which 128 is
added (so 0.0 becomes 128), each truncated to an integer; a scale of 0 is
used when that maximum is below 1e-6. Non-finite pixels take `bad_color`, a
uint8 vector with at least `channels` elements (default opaque red,
[255, 0, 0, 255]).

tag: Scalar. The base of the values' tags.
tensor: 4-D [batch_size, height, width, channels], channels 1, 3 or 4.
max_images: How many batch elements to make images of.
bad_color: The colour of pixels with non-finite values.
summary: Scalar. A serialized Summary protocol buffer.)doc");
}

// Note [bad_color default]: TensorFlow writes ImageSummary's bad_color
// default as a text-format TensorProto, which OpDefBuilder's attr specs do
// not parse. The op is registered here by hand, with that default (uint8
// [255, 0, 0, 255] in int_val, TensorFlow's exact proto) set on the
// finished OpDef.
[[maybe_unused]] const bool kImageSummaryRegistered = [] {
  auto data = std::make_unique<OpRegistrationData>();
  Status s = ImageSummaryDef().Finalize(data.get());
  if (s.ok()) {
    for (auto& attr : *data->op_def.mutable_attr()) {
      if (attr.name() != "bad_color") continue;
      TensorProto* t = attr.mutable_default_value()->mutable_tensor();
      t->set_dtype(DT_UINT8);
      t->mutable_tensor_shape()->add_dim()->set_size(4);
      for (int v : {255, 0, 0, 255}) t->add_int_val(v);
    }
    s = OpRegistry::Global()->Register(std::move(data));
  }
  if (!s.ok()) {
    std::fprintf(stderr, "op registration failed: %s\n",
                 std::string(s.message()).c_str());
    std::abort();
  }
  return true;
}();

// Element access in the arithmetic TensorFlow's kernel uses: float and
// double natively; half (Eigen::half there) rounds to half after every
// operation.
template <typename T>
struct ImageMath {
  static float ToFloat(T v) { return static_cast<float>(v); }
  static bool IsFinite(T v) { return std::isfinite(v); }
  static T FromFloat(float f) { return static_cast<T>(f); }
  static double Affine(T v, T scale, T offset) { return v * scale + offset; }
};
template <>
struct ImageMath<half> {
  static float ToFloat(half v) { return HalfToFloat(v); }
  static bool IsFinite(half v) { return (v.bits & 0x7c00) != 0x7c00; }
  static half FromFloat(float f) { return FloatToHalf(f); }
  static double Affine(half v, half scale, half offset) {
    const half product = FloatToHalf(HalfToFloat(v) * HalfToFloat(scale));
    return HalfToFloat(FloatToHalf(HalfToFloat(product) + HalfToFloat(offset)));
  }
};

// A truncating cast to uint8 (TensorFlow's) that saturates where that cast
// would be undefined: NaN and values below 0 give 0, values above 255 give
// 255. Finite images never reach the saturation except through overflow
// (a half scale of infinity for images with max below ~0.004).
uint8_t TruncateToUint8(double x) {
  if (!(x > 0)) return 0;
  if (x >= 255) return 255;
  return static_cast<uint8_t>(x);
}

// Maps one image (hw pixels of `depth` channels) to uint8, as TensorFlow's
// NormalizeFloatImage does.
template <typename T>
void NormalizeImage(const T* values, int64_t hw, int depth,
                    const uint8_t* bad_color, uint8_t* out) {
  using M = ImageMath<T>;
  auto pixel_is_finite = [&](int64_t i) {
    for (int j = 0; j < depth; ++j) {
      if (!M::IsFinite(values[i * depth + j])) return false;
    }
    return true;
  };
  float image_min = std::numeric_limits<float>::infinity();
  float image_max = -image_min;
  for (int64_t i = 0; i < hw; ++i) {
    if (!pixel_is_finite(i)) continue;
    for (int j = 0; j < depth; ++j) {
      const float v = M::ToFloat(values[i * depth + j]);
      image_min = std::min(image_min, v);
      image_max = std::max(image_max, v);
    }
  }
  constexpr float kZeroThreshold = 1e-6f;
  T scale, offset;
  if (image_min < 0) {
    const float max_val = std::max(std::abs(image_min), std::abs(image_max));
    scale = M::FromFloat(max_val < kZeroThreshold ? 0.0f : 127.0f / max_val);
    offset = M::FromFloat(128.0f);
  } else {
    scale =
        M::FromFloat(image_max < kZeroThreshold ? 0.0f : 255.0f / image_max);
    offset = M::FromFloat(0.0f);
  }
  for (int64_t i = 0; i < hw; ++i) {
    uint8_t* px = out + i * depth;
    if (!pixel_is_finite(i)) {
      std::copy(bad_color, bad_color + depth, px);
      continue;
    }
    for (int j = 0; j < depth; ++j) {
      px[j] = TruncateToUint8(M::Affine(values[i * depth + j], scale, offset));
    }
  }
}

template <typename T>
class ImageSummaryKernel : public OpKernel {
 public:
  explicit ImageSummaryKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("max_images", &max_images_));
    OP_REQUIRES(c, max_images_ < (int64_t{1} << 31),
                errors::InvalidArgument("max_images must be < 2^31, got ",
                                        max_images_));
    OP_REQUIRES_OK(c, c->GetAttr("bad_color", &bad_color_));
    OP_REQUIRES(c, bad_color_.dtype() == DT_UINT8,
                errors::InvalidArgument("bad_color must be uint8, got ",
                                        DataTypeString(bad_color_.dtype())));
    OP_REQUIRES(
        c, bad_color_.dims() == 1,
        errors::InvalidArgument("bad_color must be a vector, got shape ",
                                bad_color_.shape().DebugString()));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& tensor = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckTagShape(tag.shape()));
    OP_REQUIRES_OK(ctx, CheckImageShape(tensor.shape()));
    const int64_t batch = tensor.dim_size(0), h = tensor.dim_size(1),
                  w = tensor.dim_size(2);
    const int depth = static_cast<int>(tensor.dim_size(3));
    if constexpr (!std::is_same_v<T, uint8_t>) {
      OP_REQUIRES(
          ctx, bad_color_.dim_size(0) >= depth,
          errors::InvalidArgument("bad_color has ", bad_color_.dim_size(0),
                                  " elements, fewer than the image's ", depth,
                                  " channels"));
    }
    const int64_t n = std::min(max_images_, batch);
    // (TensorFlow's PNG encoder fails on these with an Internal error.)
    OP_REQUIRES(ctx, n == 0 || (h > 0 && w > 0),
                errors::InvalidArgument("cannot encode ", h, "x", w,
                                        " images as PNG; tensor shape ",
                                        tensor.shape().DebugString()));
    const std::string& base_tag = tag.flat<tstring>()[0];

    // Encoding dominates; images are independent.
    std::vector<StatusOr<std::string>> pngs(n, std::string());
    const int64_t image_size = h * w * depth;
    ctx->intra_op_threadpool()->ParallelFor(
        n, 100 * image_size + 1000, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            pngs[i] = EncodeImage(tensor, i);
        });

    Summary summary;
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES(
          ctx, pngs[i].ok(),
          errors::Prefix(pngs[i].status(), absl::StrCat("image ", i, ": ")));
      Summary::Value* v = summary.add_value();
      v->set_tag(SummaryTag(base_tag, "image", max_images_, i));
      Summary::Image* image = v->mutable_image();
      image->set_height(static_cast<int32_t>(h));
      image->set_width(static_cast<int32_t>(w));
      image->set_colorspace(depth);
      image->set_encoded_image_string(std::move(*pngs[i]));
    }
    OP_REQUIRES_OK(ctx, SerializeSummary(summary, ctx));
  }

 private:
  // Batch element i as PNG.
  StatusOr<std::string> EncodeImage(const Tensor& tensor, int64_t i) const {
    const int64_t h = tensor.dim_size(1), w = tensor.dim_size(2);
    const int depth = static_cast<int>(tensor.dim_size(3));
    const int64_t size = h * w * depth;
    const T* values = tensor.data<T>() + i * size;
    if constexpr (std::is_same_v<T, uint8_t>) {
      return EncodePng(absl::MakeConstSpan(values, size), h, w, depth);
    } else {
      std::vector<uint8_t> pixels;
      try {
        pixels.resize(size);
      } catch (const std::bad_alloc&) {
        return errors::ResourceExhausted("out of memory for a ", h, "x", w, "x",
                                         depth, " image");
      }
      NormalizeImage(values, h * w, depth, bad_color_.data<uint8_t>(),
                     pixels.data());
      return EncodePng(pixels, h, w, depth);
    }
  }

  int64_t max_images_ = 3;
  Tensor bad_color_;
};

#define REGISTER_IMAGE_SUMMARY(T)                                     \
  REGISTER_KERNEL_BUILDER(                                            \
      Name("ImageSummary").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      ImageSummaryKernel<T>)
REGISTER_IMAGE_SUMMARY(uint8_t);
REGISTER_IMAGE_SUMMARY(float);
REGISTER_IMAGE_SUMMARY(half);
REGISTER_IMAGE_SUMMARY(double);
#undef REGISTER_IMAGE_SUMMARY

// ---------------------------------------------------------------------------
// AudioSummaryV2 and AudioSummary

// [batch, frames] or [batch, frames, channels].
Status CheckAudioShape(const PartialTensorShape& s) {
  if (s.unknown_rank() || s.dims() == 2 || s.dims() == 3) {
    return absl::OkStatus();
  }
  return errors::InvalidArgument(
      "tensor must be 2-D [batch, frames] or 3-D [batch, frames, channels], "
      "got shape ",
      s.DebugString());
}

Status CheckSampleRateShape(const PartialTensorShape& s) {
  const int64_t n = s.num_elements();
  if (n == -1 || n == 1) return absl::OkStatus();
  return errors::InvalidArgument("sample_rate must be a scalar, got shape ",
                                 s.DebugString());
}

Status AudioSummaryShape(InferenceContext* c) {
  std::vector<Status> checks = {CheckTagShape(c->input(0)),
                                CheckAudioShape(c->input(1))};
  if (c->num_inputs() == 3) checks.push_back(CheckSampleRateShape(c->input(2)));
  for (const Status& s : checks) {
    if (!s.ok()) return errors::Prefix(s, c->ErrorPrefix());
  }
  return shape_fns::ScalarShape(c);
}

constexpr char kAudioDoc[] =
    R"doc(

`tensor` is [batch_size, frames] (one channel) or [batch_size, frames,
channels], with values in [-1, 1] (others are clipped); the first
`max_outputs` batch elements become one Summary value each, tagged
'<tag>/audio' when max_outputs is 1 and '<tag>/audio/0', '<tag>/audio/1',
... otherwise, holding the sample rate, channels, frames and a 16-bit PCM
WAV file (content type "audio/wav") at sample_rate rounded to an integer
(at least 1). sample_rate must be positive and below 2^32.

tag: Scalar. The base of the values' tags.
tensor: [batch_size, frames] or [batch_size, frames, channels].
sample_rate: The sample rate of the audio, in Hz.
max_outputs: How many batch elements to make audio of.
summary: Scalar. A serialized Summary protocol buffer.)doc";

REGISTER_OP("AudioSummaryV2")
    .Input("tag: string")
    .Input("tensor: float")
    .Input("sample_rate: float")
    .Output("summary: string")
    .Attr("max_outputs: int >= 1 = 3")
    .SetShapeFn(AudioSummaryShape)
    .Doc(absl::StrCat(
        "Outputs a Summary protocol buffer with audio, encoded as WAV.",
        kAudioDoc));

REGISTER_OP("AudioSummary")
    .Input("tag: string")
    .Input("tensor: float")
    .Output("summary: string")
    .Attr("sample_rate: float")
    .Attr("max_outputs: int >= 1 = 3")
    .SetShapeFn(AudioSummaryShape)
    .Doc(absl::StrCat(
        "Outputs a Summary protocol buffer with audio, encoded as WAV; "
        "deprecated (GraphDef version 15) for AudioSummaryV2, which takes the "
        "sample rate as an input.",
        kAudioDoc));

class AudioSummaryKernel : public OpKernel {
 public:
  explicit AudioSummaryKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("max_outputs", &max_outputs_));
    // AudioSummary has the rate as an attr, AudioSummaryV2 as input 2.
    has_sample_rate_attr_ = c->GetAttr("sample_rate", &sample_rate_attr_).ok();
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& tensor = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckTagShape(tag.shape()));
    OP_REQUIRES_OK(ctx, CheckAudioShape(tensor.shape()));
    float sample_rate = sample_rate_attr_;
    if (!has_sample_rate_attr_) {
      const Tensor& rate = ctx->input(2);
      OP_REQUIRES_OK(ctx, CheckSampleRateShape(rate.shape()));
      sample_rate = rate.flat<float>()[0];
    }
    OP_REQUIRES(
        ctx, sample_rate > 0.0f,
        errors::InvalidArgument("sample_rate must be > 0, got ", sample_rate));
    const int64_t batch = tensor.dim_size(0);
    const int64_t frames = tensor.dim_size(1);
    const int64_t channels = tensor.dims() == 2 ? 1 : tensor.dim_size(2);
    const int64_t n = std::min(max_outputs_, batch);
    const std::string& base_tag = tag.flat<tstring>()[0];

    Summary summary;
    if (n > 0) {
      // The WAV header holds the rate as a uint32 (the float below 2^32
      // nearest to it is 2^32 - 256, so lrintf cannot overflow).
      OP_REQUIRES(ctx, sample_rate < 4294967296.0f,
                  errors::InvalidArgument("sample_rate must be < 2^32, got ",
                                          sample_rate));
      const int64_t wav_rate = std::max<int64_t>(1, std::lrintf(sample_rate));
      // batch >= 1, so frames * channels <= the tensor's element count.
      const int64_t size = frames * channels;
      for (int64_t i = 0; i < n; ++i) {
        auto wav = EncodeAudioAsS16LEWav(
            absl::MakeConstSpan(tensor.data<float>() + i * size, size),
            wav_rate, channels, frames);
        OP_REQUIRES(
            ctx, wav.ok(),
            errors::Prefix(wav.status(), absl::StrCat("audio ", i, ": ")));
        Summary::Value* v = summary.add_value();
        v->set_tag(SummaryTag(base_tag, "audio", max_outputs_, i));
        Summary::Audio* audio = v->mutable_audio();
        audio->set_sample_rate(sample_rate);
        audio->set_num_channels(channels);
        audio->set_length_frames(frames);
        audio->set_encoded_audio_string(std::move(*wav));
        audio->set_content_type("audio/wav");
      }
    }
    OP_REQUIRES_OK(ctx, SerializeSummary(summary, ctx));
  }

 private:
  int64_t max_outputs_ = 3;
  bool has_sample_rate_attr_ = false;
  float sample_rate_attr_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("AudioSummaryV2").Device(kDeviceCpu),
                        AudioSummaryKernel);
REGISTER_KERNEL_BUILDER(Name("AudioSummary").Device(kDeviceCpu),
                        AudioSummaryKernel);

}  // namespace

REGISTER_NO_GRADIENT("ImageSummary", "its output is a serialized Summary");
REGISTER_NO_GRADIENT("AudioSummaryV2", "its output is a serialized Summary");
REGISTER_NO_GRADIENT("AudioSummary", "its output is a serialized Summary");

}  // namespace runnel
