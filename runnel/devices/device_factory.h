// DeviceFactory: how a device type makes its devices. Each device type
// registers one factory (REGISTER_DEVICE_FACTORY("CPU", CpuDeviceFactory,
// 50)); AddDevices asks every registered factory for its devices, so a new
// back-end is a new folder with a factory, not a change to the session.
//
//   std::vector<std::unique_ptr<Device>> devices;
//   RETURN_IF_ERROR(DeviceFactory::AddDevices(
//       config, "/job:localhost/replica:0/task:0", &devices));
//
// Thread safety: registration happens during static initialisation; lookups
// may then run concurrently.
#ifndef RUNNEL_DEVICES_DEVICE_FACTORY_H_
#define RUNNEL_DEVICES_DEVICE_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/device.h"

namespace runnel {

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;

  // Appends this type's devices, named "<name_prefix>/device:<TYPE>:<i>".
  // `config.device_count[TYPE]` says how many (each factory has its default
  // when the entry is absent: 1 CPU, every GPU); InvalidArgument if it is
  // negative or beyond what the factory can make.
  virtual Status CreateDevices(const ConfigProto& config,
                               const std::string& name_prefix,
                               std::vector<std::unique_ptr<Device>>* out) = 0;

  // Registers `factory` for `device_type`; among factories for one type the
  // highest priority wins. Types are listed by priority, highest first
  // (TensorFlow's order: GPU before CPU for placement).
  static void Register(const std::string& device_type,
                       std::unique_ptr<DeviceFactory> factory, int priority);
  // The factory for a type, or null.
  static DeviceFactory* GetFactory(const std::string& device_type);
  // Registered device types, highest priority first.
  static std::vector<std::string> GetDeviceTypes();
  // The priority a type was registered with (-1 if unknown).
  static int DevicePriority(const std::string& device_type);

  // Every registered factory's devices, CPU devices first (so device 0 of a
  // process is /device:CPU:0, as in TensorFlow's DeviceMgr), then the others
  // by priority. device_count entries naming a type no factory makes are
  // ignored, as in TensorFlow (so {"GPU": 0} works on every build).
  static Status AddDevices(const ConfigProto& config,
                           const std::string& name_prefix,
                           std::vector<std::unique_ptr<Device>>* out);
};

namespace dfactory {
template <class Factory>
struct Registrar {
  Registrar(const char* device_type, int priority) {
    DeviceFactory::Register(device_type, std::make_unique<Factory>(), priority);
  }
};
}  // namespace dfactory

#define REGISTER_DEVICE_FACTORY(device_type, Factory, priority)          \
  REGISTER_DEVICE_FACTORY_UNIQ_HELPER(__COUNTER__, device_type, Factory, \
                                      priority)
#define REGISTER_DEVICE_FACTORY_UNIQ_HELPER(ctr, t, F, p) \
  REGISTER_DEVICE_FACTORY_UNIQ(ctr, t, F, p)
#define REGISTER_DEVICE_FACTORY_UNIQ(ctr, t, F, p)             \
  static ::runnel::dfactory::Registrar<F> device_factory_##ctr \
      [[maybe_unused]] (t, p)

}  // namespace runnel

#endif  // RUNNEL_DEVICES_DEVICE_FACTORY_H_
