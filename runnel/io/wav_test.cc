#include "runnel/io/wav.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace runnel {
namespace {

uint32_t U32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<uint8_t>(s[at + i])} << (8 * i);
  return v;
}
uint16_t U16(const std::string& s, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) |
                               static_cast<uint8_t>(s[at + 1]) << 8);
}
int16_t Sample(const std::string& wav, size_t i) {
  return static_cast<int16_t>(U16(wav, 44 + 2 * i));
}

TEST(WavTest, HeaderFieldsAsTensorFlowWritesThem) {
  // 3 frames of 2 channels at 44100 Hz.
  const std::vector<float> s = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 0.25f};
  auto wav = EncodeAudioAsS16LEWav(s, 44100, 2, 3);
  ASSERT_TRUE(wav.ok()) << wav.status();
  ASSERT_EQ(wav->size(), 44u + 12u);
  EXPECT_EQ(wav->substr(0, 4), "RIFF");
  EXPECT_EQ(U32(*wav, 4), 56u - 8u);
  EXPECT_EQ(wav->substr(8, 4), "WAVE");
  EXPECT_EQ(wav->substr(12, 4), "fmt ");
  EXPECT_EQ(U32(*wav, 16), 16u);     // Format chunk size.
  EXPECT_EQ(U16(*wav, 20), 1);       // PCM.
  EXPECT_EQ(U16(*wav, 22), 2);       // Channels.
  EXPECT_EQ(U32(*wav, 24), 44100u);  // Sample rate.
  EXPECT_EQ(U32(*wav, 28), 44100u * 4);
  EXPECT_EQ(U16(*wav, 32), 4);   // Bytes per frame.
  EXPECT_EQ(U16(*wav, 34), 16);  // Bits per sample.
  EXPECT_EQ(wav->substr(36, 4), "data");
  EXPECT_EQ(U32(*wav, 40), 12u);
  const int16_t expected[] = {0, 16384, -16384, 32767, -32768, 8192};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Sample(*wav, i), expected[i]) << i;
}

TEST(WavTest, SamplesRoundAndClip) {
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> s = {2.0f,  -3.0f, kInf,   -kInf, kNaN,
                                1e-5f, 3e-5f, -2e-5f, 0.999f};
  auto wav = EncodeAudioAsS16LEWav(s, 8000, 1, s.size());
  ASSERT_TRUE(wav.ok()) << wav.status();
  // round(x * 32768), clamped: 1e-5 * 32768 = 0.33 -> 0, 3e-5 -> 0.98 -> 1,
  // -2e-5 -> -0.66 -> -1, 0.999 -> 32735.2 -> 32735.
  const int16_t expected[] = {32767, -32768, 32767, -32768, 0, 0, 1, -1, 32735};
  for (size_t i = 0; i < s.size(); ++i)
    EXPECT_EQ(Sample(*wav, i), expected[i]) << i;
}

TEST(WavTest, RoundTrip) {
  std::vector<float> s;
  for (int f = 0; f < 100; ++f) {
    for (int c = 0; c < 3; ++c) s.push_back(std::sin(0.1f * f + c));
  }
  auto wav = EncodeAudioAsS16LEWav(s, 16000, 3, 100);
  ASSERT_TRUE(wav.ok()) << wav.status();
  auto d = DecodeWav(*wav);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->sample_rate, 16000u);
  EXPECT_EQ(d->num_channels, 3);
  EXPECT_EQ(d->num_frames, 100);
  ASSERT_EQ(d->samples.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_NEAR(d->samples[i], s[i], 1.0 / 32768) << i;
    // Exactly s16 / 32768.
    EXPECT_EQ(d->samples[i], std::round(s[i] * 32768.0f) / 32768.0f) << i;
  }
}

TEST(WavTest, EmptyAudioIsAHeaderOnly) {
  auto wav = EncodeAudioAsS16LEWav({}, 1, 1, 0);
  ASSERT_TRUE(wav.ok()) << wav.status();
  EXPECT_EQ(wav->size(), 44u);
  auto d = DecodeWav(*wav);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->num_frames, 0);
  EXPECT_TRUE(d->samples.empty());
}

TEST(WavTest, EncodeRejectsBadArguments) {
  const std::vector<float> s(6, 0.0f);
  auto code = [](const StatusOr<std::string>& r) { return r.status().code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_TRUE(EncodeAudioAsS16LEWav(s, 1, 2, 3).ok());
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 0, 2, 3)), kInvalid);
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, -5, 2, 3)), kInvalid);
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, int64_t{1} << 32, 2, 3)), kInvalid);
  EXPECT_TRUE(EncodeAudioAsS16LEWav(s, (int64_t{1} << 32) - 1, 2, 3).ok());
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 8000, 0, 3)), kInvalid);
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 8000, 65536, 0)), kInvalid);
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 8000, 2, -3)), kInvalid);
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 8000, 3, 3)), kInvalid);  // Size.
  // More than 4 GiB of samples, and products that overflow 64 bits.
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 8000, 1, int64_t{1} << 31)),
            kInvalid);
  EXPECT_EQ(code(EncodeAudioAsS16LEWav(s, 8000, 65535, int64_t{1} << 62)),
            kInvalid);
}

TEST(WavTest, DecodeRejectsMalformedFiles) {
  const std::vector<float> s = {0.1f, 0.2f, 0.3f, 0.4f};
  auto good = EncodeAudioAsS16LEWav(s, 8000, 2, 2);
  ASSERT_TRUE(good.ok());
  auto expect_invalid = [](const std::string& bytes) {
    auto d = DecodeWav(bytes);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument)
        << d.status();
  };
  for (size_t n = 0; n < good->size(); ++n) {
    SCOPED_TRACE(n);  // At 36: cut after the fmt chunk, so no data chunk.
    expect_invalid(good->substr(0, n));
  }
  auto patched = [&](size_t at, const std::string& bytes) {
    std::string w = *good;
    w.replace(at, bytes.size(), bytes);
    return w;
  };
  expect_invalid(patched(0, "RIFX"));
  expect_invalid(patched(8, "WAVX"));
  expect_invalid(patched(20, std::string("\x03\x00", 2)));  // Float format.
  expect_invalid(patched(34, std::string("\x08\x00", 2)));  // 8-bit.
  expect_invalid(patched(22, std::string("\x00\x00", 2)));  // 0 channels.
  expect_invalid(patched(32, std::string("\x02\x00", 2)));  // Bytes/frame.
  expect_invalid(patched(28, std::string("\x00\x00\x00\x00", 4)));
  expect_invalid(patched(40, std::string("\xff\xff\xff\x7f", 4)));  // Size.
  expect_invalid(patched(12, "data"));       // Data before fmt.
  expect_invalid(*good + good->substr(36));  // Two data chunks.
}

TEST(WavTest, DecodeSkipsOtherChunksAndPartialFrames) {
  const std::vector<float> s = {0.5f, -0.5f, 0.25f, -0.25f};
  auto good = EncodeAudioAsS16LEWav(s, 22050, 2, 2);
  ASSERT_TRUE(good.ok());
  // A LIST chunk of odd size (padded) between fmt and data, and a data chunk
  // with one extra sample (half a frame).
  std::string w = good->substr(0, 36);
  w += std::string(
      "LIST\x03\x00\x00\x00"
      "abc\x00",
      12);
  w += std::string("data\x0a\x00\x00\x00", 8);
  w += good->substr(44);
  w += std::string("\x01\x00", 2);
  auto d = DecodeWav(w);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->num_frames, 2);
  EXPECT_EQ(d->samples, (std::vector<float>{0.5f, -0.5f, 0.25f, -0.25f}));
}

}  // namespace
}  // namespace runnel
