#include "runnel/framework/attr_value.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"

namespace runnel {

namespace {

const AttrValue* Find(const AttrMap& attrs, absl::string_view name, Status* s) {
  auto it = attrs.find(name);
  if (it == attrs.end()) {
    *s = errors::NotFound("no attr named '", name, "'");
    return nullptr;
  }
  return &it->second;
}

Status WrongKind(absl::string_view name, const AttrValue& v,
                 absl::string_view want) {
  return errors::InvalidArgument("attr '", name, "' has value ",
                                 SummarizeAttrValue(v), " of kind '",
                                 AttrValueKind(v), "', expected '", want, "'");
}

// Accepts an empty list (no oneof set, or an empty ListValue) for list attrs.
bool IsList(const AttrValue& v) {
  return v.value_case() == AttrValue::kList ||
         v.value_case() == AttrValue::VALUE_NOT_SET;
}

}  // namespace

#define RUNNEL_GET_SCALAR_ATTR(TYPE, CASE, KIND, EXPR)                        \
  template <>                                                                 \
  Status GetAttr<TYPE>(const AttrMap& attrs, absl::string_view name,          \
                       TYPE* value) {                                         \
    Status s;                                                                 \
    const AttrValue* v = Find(attrs, name, &s);                               \
    if (v == nullptr) return s;                                               \
    if (v->value_case() != AttrValue::CASE) return WrongKind(name, *v, KIND); \
    *value = EXPR;                                                            \
    return absl::OkStatus();                                                  \
  }

RUNNEL_GET_SCALAR_ATTR(int64_t, kI, "int", v->i())
RUNNEL_GET_SCALAR_ATTR(float, kF, "float", v->f())
RUNNEL_GET_SCALAR_ATTR(bool, kB, "bool", v->b())
RUNNEL_GET_SCALAR_ATTR(std::string, kS, "string", v->s())
RUNNEL_GET_SCALAR_ATTR(DataType, kType, "type", v->type())
#undef RUNNEL_GET_SCALAR_ATTR

template <>
Status GetAttr<int32_t>(const AttrMap& attrs, absl::string_view name,
                        int32_t* value) {
  int64_t v;
  RETURN_IF_ERROR(GetAttr(attrs, name, &v));
  if (v < INT32_MIN || v > INT32_MAX) {
    return errors::InvalidArgument("attr '", name, "' value ", v,
                                   " does not fit in int32");
  }
  *value = static_cast<int32_t>(v);
  return absl::OkStatus();
}

template <>
Status GetAttr<PartialTensorShape>(const AttrMap& attrs, absl::string_view name,
                                   PartialTensorShape* value) {
  Status s;
  const AttrValue* v = Find(attrs, name, &s);
  if (v == nullptr) return s;
  if (v->value_case() != AttrValue::kShape) return WrongKind(name, *v, "shape");
  ASSIGN_OR_RETURN(*value, PartialTensorShape::FromProto(v->shape()));
  return absl::OkStatus();
}

template <>
Status GetAttr<TensorShape>(const AttrMap& attrs, absl::string_view name,
                            TensorShape* value) {
  PartialTensorShape p;
  RETURN_IF_ERROR(GetAttr(attrs, name, &p));
  auto full = p.AsTensorShape();
  if (!full.ok()) {
    return errors::InvalidArgument("attr '", name,
                                   "': ", full.status().message());
  }
  *value = *full;
  return absl::OkStatus();
}

template <>
Status GetAttr<Tensor>(const AttrMap& attrs, absl::string_view name,
                       Tensor* value) {
  Status s;
  const AttrValue* v = Find(attrs, name, &s);
  if (v == nullptr) return s;
  if (v->value_case() != AttrValue::kTensor)
    return WrongKind(name, *v, "tensor");
  auto t = Tensor::FromProto(v->tensor());
  if (!t.ok())
    return errors::InvalidArgument("attr '", name, "': ", t.status().message());
  *value = std::move(*t);
  return absl::OkStatus();
}

#define RUNNEL_GET_LIST_ATTR(TYPE, FIELD, KIND, CONV)           \
  template <>                                                   \
  Status GetAttr<std::vector<TYPE>>(const AttrMap& attrs,       \
                                    absl::string_view name,     \
                                    std::vector<TYPE>* value) { \
    Status s;                                                   \
    const AttrValue* v = Find(attrs, name, &s);                 \
    if (v == nullptr) return s;                                 \
    if (!IsList(*v)) return WrongKind(name, *v, KIND);          \
    value->clear();                                             \
    for (const auto& x : v->list().FIELD()) {                   \
      CONV;                                                     \
    }                                                           \
    return absl::OkStatus();                                    \
  }

RUNNEL_GET_LIST_ATTR(int64_t, i, "list(int)", value->push_back(x))
RUNNEL_GET_LIST_ATTR(int32_t, i, "list(int)",
                     value->push_back(static_cast<int32_t>(x)))
RUNNEL_GET_LIST_ATTR(float, f, "list(float)", value->push_back(x))
RUNNEL_GET_LIST_ATTR(bool, b, "list(bool)", value->push_back(x))
RUNNEL_GET_LIST_ATTR(std::string, s, "list(string)", value->push_back(x))
RUNNEL_GET_LIST_ATTR(DataType, type, "list(type)",
                     value->push_back(static_cast<DataType>(x)))
RUNNEL_GET_LIST_ATTR(PartialTensorShape, shape, "list(shape)",
                     ASSIGN_OR_RETURN(auto p, PartialTensorShape::FromProto(x));
                     value->push_back(p))
RUNNEL_GET_LIST_ATTR(TensorShape, shape, "list(shape)",
                     ASSIGN_OR_RETURN(auto p, TensorShape::FromProto(x));
                     value->push_back(p))
#undef RUNNEL_GET_LIST_ATTR

AttrValue MakeAttrValue(int64_t v) {
  AttrValue a;
  a.set_i(v);
  return a;
}
AttrValue MakeAttrValue(float v) {
  AttrValue a;
  a.set_f(v);
  return a;
}
AttrValue MakeAttrValue(bool v) {
  AttrValue a;
  a.set_b(v);
  return a;
}
AttrValue MakeAttrValue(absl::string_view v) {
  AttrValue a;
  a.set_s(std::string(v));
  return a;
}
AttrValue MakeAttrValue(DataType v) {
  AttrValue a;
  a.set_type(v);
  return a;
}
AttrValue MakeAttrValue(const NameAttrList& v) {
  AttrValue a;
  *a.mutable_func() = v;
  return a;
}
AttrValue MakeAttrValue(const TensorShape& v) {
  AttrValue a;
  v.AsProto(a.mutable_shape());
  return a;
}
AttrValue MakeAttrValue(const PartialTensorShape& v) {
  AttrValue a;
  v.AsProto(a.mutable_shape());
  return a;
}
AttrValue MakeAttrValue(const Tensor& v) {
  AttrValue a;
  if (v.dtype() == DT_STRING || v.NumElements() <= 4) {
    v.AsProtoField(a.mutable_tensor());
  } else {
    v.AsProtoTensorContent(a.mutable_tensor());
  }
  return a;
}
AttrValue MakeAttrValue(absl::Span<const int64_t> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (auto x : v) l->add_i(x);
  return a;
}
AttrValue MakeAttrValue(std::initializer_list<int64_t> v) {
  return MakeAttrValue(absl::Span<const int64_t>(v.begin(), v.size()));
}
AttrValue MakeAttrValue(absl::Span<const int32_t> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (auto x : v) l->add_i(x);
  return a;
}
AttrValue MakeAttrValue(absl::Span<const float> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (auto x : v) l->add_f(x);
  return a;
}
AttrValue MakeAttrValue(absl::Span<const std::string> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (const auto& x : v) l->add_s(x);
  return a;
}
AttrValue MakeAttrValue(absl::Span<const DataType> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (auto x : v) l->add_type(x);
  return a;
}
AttrValue MakeAttrValue(absl::Span<const TensorShape> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (const auto& x : v) x.AsProto(l->add_shape());
  return a;
}
AttrValue MakeAttrValue(absl::Span<const PartialTensorShape> v) {
  AttrValue a;
  auto* l = a.mutable_list();
  for (const auto& x : v) x.AsProto(l->add_shape());
  return a;
}

std::string AttrValueKind(const AttrValue& v) {
  switch (v.value_case()) {
    case AttrValue::kS:
      return "string";
    case AttrValue::kI:
      return "int";
    case AttrValue::kF:
      return "float";
    case AttrValue::kB:
      return "bool";
    case AttrValue::kType:
      return "type";
    case AttrValue::kShape:
      return "shape";
    case AttrValue::kTensor:
      return "tensor";
    case AttrValue::kFunc:
      return "func";
    case AttrValue::kPlaceholder:
      return "placeholder";
    case AttrValue::kList: {
      const auto& l = v.list();
      if (l.s_size()) return "list(string)";
      if (l.i_size()) return "list(int)";
      if (l.f_size()) return "list(float)";
      if (l.b_size()) return "list(bool)";
      if (l.type_size()) return "list(type)";
      if (l.shape_size()) return "list(shape)";
      if (l.tensor_size()) return "list(tensor)";
      if (l.func_size()) return "list(func)";
      return "list";
    }
    case AttrValue::VALUE_NOT_SET:
      return "";
  }
  return "";
}

std::string SummarizeAttrValue(const AttrValue& v) {
  auto shape_str = [](const TensorShapeProto& p) {
    auto s = PartialTensorShape::FromProto(p);
    return s.ok() ? s->DebugString() : std::string("<invalid shape>");
  };
  switch (v.value_case()) {
    case AttrValue::kS:
      return absl::StrCat("\"", absl::CEscape(v.s()), "\"");
    case AttrValue::kI:
      return absl::StrCat(v.i());
    case AttrValue::kF:
      return absl::StrCat(v.f());
    case AttrValue::kB:
      return v.b() ? "true" : "false";
    case AttrValue::kType:
      return DataType_Name(v.type());
    case AttrValue::kShape:
      return shape_str(v.shape());
    case AttrValue::kTensor: {
      auto t = Tensor::FromProto(v.tensor());
      return t.ok() ? t->DebugString(4) : std::string("<invalid tensor>");
    }
    case AttrValue::kFunc:
      return absl::StrCat("func ", v.func().name());
    case AttrValue::kPlaceholder:
      return absl::StrCat("$", v.placeholder());
    case AttrValue::kList: {
      const auto& l = v.list();
      std::vector<std::string> parts;
      for (const auto& x : l.s())
        parts.push_back(absl::StrCat("\"", absl::CEscape(x), "\""));
      for (auto x : l.i()) parts.push_back(absl::StrCat(x));
      for (auto x : l.f()) parts.push_back(absl::StrCat(x));
      for (auto x : l.b()) parts.push_back(x ? "true" : "false");
      for (auto x : l.type())
        parts.push_back(DataType_Name(static_cast<DataType>(x)));
      for (const auto& x : l.shape()) parts.push_back(shape_str(x));
      for (int i = 0; i < l.tensor_size(); ++i) parts.push_back("<tensor>");
      for (const auto& x : l.func()) parts.push_back(x.name());
      return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
    case AttrValue::VALUE_NOT_SET:
      return "<unset>";
  }
  return "";
}

}  // namespace runnel
