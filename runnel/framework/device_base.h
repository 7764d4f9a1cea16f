// DeviceBase: what a kernel sees of the device it runs on.
#ifndef RUNNEL_FRAMEWORK_DEVICE_BASE_H_
#define RUNNEL_FRAMEWORK_DEVICE_BASE_H_

#include <string>

#include "runnel/base/threadpool.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/resource_mgr.h"

namespace runnel {

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
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_BASE_H_
