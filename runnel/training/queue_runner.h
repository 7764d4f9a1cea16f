// QueueRunner: threads that keep a queue filled (TensorFlow 1.x's
// tf.train.QueueRunner, and its C++ twin tensorflow/cc/training/
// queue_runner.h). Whitepaper §4.6: input preprocessing runs concurrently
// with training, joined by a queue.
//
//   auto queue = ops::FIFOQueueV2(root, {DT_FLOAT}, ...);
//   auto enqueue = ops::QueueEnqueueV2(root, queue, {preprocessed});
//   auto batch = ops::QueueDequeueManyV2(root, queue, 32, {DT_FLOAT});
//   auto runner = QueueRunner::New(root, queue, {enqueue.operation});
//   ClientSession session(root);
//   Coordinator coord;
//   RETURN_IF_ERROR((*runner)->Start(&session, &coord));
//   ... session.Run({batch[0]}, &out) until coord.ShouldStop() ...
//   coord.RequestStop();
//   RETURN_IF_ERROR((*runner)->Join());   // or coord.RegisterRunner + Join
//
// Start launches one thread per enqueue op; each runs its op in a loop until
// the op fails or a stop is requested (Stop(), or the coordinator's
// RequestStop). How a thread's loop ends:
//  - an error whose code is in queue_closed_exception_types (OutOfRange by
//    default: the enqueue op's own input, e.g. an upstream queue, ran out)
//    ends it quietly; the last thread to end that way runs the close op, so
//    consumers drain the queue and then get OutOfRange;
//  - after a stop request, errors are the cancellations the stop caused and
//    are ignored;
//  - any other error is recorded (Join and GetStatus return the first) and
//    reported to the coordinator, which stops every thread.
// On a stop request the runner runs the cancel op (close with
// cancel_pending_enqueues), so enqueues blocked on a full queue end at once.
//
// Ops run through a ClientSession (a runner made from a Scope runs its
// Operations, so ClientSession first sends them to its session) or a
// Session (by name; the ops must already be in the session's graph).
// The session and coordinator must outlive the runner's threads (Join).
//
// Thread safety: all methods are thread-safe; Join must not be called from
// a runner thread. The destructor stops and joins.
#ifndef RUNNEL_TRAINING_QUEUE_RUNNER_H_
#define RUNNEL_TRAINING_QUEUE_RUNNER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "runnel/api/client_session.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/runtime/session.h"
#include "runnel/training/coordinator.h"

namespace runnel {

// TensorFlow's QueueRunnerDef (tensorflow/core/protobuf/queue_runner.proto)
// as a C++ struct.
struct QueueRunnerDef {
  std::string queue_name;
  std::vector<std::string> enqueue_op_name;  // One thread each.
  std::string close_op_name;                 // Optional.
  std::string cancel_op_name;                // Optional.
  // Codes meaning "the input is exhausted"; empty means {OutOfRange}.
  std::vector<absl::StatusCode> queue_closed_exception_types;
};

class QueueRunner : public RunnerInterface {
 public:
  // A runner that runs ops by name (Start with a Session, or a ClientSession
  // whose session already has them). InvalidArgument without enqueue ops or
  // with an empty op name.
  static StatusOr<std::unique_ptr<QueueRunner>> New(const QueueRunnerDef& def);
  // A runner for `queue` (a queue handle) and `enqueue_ops`: adds its close
  // and cancel ops (QueueCloseV2, without and with cancel_pending_enqueues)
  // to `scope`, named "<queue node>/close" and "<queue node>/cancel".
  static StatusOr<std::unique_ptr<QueueRunner>> New(
      const Scope& scope, const Output& queue,
      const std::vector<Operation>& enqueue_ops);

  ~QueueRunner() override;
  QueueRunner(const QueueRunner&) = delete;
  QueueRunner& operator=(const QueueRunner&) = delete;

  // Starts the threads. `coord` (optional) is told about errors and stops
  // the runner when a stop is requested. FailedPrecondition if threads from
  // an earlier Start have not been joined.
  Status Start(ClientSession* session, Coordinator* coord = nullptr);
  Status Start(Session* session, Coordinator* coord = nullptr);

  // Requests a stop and runs the cancel op; the threads then end. Idempotent.
  void Stop();
  // Waits for the threads; returns the first error (see the file comment).
  Status Join() override;
  Status GetStatus() const;
  bool IsRunning() const override;

  const QueueRunnerDef& def() const { return def_; }

 private:
  explicit QueueRunner(QueueRunnerDef def) : def_(std::move(def)) {}

  Status StartImpl(ClientSession* client, Session* session, Coordinator* coord);
  // Runs enqueue op `i` (or the close/cancel op) once.
  Status RunOp(int i);
  Status RunNamed(const std::string& name, const Operation& op);
  void Loop(int i);
  void ThreadDone(const Status& s);
  bool StopRequested() const;
  bool IsQueueClosed(const Status& s) const;
  void UpdateStatus(const Status& s);

  const QueueRunnerDef def_;
  // From a Scope: the ops themselves (run through a ClientSession).
  std::vector<Operation> enqueue_ops_;
  Operation close_op_, cancel_op_;

  mutable absl::Mutex mu_;
  ClientSession* client_ ABSL_GUARDED_BY(mu_) = nullptr;
  Session* session_ ABSL_GUARDED_BY(mu_) = nullptr;
  Coordinator* coord_ ABSL_GUARDED_BY(mu_) = nullptr;
  Coordinator::CallbackId stop_callback_ ABSL_GUARDED_BY(mu_) = -1;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // Cancel op already run.
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  Status status_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;  // Serialises Start and Join.
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace runnel

#endif  // RUNNEL_TRAINING_QUEUE_RUNNER_H_
