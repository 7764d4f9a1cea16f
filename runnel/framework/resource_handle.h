// ResourceHandle: the value held by a DT_RESOURCE tensor. It names a
// resource (a variable, a queue, ...) in a ResourceMgr: the container and
// name it lives under, the device that owns it, and a hash of the resource's
// C++ type so a kernel can refuse a handle to the wrong kind of resource.
// Resource-variable handles also carry the variable's dtype and shape.
//
// Wire format: ResourceHandleProto (proto/resource_handle.proto), stored in
// TensorProto.resource_handle_val.
//
// Thread safety: a value type; distinct objects may be used concurrently.
#ifndef RUNNEL_FRAMEWORK_RESOURCE_HANDLE_H_
#define RUNNEL_FRAMEWORK_RESOURCE_HANDLE_H_

#include <cstdint>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "proto/resource_handle.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"

namespace runnel {

struct DtypeAndPartialTensorShape {
  DataType dtype = DT_INVALID;
  PartialTensorShape shape;
};

class ResourceHandle {
 public:
  ResourceHandle() = default;

  const std::string& device() const { return device_; }
  void set_device(std::string v) { device_ = std::move(v); }
  const std::string& container() const { return container_; }
  void set_container(std::string v) { container_ = std::move(v); }
  const std::string& name() const { return name_; }
  void set_name(std::string v) { name_ = std::move(v); }
  // Identifies the resource's C++ type (see ResourceTypeHash<T>()).
  uint64_t hash_code() const { return hash_code_; }
  void set_hash_code(uint64_t v) { hash_code_ = v; }
  // For error messages only.
  const std::string& maybe_type_name() const { return maybe_type_name_; }
  void set_maybe_type_name(std::string v) { maybe_type_name_ = std::move(v); }
  const std::vector<DtypeAndPartialTensorShape>& dtypes_and_shapes() const {
    return dtypes_and_shapes_;
  }
  void set_dtypes_and_shapes(std::vector<DtypeAndPartialTensorShape> v) {
    dtypes_and_shapes_ = std::move(v);
  }

  void AsProto(ResourceHandleProto* proto) const;
  // InvalidArgument if a shape in the proto is malformed.
  static StatusOr<ResourceHandle> FromProto(const ResourceHandleProto& proto);

  // "<ResourceHandle(name=\"v\", device=\"...\", container=\"localhost\",
  // type=\"...\")>".
  std::string DebugString() const;

  friend bool operator==(const ResourceHandle& a, const ResourceHandle& b) {
    return a.device_ == b.device_ && a.container_ == b.container_ &&
           a.name_ == b.name_ && a.hash_code_ == b.hash_code_;
  }

 private:
  std::string device_;
  std::string container_;
  std::string name_;
  uint64_t hash_code_ = 0;
  std::string maybe_type_name_;
  std::vector<DtypeAndPartialTensorShape> dtypes_and_shapes_;
};

// The hash a handle to a resource of C++ type T carries (stable within one
// process, which is where handles are resolved).
template <typename T>
uint64_t ResourceTypeHash() {
  return static_cast<uint64_t>(typeid(T).hash_code());
}

// A handle to resource type T named `container`/`name` on `device`.
template <typename T>
ResourceHandle MakeResourceHandle(std::string container, std::string name,
                                  std::string device) {
  ResourceHandle h;
  h.set_container(std::move(container));
  h.set_name(std::move(name));
  h.set_device(std::move(device));
  h.set_hash_code(ResourceTypeHash<T>());
  h.set_maybe_type_name(typeid(T).name());
  return h;
}

template <>
struct DataTypeToEnum<ResourceHandle> {
  static constexpr DataType value = DT_RESOURCE;
};
template <>
struct EnumToDataType<DT_RESOURCE> {
  using Type = ResourceHandle;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_RESOURCE_HANDLE_H_
