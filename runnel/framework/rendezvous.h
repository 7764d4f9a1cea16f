// Rendezvous: where a `_Send` leaves a tensor and the matching `_Recv`
// picks it up (whitepaper §3.2.2, OSDI §3.3). The partitioner turns every
// edge between devices into such a pair; a step gets a fresh rendezvous, in
// process a hash-table hand-off (runnel/runtime/local_rendezvous.h), across
// processes a remote one over RPC. Kernels see only this interface, so the
// executor never knows whether a tensor crossed a thread or a network.
//
// A transfer is named by a key in TensorFlow's format,
//
//   src_device;src_incarnation;dst_device;tensor_name;frame_id:iter_id
//
// e.g. "/job:localhost/replica:0/task:0/device:CPU:0;0000000000000001;
// /job:localhost/replica:0/task:0/device:CPU:1;edge_5_a;0:0", where the
// incarnation is 16 lower-case hex digits and frame_id (an unsigned 64-bit
// hash of the loop frame instance, 0 for the root frame) and iter_id are
// decimal. One Send and one Recv meet on each key per step; either may come
// first.
//
// Thread safety: every method may be called concurrently.
#ifndef RUNNEL_FRAMEWORK_RENDEZVOUS_H_
#define RUNNEL_FRAMEWORK_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/framework/device_base.h"
#include "runnel/framework/device_name.h"
#include "runnel/framework/tensor.h"

namespace runnel {

// Where a value is in the executor's loops: which frame instance and which
// iteration of it (both 0 outside loops).
struct FrameAndIter {
  uint64_t frame_id = 0;
  int64_t iter_id = 0;
  bool operator==(const FrameAndIter&) const = default;
};

class Rendezvous {
 public:
  // What one side of a transfer knows about its device.
  struct Args {
    const DeviceContext* device_context = nullptr;
  };

  // A key split into its parts. The views point into `full_key`; copying a
  // ParsedKey re-points them (so it is safe to copy and move).
  struct ParsedKey {
    ParsedKey() = default;
    ParsedKey(const ParsedKey& other) { *this = other; }
    ParsedKey& operator=(const ParsedKey& other);

    std::string full_key;
    absl::string_view src_device;
    uint64_t src_incarnation = 0;
    absl::string_view dst_device;
    absl::string_view edge_name;
    FrameAndIter frame_iter;
    DeviceName src;
    DeviceName dst;
    // A 64-bit hash of full_key (what a rendezvous table is keyed by).
    uint64_t hash = 0;
  };

  // The key's text (see the file comment).
  static std::string CreateKey(absl::string_view src_device,
                               uint64_t src_incarnation,
                               absl::string_view dst_device,
                               absl::string_view name,
                               const FrameAndIter& frame_iter);
  // InvalidArgument naming the key if it does not have five ';'-separated
  // parts, a hex incarnation, two parsable device names, a non-empty name and
  // a "frame:iter" pair.
  static Status ParseKey(absl::string_view key, ParsedKey* out);

  virtual ~Rendezvous() = default;

  // Leaves `value` (or a dead token, when `is_dead`) under `key`. Never
  // blocks. An error if the rendezvous was aborted or the key already has a
  // value this step.
  virtual Status Send(const ParsedKey& key, const Args& args,
                      const Tensor& value, bool is_dead) = 0;

  // Called once, on some thread, when the value under the key arrives (or
  // the rendezvous aborts: then with the abort status).
  using DoneCallback = std::function<void(
      const Status& status, const Args& send_args, const Args& recv_args,
      const Tensor& value, bool is_dead)>;
  virtual void RecvAsync(const ParsedKey& key, const Args& args,
                         DoneCallback done) = 0;

  // Fails every pending and later Send/Recv with `status` (not OK): one
  // partition's error stops the others instead of leaving them waiting.
  virtual void StartAbort(const Status& status) = 0;

  // Blocking Recv. `timeout_ms` > 0 bounds the wait (DeadlineExceeded).
  Status Recv(const ParsedKey& key, const Args& args, Tensor* value,
              bool* is_dead, int64_t timeout_ms = 0);
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_RENDEZVOUS_H_
