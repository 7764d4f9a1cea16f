// Intrusive reference counting for objects shared across threads (tensor
// buffers, resources). Cheaper than shared_ptr on hot paths: one atomic per
// object and no control block.
#ifndef RUNNEL_BASE_REFCOUNT_H_
#define RUNNEL_BASE_REFCOUNT_H_

#include <atomic>
#include <cstdint>

namespace runnel {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

  void Ref() const { ref_.fetch_add(1, std::memory_order_relaxed); }
  // Drops one reference; deletes the object when it was the last. Returns
  // true if the object was deleted.
  bool Unref() const {
    if (ref_.load(std::memory_order_acquire) == 1 ||
        ref_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
      return true;
    }
    return false;
  }
  // True if the caller holds the only reference.
  bool RefCountIsOne() const {
    return ref_.load(std::memory_order_acquire) == 1;
  }

 protected:
  virtual ~RefCounted() = default;

 private:
  mutable std::atomic<int64_t> ref_{1};
};

// Unrefs on scope exit.
class ScopedUnref {
 public:
  explicit ScopedUnref(const RefCounted* o) : obj_(o) {}
  ~ScopedUnref() {
    if (obj_) obj_->Unref();
  }
  ScopedUnref(const ScopedUnref&) = delete;
  ScopedUnref& operator=(const ScopedUnref&) = delete;

 private:
  const RefCounted* obj_;
};

}  // namespace runnel

#endif  // RUNNEL_BASE_REFCOUNT_H_
