#include "runnel/devices/device_factory.h"

#include <algorithm>
#include <map>

#include "absl/synchronization/mutex.h"

namespace runnel {
namespace {

struct FactoryEntry {
  std::unique_ptr<DeviceFactory> factory;
  int priority = -1;
};

struct Registry {
  absl::Mutex mu;
  std::map<std::string, FactoryEntry> by_type ABSL_GUARDED_BY(mu);
};

Registry* GetRegistry() {
  static Registry* r = new Registry;
  return r;
}

}  // namespace

void DeviceFactory::Register(const std::string& device_type,
                             std::unique_ptr<DeviceFactory> factory,
                             int priority) {
  Registry* r = GetRegistry();
  absl::MutexLock l(&r->mu);
  FactoryEntry& e = r->by_type[device_type];
  if (e.factory == nullptr || priority > e.priority) {
    e.factory = std::move(factory);
    e.priority = priority;
  }
}

DeviceFactory* DeviceFactory::GetFactory(const std::string& device_type) {
  Registry* r = GetRegistry();
  absl::MutexLock l(&r->mu);
  auto it = r->by_type.find(device_type);
  return it == r->by_type.end() ? nullptr : it->second.factory.get();
}

std::vector<std::string> DeviceFactory::GetDeviceTypes() {
  Registry* r = GetRegistry();
  std::vector<std::pair<int, std::string>> types;
  {
    absl::MutexLock l(&r->mu);
    for (const auto& [t, e] : r->by_type) types.push_back({-e.priority, t});
  }
  std::sort(types.begin(), types.end());
  std::vector<std::string> out;
  for (auto& [_, t] : types) out.push_back(t);
  return out;
}

int DeviceFactory::DevicePriority(const std::string& device_type) {
  Registry* r = GetRegistry();
  absl::MutexLock l(&r->mu);
  auto it = r->by_type.find(device_type);
  return it == r->by_type.end() ? -1 : it->second.priority;
}

Status DeviceFactory::AddDevices(const ConfigProto& config,
                                 const std::string& name_prefix,
                                 std::vector<std::unique_ptr<Device>>* out) {
  // Counts for types this build cannot make are ignored, as in TF (so the
  // common {"GPU": 0} works everywhere).
  std::vector<std::string> types = GetDeviceTypes();
  auto cpu = std::find(types.begin(), types.end(), kDeviceCpu);
  if (cpu != types.end()) std::rotate(types.begin(), cpu, cpu + 1);
  for (const std::string& t : types) {
    RETURN_IF_ERROR(GetFactory(t)->CreateDevices(config, name_prefix, out));
  }
  return absl::OkStatus();
}

}  // namespace runnel
