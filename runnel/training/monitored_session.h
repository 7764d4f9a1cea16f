// MonitoredTrainingSession: the training loop's session (TensorFlow 1.x's
// tf.train.MonitoredTrainingSession), for one process or one replica of a
// cluster:
//
//   training::StopAtStepHook stop(/*last_step=*/1000);
//   training::MonitoredTrainingSessionOptions o;
//   o.session.target = server->target();   // "" for a local session
//   o.is_chief = task == 0;
//   o.checkpoint_dir = "/tmp/ckpt";
//   o.save_checkpoint_steps = 100;
//   o.hooks = {&stop};
//   ASSIGN_OR_RETURN(auto mts, training::MonitoredTrainingSession::Create(root,
//   o)); while (!mts->ShouldStop()) {
//     RETURN_IF_ERROR(mts->Run({{x, batch}}, {loss}, {train_op}, &out));
//   }
//   RETURN_IF_ERROR(mts->Close());
//
// Note [Monitored session].
//  * Create calls every hook's Begin (which may add ops), then makes the
//    session. The chief restores the latest checkpoint of checkpoint_dir if
//    there is one, else runs the global variables' initialisers. Any other
//    replica waits, polling every 0.5 s for at most wait_for_init_secs, until
//    the model is ready: every global variable readable except this
//    replica's own ones (a SyncReplicasOptimizer's local step), which its
//    hooks initialise. Then every hook's AfterCreateSession runs.
//  * Run adds the hooks' BeforeRun fetches to the step, hands each hook its
//    values in AfterRun (a hook may ask to stop), and, on the chief with a
//    checkpoint_dir, saves a checkpoint every save_checkpoint_steps global
//    steps (the global step is fetched with every step for it). OutOfRange
//    from the step (an input or a closed token queue ran out) also stops:
//    Run returns OK and ShouldStop() becomes true.
//  * Close calls every hook's End, saves a last checkpoint (chief), stops the
//    coordinator's threads (queue runners the hooks started), closes the
//    session, which cancels steps still running, and joins the threads.
//
// Hooks (TF's SessionRunHook), not owned, must outlive the session:
//   StopAtStepHook        stop once the global step reaches last_step (as
//                         TF's: when the value read during a step plus one
//                         reaches it, the global step is read again to be
//                         sure).
//   SummarySaverHook      every N global steps (and at the first step), a
//                         summary op's value (MergeSummary's) into an event
//                         file at the step; the graph and a SessionLog START
//                         at the step the session starts from.
//   StepCounterHook       every N global steps, "global_step/sec".
//   SyncReplicasHook      a SyncReplicasOptimizer's start-up (chief: its
//                         init op, initial tokens and sync thread; others:
//                         their local step) and, at the chief's End, the
//                         closing of the token queue that releases the
//                         other workers (their next step is OutOfRange).
//
// With summary_dir, the chief also writes an event file there (TF's
// summary_dir / save_summaries_steps): a SummarySaverHook of summary_op (if
// set) and a StepCounterHook, both every save_summaries_steps; the file is
// closed at Close.
//
// The global step is the graph's "global_step" variable
// (CreateGlobalStep); without one, StopAtStepHook and step-based
// checkpoints are InvalidArgument at Create.
//
// Thread safety: Run may be called from several threads; Create and Close
// from one.
#ifndef RUNNEL_TRAINING_MONITORED_SESSION_H_
#define RUNNEL_TRAINING_MONITORED_SESSION_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "runnel/api/client_session.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/training/coordinator.h"
#include "runnel/training/layers.h"
#include "runnel/training/saver.h"
#include "runnel/training/summary_writer.h"
#include "runnel/training/sync_replicas_optimizer.h"

namespace runnel::training {

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;
  // Before the session exists; may add ops to `scope`'s graph.
  virtual Status Begin(const Scope& scope) { return absl::OkStatus(); }
  // After the variables are initialised (chief) or ready (others).
  virtual Status AfterCreateSession(ClientSession* session,
                                    Coordinator* coord) {
    return absl::OkStatus();
  }
  // Tensors to fetch with the next step.
  virtual std::vector<Output> BeforeRun() { return {}; }
  // Their values (read while the step ran: a variable may show its value
  // from before the step's update); set *stop to end training.
  virtual Status AfterRun(ClientSession* session,
                          const std::vector<Tensor>& values, bool* stop) {
    return absl::OkStatus();
  }
  // Before the session closes.
  virtual Status End(ClientSession* session) { return absl::OkStatus(); }
};

struct MonitoredTrainingSessionOptions {
  SessionOptions session;  // target "" is a local session.
  bool is_chief = true;
  // Chief: restore from / save to this directory ("" for none).
  std::string checkpoint_dir;
  int64_t save_checkpoint_steps = 0;  // 0: only at Close.
  int wait_for_init_secs = 120;       // Non-chiefs.
  int64_t step_timeout_ms = 0;        // Each Run's RunOptions; 0: none.
  std::vector<SessionRunHook*> hooks;
  // Chief: an event file in this directory ("" for none).
  std::string summary_dir;
  int64_t save_summaries_steps = 100;
  Output summary_op;  // A serialized Summary (MergeSummary); may be null.
};

class MonitoredTrainingSession {
 public:
  static StatusOr<std::unique_ptr<MonitoredTrainingSession>> Create(
      const Scope& scope, const MonitoredTrainingSessionOptions& options);
  ~MonitoredTrainingSession();  // Close, ignoring its status.

  Status Run(const ClientSession::FeedType& feeds,
             const std::vector<Output>& fetches,
             const std::vector<Operation>& targets,
             std::vector<Tensor>* outputs);
  bool ShouldStop() const { return stop_.load(); }
  Status Close();

  ClientSession* raw_session() { return session_.get(); }
  Coordinator* coordinator() { return &coord_; }
  // The global step as the last Run read it, which may be from before its
  // update (-1 before the first Run).
  int64_t global_step() const { return last_step_.load(); }

 private:
  MonitoredTrainingSession(const Scope& scope,
                           const MonitoredTrainingSessionOptions& options)
      : scope_(scope), options_(options) {}
  Status Init();
  Status Save();

  Scope scope_;
  MonitoredTrainingSessionOptions options_;
  // summary_dir's writer and hooks (also in options_.hooks).
  std::unique_ptr<FileWriter> summary_writer_;
  std::vector<std::unique_ptr<SessionRunHook>> own_hooks_;
  Output global_step_;
  std::unique_ptr<Saver> saver_;
  std::unique_ptr<ClientSession> session_;
  Coordinator coord_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> last_step_{-1};
  absl::Mutex save_mu_;
  int64_t last_saved_ ABSL_GUARDED_BY(save_mu_) = 0;
  bool closed_ = false;
};

class StopAtStepHook : public SessionRunHook {
 public:
  explicit StopAtStepHook(int64_t last_step) : last_step_(last_step) {}
  Status Begin(const Scope& scope) override;
  std::vector<Output> BeforeRun() override { return {global_step_}; }
  Status AfterRun(ClientSession* session, const std::vector<Tensor>& values,
                  bool* stop) override;

 private:
  int64_t last_step_;
  Output global_step_;
};

class SummarySaverHook : public SessionRunHook {
 public:
  // `writer` (not owned) gets `summary_op`'s value every `every_steps`
  // global steps; a null summary_op writes only the graph and START.
  SummarySaverHook(FileWriter* writer, Output summary_op, int64_t every_steps)
      : writer_(writer), summary_op_(summary_op), every_steps_(every_steps) {}
  Status Begin(const Scope& scope) override;
  Status AfterCreateSession(ClientSession* session,
                            Coordinator* coord) override;
  std::vector<Output> BeforeRun() override;
  Status AfterRun(ClientSession* session, const std::vector<Tensor>& values,
                  bool* stop) override;
  Status End(ClientSession* session) override { return writer_->Flush(); }

 private:
  FileWriter* writer_;
  Output summary_op_;
  int64_t every_steps_;
  std::optional<Scope> scope_;  // Set by Begin.
  Output global_step_;
  absl::Mutex mu_;
  int64_t last_written_ ABSL_GUARDED_BY(mu_) = -1;  // -1: none yet.
  int64_t next_step_ ABSL_GUARDED_BY(mu_) = -1;
};

class StepCounterHook : public SessionRunHook {
 public:
  // Writes "global_step/sec" to `writer` (not owned) every `every_steps`.
  StepCounterHook(FileWriter* writer, int64_t every_steps)
      : writer_(writer), every_steps_(every_steps) {}
  Status Begin(const Scope& scope) override;
  std::vector<Output> BeforeRun() override { return {global_step_}; }
  Status AfterRun(ClientSession* session, const std::vector<Tensor>& values,
                  bool* stop) override;

 private:
  FileWriter* writer_;
  int64_t every_steps_;
  Output global_step_;
  absl::Mutex mu_;
  int64_t last_step_ ABSL_GUARDED_BY(mu_) = -1;
  double last_seconds_ ABSL_GUARDED_BY(mu_) = 0;
};

class SyncReplicasHook : public SessionRunHook {
 public:
  // `sync` (not owned) after its ApplyGradients. num_tokens as
  // SyncReplicasOptimizer::GetInitTokensOp.
  SyncReplicasHook(SyncReplicasOptimizer* sync, bool is_chief,
                   int num_tokens = -1)
      : sync_(sync), is_chief_(is_chief), num_tokens_(num_tokens) {}
  Status Begin(const Scope& scope) override;
  Status AfterCreateSession(ClientSession* session,
                            Coordinator* coord) override;
  Status End(ClientSession* session) override;

 private:
  SyncReplicasOptimizer* sync_;
  bool is_chief_;
  int num_tokens_;
  Operation init_tokens_, close_tokens_;
  std::unique_ptr<QueueRunner> runner_;
  Coordinator* coord_ = nullptr;
};

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_MONITORED_SESSION_H_
