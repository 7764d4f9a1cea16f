// The contract between queue resources and the kernels that use them:
// QueueEnqueueV2/QueueDequeueV2... (runnel/ops/queue_ops.cc) and readers
// pulling file names (runnel/ops/reader_ops.cc). Whitepaper §4.6: queues
// let input preprocessing and training run concurrently, and let a
// dequeue block without holding a thread.
//
// Every Try* call returns at once; its callback runs exactly once, possibly
// later on another thread, after the operation finished or failed. Failures
// are reported through ctx->SetStatus before the callback runs:
// `OutOfRange` once the queue is closed and has too few elements left,
// `Cancelled` when the step is cancelled while waiting.
#ifndef RUNNEL_FRAMEWORK_QUEUE_INTERFACE_H_
#define RUNNEL_FRAMEWORK_QUEUE_INTERFACE_H_

#include <functional>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_mgr.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/types.h"

namespace runnel {

class QueueInterface : public ResourceBase {
 public:
  // One element: one tensor per component. For the *Many forms, each
  // component's first dimension is the element count.
  using Tuple = std::vector<Tensor>;
  using DoneCallback = std::function<void()>;
  using CallbackWithTuple = std::function<void(const Tuple&)>;

  // Checks dtypes and (where the queue has them) shapes of one element, or of
  // a batch of elements along dimension 0.
  virtual Status ValidateTuple(const Tuple& tuple) = 0;
  virtual Status ValidateManyTuple(const Tuple& tuple) = 0;

  // Blocks (without a thread) while the queue is full.
  virtual void TryEnqueue(const Tuple& tuple, OpKernelContext* ctx,
                          DoneCallback callback) = 0;
  virtual void TryEnqueueMany(const Tuple& tuple, OpKernelContext* ctx,
                              DoneCallback callback) = 0;

  // Calls back with one element (an empty tuple on failure).
  virtual void TryDequeue(OpKernelContext* ctx, CallbackWithTuple callback) = 0;
  // Calls back with `num_elements` elements batched along dimension 0; with
  // `allow_small_batch`, fewer once the queue is closed (DequeueUpTo).
  virtual void TryDequeueMany(int num_elements, OpKernelContext* ctx,
                              bool allow_small_batch,
                              CallbackWithTuple callback) = 0;

  // Closes the queue: later enqueues fail; dequeues drain what is left and
  // then fail with OutOfRange. With `cancel_pending_enqueues`, blocked
  // enqueues are cancelled too.
  virtual void Close(OpKernelContext* ctx, bool cancel_pending_enqueues,
                     DoneCallback callback) = 0;

  virtual bool is_closed() const = 0;
  virtual int32_t size() const = 0;
  virtual const std::vector<DataType>& component_dtypes() const = 0;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_QUEUE_INTERFACE_H_
