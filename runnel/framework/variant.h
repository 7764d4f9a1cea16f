// Variant: the element of a DT_VARIANT tensor (TF's Variant), a shared,
// immutable, type-erased value. Runnel's datasets travel between ops as
// scalar variant tensors holding a DatasetBase (framework/dataset.h).
//
//   Tensor t(DT_VARIANT, TensorShape({}));
//   t.scalar<Variant>() = Variant(std::make_shared<MyValue>(...));
//   const MyValue* v = t.scalar<Variant>().get<MyValue>();  // null if not one
//
// Copying a Variant shares the value. Variant tensors cannot be serialised
// (TensorProto, checkpoints, RPCs): those paths return an error.
#ifndef RUNNEL_FRAMEWORK_VARIANT_H_
#define RUNNEL_FRAMEWORK_VARIANT_H_

#include <memory>
#include <string>

#include "runnel/framework/types.h"

namespace runnel {

class VariantValue {
 public:
  virtual ~VariantValue() = default;
  // A name for the kind of value ("Dataset"), for errors and DebugString.
  virtual std::string TypeName() const = 0;
  virtual std::string DebugString() const { return TypeName(); }
};

class Variant {
 public:
  Variant() = default;
  explicit Variant(std::shared_ptr<const VariantValue> value)
      : value_(std::move(value)) {}

  bool empty() const { return value_ == nullptr; }
  // The value as a T, or null if it is empty or not a T.
  template <typename T>
  const T* get() const {
    return dynamic_cast<const T*>(value_.get());
  }
  const std::shared_ptr<const VariantValue>& shared() const { return value_; }
  std::string TypeName() const {
    return value_ == nullptr ? "(empty)" : value_->TypeName();
  }
  std::string DebugString() const {
    return value_ == nullptr ? "Variant(empty)" : value_->DebugString();
  }

 private:
  std::shared_ptr<const VariantValue> value_;
};

template <>
struct DataTypeToEnum<Variant> {
  static constexpr DataType value = DT_VARIANT;
};
template <>
struct EnumToDataType<DT_VARIANT> {
  using Type = Variant;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_VARIANT_H_
