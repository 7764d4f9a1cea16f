#include "runnel/framework/resource_handle.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace runnel {

void ResourceHandle::AsProto(ResourceHandleProto* proto) const {
  proto->Clear();
  proto->set_device(device_);
  proto->set_container(container_);
  proto->set_name(name_);
  proto->set_hash_code(hash_code_);
  proto->set_maybe_type_name(maybe_type_name_);
  for (const auto& ds : dtypes_and_shapes_) {
    auto* p = proto->add_dtypes_and_shapes();
    p->set_dtype(ds.dtype);
    ds.shape.AsProto(p->mutable_shape());
  }
}

StatusOr<ResourceHandle> ResourceHandle::FromProto(
    const ResourceHandleProto& proto) {
  ResourceHandle h;
  h.device_ = proto.device();
  h.container_ = proto.container();
  h.name_ = proto.name();
  h.hash_code_ = proto.hash_code();
  h.maybe_type_name_ = proto.maybe_type_name();
  for (const auto& p : proto.dtypes_and_shapes()) {
    DtypeAndPartialTensorShape ds;
    ds.dtype = p.dtype();
    ASSIGN_OR_RETURN(ds.shape, PartialTensorShape::FromProto(p.shape()));
    h.dtypes_and_shapes_.push_back(std::move(ds));
  }
  return h;
}

std::string ResourceHandle::DebugString() const {
  std::vector<std::string> ds;
  for (const auto& d : dtypes_and_shapes_) {
    ds.push_back(absl::StrCat(DataTypeString(d.dtype), d.shape.DebugString()));
  }
  return absl::StrCat("<ResourceHandle(name=\"", name_, "\", device=\"",
                      device_, "\", container=\"", container_, "\", type=\"",
                      maybe_type_name_, "\", dtype and shapes : \"[ ",
                      absl::StrJoin(ds, ", "), " ]\")>");
}

}  // namespace runnel
