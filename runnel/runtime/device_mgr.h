// DeviceMgr: the devices of one process (a CPU device, plus GPUs when a
// later issue adds them), looked up by full or partial name.
#ifndef RUNNEL_RUNTIME_DEVICE_MGR_H_
#define RUNNEL_RUNTIME_DEVICE_MGR_H_

#include <memory>
#include <string>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/device_base.h"
#include "runnel/framework/device_name.h"

namespace runnel {

class DeviceMgr {
 public:
  explicit DeviceMgr(std::vector<std::unique_ptr<DeviceBase>> devices);

  const std::vector<DeviceBase*>& devices() const { return raw_; }
  // NotFound if no device has that exact full name.
  Status LookupDevice(absl::string_view name, DeviceBase** device) const;
  // The first device matching a (partial) spec, or nullptr.
  DeviceBase* FindMatching(const DeviceName& spec) const;

 private:
  std::vector<std::unique_ptr<DeviceBase>> devices_;
  std::vector<DeviceBase*> raw_;
  std::vector<DeviceName> names_;
};

// The local devices: "/job:localhost/replica:0/task:0/device:CPU:0", sharing
// `resource_mgr` (owned by the caller; may be null).
std::unique_ptr<DeviceMgr> NewLocalDeviceMgr(ResourceMgr* resource_mgr);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_DEVICE_MGR_H_
