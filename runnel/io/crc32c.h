// CRC-32C (Castagnoli), as TFRecord files and tensor bundles use it, and
// the "masked" form they store (FORMATS.md: a CRC of data that itself holds
// CRCs is rotated and offset so it does not look like one).
//
// Debian 12's Abseil predates absl/crc and Google's crc32c library is not
// packaged there, so this is a small implementation over the SSE4.2 CRC32
// instruction (every x86-64-v2 or later CPU has it; we build for v3).
#ifndef RUNNEL_IO_CRC32C_H_
#define RUNNEL_IO_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace runnel::crc32c {

// The CRC of data[0, n) continued from `init_crc` (the CRC of what came
// before; 0 for none).
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) {
  return Extend(0, s.data(), s.size());
}

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// Rotate right by 15 bits and add a constant.
inline uint32_t Mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

inline uint32_t Unmask(uint32_t masked_crc) {
  const uint32_t rot = masked_crc - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace runnel::crc32c

#endif  // RUNNEL_IO_CRC32C_H_
