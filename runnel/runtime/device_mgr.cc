#include "runnel/runtime/device_mgr.h"

#include "runnel/devices/cpu_device.h"

namespace runnel {

DeviceMgr::DeviceMgr(std::vector<std::unique_ptr<DeviceBase>> devices)
    : devices_(std::move(devices)) {
  for (auto& d : devices_) {
    raw_.push_back(d.get());
    auto parsed = DeviceName::Parse(d->name());
    names_.push_back(parsed.ok() ? *parsed : DeviceName());
  }
}

Status DeviceMgr::LookupDevice(absl::string_view name,
                               DeviceBase** device) const {
  for (DeviceBase* d : raw_) {
    if (d->name() == name) {
      *device = d;
      return absl::OkStatus();
    }
  }
  return errors::NotFound("unknown device '", name, "'");
}

DeviceBase* DeviceMgr::FindMatching(const DeviceName& spec) const {
  for (size_t i = 0; i < raw_.size(); ++i) {
    if (names_[i].Matches(spec)) return raw_[i];
  }
  return nullptr;
}

std::unique_ptr<DeviceMgr> NewLocalDeviceMgr(ResourceMgr* resource_mgr) {
  std::vector<std::unique_ptr<DeviceBase>> devices;
  devices.push_back(
      std::make_unique<CpuDevice>(FullDeviceName("localhost", 0, 0, "CPU", 0),
                                  CpuThreadPool(), resource_mgr));
  return std::make_unique<DeviceMgr>(std::move(devices));
}

}  // namespace runnel
