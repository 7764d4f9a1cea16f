#include "runnel/framework/allocator.h"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

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

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Note [Large buffers and mmap]: glibc serves blocks above its mmap
// threshold with fresh mmaps, which page-fault (and the kernel zeroes) on
// every use: a training step's logits and gradients, a 100 MB tensor
// received over RPC every step. Raising the threshold keeps blocks in the
// main heap, but threads allocate from their own arenas, whose heaps hold
// at most 64 MB, so large blocks allocated on executor or RPC threads are
// still fresh mmaps. So blocks of at least kLargeBlockBytes are kept when
// freed (at most kMaxCachedBytes of them) and handed out again, warm, to a
// request of about the same size, as TensorFlow's BFC allocator does.
// Sanitized builds do not cache, so every block is still checked.
constexpr size_t kLargeBlockBytes = size_t{4} << 20;
constexpr size_t kLargeBlockGranule = size_t{2} << 20;
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

class LargeBlockCache {
 public:
  // A cached block of at least `bytes` (which is a multiple of the block
  // granule, as every block is) and less than 1.25x as big, or nullptr.
  // Sets *block_bytes to its size.
  void* Take(size_t bytes, size_t* block_bytes) {
    absl::MutexLock lock(&mu_);
    auto it = free_.lower_bound(bytes);
    if (it == free_.end() || it->first > bytes + bytes / 4) return nullptr;
    void* p = it->second;
    *block_bytes = it->first;
    cached_bytes_ -= it->first;
    free_.erase(it);
    return p;
  }

  // Keeps `p` (of `block_bytes`) for reuse; false when the cache is full,
  // and the caller frees it.
  bool Put(void* p, size_t block_bytes) {
    absl::MutexLock lock(&mu_);
    if (cached_bytes_ + block_bytes > kMaxCachedBytes) return false;
    free_.emplace(block_bytes, p);
    cached_bytes_ += block_bytes;
    return true;
  }

  // Frees every cached block (before an allocation is refused for memory).
  void Release() {
    std::multimap<size_t, void*> free;
    {
      absl::MutexLock lock(&mu_);
      free.swap(free_);
      cached_bytes_ = 0;
    }
    for (auto& [bytes, p] : free) std::free(p);
  }

  // Remembers the block size of a live large block, and looks it up.
  void Track(void* p, size_t block_bytes) {
    absl::MutexLock lock(&mu_);
    live_[p] = block_bytes;
  }
  size_t Untrack(void* p) {
    absl::MutexLock lock(&mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return 0;
    const size_t bytes = it->second;
    live_.erase(it);
    return bytes;
  }

 private:
  absl::Mutex mu_;
  std::multimap<size_t, void*> free_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<void*, size_t> live_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
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
    void* p = IsCached(alignment, bytes) ? AllocateLarge(bytes)
                                         : AllocateSmall(alignment, bytes);
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
    if (IsCached(kAllocatorAlignment, bytes)) {
      const size_t block_bytes = large_.Untrack(ptr);
      if (block_bytes != 0 && large_.Put(ptr, block_bytes)) return;
    }
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
  // Whether a block of `bytes` goes through the large-block cache.
  static bool IsCached(size_t alignment, size_t bytes) {
    return !kSanitized && bytes >= kLargeBlockBytes &&
           alignment <= kLargeBlockGranule;
  }

  static void* AllocateSmall(size_t alignment, size_t bytes) {
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  }

  void* AllocateLarge(size_t bytes) {
    // Blocks come in whole granules, so a request matches the block it was
    // given last time by its rounded size (matching by `bytes` would refuse
    // e.g. a 6 MB block to a 4.1 MB request, more than 1.25x, and allocate
    // a fresh block every step).
    const size_t rounded = (bytes + kLargeBlockGranule - 1) /
                           kLargeBlockGranule * kLargeBlockGranule;
    size_t block_bytes = 0;
    if (void* p = large_.Take(rounded, &block_bytes)) {
      large_.Track(p, block_bytes);
      return p;
    }
    block_bytes = rounded;
    void* p = std::aligned_alloc(kLargeBlockGranule, block_bytes);
    if (p == nullptr) {
      large_.Release();
      p = std::aligned_alloc(kLargeBlockGranule, block_bytes);
      if (p == nullptr) return nullptr;
    }
    large_.Track(p, block_bytes);
    return p;
  }

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
  LargeBlockCache large_;
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

// ---------------------------------------------------------------------------
// LimitedAllocator

namespace {

void RaiseTo(std::atomic<int64_t>* max, int64_t v) {
  int64_t seen = max->load(std::memory_order_relaxed);
  while (v > seen &&
         !max->compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

LimitedAllocator::LimitedAllocator(Allocator* base, int64_t limit)
    : base_(base), limit_(limit) {}

void LimitedAllocator::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

std::string LimitedAllocator::Name() const {
  return absl::StrCat(base_->Name(), " (step limit ", limit_, " bytes, ",
                      in_use_.load(std::memory_order_relaxed), " in use)");
}

void* LimitedAllocator::AllocateRaw(size_t alignment, size_t bytes) {
  const auto n = static_cast<int64_t>(bytes);
  if (n < 0 || in_use_.fetch_add(n, std::memory_order_relaxed) > limit_ - n) {
    if (n >= 0) in_use_.fetch_sub(n, std::memory_order_relaxed);
    return nullptr;
  }
  void* p = base_->AllocateRaw(alignment, bytes);
  if (p == nullptr) {
    in_use_.fetch_sub(n, std::memory_order_relaxed);
    return nullptr;
  }
  refs_.fetch_add(1, std::memory_order_relaxed);
  num_allocs_.fetch_add(1, std::memory_order_relaxed);
  RaiseTo(&peak_, in_use_.load(std::memory_order_relaxed));
  RaiseTo(&largest_, n);
  return p;
}

void LimitedAllocator::DeallocateRaw(void* ptr, size_t bytes) {
  base_->DeallocateRaw(ptr, bytes);
  in_use_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  Unref();
}

AllocatorStats LimitedAllocator::GetStats() const {
  AllocatorStats s;
  s.num_allocs = num_allocs_.load(std::memory_order_relaxed);
  s.bytes_in_use = in_use_.load(std::memory_order_relaxed);
  s.peak_bytes_in_use = peak_.load(std::memory_order_relaxed);
  s.largest_alloc_size = largest_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace runnel
