#include "runnel/framework/device.h"

#include <random>

#include "runnel/framework/tensor.h"

namespace runnel {

void DeviceContext::CopyCPUTensorToDevice(const Tensor* cpu_tensor,
                                          DeviceBase* /*device*/,
                                          Tensor* device_tensor,
                                          StatusCallback done) const {
  *device_tensor = *cpu_tensor;  // Host memory: share the buffer.
  done(absl::OkStatus());
}

void DeviceContext::CopyDeviceTensorToCPU(const Tensor* device_tensor,
                                          absl::string_view /*edge_name*/,
                                          DeviceBase* /*device*/,
                                          Tensor* cpu_tensor,
                                          StatusCallback done) const {
  *cpu_tensor = *device_tensor;
  done(absl::OkStatus());
}

const DeviceContext* DeviceBase::device_context() const {
  static const DeviceContext* host = new DeviceContext;
  return host;
}

Device::Device(DeviceAttributes attributes)
    : attributes_(std::move(attributes)) {
  if (attributes_.incarnation() == 0)
    attributes_.set_incarnation(NewIncarnation());
  auto parsed = DeviceName::Parse(attributes_.name());
  if (parsed.ok()) parsed_name_ = *std::move(parsed);
}

uint64_t Device::NewIncarnation() {
  static std::mt19937_64* gen = [] {
    std::random_device rd;
    return new std::mt19937_64((uint64_t{rd()} << 32) ^ rd());
  }();
  static absl::Mutex mu(absl::kConstInit);
  absl::MutexLock l(&mu);
  uint64_t v;
  do {
    v = (*gen)();
  } while (v == 0);
  return v;
}

}  // namespace runnel
