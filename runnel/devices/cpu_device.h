// The CPU device and the process-wide CPU thread pool.
#ifndef RUNNEL_DEVICES_CPU_DEVICE_H_
#define RUNNEL_DEVICES_CPU_DEVICE_H_

#include <memory>
#include <string>

#include "runnel/framework/device_base.h"

namespace runnel {

// One pool of worker threads for everything on the CPU (inter-op and
// intra-op), sized to the machine's cores (RUNNEL_NUM_THREADS overrides).
// See DESIGN.md §7: never two spinning pools.
ThreadPool* CpuThreadPool();

class CpuDevice : public DeviceBase {
 public:
  // `name` is the full device name. `resource_mgr` may be null: the device
  // then owns a fresh one.
  CpuDevice(std::string name, ThreadPool* pool,
            ResourceMgr* resource_mgr = nullptr);
  ~CpuDevice() override;

  const std::string& name() const override { return name_; }
  const std::string& device_type() const override { return type_; }
  Allocator* GetAllocator() override;
  ThreadPool* intra_op_pool() override { return pool_; }
  ResourceMgr* resource_manager() override { return rm_; }

 private:
  std::string name_;
  std::string type_ = "CPU";
  ThreadPool* pool_;
  std::unique_ptr<ResourceMgr> owned_rm_;
  ResourceMgr* rm_;
};

}  // namespace runnel

#endif  // RUNNEL_DEVICES_CPU_DEVICE_H_
