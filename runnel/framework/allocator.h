// Allocator: where tensor buffers come from. The CPU allocator hands out
// 64-byte-aligned memory and keeps statistics.
//
// Thread safety: allocators are shared by every kernel; all methods are
// thread-safe.
#ifndef RUNNEL_FRAMEWORK_ALLOCATOR_H_
#define RUNNEL_FRAMEWORK_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace runnel {

inline constexpr size_t kAllocatorAlignment = 64;

struct AllocatorStats {
  int64_t num_allocs = 0;         // Allocations ever made.
  int64_t bytes_in_use = 0;       // Bytes currently allocated.
  int64_t peak_bytes_in_use = 0;  // High-water mark of bytes_in_use.
  int64_t largest_alloc_size = 0;
  std::string DebugString() const;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns memory aligned to `alignment` (a power of two), or nullptr when
  // out of memory. `bytes` may be 0.
  virtual void* AllocateRaw(size_t alignment, size_t bytes) = 0;
  // `bytes` must be the size passed to AllocateRaw.
  virtual void DeallocateRaw(void* ptr, size_t bytes) = 0;
  virtual AllocatorStats GetStats() const = 0;
  virtual void ClearStats() {}
};

// The process-wide CPU allocator (never destroyed). It refuses (returns
// nullptr, which kernels report as ResourceExhausted naming the node) any
// allocation that would take its bytes in use past its limit: by default 80%
// of physical memory, or RUNNEL_CPU_MEMORY_LIMIT_MB from the environment.
// Freed blocks of 4 MB and more are kept (at most 1 GiB of them, not counted
// as in use) and reused warm for requests of about their size (Note [Large
// buffers and mmap] in allocator.cc); sanitized builds keep none.
Allocator* cpu_allocator();
// Changes that limit (bytes; <= 0 restores the default). Thread-safe.
void SetCpuAllocatorLimit(int64_t bytes);
int64_t CpuAllocatorLimit();

// Physical memory of this machine in bytes (a fixed guess if unknown).
int64_t PhysicalMemoryBytes();

// The allocator of one step with a memory limit
// (ConfigProto.runnel_step_memory_limit_bytes; Note [Step memory limits] in
// runtime/partitioned_executor.cc). It takes memory from `base` and refuses
// (returns nullptr, which kernels report as ResourceExhausted naming the
// node) any allocation that would take the bytes of its live buffers past
// `limit`. A buffer may outlive its step (a fetched value, a variable's new
// value), so the allocator counts references: its creator holds one, every
// live allocation another, and the last Unref deletes it.
class LimitedAllocator final : public Allocator {
 public:
  LimitedAllocator(Allocator* base, int64_t limit);
  LimitedAllocator(const LimitedAllocator&) = delete;
  LimitedAllocator& operator=(const LimitedAllocator&) = delete;

  // Drops the creator's reference.
  void Unref();

  // "cpu (step limit L bytes, U in use)": what an out-of-memory error says.
  std::string Name() const override;
  void* AllocateRaw(size_t alignment, size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;
  AllocatorStats GetStats() const override;
  int64_t limit() const { return limit_; }

 private:
  ~LimitedAllocator() override = default;

  Allocator* const base_;
  const int64_t limit_;
  std::atomic<int64_t> refs_{1};
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> largest_{0};
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_ALLOCATOR_H_
