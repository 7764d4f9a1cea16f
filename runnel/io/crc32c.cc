#include "runnel/io/crc32c.h"

#include <nmmintrin.h>

#include <cstring>

namespace runnel::crc32c {

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  uint64_t crc = init_crc ^ 0xffffffffu;
  const char* p = data;
  const char* end = data + n;
  // Byte steps up to 8-byte alignment, then 8 bytes per instruction.
  while (p != end && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = _mm_crc32_u8(static_cast<uint32_t>(crc), static_cast<uint8_t>(*p++));
  }
  while (end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
    p += 8;
  }
  while (p != end) {
    crc = _mm_crc32_u8(static_cast<uint32_t>(crc), static_cast<uint8_t>(*p++));
  }
  return static_cast<uint32_t>(crc) ^ 0xffffffffu;
}

}  // namespace runnel::crc32c
