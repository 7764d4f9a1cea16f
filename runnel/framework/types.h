// DataType (TensorFlow's enum values, from proto/types.proto) and the C++
// types behind them.
#ifndef RUNNEL_FRAMEWORK_TYPES_H_
#define RUNNEL_FRAMEWORK_TYPES_H_

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/types.pb.h"

namespace runnel {

// 16-bit floats are stored, copied and converted; arithmetic kernels work in
// float and double.
struct half {
  uint16_t bits = 0;
};
struct bfloat16 {
  uint16_t bits = 0;
};
float HalfToFloat(half h);
half FloatToHalf(float f);
inline float BFloat16ToFloat(bfloat16 b) {
  uint32_t u = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bfloat16 FloatToBFloat16(float f);  // Round to nearest even.

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;
using tstring = std::string;

// Devices.
inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

// "float", "int32", "float_ref", ... (TensorFlow's spellings).
std::string DataTypeString(DataType dt);
// True if `dt` is one of TensorFlow's DataType values that Runnel knows
// (including DT_INVALID when allow_invalid, and the _REF forms when
// allow_ref). Graph import, TensorProto decoding and checkpoint readers call
// this on every dtype they read from untrusted bytes.
bool DataTypeIsKnown(DataType dt, bool allow_ref = true,
                     bool allow_invalid = false);
// Parses "float" / "DT_FLOAT" / "float32" style names.
bool DataTypeFromString(absl::string_view s, DataType* dt);
// Bytes per element; 0 for DT_STRING, DT_RESOURCE, DT_VARIANT and invalid.
int DataTypeSize(DataType dt);

// TensorFlow's reference types are the base types plus 100 (101..199 here;
// any other value is not a reference type, so out-of-range values from
// untrusted protos never recurse or overflow).
inline bool IsRefType(DataType dt) { return dt > 100 && dt < 200; }
inline DataType MakeRefType(DataType dt) {
  return IsRefType(dt) ? dt : static_cast<DataType>(dt + 100);
}
inline DataType BaseType(DataType dt) {
  return IsRefType(dt) ? static_cast<DataType>(dt - 100) : dt;
}
// True for types whose tensors are plain bytes (memcpy-able).
bool DataTypeIsPod(DataType dt);
bool DataTypeIsFloating(DataType dt);  // half, bfloat16, float, double
bool DataTypeIsInteger(DataType dt);   // signed and unsigned ints
bool DataTypeIsComplex(DataType dt);

// Named type sets used in op registrations ("numbertype", "realnumbertype",
// ...).
const std::vector<DataType>& NumberTypes();
const std::vector<DataType>& RealNumberTypes();
const std::vector<DataType>& AllTypes();

// Compile-time mapping between C++ types and DataType.
template <typename T>
struct DataTypeToEnum {};
template <DataType D>
struct EnumToDataType {};

#define RUNNEL_MATCH_TYPE_AND_ENUM(TYPE, ENUM) \
  template <>                                  \
  struct DataTypeToEnum<TYPE> {                \
    static constexpr DataType value = ENUM;    \
  };                                           \
  template <>                                  \
  struct EnumToDataType<ENUM> {                \
    using Type = TYPE;                         \
  }
RUNNEL_MATCH_TYPE_AND_ENUM(float, DT_FLOAT);
RUNNEL_MATCH_TYPE_AND_ENUM(double, DT_DOUBLE);
RUNNEL_MATCH_TYPE_AND_ENUM(int32_t, DT_INT32);
RUNNEL_MATCH_TYPE_AND_ENUM(uint32_t, DT_UINT32);
RUNNEL_MATCH_TYPE_AND_ENUM(uint16_t, DT_UINT16);
RUNNEL_MATCH_TYPE_AND_ENUM(uint8_t, DT_UINT8);
RUNNEL_MATCH_TYPE_AND_ENUM(int16_t, DT_INT16);
RUNNEL_MATCH_TYPE_AND_ENUM(int8_t, DT_INT8);
RUNNEL_MATCH_TYPE_AND_ENUM(tstring, DT_STRING);
RUNNEL_MATCH_TYPE_AND_ENUM(complex64, DT_COMPLEX64);
RUNNEL_MATCH_TYPE_AND_ENUM(complex128, DT_COMPLEX128);
RUNNEL_MATCH_TYPE_AND_ENUM(int64_t, DT_INT64);
RUNNEL_MATCH_TYPE_AND_ENUM(uint64_t, DT_UINT64);
RUNNEL_MATCH_TYPE_AND_ENUM(bool, DT_BOOL);
RUNNEL_MATCH_TYPE_AND_ENUM(half, DT_HALF);
RUNNEL_MATCH_TYPE_AND_ENUM(bfloat16, DT_BFLOAT16);
#undef RUNNEL_MATCH_TYPE_AND_ENUM

// Calls `fn.template operator()<T>()` (a generic lambda taking a type tag) for
// the C++ type of `dt`, e.g.
//   DispatchPod(dt, [&]<typename T>() { Fill<T>(...); });
// Returns false (without calling) for types outside the set.
template <typename Fn>
bool DispatchNumeric(DataType dt, Fn&& fn) {
  switch (dt) {
    case DT_FLOAT:
      fn.template operator()<float>();
      return true;
    case DT_DOUBLE:
      fn.template operator()<double>();
      return true;
    case DT_INT32:
      fn.template operator()<int32_t>();
      return true;
    case DT_INT64:
      fn.template operator()<int64_t>();
      return true;
    case DT_UINT8:
      fn.template operator()<uint8_t>();
      return true;
    case DT_INT8:
      fn.template operator()<int8_t>();
      return true;
    case DT_INT16:
      fn.template operator()<int16_t>();
      return true;
    case DT_UINT16:
      fn.template operator()<uint16_t>();
      return true;
    case DT_UINT32:
      fn.template operator()<uint32_t>();
      return true;
    case DT_UINT64:
      fn.template operator()<uint64_t>();
      return true;
    default:
      return false;
  }
}
// DispatchNumeric plus bool, half, bfloat16, complex: every POD type.
template <typename Fn>
bool DispatchPod(DataType dt, Fn&& fn) {
  switch (dt) {
    case DT_BOOL:
      fn.template operator()<bool>();
      return true;
    case DT_HALF:
      fn.template operator()<half>();
      return true;
    case DT_BFLOAT16:
      fn.template operator()<bfloat16>();
      return true;
    case DT_COMPLEX64:
      fn.template operator()<complex64>();
      return true;
    case DT_COMPLEX128:
      fn.template operator()<complex128>();
      return true;
    default:
      return DispatchNumeric(dt, fn);
  }
}
// DispatchPod plus string.
template <typename Fn>
bool DispatchAll(DataType dt, Fn&& fn) {
  if (dt == DT_STRING) {
    fn.template operator()<tstring>();
    return true;
  }
  return DispatchPod(dt, fn);
}

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_TYPES_H_
