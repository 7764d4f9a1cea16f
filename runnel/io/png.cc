#include "runnel/io/png.h"

#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

namespace runnel {
namespace {

// Note [libpng errors and setjmp]: libpng reports an error by calling our
// error function, which must not return: it longjmps to the setjmp() in
// png_jmpbuf. A longjmp that skips the destructor of a live C++ object is
// undefined behaviour, so each function here that calls setjmp (the
// *Protected ones) holds only plain data and calls only libpng (or plain
// helpers that call libpng); every C++ object (the output string, the
// error state) is created by its caller, before setjmp, and outlives it.
// The error text is copied into a fixed buffer, since nothing may allocate
// on the way out. Our I/O callbacks turn their own failures (truncated
// input, a failed allocation) into png_error, after any C++ object in them
// is gone.

struct PngErrorState {
  char message[256] = {0};
  bool out_of_memory = false;
};

[[noreturn]] void OnPngError(png_structp png, png_const_charp msg) {
  auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
  if (state != nullptr) {
    std::snprintf(state->message, sizeof(state->message), "%s",
                  msg != nullptr ? msg : "unknown libpng error");
  }
  png_longjmp(png, 1);
}

void OnPngWarning(png_structp, png_const_charp) {}

// Frees the libpng structs however the function that made them returns.
class PngWriteGuard {
 public:
  PngWriteGuard(png_structp* png, png_infop* info) : png_(png), info_(info) {}
  ~PngWriteGuard() {
    if (*png_ != nullptr) png_destroy_write_struct(png_, info_);
  }

 private:
  png_structp* png_;
  png_infop* info_;
};

class PngReadGuard {
 public:
  PngReadGuard(png_structp* png, png_infop* info) : png_(png), info_(info) {}
  ~PngReadGuard() {
    if (*png_ != nullptr) png_destroy_read_struct(png_, info_, nullptr);
  }

 private:
  png_structp* png_;
  png_infop* info_;
};

// ---------------------------------------------------------------------------
// Encoding

void AppendToString(png_structp png, png_bytep data, size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  bool ok = true;
  try {
    out->append(reinterpret_cast<const char*>(data), length);
  } catch (...) {
    ok = false;
  }
  if (!ok) {
    static_cast<PngErrorState*>(png_get_error_ptr(png))->out_of_memory = true;
    png_error(png, "out of memory writing the PNG");
  }
}

void FlushNothing(png_structp) {}

struct PngWriteJob {
  const uint8_t* pixels;
  png_uint_32 height;
  png_uint_32 width;
  int color_type;
  size_t row_bytes;
  int compression;
};

void WriteRows(png_structp png, const PngWriteJob& job) {
  for (png_uint_32 y = 0; y < job.height; ++y) {
    png_write_row(png, job.pixels + static_cast<size_t>(y) * job.row_bytes);
  }
}

// False if libpng raised an error (its text is in the error state).
bool WritePngProtected(png_structp png, png_infop info,
                       const PngWriteJob& job) {
  if (setjmp(png_jmpbuf(png))) return false;
  // libpng's default limits (10^6 pixels a side) are below PNG's own.
  png_set_user_limits(png, kPngMaxDimension, kPngMaxDimension);
  png_set_IHDR(png, info, job.width, job.height, 8, job.color_type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (job.compression >= 0) png_set_compression_level(png, job.compression);
  png_write_info(png, info);
  WriteRows(png, job);
  png_write_end(png, nullptr);
  return true;
}

int ColorType(int channels) {
  switch (channels) {
    case 1:
      return PNG_COLOR_TYPE_GRAY;
    case 2:
      return PNG_COLOR_TYPE_GRAY_ALPHA;
    case 3:
      return PNG_COLOR_TYPE_RGB;
    default:
      return PNG_COLOR_TYPE_RGB_ALPHA;
  }
}

// ---------------------------------------------------------------------------
// Decoding

struct PngSource {
  const char* data;
  size_t size;
  size_t pos;
};

void ReadFromSource(png_structp png, png_bytep out, size_t length) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > src->size - src->pos) png_error(png, "the PNG is truncated");
  std::memcpy(out, src->data + src->pos, length);
  src->pos += length;
}

struct PngHeader {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int channels = 0;
  int bit_depth = 0;
  size_t row_bytes = 0;
  int passes = 1;
  bool too_large = false;  // Set instead of the rest past the size limit.
};

// The channels png_set_expand leaves: palette becomes RGB, and a tRNS
// chunk adds alpha to gray, RGB and palette images.
int ExpandedChannels(int color_type, bool has_trns) {
  int channels = 4;
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
      channels = 1;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
    case PNG_COLOR_TYPE_PALETTE:
      channels = 3;
      break;
    default:
      return 4;
  }
  return has_trns ? channels + 1 : channels;
}

// Reads the chunks before the image data and sets the transforms that give
// 8-bit channels; `header` describes the decoded rows. The size check comes
// before png_read_update_info, which allocates (and clears) row buffers.
bool ReadPngHeaderProtected(png_structp png, png_infop info,
                            int64_t max_decoded_bytes, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, kPngMaxDimension, kPngMaxDimension);
  png_read_info(png, info);
  header->width = png_get_image_width(png, info);
  header->height = png_get_image_height(png, info);
  // libpng has refused a zero width; the max keeps the division safe anyway.
  const int64_t row_bytes = std::max<int64_t>(
      1, int64_t{header->width} *
             ExpandedChannels(png_get_color_type(png, info),
                              png_get_valid(png, info, PNG_INFO_tRNS) != 0));
  if (max_decoded_bytes < 0 || header->height > max_decoded_bytes / row_bytes) {
    header->too_large = true;
    return true;
  }
  png_set_expand(png);  // Palette -> RGB(A), gray < 8 bits -> 8, tRNS -> alpha.
  png_set_scale_16(png);
  header->passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  header->channels = png_get_channels(png, info);
  header->bit_depth = png_get_bit_depth(png, info);
  header->row_bytes = png_get_rowbytes(png, info);
  return true;
}

struct PngRowsJob {
  uint8_t* pixels;
  png_uint_32 height;
  size_t row_bytes;
  int passes;
};

// One row at a time, pass by pass, as png_read_image does, but without an
// array of row pointers (which for a tall, narrow image would dwarf the
// pixels).
void ReadRows(png_structp png, const PngRowsJob& job) {
  for (int pass = 0; pass < job.passes; ++pass) {
    for (png_uint_32 y = 0; y < job.height; ++y) {
      png_read_row(png, job.pixels + static_cast<size_t>(y) * job.row_bytes,
                   nullptr);
    }
  }
}

bool ReadPngRowsProtected(png_structp png, const PngRowsJob& job) {
  if (setjmp(png_jmpbuf(png))) return false;
  ReadRows(png, job);
  png_read_end(png, nullptr);  // The chunks after the image, up to IEND.
  return true;
}

}  // namespace

StatusOr<std::string> EncodePng(absl::Span<const uint8_t> pixels,
                                int64_t height, int64_t width, int channels,
                                int compression) {
  if (height < 1 || height > kPngMaxDimension || width < 1 ||
      width > kPngMaxDimension) {
    return errors::InvalidArgument("PNG image size ", height, "x", width,
                                   " is outside [1, ", kPngMaxDimension,
                                   "] in a dimension");
  }
  if (channels < 1 || channels > 4) {
    return errors::InvalidArgument("PNG images have 1 to 4 channels, not ",
                                   channels);
  }
  if (compression < -1 || compression > 9) {
    return errors::InvalidArgument("PNG compression level ", compression,
                                   " is outside [-1, 9]");
  }
  const int64_t row_bytes = width * channels;  // < 2^33: no overflow.
  if (height > std::numeric_limits<int64_t>::max() / row_bytes) {
    return errors::InvalidArgument("PNG image of ", height, "x", width, "x",
                                   channels, " is too large");
  }
  if (static_cast<uint64_t>(height * row_bytes) != pixels.size()) {
    return errors::InvalidArgument("PNG image of ", height, "x", width, "x",
                                   channels, " needs ", height * row_bytes,
                                   " bytes, got ", pixels.size());
  }

  std::string out;
  PngErrorState error;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error,
                                            OnPngError, OnPngWarning);
  png_infop info = nullptr;
  PngWriteGuard guard(&png, &info);
  if (png == nullptr)
    return errors::ResourceExhausted("png_create_write_struct failed");
  info = png_create_info_struct(png);
  if (info == nullptr)
    return errors::ResourceExhausted("png_create_info_struct failed");
  png_set_write_fn(png, &out, AppendToString, FlushNothing);

  const PngWriteJob job{pixels.data(),
                        static_cast<png_uint_32>(height),
                        static_cast<png_uint_32>(width),
                        ColorType(channels),
                        static_cast<size_t>(row_bytes),
                        compression};
  if (!WritePngProtected(png, info, job)) {
    if (error.out_of_memory) {
      return errors::ResourceExhausted("encoding a ", height, "x", width,
                                       " PNG: ", error.message);
    }
    return errors::Internal("libpng failed to encode a ", height, "x", width,
                            "x", channels, " image: ", error.message);
  }
  return out;
}

StatusOr<PngImage> DecodePng(absl::string_view bytes,
                             int64_t max_decoded_bytes) {
  constexpr size_t kSignatureSize = 8;
  if (bytes.size() < kSignatureSize ||
      png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0,
                  kSignatureSize) != 0) {
    return errors::InvalidArgument("not a PNG: the ", bytes.size(),
                                   " bytes do not start with PNG's signature");
  }
  PngErrorState error;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &error,
                                           OnPngError, OnPngWarning);
  png_infop info = nullptr;
  PngReadGuard guard(&png, &info);
  if (png == nullptr)
    return errors::ResourceExhausted("png_create_read_struct failed");
  info = png_create_info_struct(png);
  if (info == nullptr)
    return errors::ResourceExhausted("png_create_info_struct failed");
  PngSource source{bytes.data(), bytes.size(), 0};
  png_set_read_fn(png, &source, ReadFromSource);

  PngHeader header;
  if (!ReadPngHeaderProtected(png, info, max_decoded_bytes, &header)) {
    return errors::InvalidArgument("invalid PNG: ", error.message);
  }
  if (header.too_large) {
    return errors::InvalidArgument(
        "PNG image of ", header.height, "x", header.width,
        " decodes to more than the limit of ", max_decoded_bytes, " bytes");
  }
  // The transforms promise these; check them before sizing the buffer.
  if (header.bit_depth != 8 || header.channels < 1 || header.channels > 4 ||
      header.row_bytes != static_cast<size_t>(header.width) * header.channels ||
      int64_t{header.height} * static_cast<int64_t>(header.row_bytes) >
          max_decoded_bytes) {
    return errors::Internal(
        "libpng's PNG transforms gave unexpected rows: ", header.channels,
        " channels of ", header.bit_depth, " bits, ", header.row_bytes,
        " bytes for width ", header.width);
  }
  const int64_t row_bytes = static_cast<int64_t>(header.row_bytes);
  const int64_t height = header.height;

  PngImage image;
  image.height = height;
  image.width = header.width;
  image.channels = header.channels;
  try {
    image.pixels.resize(static_cast<size_t>(height * row_bytes));
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("out of memory decoding a ", height, "x",
                                     header.width, " PNG");
  }
  const PngRowsJob job{reinterpret_cast<uint8_t*>(image.pixels.data()),
                       header.height, header.row_bytes, header.passes};
  if (!ReadPngRowsProtected(png, job)) {
    return errors::InvalidArgument("invalid PNG: ", error.message);
  }
  return image;
}

}  // namespace runnel
