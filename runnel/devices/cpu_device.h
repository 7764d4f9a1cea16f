// The CPU device and the process-wide CPU thread pool.
#ifndef RUNNEL_DEVICES_CPU_DEVICE_H_
#define RUNNEL_DEVICES_CPU_DEVICE_H_

#include <memory>
#include <string>

#include "runnel/framework/device.h"

namespace runnel {

// One pool of worker threads for everything on the CPU (inter-op and
// intra-op), sized to the machine's cores (RUNNEL_NUM_THREADS overrides).
// See DESIGN.md §7: never two spinning pools. Every CPU device of a process
// shares it, as TensorFlow's do.
ThreadPool* CpuThreadPool();

// The most CPU devices one process makes (ConfigProto.device_count["CPU"]).
inline constexpr int kMaxCpuDevices = 64;

class CpuDevice : public Device {
 public:
  // `name` is the full device name. `resource_mgr` may be null: the device
  // then owns a fresh one.
  CpuDevice(std::string name, ThreadPool* pool,
            ResourceMgr* resource_mgr = nullptr);
  ~CpuDevice() override;

  Allocator* GetAllocator() override;
  ThreadPool* intra_op_pool() override { return pool_; }
  ResourceMgr* resource_manager() override { return rm_; }

 private:
  ThreadPool* pool_;
  std::unique_ptr<ResourceMgr> owned_rm_;
  ResourceMgr* rm_;
};

}  // namespace runnel

#endif  // RUNNEL_DEVICES_CPU_DEVICE_H_
