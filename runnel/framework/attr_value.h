// Attribute maps and typed access to AttrValue protos.
#ifndef RUNNEL_FRAMEWORK_ATTR_VALUE_H_
#define RUNNEL_FRAMEWORK_ATTR_VALUE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "proto/attr_value.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"

namespace runnel {

// A node's attributes, ordered by name (so exports are deterministic).
using AttrMap = std::map<std::string, AttrValue, std::less<>>;
using DataTypeVector = absl::InlinedVector<DataType, 4>;

// Reads attr `name` as T. NotFound if absent; InvalidArgument if it holds a
// different kind of value. Supported T: int64_t, int32_t, float, bool,
// std::string, DataType, TensorShape, PartialTensorShape, Tensor, and
// std::vector of int64_t, int32_t, float, bool, std::string, DataType,
// TensorShape, PartialTensorShape.
template <typename T>
Status GetAttr(const AttrMap& attrs, absl::string_view name, T* value);

// Builds AttrValues from C++ values.
AttrValue MakeAttrValue(int64_t v);
inline AttrValue MakeAttrValue(int v) {
  return MakeAttrValue(static_cast<int64_t>(v));
}
AttrValue MakeAttrValue(float v);
AttrValue MakeAttrValue(bool v);
AttrValue MakeAttrValue(absl::string_view v);
inline AttrValue MakeAttrValue(const char* v) {
  return MakeAttrValue(absl::string_view(v));
}
inline AttrValue MakeAttrValue(const std::string& v) {
  return MakeAttrValue(absl::string_view(v));
}
AttrValue MakeAttrValue(DataType v);
// A function attr ("func"): the function's name and its attrs.
AttrValue MakeAttrValue(const NameAttrList& v);
AttrValue MakeAttrValue(const TensorShape& v);
AttrValue MakeAttrValue(const PartialTensorShape& v);
AttrValue MakeAttrValue(const Tensor& v);
AttrValue MakeAttrValue(absl::Span<const int64_t> v);
AttrValue MakeAttrValue(std::initializer_list<int64_t> v);
AttrValue MakeAttrValue(absl::Span<const int32_t> v);
AttrValue MakeAttrValue(absl::Span<const float> v);
AttrValue MakeAttrValue(absl::Span<const std::string> v);
AttrValue MakeAttrValue(absl::Span<const DataType> v);
AttrValue MakeAttrValue(absl::Span<const TensorShape> v);
AttrValue MakeAttrValue(absl::Span<const PartialTensorShape> v);

// The kind of value an AttrValue holds, in OpDef spelling: "int", "float",
// "bool", "string", "type", "shape", "tensor", "func", "placeholder",
// "list(...)" ("list" for an empty list), or "" when unset.
std::string AttrValueKind(const AttrValue& v);
// Short text form: 3, 1.5, true, "SAME", DT_FLOAT, [2,3], [1, 2].
std::string SummarizeAttrValue(const AttrValue& v);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_ATTR_VALUE_H_
