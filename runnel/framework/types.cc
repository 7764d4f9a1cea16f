#include "runnel/framework/types.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace runnel {

float HalfToFloat(half h) {
  const uint32_t sign = (h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1f;
  uint32_t mant = h.bits & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // Subnormal: renormalise.
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

half FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  half h;
  if (abs >= 0x7f800000u) {  // Inf or NaN.
    h.bits = static_cast<uint16_t>(sign | 0x7c00u |
                                   (abs > 0x7f800000u ? 0x200u : 0));
    return h;
  }
  if (abs >= 0x477ff000u) {  // Rounds to >= 65520: overflow to inf.
    h.bits = static_cast<uint16_t>(sign | 0x7c00u);
    return h;
  }
  if (abs < 0x38800000u) {  // Subnormal half or zero.
    float af;
    std::memcpy(&af, &abs, 4);
    // Scale so the subnormal grid becomes integers, round to nearest even.
    const float scaled = af * 16777216.0f;  // 2^24
    uint32_t m = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    h.bits = static_cast<uint16_t>(sign | m);
    return h;
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t exp = (abs >> 23) - 127 + 15;
  uint32_t bits = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (bits & 1))) ++bits;
  h.bits = static_cast<uint16_t>(sign | bits);
  return h;
}

bfloat16 FloatToBFloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  bfloat16 b;
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays NaN.
    b.bits = static_cast<uint16_t>((u >> 16) | 0x40);
    return b;
  }
  u += 0x7fffu + ((u >> 16) & 1);
  b.bits = static_cast<uint16_t>(u >> 16);
  return b;
}

namespace {
struct TypeName {
  DataType dt;
  const char* name;
};
constexpr TypeName kTypeNames[] = {
    {DT_FLOAT, "float"},     {DT_DOUBLE, "double"},
    {DT_INT32, "int32"},     {DT_UINT8, "uint8"},
    {DT_INT16, "int16"},     {DT_INT8, "int8"},
    {DT_STRING, "string"},   {DT_COMPLEX64, "complex64"},
    {DT_INT64, "int64"},     {DT_BOOL, "bool"},
    {DT_QINT8, "qint8"},     {DT_QUINT8, "quint8"},
    {DT_QINT32, "qint32"},   {DT_BFLOAT16, "bfloat16"},
    {DT_QINT16, "qint16"},   {DT_QUINT16, "quint16"},
    {DT_UINT16, "uint16"},   {DT_COMPLEX128, "complex128"},
    {DT_HALF, "half"},       {DT_RESOURCE, "resource"},
    {DT_VARIANT, "variant"}, {DT_UINT32, "uint32"},
    {DT_UINT64, "uint64"},
};

const char* KnownTypeName(DataType dt) {
  for (const auto& t : kTypeNames) {
    if (t.dt == dt) return t.name;
  }
  return nullptr;
}

}  // namespace

std::string DataTypeString(DataType dt) {
  if (dt == DT_INVALID) return "invalid";
  const bool ref = IsRefType(dt);
  if (const char* name = KnownTypeName(ref ? BaseType(dt) : dt)) {
    return ref ? std::string(name) + "_ref" : std::string(name);
  }
  return "unknown dtype " + std::to_string(static_cast<int>(dt));
}

bool DataTypeIsKnown(DataType dt, bool allow_ref, bool allow_invalid) {
  if (dt == DT_INVALID) return allow_invalid;
  if (IsRefType(dt)) return allow_ref && KnownTypeName(BaseType(dt));
  return KnownTypeName(dt) != nullptr;
}

bool DataTypeFromString(absl::string_view s, DataType* dt) {
  std::string lower = absl::AsciiStrToLower(s);
  absl::string_view v = lower;
  if (absl::StartsWith(v, "dt_")) v.remove_prefix(3);
  bool ref = false;
  if (absl::EndsWith(v, "_ref")) {
    ref = true;
    v.remove_suffix(4);
  }
  if (v == "float32") v = "float";
  if (v == "float64") v = "double";
  if (v == "float16") v = "half";
  for (const auto& t : kTypeNames) {
    if (v == t.name) {
      *dt = ref ? MakeRefType(t.dt) : t.dt;
      return true;
    }
  }
  return false;
}

int DataTypeSize(DataType dt) {
  switch (BaseType(dt)) {
    case DT_FLOAT:
    case DT_INT32:
    case DT_UINT32:
    case DT_QINT32:
      return 4;
    case DT_DOUBLE:
    case DT_INT64:
    case DT_UINT64:
    case DT_COMPLEX64:
      return 8;
    case DT_UINT8:
    case DT_INT8:
    case DT_BOOL:
    case DT_QINT8:
    case DT_QUINT8:
      return 1;
    case DT_INT16:
    case DT_UINT16:
    case DT_HALF:
    case DT_BFLOAT16:
    case DT_QINT16:
    case DT_QUINT16:
      return 2;
    case DT_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

bool DataTypeIsPod(DataType dt) { return DataTypeSize(dt) > 0; }

bool DataTypeIsFloating(DataType dt) {
  dt = BaseType(dt);
  return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_HALF ||
         dt == DT_BFLOAT16;
}

bool DataTypeIsInteger(DataType dt) {
  switch (BaseType(dt)) {
    case DT_INT8:
    case DT_INT16:
    case DT_INT32:
    case DT_INT64:
    case DT_UINT8:
    case DT_UINT16:
    case DT_UINT32:
    case DT_UINT64:
      return true;
    default:
      return false;
  }
}

bool DataTypeIsComplex(DataType dt) {
  dt = BaseType(dt);
  return dt == DT_COMPLEX64 || dt == DT_COMPLEX128;
}

const std::vector<DataType>& RealNumberTypes() {
  static const auto* v = new std::vector<DataType>{
      DT_FLOAT, DT_DOUBLE,   DT_INT32,  DT_UINT8, DT_INT16,  DT_INT8,
      DT_INT64, DT_BFLOAT16, DT_UINT16, DT_HALF,  DT_UINT32, DT_UINT64};
  return *v;
}

const std::vector<DataType>& NumberTypes() {
  static const auto* v = [] {
    auto* t = new std::vector<DataType>(RealNumberTypes());
    t->push_back(DT_COMPLEX64);
    t->push_back(DT_COMPLEX128);
    return t;
  }();
  return *v;
}

const std::vector<DataType>& AllTypes() {
  static const auto* v = [] {
    auto* t = new std::vector<DataType>(NumberTypes());
    t->push_back(DT_BOOL);
    t->push_back(DT_STRING);
    return t;
  }();
  return *v;
}

}  // namespace runnel
