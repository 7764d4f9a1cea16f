#include "runnel/devices/cpu_device.h"

#include <cstdlib>
#include <thread>

#include "runnel/devices/device_factory.h"

namespace runnel {

ThreadPool* CpuThreadPool() {
  static ThreadPool* pool = [] {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("RUNNEL_NUM_THREADS")) {
      n = std::atoi(env);
    }
    return new ThreadPool("runnel_cpu", n > 0 ? n : 1);
  }();
  return pool;
}

namespace {

DeviceAttributes CpuAttributes(std::string name) {
  DeviceAttributes a;
  a.set_name(std::move(name));
  a.set_device_type(kDeviceCpu);
  a.set_memory_limit(CpuAllocatorLimit());
  a.mutable_locality()->set_bus_id(1);
  a.set_physical_device_desc("host CPU");
  return a;
}

}  // namespace

CpuDevice::CpuDevice(std::string name, ThreadPool* pool,
                     ResourceMgr* resource_mgr)
    : Device(CpuAttributes(std::move(name))), pool_(pool) {
  if (resource_mgr == nullptr) {
    owned_rm_ = std::make_unique<ResourceMgr>();
    rm_ = owned_rm_.get();
  } else {
    rm_ = resource_mgr;
  }
}

CpuDevice::~CpuDevice() = default;

Allocator* CpuDevice::GetAllocator() { return cpu_allocator(); }

namespace {

class CpuDeviceFactory : public DeviceFactory {
 public:
  Status CreateDevices(const ConfigProto& config,
                       const std::string& name_prefix,
                       std::vector<std::unique_ptr<Device>>* out) override {
    int n = 1;
    auto it = config.device_count().find(kDeviceCpu);
    if (it != config.device_count().end()) n = it->second;
    if (n < 1 || n > kMaxCpuDevices) {
      return errors::InvalidArgument("device_count {\"CPU\": ", n,
                                     "}: a process has 1 to ", kMaxCpuDevices,
                                     " CPU devices");
    }
    for (int i = 0; i < n; ++i) {
      out->push_back(std::make_unique<CpuDevice>(
          absl::StrCat(name_prefix, "/device:CPU:", i), CpuThreadPool()));
    }
    return absl::OkStatus();
  }
};

}  // namespace

REGISTER_DEVICE_FACTORY(kDeviceCpu, CpuDeviceFactory, 50);

}  // namespace runnel
