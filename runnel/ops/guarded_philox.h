// The Philox generator of one stateful random kernel instance, seeded from
// the op's `seed` and `seed2` attrs as in TensorFlow: key = seed, counter =
// [0, 0, seed2] (runnel/cpu/philox.h), or a fresh nondeterministic key and
// counter when both are 0. Private to the op families in runnel/ops
// (random_ops.cc, candidate_sampling_ops.cc).
//
// Thread safety: Reserve() may be called concurrently (one kernel instance
// runs on several steps at once); each caller gets a disjoint stretch of the
// stream.
#ifndef RUNNEL_OPS_GUARDED_PHILOX_H_
#define RUNNEL_OPS_GUARDED_PHILOX_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runnel/cpu/philox.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {

class GuardedPhilox {
 public:
  // Reads the int attrs `seed` and `seed2`; an error if either is missing.
  Status Init(OpKernelConstruction* c) {
    int64_t seed = 0, seed2 = 0;
    RETURN_IF_ERROR(c->GetAttr("seed", &seed));
    RETURN_IF_ERROR(c->GetAttr("seed2", &seed2));
    uint64_t s = static_cast<uint64_t>(seed), s2 = static_cast<uint64_t>(seed2);
    if (s == 0 && s2 == 0) {
      s = random::New64();
      s2 = random::New64();
    }
    absl::MutexLock lock(&mu_);
    gen_ = random::Philox4x32(s, s2);
    return absl::OkStatus();
  }

  // A generator positioned at the start of `blocks` fresh counter blocks
  // (4 32-bit words each); the kernel's stream moves past them.
  random::Philox4x32 Reserve(uint64_t blocks) {
    absl::MutexLock lock(&mu_);
    random::Philox4x32 local = gen_;
    gen_.Skip(blocks);
    return local;
  }

 private:
  absl::Mutex mu_;
  random::Philox4x32 gen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_OPS_GUARDED_PHILOX_H_
