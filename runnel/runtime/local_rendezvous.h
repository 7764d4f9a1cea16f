// LocalRendezvous: the in-process Rendezvous (runnel/framework/rendezvous.h)
// one step's partitions share. A Send and its Recv meet in a hash table keyed
// by the rendezvous key: whichever comes second completes the transfer, so a
// local Send/Recv pair costs one lock, one hash lookup and (when the Recv
// waited) one callback — the tensor's buffer is shared, never copied.
//
// Thread safety: every method may be called concurrently.
#ifndef RUNNEL_RUNTIME_LOCAL_RENDEZVOUS_H_
#define RUNNEL_RUNTIME_LOCAL_RENDEZVOUS_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/rendezvous.h"

namespace runnel {

class LocalRendezvous : public Rendezvous {
 public:
  LocalRendezvous() = default;
  // Pending receivers are called with Aborted ("rendezvous destroyed") so
  // no callback is ever lost.
  ~LocalRendezvous() override;

  Status Send(const ParsedKey& key, const Args& args, const Tensor& value,
              bool is_dead) override;
  void RecvAsync(const ParsedKey& key, const Args& args,
                 DoneCallback done) override;
  void StartAbort(const Status& status) override;

  // Values sent but not (yet) received, and receivers still waiting.
  int64_t NumPendingSends() const;
  int64_t NumPendingRecvs() const;

 private:
  struct Item {
    // A sent value ...
    Tensor value;
    bool is_dead = false;
    Args send_args;
    // ... or a waiting receiver.
    DoneCallback recv_done;
    Args recv_args;
  };
  // Either all sends or all receivers, in arrival order (almost always one
  // item: a key carries one value per step).
  struct Queue {
    bool holds_sends = true;
    absl::InlinedVector<Item, 1> items;
  };

  mutable absl::Mutex mu_;
  // Keyed by the key's 64-bit hash, as TF's LocalRendezvous is: a collision
  // between two keys of one step is vanishingly unlikely.
  absl::flat_hash_map<uint64_t, Queue> table_ ABSL_GUARDED_BY(mu_);
  Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_LOCAL_RENDEZVOUS_H_
