// ImageSummary, AudioSummaryV2 and AudioSummary against TensorFlow's
// semantics: the Summary they serialize is parsed back, its PNG and WAV
// payloads decoded, and the pixels compared with the closed forms of
// TensorFlow's float-image normalization.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "proto/summary.pb.h"
#include "runnel/framework/op.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/png.h"
#include "runnel/io/wav.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Summary ParseSummary(const Tensor& t) {
  Summary s;
  EXPECT_EQ(t.dtype(), DT_STRING);
  EXPECT_EQ(t.dims(), 0);
  EXPECT_TRUE(s.ParseFromString(t.scalar<tstring>()));
  return s;
}

std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int x : v) s += static_cast<char>(x);
  return s;
}

void ExpectInvalid(const Status& s, const std::string& op,
                   const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(op + " 'test_node'"), std::string::npos) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

// ---------------------------------------------------------------------------
// ImageSummary

template <typename T>
Tensor Images(std::initializer_list<int64_t> shape,
              const std::vector<float>& values) {
  std::vector<T> v;
  for (float x : values) {
    if constexpr (std::is_same_v<T, half>) {
      v.push_back(FloatToHalf(x));
    } else {
      v.push_back(static_cast<T>(x));
    }
  }
  return Tensor::FromVector<T>(v, TensorShape(shape));
}

StatusOr<Summary> RunImageSummary(const Tensor& images,
                                  const std::string& tag = "img",
                                  int max_images = -1,
                                  const Tensor* bad_color = nullptr) {
  OpTestCase t("ImageSummary");
  t.Attr("T", images.dtype());
  if (max_images > 0) t.Attr("max_images", max_images);
  if (bad_color != nullptr) t.Attr("bad_color", *bad_color);
  t.Input(Tensor::Scalar<tstring>(tag)).Input(images);
  RETURN_IF_ERROR(t.Run());
  return ParseSummary(t.output(0));
}

// The decoded pixels of value i, after checking its image fields.
std::string ImagePixels(const Summary& s, int i, int h, int w, int c) {
  const Summary::Value& v = s.value(i);
  EXPECT_EQ(v.value_case(), Summary::Value::kImage);
  EXPECT_EQ(v.image().height(), h);
  EXPECT_EQ(v.image().width(), w);
  EXPECT_EQ(v.image().colorspace(), c);
  auto png = DecodePng(v.image().encoded_image_string());
  EXPECT_TRUE(png.ok()) << png.status();
  if (!png.ok()) return "";
  EXPECT_EQ(png->height, h);
  EXPECT_EQ(png->width, w);
  EXPECT_EQ(png->channels, c);
  return png->pixels;
}

TEST(ImageSummaryTest, Uint8ImagesAreStoredUnchanged) {
  for (int c : {1, 3, 4}) {
    SCOPED_TRACE(c);
    std::mt19937 rng(c);
    std::vector<float> v(2 * 3 * 5 * c);
    for (auto& x : v) x = static_cast<float>(rng() % 256);
    auto s = RunImageSummary(Images<uint8_t>({2, 3, 5, c}, v));
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->value_size(), 2);
    EXPECT_EQ(s->value(0).tag(), "img/image/0");
    EXPECT_EQ(s->value(1).tag(), "img/image/1");
    for (int i = 0; i < 2; ++i) {
      std::string expected;
      for (int k = 0; k < 15 * c; ++k)
        expected += static_cast<char>(v[i * 15 * c + k]);
      EXPECT_EQ(ImagePixels(*s, i, 3, 5, c), expected);
    }
  }
}

TEST(ImageSummaryTest, TagsFollowMaxImagesNotTheBatch) {
  const std::vector<float> v(5 * 2 * 2, 7);
  // max_images 1: a single "/image" tag.
  auto s = RunImageSummary(Images<uint8_t>({5, 2, 2, 1}, v), "a/b", 1);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 1);
  EXPECT_EQ(s->value(0).tag(), "a/b/image");
  // max_images 2 of 5: the first two, numbered.
  s = RunImageSummary(Images<uint8_t>({5, 2, 2, 1}, v), "a/b", 2);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 2);
  EXPECT_EQ(s->value(1).tag(), "a/b/image/1");
  // max_images 4 of 1: numbered although only one is made.
  s = RunImageSummary(Images<uint8_t>({1, 2, 2, 1}, {1, 2, 3, 4}), "x", 4);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 1);
  EXPECT_EQ(s->value(0).tag(), "x/image/0");
  // Default max_images is 3.
  s = RunImageSummary(Images<uint8_t>({5, 2, 2, 1}, v));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value_size(), 3);
  // An empty batch: an empty Summary.
  s = RunImageSummary(Images<uint8_t>({0, 2, 2, 1}, {}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value_size(), 0);
}

// The normalization's closed forms, for every floating type. Inputs are
// chosen so every product is exact in half precision too.
template <typename T>
class ImageSummaryFloatTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, half, double>;
TYPED_TEST_SUITE(ImageSummaryFloatTest, FloatTypes);

TYPED_TEST(ImageSummaryFloatTest, NonNegativeImagesScaleTheMaxTo255) {
  // max 4: x * 255 / 4 = x * 63.75, truncated.
  auto s = RunImageSummary(Images<TypeParam>({1, 2, 2, 1}, {0, 1, 2, 4}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 2, 2, 1), Bytes({0, 63, 127, 255}));
}

TYPED_TEST(ImageSummaryFloatTest, NegativeValuesCenterZeroAt128) {
  // max |x| = 2: x * 127 / 2 + 128 = x * 63.5 + 128, truncated.
  auto s = RunImageSummary(Images<TypeParam>({1, 1, 4, 1}, {-2, -1, 0, 1}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 4, 1), Bytes({1, 64, 128, 191}));
  // All negative: the largest magnitude is the min.
  s = RunImageSummary(Images<TypeParam>({1, 1, 2, 1}, {-4, -2}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 2, 1), Bytes({1, 64}));
}

TYPED_TEST(ImageSummaryFloatTest, FlatImagesScaleByZero) {
  auto s = RunImageSummary(Images<TypeParam>({2, 1, 2, 1}, {0, 0, 0, 0}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 2, 1), Bytes({0, 0}));
  // A max below 1e-6: scale 0 (and 0 + 128 with a negative value).
  if constexpr (!std::is_same_v<TypeParam, half>) {
    s = RunImageSummary(Images<TypeParam>({1, 1, 2, 1}, {5e-7f, -5e-7f}));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(ImagePixels(*s, 0, 1, 2, 1), Bytes({128, 128}));
  }
}

TYPED_TEST(ImageSummaryFloatTest, EachImageIsNormalizedAlone) {
  auto s = RunImageSummary(
      Images<TypeParam>({2, 1, 2, 1}, {1, 2, /* second */ 16, 8}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 2, 1), Bytes({127, 255}));
  EXPECT_EQ(ImagePixels(*s, 1, 1, 2, 1), Bytes({255, 127}));
}

TYPED_TEST(ImageSummaryFloatTest, NonFinitePixelsTakeBadColor) {
  // Pixel 0 has one non-finite channel: the whole pixel is bad_color and
  // its finite channels (100) do not count toward the max (4).
  const float bad = std::is_same_v<TypeParam, half> ? kInf : kNaN;
  auto s = RunImageSummary(Images<TypeParam>(
      {1, 1, 3, 3}, {100, bad, 100, /**/ 1, 2, 4, /**/ -kInf, 0, 0}));
  ASSERT_TRUE(s.ok()) << s.status();
  // Default bad_color: red (its first 3 of [255, 0, 0, 255]).
  EXPECT_EQ(ImagePixels(*s, 0, 1, 3, 3),
            Bytes({255, 0, 0, 63, 127, 255, 255, 0, 0}));

  // RGBA takes all 4 of a custom colour; alpha of good pixels is scaled
  // like the other channels.
  const Tensor green = Tensor::FromVector<uint8_t>({0, 255, 0, 128});
  s = RunImageSummary(
      Images<TypeParam>({1, 1, 2, 4}, {kNaN, 0, 0, 0, /**/ 1, 2, 4, 4}), "t",
      -1, &green);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 2, 4),
            Bytes({0, 255, 0, 128, 63, 127, 255, 255}));

  // Nothing finite: every pixel is bad.
  s = RunImageSummary(Images<TypeParam>({1, 1, 2, 1}, {kNaN, kInf}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 2, 1), Bytes({255, 255}));
}

TYPED_TEST(ImageSummaryFloatTest, BadColorMustCoverTheChannels) {
  const Tensor two = Tensor::FromVector<uint8_t>({1, 2});
  Status st =
      RunImageSummary(Images<TypeParam>({1, 1, 1, 3}, {1, 2, 3}), "t", -1, &two)
          .status();
  ExpectInvalid(st, "ImageSummary", "bad_color has 2 elements");
  // Enough for one channel.
  EXPECT_TRUE(
      RunImageSummary(Images<TypeParam>({1, 1, 1, 1}, {1}), "t", -1, &two)
          .ok());
}

TEST(ImageSummaryTest, Uint8IgnoresBadColorLength) {
  const Tensor one = Tensor::FromVector<uint8_t>({9});
  auto s = RunImageSummary(Images<uint8_t>({1, 1, 1, 4}, {1, 2, 3, 4}), "t", -1,
                           &one);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(ImagePixels(*s, 0, 1, 1, 4), Bytes({1, 2, 3, 4}));
}

TEST(ImageSummaryTest, BadColorMustBeAUint8Vector) {
  const Tensor f = Tensor::FromVector<float>({1, 0, 0});
  EXPECT_EQ(RunImageSummary(Images<float>({1, 1, 1, 1}, {1}), "t", -1, &f)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  const Tensor m =
      Tensor::FromVector<uint8_t>({1, 2, 3, 4}, TensorShape({2, 2}));
  EXPECT_EQ(RunImageSummary(Images<float>({1, 1, 1, 1}, {1}), "t", -1, &m)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ImageSummaryTest, LargeImageRoundTrips) {
  // Big enough that the batch is encoded on several threads.
  const int b = 4, h = 64, w = 48, c = 3;
  std::vector<float> v(b * h * w * c);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 251);
  auto s = RunImageSummary(Images<uint8_t>({b, h, w, c}, v), "big", 4);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 4);
  for (int i = 0; i < b; ++i) {
    std::string expected;
    for (int k = 0; k < h * w * c; ++k)
      expected += static_cast<char>(v[i * h * w * c + k]);
    EXPECT_EQ(ImagePixels(*s, i, h, w, c), expected) << i;
  }
}

TEST(ImageSummaryTest, OpDefMatchesTensorFlow) {
  const OpDef& def = OpRegistry::Global()->LookUp("ImageSummary")->op_def;
  ASSERT_EQ(def.attr_size(), 3);
  EXPECT_EQ(def.attr(0).name(), "max_images");
  EXPECT_EQ(def.attr(0).default_value().i(), 3);
  EXPECT_EQ(def.attr(0).minimum(), 1);
  EXPECT_EQ(def.attr(1).name(), "T");
  EXPECT_EQ(def.attr(1).default_value().type(), DT_FLOAT);
  EXPECT_EQ(def.attr(1).allowed_values().list().type_size(), 4);
  EXPECT_EQ(def.attr(2).name(), "bad_color");
  EXPECT_EQ(def.attr(2).type(), "tensor");
  const TensorProto& bad = def.attr(2).default_value().tensor();
  EXPECT_EQ(bad.dtype(), DT_UINT8);
  ASSERT_EQ(bad.tensor_shape().dim_size(), 1);
  EXPECT_EQ(bad.tensor_shape().dim(0).size(), 4);
  ASSERT_EQ(bad.int_val_size(), 4);
  EXPECT_EQ(bad.int_val(0), 255);
  EXPECT_EQ(bad.int_val(1), 0);
  EXPECT_EQ(bad.int_val(3), 255);
  for (const char* op : {"ImageSummary", "AudioSummaryV2", "AudioSummary"}) {
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_EQ(e->fn, nullptr) << op;
  }
}

// Bad inputs fail in the shape function (at graph construction) and, for
// graphs that skip it, in the kernel, with the same message.
Status ImageSummaryStatus(const Tensor& tag, const Tensor& images,
                          bool kernel_only) {
  OpTestCase t("ImageSummary");
  t.Attr("T", images.dtype()).Input(tag).Input(images);
  return kernel_only ? t.RunKernelOnly() : t.Run();
}

TEST(ImageSummaryTest, BadInputsAreInvalidArguments) {
  const Tensor tag = Tensor::Scalar<tstring>("t");
  for (bool kernel_only : {false, true}) {
    SCOPED_TRACE(kernel_only);
    auto check = [&](const Tensor& tg, const Tensor& images,
                     const std::string& needle) {
      ExpectInvalid(ImageSummaryStatus(tg, images, kernel_only), "ImageSummary",
                    needle);
    };
    check(tag, Images<float>({2, 2, 1}, {1, 2, 3, 4}), "must be 4-D");
    check(tag, Images<float>({1, 1, 2, 2, 1}, {1, 2, 3, 4}), "must be 4-D");
    check(tag, Images<float>({1, 1, 1, 2}, {1, 2}), "1, 3 or 4 channels");
    check(tag, Images<uint8_t>({1, 1, 1, 5}, {1, 2, 3, 4, 5}),
          "1, 3 or 4 channels");
    check(tag, Images<uint8_t>({1, 1, 1, 0}, {}), "1, 3 or 4 channels");
    check(Tensor::FromVector<tstring>({"a", "b"}),
          Images<float>({1, 1, 1, 1}, {1}), "tag must be a scalar");
    check(Tensor::FromVector<tstring>({}, TensorShape({0})),
          Images<float>({1, 1, 1, 1}, {1}), "tag must be a scalar");
    // Sizes TensorFlow refuses (these tensors have no elements).
    check(tag, Images<float>({0, int64_t{1} << 31, 1, 1}, {}), "too large");
    check(tag, Images<float>({0, 1, int64_t{1} << 31, 1}, {}), "too large");
    check(tag, Images<float>({int64_t{1} << 31, 0, 1, 1}, {}), "too large");
    check(tag, Images<float>({0, 1 << 15, 1 << 14, 3}, {}), "too large");
    // Images with no pixels have no PNG.
    check(tag, Images<uint8_t>({2, 0, 3, 1}, {}), "cannot encode 0x3");
    check(tag, Images<float>({1, 3, 0, 1}, {}), "cannot encode 3x0");
  }
  // A vector of one tag is TensorFlow's "legacy scalar".
  auto s = ImageSummaryStatus(Tensor::FromVector<tstring>({"v"}),
                              Images<float>({1, 1, 1, 1}, {1}), false);
  EXPECT_TRUE(s.ok()) << s;
  // No images to make: zero-size images are fine.
  s = ImageSummaryStatus(tag, Images<float>({0, 0, 0, 1}, {}), false);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ImageSummaryTest, ShapeFunctionAcceptsUnknownsAndGivesAScalar) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  AddDefaultsToAttrs(OpRegistry::Global()->LookUp("ImageSummary")->op_def,
                     &attrs);
  auto out =
      InferShapes("ImageSummary", attrs,
                  {PartialTensorShape(), PartialTensorShape({-1, -1, -1, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), 0);
  out =
      InferShapes("ImageSummary", attrs,
                  {PartialTensorShape({-1}), PartialTensorShape({-1, 2, -1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// AudioSummaryV2 and AudioSummary

StatusOr<Summary> RunAudio(const Tensor& audio, float sample_rate,
                           int max_outputs = -1, bool v1 = false,
                           const std::string& tag = "snd") {
  OpTestCase t(v1 ? "AudioSummary" : "AudioSummaryV2");
  if (max_outputs > 0) t.Attr("max_outputs", max_outputs);
  if (v1) t.Attr("sample_rate", sample_rate);
  t.Input(Tensor::Scalar<tstring>(tag)).Input(audio);
  if (!v1) t.Input(Tensor::Scalar<float>(sample_rate));
  RETURN_IF_ERROR(t.Run());
  return ParseSummary(t.output(0));
}

Tensor Audio(std::initializer_list<int64_t> shape, std::vector<float> v) {
  return Tensor::FromVector<float>(v, TensorShape(shape));
}

float Quantized(float x) {
  return std::min(std::max(std::round(x * 32768.0f), -32768.0f), 32767.0f) /
         32768.0f;
}

TEST(AudioSummaryTest, MonoBatchAsWav) {
  for (bool v1 : {false, true}) {
    SCOPED_TRACE(v1);
    const std::vector<float> v = {0.0f, 0.5f,  -0.5f, 1.0f,
                                  0.1f, -1.0f, 2.0f,  -0.3f};
    auto s = RunAudio(Audio({2, 4}, v), 8000, -1, v1);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->value_size(), 2);
    for (int i = 0; i < 2; ++i) {
      const Summary::Value& val = s->value(i);
      EXPECT_EQ(val.tag(), "snd/audio/" + std::to_string(i));
      ASSERT_EQ(val.value_case(), Summary::Value::kAudio);
      EXPECT_EQ(val.audio().sample_rate(), 8000.0f);
      EXPECT_EQ(val.audio().num_channels(), 1);
      EXPECT_EQ(val.audio().length_frames(), 4);
      EXPECT_EQ(val.audio().content_type(), "audio/wav");
      const std::string& bytes = val.audio().encoded_audio_string();
      EXPECT_EQ(bytes.size(), 44u + 8u);
      auto wav = DecodeWav(bytes);
      ASSERT_TRUE(wav.ok()) << wav.status();
      EXPECT_EQ(wav->sample_rate, 8000u);
      EXPECT_EQ(wav->num_channels, 1);
      EXPECT_EQ(wav->num_frames, 4);
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(wav->samples[k], Quantized(v[i * 4 + k])) << i << "," << k;
    }
    // 2.0 is clipped to 32767.
    auto wav = DecodeWav(s->value(1).audio().encoded_audio_string());
    EXPECT_EQ(wav->samples[2], 32767.0f / 32768.0f);
  }
}

TEST(AudioSummaryTest, StereoIsInterleavedByFrame) {
  // [batch 1, frames 3, channels 2].
  const std::vector<float> v = {0.25f, -0.25f, 0.5f, -0.5f, 0.75f, -0.75f};
  auto s = RunAudio(Audio({1, 3, 2}, v), 44100);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 1);
  EXPECT_EQ(s->value(0).audio().num_channels(), 2);
  EXPECT_EQ(s->value(0).audio().length_frames(), 3);
  const std::string& bytes = s->value(0).audio().encoded_audio_string();
  // Header: 2 channels, 44100 Hz, 4 bytes a frame, 12 bytes of data.
  EXPECT_EQ(bytes.substr(22, 2), Bytes({2, 0}));
  EXPECT_EQ(bytes.substr(24, 4), Bytes({0x44, 0xac, 0, 0}));
  EXPECT_EQ(bytes.substr(32, 2), Bytes({4, 0}));
  EXPECT_EQ(bytes.substr(40, 4), Bytes({12, 0, 0, 0}));
  auto wav = DecodeWav(bytes);
  ASSERT_TRUE(wav.ok()) << wav.status();
  EXPECT_EQ(wav->samples, v);  // All exact in 16 bits.
}

TEST(AudioSummaryTest, TagsFollowMaxOutputs) {
  const std::vector<float> v(3 * 2, 0.0f);
  auto s = RunAudio(Audio({3, 2}, v), 100, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 1);
  EXPECT_EQ(s->value(0).tag(), "snd/audio");
  s = RunAudio(Audio({3, 2}, v), 100, 2, /*v1=*/true);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 2);
  EXPECT_EQ(s->value(1).tag(), "snd/audio/1");
  s = RunAudio(Audio({0, 2}, {}), 100);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value_size(), 0);
}

TEST(AudioSummaryTest, SampleRateIsRoundedForTheWavOnly) {
  auto s = RunAudio(Audio({1, 1}, {0.0f}), 22050.6f);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value(0).audio().sample_rate(), 22050.6f);
  auto wav = DecodeWav(s->value(0).audio().encoded_audio_string());
  ASSERT_TRUE(wav.ok()) << wav.status();
  EXPECT_EQ(wav->sample_rate, 22051u);
  // Below 0.5 Hz the WAV says 1.
  s = RunAudio(Audio({1, 1}, {0.0f}), 0.3f);
  ASSERT_TRUE(s.ok()) << s.status();
  wav = DecodeWav(s->value(0).audio().encoded_audio_string());
  ASSERT_TRUE(wav.ok()) << wav.status();
  EXPECT_EQ(wav->sample_rate, 1u);
  // No frames: a header-only WAV.
  s = RunAudio(Audio({1, 0}, {}), 16000);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value(0).audio().encoded_audio_string().size(), 44u);
}

Status AudioStatus(const Tensor& tag, const Tensor& audio,
                   const Tensor& sample_rate, bool kernel_only) {
  OpTestCase t("AudioSummaryV2");
  t.Input(tag).Input(audio).Input(sample_rate);
  return kernel_only ? t.RunKernelOnly() : t.Run();
}

TEST(AudioSummaryTest, BadInputsAreInvalidArguments) {
  const Tensor tag = Tensor::Scalar<tstring>("t");
  const Tensor rate = Tensor::Scalar<float>(8000);
  const Tensor mono = Audio({1, 2}, {0, 0});
  for (bool kernel_only : {false, true}) {
    SCOPED_TRACE(kernel_only);
    auto check = [&](const Tensor& tg, const Tensor& audio, const Tensor& r,
                     const std::string& needle) {
      ExpectInvalid(AudioStatus(tg, audio, r, kernel_only), "AudioSummaryV2",
                    needle);
    };
    check(tag, Audio({2}, {0, 0}), rate, "must be 2-D");
    check(tag, Audio({1, 1, 1, 2}, {0, 0}), rate, "must be 2-D");
    check(Tensor::FromVector<tstring>({"a", "b"}), mono, rate,
          "tag must be a scalar");
    check(tag, mono, Tensor::FromVector<float>({8000, 8000}),
          "sample_rate must be a scalar");
    check(tag, mono, Tensor::Scalar<float>(0), "sample_rate must be > 0");
    check(tag, mono, Tensor::Scalar<float>(-1), "sample_rate must be > 0");
    check(tag, mono, Tensor::Scalar<float>(kNaN), "sample_rate must be > 0");
    check(tag, mono, Tensor::Scalar<float>(1e10f),
          "sample_rate must be < 2^32");
    check(tag, mono, Tensor::Scalar<float>(kInf), "sample_rate must be < 2^32");
    // WAV limits: channels in [1, 65535].
    check(tag, Audio({1, 0, 70000}, {}), rate, "num_channels");
    check(tag, Audio({1, int64_t{1} << 40, 0}, {}), rate, "num_channels");
  }
  // With nothing to encode, only the rank, tag and rate checks apply (as in
  // TensorFlow).
  EXPECT_TRUE(AudioStatus(tag, Audio({0, 0, 70000}, {}),
                          Tensor::Scalar<float>(1e10f), false)
                  .ok());
  EXPECT_TRUE(AudioStatus(Tensor::FromVector<tstring>({"v"}), mono,
                          Tensor::FromVector<float>({8000}), false)
                  .ok());
}

TEST(AudioSummaryTest, V1RateAttrIsChecked) {
  OpTestCase t("AudioSummary");
  t.Attr("sample_rate", -5.0f)
      .Input(Tensor::Scalar<tstring>("t"))
      .Input(Audio({1, 1}, {0}));
  ExpectInvalid(t.Run(), "AudioSummary", "sample_rate must be > 0");
}

}  // namespace
}  // namespace runnel
