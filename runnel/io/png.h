// PNG encoding and decoding of 8-bit images, over Debian's libpng. Image
// summaries (ImageSummary) encode with it; tests and image readers decode.
//
// Pixels are row-major HWC bytes: height rows of width pixels of `channels`
// bytes each, with channels 1 (grayscale), 2 (grayscale + alpha), 3 (RGB) or
// 4 (RGBA) — the PNG colour types, and Summary.Image's colorspace values.
//
// No input, however malformed, crashes or aborts: libpng's errors (which it
// raises with longjmp) are caught inside these functions and come back as a
// Status. Every function is thread-safe; each call uses its own libpng state.
#ifndef RUNNEL_IO_PNG_H_
#define RUNNEL_IO_PNG_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runnel/base/status.h"

namespace runnel {

// The largest width or height PNG can hold (2^31 - 1).
inline constexpr int64_t kPngMaxDimension = 0x7fffffff;

// Encodes `pixels` (height * width * channels bytes, HWC) as a PNG with 8
// bits per channel. `compression` is zlib's level, 0..9, or -1 for zlib's
// default. InvalidArgument if height or width is outside [1,
// kPngMaxDimension], channels outside [1, 4], the compression level outside
// [-1, 9], or pixels.size() is not height * width * channels; Internal if
// libpng fails anyway; ResourceExhausted if the output cannot be allocated.
StatusOr<std::string> EncodePng(absl::Span<const uint8_t> pixels,
                                int64_t height, int64_t width, int channels,
                                int compression = -1);

struct PngImage {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;    // 1..4, as stored (see DecodePng).
  std::string pixels;  // height * width * channels bytes, HWC.
};

// The default cap on DecodePng's output: a few header bytes can declare an
// image of terabytes, so the decoder refuses to allocate more than this.
inline constexpr int64_t kPngDefaultMaxDecodedBytes = int64_t{1} << 30;

// Decodes a PNG to 8 bits per channel, keeping its channel count: grayscale
// 1, grayscale + alpha 2, RGB 3, RGBA 4. Palette images become RGB (RGBA if
// they have transparency), a tRNS chunk on grayscale or RGB adds an alpha
// channel, bit depths below 8 are expanded and 16-bit channels are scaled to
// 8 bits; interlaced images are de-interlaced. InvalidArgument for bytes
// that are not a valid, complete PNG (bad signature, bad CRC of a critical
// chunk, truncation, corrupt data) and for images whose decoded size exceeds
// `max_decoded_bytes`.
StatusOr<PngImage> DecodePng(
    absl::string_view png,
    int64_t max_decoded_bytes = kPngDefaultMaxDecodedBytes);

}  // namespace runnel

#endif  // RUNNEL_IO_PNG_H_
