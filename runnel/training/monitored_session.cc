#include "runnel/training/monitored_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {
namespace {

// The graph's global step (CreateGlobalStep), or a null Output.
Output FindGlobalStep(const Scope& scope) {
  for (const Variable& v : GlobalVariables(scope)) {
    if (v.name() == "global_step") return v.value();
  }
  return Output();
}

// A replica's own variables, which its hooks initialise (Note [Monitored
// session]).
bool IsReplicaLocal(const Variable& v) {
  return absl::StartsWith(v.name(), "sync_rep_local_step");
}

}  // namespace

StatusOr<std::unique_ptr<MonitoredTrainingSession>>
MonitoredTrainingSession::Create(
    const Scope& scope, const MonitoredTrainingSessionOptions& options) {
  std::unique_ptr<MonitoredTrainingSession> mts(
      new MonitoredTrainingSession(scope, options));
  RETURN_IF_ERROR(mts->Init());
  return mts;
}

Status MonitoredTrainingSession::Init() {
  if (options_.is_chief && !options_.summary_dir.empty()) {
    // Opened first: an unwritable directory fails before any work.
    ASSIGN_OR_RETURN(summary_writer_, FileWriter::Create(options_.summary_dir));
    own_hooks_.push_back(std::make_unique<SummarySaverHook>(
        summary_writer_.get(), options_.summary_op,
        options_.save_summaries_steps));
    own_hooks_.push_back(std::make_unique<StepCounterHook>(
        summary_writer_.get(), options_.save_summaries_steps));
    for (auto& hook : own_hooks_) options_.hooks.push_back(hook.get());
  }
  for (SessionRunHook* hook : options_.hooks) {
    if (hook == nullptr) {
      return errors::InvalidArgument("MonitoredTrainingSession: a null hook");
    }
    RETURN_IF_ERROR(hook->Begin(scope_));
  }
  global_step_ = FindGlobalStep(scope_);
  const bool saving = options_.is_chief && !options_.checkpoint_dir.empty();
  if (saving && options_.save_checkpoint_steps > 0 &&
      global_step_.node() == nullptr) {
    return errors::InvalidArgument(
        "MonitoredTrainingSession: save_checkpoint_steps needs a global step "
        "(training::CreateGlobalStep)");
  }
  // Readiness: every global variable but the replica's own is initialised.
  const Scope root = scope_.WithDeviceFunction(nullptr).ClearColocation();
  std::vector<Output> ready;
  for (const Variable& v : GlobalVariables(scope_)) {
    if (IsReplicaLocal(v)) continue;
    ready.push_back(ops::VarIsInitializedOp(
        root.WithNoControlDependencies().ColocateWith(v.handle()), v.handle()));
  }
  Operation init;
  if (options_.is_chief) init = GlobalVariablesInitializer(root);
  if (saving) {
    saver_ = std::make_unique<Saver>(root);
    RETURN_IF_ERROR(saver_->status());
  }
  RETURN_IF_ERROR(scope_.status());
  session_ = std::make_unique<ClientSession>(scope_, options_.session);

  std::vector<Tensor> out;
  if (options_.is_chief) {
    std::optional<std::string> latest;
    if (saver_ != nullptr) {
      StatusOr<std::string> l = LatestCheckpoint(options_.checkpoint_dir);
      if (l.ok()) latest = *l;
    }
    if (latest.has_value()) {
      RETURN_IF_ERROR(saver_->Restore(session_.get(), *latest));
      RETURN_IF_ERROR(saver_->RecoverLastCheckpoints(options_.checkpoint_dir));
    } else {
      RETURN_IF_ERROR(session_->Run({}, {}, {init}, &out));
    }
  } else if (!ready.empty()) {
    // Bounded: the chief may be slow to start, not absent for ever.
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::seconds(options_.wait_for_init_secs);
    for (;;) {
      Status s = session_->Run(ready, &out);
      bool all = s.ok();
      for (size_t i = 0; all && i < out.size(); ++i)
        all = out[i].scalar<bool>();
      if (all) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        return errors::DeadlineExceeded(
            "MonitoredTrainingSession: the model was not initialised by the "
            "chief within ",
            options_.wait_for_init_secs, " s",
            s.ok() ? "" : absl::StrCat(" (last error: ", s.message(), ")"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  for (SessionRunHook* hook : options_.hooks) {
    RETURN_IF_ERROR(hook->AfterCreateSession(session_.get(), &coord_));
  }
  if (saver_ != nullptr && global_step_.node() != nullptr) {
    // Step-based checkpoints count from the step training starts at.
    RETURN_IF_ERROR(session_->Run({global_step_}, &out));
    absl::MutexLock l(&save_mu_);
    last_saved_ = out[0].scalar<int64_t>();
  }
  return absl::OkStatus();
}

MonitoredTrainingSession::~MonitoredTrainingSession() { Close().IgnoreError(); }

Status MonitoredTrainingSession::Run(const ClientSession::FeedType& feeds,
                                     const std::vector<Output>& fetches,
                                     const std::vector<Operation>& targets,
                                     std::vector<Tensor>* outputs) {
  if (closed_) {
    return errors::FailedPrecondition("MonitoredTrainingSession is closed");
  }
  std::vector<Output> all = fetches;
  std::vector<size_t> hook_begin;
  for (SessionRunHook* hook : options_.hooks) {
    hook_begin.push_back(all.size());
    for (const Output& o : hook->BeforeRun()) all.push_back(o);
  }
  const size_t step_index = all.size();
  const bool track_step = global_step_.node() != nullptr;
  if (track_step) all.push_back(global_step_);
  std::vector<Tensor> values;
  RunOptions run_options;
  if (options_.step_timeout_ms > 0) {
    run_options.set_timeout_in_ms(options_.step_timeout_ms);
  }
  Status s = session_->Run(run_options, feeds, all, targets, &values, nullptr);
  if (absl::IsOutOfRange(s)) {  // An input (or the token queue) ran out.
    stop_ = true;
    if (outputs != nullptr) outputs->clear();
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(s);
  for (size_t h = 0; h < options_.hooks.size(); ++h) {
    const size_t end =
        h + 1 < hook_begin.size() ? hook_begin[h + 1] : step_index;
    std::vector<Tensor> mine(values.begin() + hook_begin[h],
                             values.begin() + end);
    bool stop = false;
    RETURN_IF_ERROR(options_.hooks[h]->AfterRun(session_.get(), mine, &stop));
    if (stop) stop_ = true;
  }
  if (track_step) {
    last_step_ = values[step_index].scalar<int64_t>();
    if (saver_ != nullptr && options_.save_checkpoint_steps > 0) {
      bool due = false;
      {
        absl::MutexLock l(&save_mu_);
        due = last_step_ - last_saved_ >= options_.save_checkpoint_steps;
      }
      if (due) RETURN_IF_ERROR(Save());
    }
  }
  if (outputs != nullptr) {
    values.resize(fetches.size());
    *outputs = std::move(values);
  }
  return absl::OkStatus();
}

Status MonitoredTrainingSession::Save() {
  if (saver_ == nullptr) return absl::OkStatus();
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session_->Run({global_step_}, &out));
  const int64_t step = out[0].scalar<int64_t>();
  absl::MutexLock l(&save_mu_);
  std::filesystem::create_directories(options_.checkpoint_dir);
  RETURN_IF_ERROR(
      saver_
          ->Save(session_.get(), options_.checkpoint_dir + "/model.ckpt", step)
          .status());
  last_saved_ = step;
  return absl::OkStatus();
}

Status MonitoredTrainingSession::Close() {
  if (closed_ || session_ == nullptr) return absl::OkStatus();
  closed_ = true;
  Status status;
  for (SessionRunHook* hook : options_.hooks) {
    status.Update(hook->End(session_.get()));
  }
  if (saver_ != nullptr && global_step_.node() != nullptr)
    status.Update(Save());
  coord_.RequestStop();
  if (session_->session() != nullptr) {
    status.Update(session_->session()->Close());  // Cancels blocked steps.
  }
  status.Update(coord_.Join());
  if (summary_writer_ != nullptr) status.Update(summary_writer_->Close());
  return status;
}

// ---------------------------------------------------------------------------
// Hooks

Status StopAtStepHook::Begin(const Scope& scope) {
  global_step_ = FindGlobalStep(scope);
  if (global_step_.node() == nullptr) {
    return errors::InvalidArgument(
        "StopAtStepHook needs a global step (training::CreateGlobalStep)");
  }
  return absl::OkStatus();
}

Status StopAtStepHook::AfterRun(ClientSession* session,
                                const std::vector<Tensor>& values, bool* stop) {
  // The value may predate this step's update: check the variable itself.
  if (values[0].scalar<int64_t>() + 1 < last_step_) return absl::OkStatus();
  std::vector<Tensor> now;
  RETURN_IF_ERROR(session->Run({global_step_}, &now));
  *stop = now[0].scalar<int64_t>() >= last_step_;
  return absl::OkStatus();
}

Status SummarySaverHook::Begin(const Scope& scope) {
  if (writer_ == nullptr) {
    return errors::InvalidArgument("SummarySaverHook: a null writer");
  }
  if (every_steps_ <= 0) {
    return errors::InvalidArgument(
        "SummarySaverHook: save every N steps needs N > 0, got ", every_steps_);
  }
  global_step_ = FindGlobalStep(scope);
  if (global_step_.node() == nullptr) {
    return errors::InvalidArgument(
        "SummarySaverHook needs a global step (training::CreateGlobalStep)");
  }
  scope_ = scope;
  return absl::OkStatus();
}

Status SummarySaverHook::AfterCreateSession(ClientSession* session,
                                            Coordinator* coord) {
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({global_step_}, &out));
  const int64_t step = out[0].scalar<int64_t>();
  GraphDef graph;
  RETURN_IF_ERROR(scope_->ToGraphDef(&graph));
  RETURN_IF_ERROR(writer_->AddGraph(graph, step));
  // TensorBoard drops this run's points past `step` written before a
  // restart from an earlier checkpoint.
  SessionLog start;
  start.set_status(SessionLog::START);
  return writer_->AddSessionLog(start, step);
}

std::vector<Output> SummarySaverHook::BeforeRun() {
  absl::MutexLock l(&mu_);
  const bool due =
      summary_op_.node() != nullptr &&
      (last_written_ < 0 || next_step_ - last_written_ >= every_steps_);
  if (!due) return {global_step_};
  return {global_step_, summary_op_};
}

Status SummarySaverHook::AfterRun(ClientSession* session,
                                  const std::vector<Tensor>& values,
                                  bool* stop) {
  const int64_t step = values[0].scalar<int64_t>();
  {
    absl::MutexLock l(&mu_);
    next_step_ = std::max(next_step_, step + 1);
    if (values.size() < 2) return absl::OkStatus();
    last_written_ = std::max(last_written_, step);
  }
  if (values[1].dtype() != DT_STRING || values[1].NumElements() != 1) {
    return errors::InvalidArgument("SummarySaverHook: the summary op gave ",
                                   DataTypeString(values[1].dtype()), " ",
                                   values[1].shape().DebugString(),
                                   ", not a string scalar");
  }
  return writer_->AddSummary(values[1].scalar<tstring>(), step);
}

Status StepCounterHook::Begin(const Scope& scope) {
  if (writer_ == nullptr || every_steps_ <= 0) {
    return errors::InvalidArgument(
        "StepCounterHook: needs a writer and every_steps > 0");
  }
  global_step_ = FindGlobalStep(scope);
  if (global_step_.node() == nullptr) {
    return errors::InvalidArgument(
        "StepCounterHook needs a global step (training::CreateGlobalStep)");
  }
  return absl::OkStatus();
}

Status StepCounterHook::AfterRun(ClientSession* session,
                                 const std::vector<Tensor>& values,
                                 bool* stop) {
  const int64_t step = values[0].scalar<int64_t>();
  const double now = std::chrono::duration<double>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
  double rate;
  {
    absl::MutexLock l(&mu_);
    if (last_step_ < 0) {
      last_step_ = step;
      last_seconds_ = now;
      return absl::OkStatus();
    }
    if (step - last_step_ < every_steps_ || now <= last_seconds_) {
      return absl::OkStatus();
    }
    rate = static_cast<double>(step - last_step_) / (now - last_seconds_);
    last_step_ = step;
    last_seconds_ = now;
  }
  Summary summary;
  Summary::Value* v = summary.add_value();
  v->set_tag("global_step/sec");
  v->set_simple_value(static_cast<float>(rate));
  return writer_->AddSummary(summary, step);
}

Status SyncReplicasHook::Begin(const Scope& scope) {
  if (sync_ == nullptr) {
    return errors::InvalidArgument("SyncReplicasHook: a null optimizer");
  }
  if (!is_chief_) return absl::OkStatus();
  ASSIGN_OR_RETURN(init_tokens_, sync_->GetInitTokensOp(scope, num_tokens_));
  const Output q = sync_->sync_token_queue();
  close_tokens_ =
      ops::QueueCloseV2(scope.ColocateWith(q), q,
                        ops::QueueCloseV2::CancelPendingEnqueues(true))
          .operation;
  ASSIGN_OR_RETURN(runner_, sync_->MakeChiefQueueRunner(scope));
  return scope.status();
}

Status SyncReplicasHook::AfterCreateSession(ClientSession* session,
                                            Coordinator* coord) {
  if (!is_chief_) {
    return session->Run({}, {}, {sync_->local_step_init_op()}, nullptr);
  }
  RETURN_IF_ERROR(
      session->Run({}, {}, {sync_->chief_init_op(), init_tokens_}, nullptr));
  RETURN_IF_ERROR(runner_->Start(session, coord));
  coord_ = coord;
  return coord->RegisterRunner(std::move(runner_));
}

Status SyncReplicasHook::End(ClientSession* session) {
  if (!is_chief_) return absl::OkStatus();
  // Stop the sync thread first (its errors are then expected), then
  // release the workers waiting for tokens.
  if (coord_ != nullptr) coord_->RequestStop();
  return session->Run({}, {}, {close_tokens_}, nullptr);
}

}  // namespace runnel::training
