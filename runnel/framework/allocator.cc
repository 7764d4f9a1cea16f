#include "runnel/framework/allocator.h"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace runnel {

std::string AllocatorStats::DebugString() const {
  return absl::StrCat("num_allocs=", num_allocs, " bytes_in_use=", bytes_in_use,
                      " peak_bytes_in_use=", peak_bytes_in_use,
                      " largest_alloc_size=", largest_alloc_size);
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t{8} << 30;
  return static_cast<int64_t>(pages) * page;
}

namespace {

int64_t DefaultCpuLimit() {
  if (const char* mb = std::getenv("RUNNEL_CPU_MEMORY_LIMIT_MB")) {
    char* end = nullptr;
    const long long v = std::strtoll(mb, &end, 10);
    if (end != mb && *end == '\0' && v > 0 && v < (int64_t{1} << 43)) {
      return static_cast<int64_t>(v) << 20;
    }
  }
  return PhysicalMemoryBytes() / 10 * 8;
}

std::atomic<int64_t> g_cpu_limit{0};  // 0: not yet computed.

int64_t CurrentCpuLimit() {
  int64_t l = g_cpu_limit.load(std::memory_order_relaxed);
  if (l == 0) {
    l = DefaultCpuLimit();
    g_cpu_limit.store(l, std::memory_order_relaxed);
  }
  return l;
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
    // Note [Large buffers and mmap]: glibc serves blocks above its mmap
    // threshold with fresh mmaps, which page-fault on every training step
    // (logits, gradients). Keeping them in the heap lets freed buffers be
    // reused warm.
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
  }

  std::string Name() const override { return "cpu"; }

  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (alignment < kAllocatorAlignment) alignment = kAllocatorAlignment;
    if (bytes > (size_t{1} << 62)) return nullptr;
    // Reserve against the limit first, so two racing allocations cannot
    // both pass it.
    const int64_t in_use =
        bytes_in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (in_use > CurrentCpuLimit()) {
      bytes_in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      return nullptr;
    }
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
    if (p == nullptr) {
      bytes_in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      return nullptr;
    }
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    UpdateMax(peak_, in_use);
    UpdateMax(largest_, static_cast<int64_t>(bytes));
    return p;
  }

  void DeallocateRaw(void* ptr, size_t bytes) override {
    if (ptr == nullptr) return;
    bytes_in_use_.fetch_sub(bytes, std::memory_order_relaxed);
    std::free(ptr);
  }

  AllocatorStats GetStats() const override {
    AllocatorStats s;
    s.num_allocs = num_allocs_.load(std::memory_order_relaxed);
    s.bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
    s.peak_bytes_in_use = peak_.load(std::memory_order_relaxed);
    s.largest_alloc_size = largest_.load(std::memory_order_relaxed);
    return s;
  }

  void ClearStats() override {
    num_allocs_ = 0;
    peak_ = bytes_in_use_.load();
    largest_ = 0;
  }

 private:
  static void UpdateMax(std::atomic<int64_t>& m, int64_t v) {
    int64_t cur = m.load(std::memory_order_relaxed);
    while (v > cur &&
           !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }

  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> largest_{0};
};

}  // namespace

void SetCpuAllocatorLimit(int64_t bytes) {
  g_cpu_limit.store(bytes > 0 ? bytes : DefaultCpuLimit(),
                    std::memory_order_relaxed);
}

int64_t CpuAllocatorLimit() { return CurrentCpuLimit(); }

Allocator* cpu_allocator() {
  static Allocator* a = new CpuAllocator;
  return a;
}

}  // namespace runnel
