// Element types for kernels that move values without looking at them
// (gather, scatter-update, pad, reverse, broadcast): each POD dtype moves as
// an opaque word of its size, so a kernel is compiled once per element size
// rather than once per dtype; strings move as tstring. The words are
// declared may_alias, so reading a float buffer through Word<uint32_t> is
// well defined. (slicing_ops.cc keeps its own copy: Note [Moving words].)
#ifndef RUNNEL_OPS_MOVED_WORDS_H_
#define RUNNEL_OPS_MOVED_WORDS_H_

#include <cstdint>
#include <type_traits>

#include "runnel/framework/tensor.h"

namespace runnel {
namespace moved {

template <typename Bits>
struct [[gnu::may_alias]] Word {
  Bits v;
};
struct [[gnu::may_alias]] Word16 {
  uint64_t v[2];
};

template <typename T>
using PodWord = std::conditional_t<
    sizeof(T) == 1, Word<uint8_t>,
    std::conditional_t<
        sizeof(T) == 2, Word<uint16_t>,
        std::conditional_t<
            sizeof(T) == 4, Word<uint32_t>,
            std::conditional_t<sizeof(T) == 8, Word<uint64_t>, Word16>>>>;
// The type a kernel for dtype T moves.
template <typename T>
using Moved =
    std::conditional_t<std::is_same_v<T, tstring>, tstring, PodWord<T>>;

template <typename W>
const W* InData(const Tensor& t) {
  return static_cast<const W*>(t.raw_data());
}
template <typename W>
W* OutData(Tensor* t) {
  return static_cast<W*>(t->raw_data());
}

// Rough cost in ns of moving one element, for ParallelRange.
template <typename W>
constexpr int64_t MoveCostNs() {
  return std::is_same_v<W, tstring> ? 40 : (sizeof(W) <= 8 ? 1 : 2);
}

}  // namespace moved
}  // namespace runnel

// Every dtype "alltypes" names, for kernel registration.
#define RUNNEL_FOR_MOVED_TYPES(M) \
  M(bool)                         \
  M(half)                         \
  M(bfloat16)                     \
  M(float)                        \
  M(double)                       \
  M(int8_t)                       \
  M(int16_t)                      \
  M(int32_t)                      \
  M(int64_t)                      \
  M(uint8_t)                      \
  M(uint16_t)                     \
  M(uint32_t)                     \
  M(uint64_t)                     \
  M(complex64)                    \
  M(complex128)                   \
  M(tstring)

#endif  // RUNNEL_OPS_MOVED_WORDS_H_
