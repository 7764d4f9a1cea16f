// Device: one place a node can run (a CPU, a GPU), with the attributes
// TensorFlow gives it (DeviceAttributes: full name, type, memory limit,
// locality, incarnation). Devices come from DeviceFactory registrations
// (runnel/devices/device_factory.h) and live in a DeviceMgr for the life of
// a session or server.
//
// Thread safety: every method may be called from any thread.
#ifndef RUNNEL_FRAMEWORK_DEVICE_H_
#define RUNNEL_FRAMEWORK_DEVICE_H_

#include <cstdint>
#include <string>

#include "proto/device_attributes.pb.h"
#include "runnel/framework/device_base.h"
#include "runnel/framework/device_name.h"
#include "runnel/framework/types.h"

namespace runnel {

class Device : public DeviceBase {
 public:
  // `attributes.name` must be a full device name; an incarnation of 0 is
  // replaced by a fresh random one.
  explicit Device(DeviceAttributes attributes);

  const std::string& name() const final { return attributes_.name(); }
  const std::string& device_type() const final {
    return attributes_.device_type();
  }
  const DeviceAttributes& attributes() const { return attributes_; }
  const DeviceName& parsed_name() const { return parsed_name_; }
  // Random, nonzero, fixed for this object's life: rendezvous keys carry the
  // sender's incarnation, so a restarted process never matches stale keys.
  uint64_t incarnation() const { return attributes_.incarnation(); }

  // Waits for the device's queued work (a GPU's streams); the CPU has none.
  virtual Status Sync() { return absl::OkStatus(); }

  // A fresh random nonzero 64-bit number.
  static uint64_t NewIncarnation();

 private:
  DeviceAttributes attributes_;
  DeviceName parsed_name_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_H_
