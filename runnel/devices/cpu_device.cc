#include "runnel/devices/cpu_device.h"

#include <cstdlib>
#include <thread>

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

CpuDevice::CpuDevice(std::string name, ThreadPool* pool,
                     ResourceMgr* resource_mgr)
    : name_(std::move(name)), pool_(pool) {
  if (resource_mgr == nullptr) {
    owned_rm_ = std::make_unique<ResourceMgr>();
    rm_ = owned_rm_.get();
  } else {
    rm_ = resource_mgr;
  }
}

CpuDevice::~CpuDevice() = default;

Allocator* CpuDevice::GetAllocator() { return cpu_allocator(); }

}  // namespace runnel
