#include "runnel/io/wav.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace runnel {
namespace {

constexpr int64_t kHeaderSize = 44;  // RIFF (12) + fmt (24) + data header (8).
constexpr int64_t kBytesPerSample = 2;
constexpr uint32_t kFormatChunkSize = 16;
constexpr uint16_t kFormatPcm = 1;
constexpr uint16_t kBitsPerSample = 16;

void PutU16(uint16_t v, char* p) {
  p[0] = static_cast<char>(v & 0xff);
  p[1] = static_cast<char>(v >> 8);
}
void PutU32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint16_t GetU16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) |
                               static_cast<uint8_t>(p[1]) << 8);
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// TensorFlow's FloatToInt16Sample; NaN (undefined there) becomes 0.
int16_t FloatToInt16Sample(float x) {
  if (std::isnan(x)) return 0;
  const float scaled = std::round(x * 32768.0f);
  return static_cast<int16_t>(std::min(std::max(scaled, -32768.0f), 32767.0f));
}

// A bounds-checked cursor over the file.
class WavReader {
 public:
  explicit WavReader(absl::string_view data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  Status Read(size_t n, const char** out, const char* what) {
    if (n > remaining()) {
      return errors::InvalidArgument("WAV truncated: ", what, " needs ", n,
                                     " bytes at offset ", pos_, ", only ",
                                     remaining(), " left");
    }
    *out = data_.data() + pos_;
    pos_ += n;
    return absl::OkStatus();
  }
  Status Skip(size_t n, const char* what) {
    const char* unused;
    return Read(n, &unused, what);
  }

 private:
  absl::string_view data_;
  size_t pos_ = 0;
};

struct WavFormat {
  uint16_t channels = 0;
  uint32_t sample_rate = 0;
  uint16_t bytes_per_frame = 0;
};

Status ParseFormatChunk(const char* p, uint32_t size, WavFormat* format) {
  if (size < kFormatChunkSize) {
    return errors::InvalidArgument("WAV format chunk of ", size,
                                   " bytes; expected at least 16");
  }
  const uint16_t encoding = GetU16(p);
  format->channels = GetU16(p + 2);
  format->sample_rate = GetU32(p + 4);
  const uint32_t bytes_per_second = GetU32(p + 8);
  format->bytes_per_frame = GetU16(p + 12);
  const uint16_t bits = GetU16(p + 14);
  if (encoding != kFormatPcm) {
    return errors::InvalidArgument("WAV encoding ", encoding,
                                   " is not PCM (1)");
  }
  if (bits != kBitsPerSample) {
    return errors::InvalidArgument("WAV of ", bits,
                                   "-bit samples; only 16-bit is read");
  }
  if (format->channels == 0) {
    return errors::InvalidArgument("WAV with 0 channels");
  }
  const uint32_t expected_frame = uint32_t{format->channels} * kBytesPerSample;
  if (format->bytes_per_frame != expected_frame) {
    return errors::InvalidArgument(
        "WAV bytes per frame ", format->bytes_per_frame, " for ",
        format->channels, " 16-bit channels; expected ", expected_frame);
  }
  // Modulo 2^32, as the encoder writes it for the largest rates.
  const uint32_t expected_rate =
      format->sample_rate * uint32_t{format->bytes_per_frame};
  if (bytes_per_second != expected_rate) {
    return errors::InvalidArgument(
        "WAV bytes per second ", bytes_per_second, " for sample rate ",
        format->sample_rate, " and ", format->bytes_per_frame,
        " bytes per frame; expected ", expected_rate);
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::string> EncodeAudioAsS16LEWav(absl::Span<const float> samples,
                                            int64_t sample_rate,
                                            int64_t num_channels,
                                            int64_t num_frames) {
  constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();
  if (sample_rate < 1 || sample_rate > kU32Max) {
    return errors::InvalidArgument("WAV sample_rate must be in (0, 2^32), got ",
                                   sample_rate);
  }
  if (num_channels < 1 || num_channels > 65535) {
    return errors::InvalidArgument(
        "WAV num_channels must be in (0, 2^16), got ", num_channels);
  }
  if (num_frames < 0) {
    return errors::InvalidArgument("WAV num_frames ", num_frames,
                                   " is negative");
  }
  // file_size = 44 + 2 * frames * channels must fit in a uint32 (the RIFF
  // size field), which also keeps every product below in range.
  const int64_t max_samples = (kU32Max - kHeaderSize) / kBytesPerSample;
  if (num_frames > max_samples / num_channels) {
    return errors::InvalidArgument(
        "WAV of ", num_frames, " frames of ", num_channels,
        " channels exceeds the format's 4 GiB size limit");
  }
  const int64_t num_samples = num_frames * num_channels;
  if (static_cast<uint64_t>(num_samples) != samples.size()) {
    return errors::InvalidArgument(
        "WAV of ", num_frames, " frames of ", num_channels, " channels needs ",
        num_samples, " samples, got ", samples.size());
  }
  const int64_t data_size = num_samples * kBytesPerSample;
  const int64_t file_size = kHeaderSize + data_size;
  const int64_t bytes_per_frame = num_channels * kBytesPerSample;

  std::string wav(static_cast<size_t>(file_size), '\0');
  char* p = wav.data();
  std::memcpy(p, "RIFF", 4);
  PutU32(static_cast<uint32_t>(file_size - 8), p + 4);
  std::memcpy(p + 8, "WAVE", 4);
  std::memcpy(p + 12, "fmt ", 4);
  PutU32(kFormatChunkSize, p + 16);
  PutU16(kFormatPcm, p + 20);
  PutU16(static_cast<uint16_t>(num_channels), p + 22);
  PutU32(static_cast<uint32_t>(sample_rate), p + 24);
  // TensorFlow writes sample_rate * bytes_per_frame truncated to 32 bits.
  PutU32(static_cast<uint32_t>(static_cast<uint64_t>(sample_rate) *
                               static_cast<uint64_t>(bytes_per_frame)),
         p + 28);
  PutU16(static_cast<uint16_t>(bytes_per_frame), p + 32);
  PutU16(kBitsPerSample, p + 34);
  std::memcpy(p + 36, "data", 4);
  PutU32(static_cast<uint32_t>(data_size), p + 40);
  char* out = p + kHeaderSize;
  for (int64_t i = 0; i < num_samples; ++i) {
    PutU16(static_cast<uint16_t>(FloatToInt16Sample(samples[i])),
           out + i * kBytesPerSample);
  }
  return wav;
}

StatusOr<DecodedWav> DecodeWav(absl::string_view wav) {
  WavReader r(wav);
  const char* p;
  RETURN_IF_ERROR(r.Read(12, &p, "the RIFF header"));
  if (std::memcmp(p, "RIFF", 4) != 0 || std::memcmp(p + 8, "WAVE", 4) != 0) {
    return errors::InvalidArgument(
        "not a WAV: no RIFF/WAVE header in the first 12 bytes");
  }
  bool have_format = false, have_data = false;
  WavFormat format;
  DecodedWav out;
  while (r.remaining() > 0) {
    RETURN_IF_ERROR(r.Read(8, &p, "a chunk header"));
    const std::string id(p, 4);
    const uint32_t size = GetU32(p + 4);
    const char* body;
    RETURN_IF_ERROR(r.Read(size, &body, "a chunk"));
    if (id == "fmt ") {
      if (have_format)
        return errors::InvalidArgument("WAV with two fmt chunks");
      RETURN_IF_ERROR(ParseFormatChunk(body, size, &format));
      have_format = true;
    } else if (id == "data") {
      if (!have_format) {
        return errors::InvalidArgument("WAV data chunk before the fmt chunk");
      }
      if (have_data) {
        return errors::InvalidArgument("WAV with two data chunks");
      }
      have_data = true;
      out.sample_rate = format.sample_rate;
      out.num_channels = format.channels;
      out.num_frames = size / format.bytes_per_frame;
      const int64_t n = out.num_frames * format.channels;
      out.samples.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const auto s = static_cast<int16_t>(GetU16(body + 2 * i));
        out.samples[i] = static_cast<float>(s) / 32768.0f;
      }
    }
    // RIFF pads chunks of odd size to even; a file may end without the pad.
    if (size % 2 == 1 && r.remaining() > 0) RETURN_IF_ERROR(r.Skip(1, "pad"));
  }
  if (!have_data) return errors::InvalidArgument("WAV without a data chunk");
  return out;
}

}  // namespace runnel
