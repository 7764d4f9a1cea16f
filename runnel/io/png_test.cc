#include "runnel/io/png.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace runnel {
namespace {

std::vector<uint8_t> RandomPixels(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

std::string AsString(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  return uint32_t{static_cast<uint8_t>(s[at])} << 24 |
         uint32_t{static_cast<uint8_t>(s[at + 1])} << 16 |
         uint32_t{static_cast<uint8_t>(s[at + 2])} << 8 |
         uint32_t{static_cast<uint8_t>(s[at + 3])};
}

// PNG's chunk CRC is CRC-32 (zlib's), not CRC-32C.
uint32_t Crc32(const std::string& s) {
  uint32_t crc = 0xffffffff;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc;
}

std::string Chunk(const std::string& type, const std::string& data) {
  auto be32 = [](uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (24 - 8 * i));
    return s;
  };
  return be32(static_cast<uint32_t>(data.size())) + type + data +
         be32(Crc32(type + data));
}

TEST(PngTest, RoundTripsEveryChannelCount) {
  for (int channels = 1; channels <= 4; ++channels) {
    for (auto [h, w] : {std::pair{1, 1}, {3, 5}, {17, 2}, {64, 33}}) {
      SCOPED_TRACE(testing::Message() << h << "x" << w << "x" << channels);
      const auto pixels = RandomPixels(size_t(h) * w * channels, h * 7 + w);
      auto png = EncodePng(pixels, h, w, channels);
      ASSERT_TRUE(png.ok()) << png.status();
      // Signature, then IHDR with the size, bit depth 8 and the colour type.
      ASSERT_GE(png->size(), 33u);
      EXPECT_EQ(png->substr(0, 8), "\x89PNG\r\n\x1a\n");
      EXPECT_EQ(png->substr(12, 4), "IHDR");
      EXPECT_EQ(BigEndian32(*png, 16), uint32_t(w));
      EXPECT_EQ(BigEndian32(*png, 20), uint32_t(h));
      EXPECT_EQ((*png)[24], 8);
      const int kColorTypes[] = {0, 4, 2, 6};
      EXPECT_EQ((*png)[25], kColorTypes[channels - 1]);
      EXPECT_EQ(png->substr(png->size() - 8, 4), "IEND");

      auto decoded = DecodePng(*png);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_EQ(decoded->height, h);
      EXPECT_EQ(decoded->width, w);
      EXPECT_EQ(decoded->channels, channels);
      EXPECT_EQ(decoded->pixels, AsString(pixels));
    }
  }
}

TEST(PngTest, CompressionLevelsAllDecodeTheSame) {
  std::vector<uint8_t> pixels(40 * 40 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i / 50);
  size_t stored_size = 0, best_size = 0;
  for (int level : {-1, 0, 1, 6, 9}) {
    auto png = EncodePng(pixels, 40, 40, 3, level);
    ASSERT_TRUE(png.ok()) << png.status();
    if (level == 0) stored_size = png->size();
    if (level == 9) best_size = png->size();
    auto decoded = DecodePng(*png);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->pixels, AsString(pixels)) << "level " << level;
  }
  EXPECT_LT(best_size, stored_size);  // Smooth data compresses.
}

TEST(PngTest, WideImageBeyondLibpngsDefaultLimit) {
  // libpng's default user limit is 10^6 pixels a side; PNG allows 2^31 - 1.
  const int64_t w = 1000001;
  std::vector<uint8_t> pixels(w, 7);
  pixels[w - 1] = 200;
  auto png = EncodePng(pixels, 1, w, 1);
  ASSERT_TRUE(png.ok()) << png.status();
  auto decoded = DecodePng(*png);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->width, w);
  EXPECT_EQ(decoded->pixels, AsString(pixels));
}

TEST(PngTest, EncodeRejectsBadArguments) {
  const std::vector<uint8_t> px(12, 0);
  auto code = [](const StatusOr<std::string>& s) { return s.status().code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_TRUE(EncodePng(px, 2, 2, 3).ok());
  EXPECT_EQ(code(EncodePng(px, 2, 2, 0)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, 2, 2, 5)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, 0, 2, 3)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, 2, 0, 3)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, -2, -2, 3)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, 2, 2, 2)), kInvalid);  // Size mismatch.
  EXPECT_EQ(code(EncodePng(px, 2, 2, 3, 10)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, 2, 2, 3, -2)), kInvalid);
  // Sizes whose product overflows 64 bits, or exceed PNG's limit.
  EXPECT_EQ(code(EncodePng(px, kPngMaxDimension, kPngMaxDimension, 4)),
            kInvalid);
  EXPECT_EQ(code(EncodePng(px, kPngMaxDimension + 1, 1, 1)), kInvalid);
  EXPECT_EQ(code(EncodePng(px, int64_t{1} << 62, int64_t{1} << 62, 4)),
            kInvalid);
  EXPECT_EQ(code(EncodePng({}, 1, 1, 1)), kInvalid);
}

// Chunk surgery on a valid PNG: the decoder must answer InvalidArgument,
// never crash, whatever the bytes.
class PngCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pixels_ = RandomPixels(20 * 30 * 4, 1);
    auto png = EncodePng(pixels_, 20, 30, 4);
    ASSERT_TRUE(png.ok());
    png_ = *png;
  }
  static void ExpectInvalid(const std::string& bytes) {
    auto d = DecodePng(bytes);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument)
        << d.status();
  }
  std::vector<uint8_t> pixels_;
  std::string png_;
};

TEST_F(PngCorruptionTest, NotAPng) {
  ExpectInvalid("");
  ExpectInvalid("\x89PNG");
  ExpectInvalid("GIF89a and then some more bytes");
  ExpectInvalid(std::string(100, '\0'));
  auto d = DecodePng("hello world");
  EXPECT_NE(d.status().message().find("signature"), std::string::npos)
      << d.status();
}

TEST_F(PngCorruptionTest, EveryTruncation) {
  for (size_t n = 0; n < png_.size(); ++n) {
    SCOPED_TRACE(n);
    ExpectInvalid(png_.substr(0, n));
  }
  ASSERT_TRUE(DecodePng(png_).ok());
}

TEST_F(PngCorruptionTest, FlippedBytesNeverCrash) {
  // A flipped bit in a critical chunk fails its CRC; everywhere else the
  // result may decode or fail, but must return.
  int failures = 0;
  for (size_t i = 0; i < png_.size(); ++i) {
    std::string bad = png_;
    bad[i] ^= 0x10;
    auto d = DecodePng(bad);
    if (!d.ok()) {
      ++failures;
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument)
          << "byte " << i << ": " << d.status();
    }
  }
  EXPECT_GT(failures, static_cast<int>(png_.size()) / 2);
}

TEST_F(PngCorruptionTest, CrcErrorNamesTheProblem) {
  std::string bad = png_;
  bad[29] ^= 1;  // IHDR's CRC.
  auto d = DecodePng(bad);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("CRC"), std::string::npos) << d.status();
}

// A hand-made PNG whose IHDR declares a huge image (with a correct CRC):
// the decoder refuses to allocate for it.
TEST_F(PngCorruptionTest, HugeDeclaredSizeIsRefused) {
  // IHDR: width 2^31 - 1, height 2^31 - 1, depth 8, RGBA.
  std::string ihdr("\x7f\xff\xff\xff\x7f\xff\xff\xff\x08\x06\x00\x00\x00", 13);
  std::string bytes = png_.substr(0, 8) + Chunk("IHDR", ihdr) +
                      png_.substr(33);  // The original IDAT and IEND.
  auto d = DecodePng(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("limit"), std::string::npos)
      << d.status();
  // A small image with a small limit, too.
  d = DecodePng(png_, 100);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(DecodePng(png_, 20 * 30 * 4).ok());
}

// A zlib stream holding `raw` in one stored (uncompressed) block.
std::string StoredZlib(const std::string& raw) {
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  const uint32_t adler = b << 16 | a;
  const auto n = static_cast<uint16_t>(raw.size());
  std::string z("\x78\x01\x01", 3);  // Header, then a final stored block.
  for (uint16_t v : {n, static_cast<uint16_t>(~n)}) {
    z += static_cast<char>(v & 0xff);
    z += static_cast<char>(v >> 8);
  }
  z += raw;
  for (int i = 3; i >= 0; --i) z += static_cast<char>(adler >> (8 * i));
  return z;
}

const std::string kSignature("\x89PNG\r\n\x1a\n", 8);

TEST(PngTest, DecodesPaletteAndTransparencyToRgbOrRgba) {
  // 2x1, palette, bit depth 8: entries red and green, green half opaque.
  const std::string ihdr("\x00\x00\x00\x02\x00\x00\x00\x01\x08\x03\x00\x00\x00",
                         13);
  const std::string plte("\xff\x00\x00\x00\xff\x00", 6);
  const std::string trns("\xff\x80", 2);
  const std::string idat = StoredZlib(std::string("\x00\x00\x01", 3));
  auto d =
      DecodePng(kSignature + Chunk("IHDR", ihdr) + Chunk("PLTE", plte) +
                Chunk("tRNS", trns) + Chunk("IDAT", idat) + Chunk("IEND", ""));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->channels, 4);
  EXPECT_EQ(d->pixels, std::string("\xff\x00\x00\xff\x00\xff\x00\x80", 8));

  d = DecodePng(kSignature + Chunk("IHDR", ihdr) + Chunk("PLTE", plte) +
                Chunk("IDAT", idat) + Chunk("IEND", ""));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->channels, 3);
  EXPECT_EQ(d->pixels, std::string("\xff\x00\x00\x00\xff\x00", 6));

  // An index past the palette's end: libpng rejects it or maps it to
  // black; either way nothing is read out of bounds.
  d = DecodePng(kSignature + Chunk("IHDR", ihdr) + Chunk("PLTE", plte) +
                Chunk("IDAT", StoredZlib(std::string("\x00\x00\x05", 3))) +
                Chunk("IEND", ""));
  if (d.ok()) {
    EXPECT_EQ(d->pixels.size(), 6u);
  }

  // A palette image without PLTE is invalid.
  d = DecodePng(kSignature + Chunk("IHDR", ihdr) + Chunk("IDAT", idat) +
                Chunk("IEND", ""));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PngTest, SixteenBitGrayIsScaledToEightBits) {
  // 2x1 gray, 16 bits: 0xffff and 0x8080.
  const std::string ihdr("\x00\x00\x00\x02\x00\x00\x00\x01\x10\x00\x00\x00\x00",
                         13);
  auto d = DecodePng(
      kSignature + Chunk("IHDR", ihdr) +
      Chunk("IDAT", StoredZlib(std::string("\x00\xff\xff\x80\x80", 5))) +
      Chunk("IEND", ""));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->channels, 1);
  EXPECT_EQ(d->pixels, std::string("\xff\x80", 2));
}

TEST(PngTest, DecodesAdam7Interlacing) {
  // 2x2 gray, interlaced: pass 1 holds (0,0), pass 6 (0,1), pass 7 row 1.
  const std::string ihdr("\x00\x00\x00\x02\x00\x00\x00\x02\x08\x00\x00\x00\x01",
                         13);
  auto d = DecodePng(kSignature + Chunk("IHDR", ihdr) +
                     Chunk("IDAT", StoredZlib(std::string(
                                       "\x00\x0a\x00\x14\x00\x1e\x28", 7))) +
                     Chunk("IEND", ""));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->pixels, "\x0a\x14\x1e\x28");
}

TEST(PngTest, TooLittleImageDataIsInvalid) {
  // 2x2 gray 8-bit needs 2 rows of 3 bytes; give one.
  const std::string ihdr("\x00\x00\x00\x02\x00\x00\x00\x02\x08\x00\x00\x00\x00",
                         13);
  auto d = DecodePng(kSignature + Chunk("IHDR", ihdr) +
                     Chunk("IDAT", StoredZlib(std::string("\x00\x01\x02", 3))) +
                     Chunk("IEND", ""));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument)
      << d.status();
}

}  // namespace
}  // namespace runnel
