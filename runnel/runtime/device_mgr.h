// DeviceMgr: the devices of one process (CPU devices, plus whatever other
// factories are registered), looked up by full or partial name.
//
// Thread safety: immutable after construction; every method may be called
// concurrently.
#ifndef RUNNEL_RUNTIME_DEVICE_MGR_H_
#define RUNNEL_RUNTIME_DEVICE_MGR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/config.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/device.h"
#include "runnel/framework/device_name.h"

namespace runnel {

class DeviceMgr {
 public:
  explicit DeviceMgr(std::vector<std::unique_ptr<Device>> devices);

  // In creation order; devices()[0] is the first CPU.
  const std::vector<Device*>& devices() const { return raw_; }
  // NotFound if no device has that full name (or its legacy spelling).
  Status LookupDevice(absl::string_view name, Device** device) const;
  Device* FindDevice(absl::string_view full_name) const;
  // The first device matching a (partial) spec, or nullptr.
  Device* FindMatching(const DeviceName& spec) const;
  // "/job:localhost/.../device:CPU:0, /job:localhost/.../device:CPU:1".
  std::string DebugString() const;

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> raw_;
  absl::flat_hash_map<std::string, Device*> by_name_;
};

// The local devices, "/job:localhost/replica:0/task:0/device:<T>:<i>", as
// `config.device_count` asks (default: one CPU). Errors from the factories
// (e.g. InvalidArgument for a device type nothing makes).
StatusOr<std::unique_ptr<DeviceMgr>> NewLocalDeviceMgr(
    const ConfigProto& config,
    const std::string& name_prefix = "/job:localhost/replica:0/task:0");

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_DEVICE_MGR_H_
