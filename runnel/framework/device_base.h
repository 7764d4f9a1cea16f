// DeviceBase: what a kernel sees of the device it runs on; DeviceContext:
// how tensors move between host memory and the device's memory.
#ifndef RUNNEL_FRAMEWORK_DEVICE_BASE_H_
#define RUNNEL_FRAMEWORK_DEVICE_BASE_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/base/threadpool.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/resource_mgr.h"

namespace runnel {

class DeviceBase;
class Tensor;

// The copy seam between host and device memory (whitepaper §3.2.2: a Send
// on a GPU copies to the host, a Recv on a GPU copies from it). A device
// whose memory is host memory (the CPU) needs no copy: the default
// implementation shares the buffer. Callbacks may run on any thread, before
// or after the call returns.
class DeviceContext {
 public:
  using StatusCallback = std::function<void(const Status&)>;
  virtual ~DeviceContext() = default;

  // Makes `*device_tensor` (on `device`) hold the value of `*cpu_tensor`.
  virtual void CopyCPUTensorToDevice(const Tensor* cpu_tensor,
                                     DeviceBase* device, Tensor* device_tensor,
                                     StatusCallback done) const;
  // Makes `*cpu_tensor` hold the value of `*device_tensor` (on `device`).
  // `edge_name` names the transfer, for errors and traces.
  virtual void CopyDeviceTensorToCPU(const Tensor* device_tensor,
                                     absl::string_view edge_name,
                                     DeviceBase* device, Tensor* cpu_tensor,
                                     StatusCallback done) const;
};

class DeviceBase {
 public:
  virtual ~DeviceBase() = default;
  // Full name, "/job:localhost/replica:0/task:0/device:CPU:0".
  virtual const std::string& name() const = 0;
  // "CPU" or "GPU".
  virtual const std::string& device_type() const = 0;
  virtual Allocator* GetAllocator() = 0;
  // Pool for parallelism inside one kernel; may be null (run inline).
  virtual ThreadPool* intra_op_pool() = 0;
  virtual ResourceMgr* resource_manager() = 0;
  // The device's copy seam; never null (the CPU's copies nothing).
  virtual const DeviceContext* device_context() const;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_BASE_H_
