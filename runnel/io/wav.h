// WAV (RIFF) files of 16-bit little-endian PCM, as TensorFlow's
// core/lib/wav/wav_io writes them for audio summaries (AudioSummary): a
// 44-byte header (RIFF chunk, 16-byte "fmt " chunk, "data" chunk header)
// followed by the interleaved samples.
//
// Samples are floats in [-1, 1], frame-major: sample c of frame f is
// samples[f * num_channels + c]. A float x is stored as round(x * 32768)
// clamped to [-32768, 32767] (so values outside [-1, 1] clip; NaN is stored
// as 0), and read back as s / 32768.
//
// All functions are pure and thread-safe.
#ifndef RUNNEL_IO_WAV_H_
#define RUNNEL_IO_WAV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runnel/base/status.h"

namespace runnel {

// Encodes `samples` (num_frames * num_channels floats) as a 16-bit PCM WAV
// at `sample_rate` frames per second. InvalidArgument if sample_rate is
// outside [1, 2^32 - 1], num_channels outside [1, 65535], samples.size()
// is not num_frames * num_channels, or the file would exceed WAV's 4 GiB
// (2^32 - 1 bytes) limit.
StatusOr<std::string> EncodeAudioAsS16LEWav(absl::Span<const float> samples,
                                            int64_t sample_rate,
                                            int64_t num_channels,
                                            int64_t num_frames);

struct DecodedWav {
  uint32_t sample_rate = 0;
  int num_channels = 0;
  int64_t num_frames = 0;
  std::vector<float> samples;  // num_frames * num_channels, frame-major.
};

// Decodes a RIFF/WAVE file of 16-bit PCM: the "fmt " chunk must come before
// the "data" chunk; other chunks are skipped (with RIFF's padding to even
// sizes). A data chunk that is not a whole number of frames is truncated to
// whole frames. InvalidArgument for anything else: other encodings or bit
// depths, inconsistent header fields, truncation, a missing or repeated
// chunk.
StatusOr<DecodedWav> DecodeWav(absl::string_view wav);

}  // namespace runnel

#endif  // RUNNEL_IO_WAV_H_
