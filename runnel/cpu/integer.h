// Wrapping integer arithmetic for kernels.
//
// Note [Integer semantics]: integer arithmetic wraps (two's complement), as
// it does in TensorFlow on every real machine. Signed overflow is undefined
// behaviour in C++, so the operations below compute in an unsigned type and
// convert back (well defined since C++20). That unsigned type is never
// narrower than unsigned int: uint8/uint16 operands would otherwise promote
// to (signed) int, and e.g. 65535 * 65535 overflows int. Floating-point and
// other non-integer types (half, bfloat16, complex) use the plain operator;
// bool is not treated as an integer here.
//
// Thread safety: pure functions.
#ifndef RUNNEL_CPU_INTEGER_H_
#define RUNNEL_CPU_INTEGER_H_

#include <type_traits>

namespace runnel {
namespace cpu {

// True for the integer types the Wrap* functions wrap (not bool).
template <typename T>
inline constexpr bool kIsWrappingInt =
    std::is_integral_v<T> && !std::is_same_v<T, bool>;

// The unsigned type integer arithmetic on T is done in.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                    std::make_unsigned_t<T>>;

// a + b.
template <typename T>
inline T WrapAdd(const T& a, const T& b) {
  if constexpr (kIsWrappingInt<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) +
                          static_cast<WrapType<T>>(b));
  } else {
    return a + b;
  }
}

// a - b.
template <typename T>
inline T WrapSub(const T& a, const T& b) {
  if constexpr (kIsWrappingInt<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) -
                          static_cast<WrapType<T>>(b));
  } else {
    return a - b;
  }
}

// a * b.
template <typename T>
inline T WrapMul(const T& a, const T& b) {
  if constexpr (kIsWrappingInt<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) *
                          static_cast<WrapType<T>>(b));
  } else {
    return a * b;
  }
}

// -a (the lowest value negates to itself).
template <typename T>
inline T WrapNeg(const T& a) {
  if constexpr (kIsWrappingInt<T>) {
    return static_cast<T>(WrapType<T>(0) - static_cast<WrapType<T>>(a));
  } else {
    return -a;
  }
}

// a + b * c.
template <typename T>
inline T MulAdd(const T& a, const T& b, const T& c) {
  if constexpr (kIsWrappingInt<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) +
                          static_cast<WrapType<T>>(b) *
                              static_cast<WrapType<T>>(c));
  } else {
    return a + b * c;
  }
}

}  // namespace cpu
}  // namespace runnel

#endif  // RUNNEL_CPU_INTEGER_H_
