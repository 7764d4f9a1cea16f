#include "runnel/runtime/device_mgr.h"

#include "absl/strings/str_join.h"
#include "runnel/devices/device_factory.h"

namespace runnel {

DeviceMgr::DeviceMgr(std::vector<std::unique_ptr<Device>> devices)
    : devices_(std::move(devices)) {
  for (auto& d : devices_) {
    raw_.push_back(d.get());
    by_name_[d->name()] = d.get();
  }
}

Device* DeviceMgr::FindDevice(absl::string_view full_name) const {
  auto it = by_name_.find(full_name);
  return it == by_name_.end() ? nullptr : it->second;
}

Status DeviceMgr::LookupDevice(absl::string_view name, Device** device) const {
  *device = FindDevice(name);
  if (*device == nullptr) {
    // Another spelling of a full name ("/job:localhost/replica:0/task:0/
    // cpu:1", lower-case types): every field set and equal.
    auto spec = DeviceName::Parse(name);
    if (spec.ok() && !spec->job.empty() && spec->replica >= 0 &&
        spec->task >= 0 && !spec->type.empty() && spec->id >= 0) {
      *device = FindMatching(*spec);
    }
  }
  if (*device == nullptr) {
    return errors::NotFound("unknown device '", name, "'; this process has ",
                            DebugString());
  }
  return absl::OkStatus();
}

Device* DeviceMgr::FindMatching(const DeviceName& spec) const {
  for (Device* d : raw_) {
    if (d->parsed_name().Matches(spec)) return d;
  }
  return nullptr;
}

std::string DeviceMgr::DebugString() const {
  return absl::StrJoin(raw_, ", ", [](std::string* out, const Device* d) {
    out->append(d->name());
  });
}

StatusOr<std::unique_ptr<DeviceMgr>> NewLocalDeviceMgr(
    const ConfigProto& config, const std::string& name_prefix) {
  std::vector<std::unique_ptr<Device>> devices;
  RETURN_IF_ERROR(DeviceFactory::AddDevices(config, name_prefix, &devices));
  if (devices.empty()) {
    return errors::Internal("no device factory made a device");
  }
  return std::make_unique<DeviceMgr>(std::move(devices));
}

}  // namespace runnel
