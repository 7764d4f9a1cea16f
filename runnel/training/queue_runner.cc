#include "runnel/training/queue_runner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

constexpr int kCloseOp = -1;
constexpr int kCancelOp = -2;

}  // namespace

StatusOr<std::unique_ptr<QueueRunner>> QueueRunner::New(
    const QueueRunnerDef& def) {
  if (def.enqueue_op_name.empty()) {
    return errors::InvalidArgument("QueueRunner for queue '", def.queue_name,
                                   "' has no enqueue ops");
  }
  for (const std::string& name : def.enqueue_op_name) {
    if (name.empty()) {
      return errors::InvalidArgument("QueueRunner for queue '", def.queue_name,
                                     "' has an empty enqueue op name");
    }
  }
  return std::unique_ptr<QueueRunner>(new QueueRunner(def));
}

StatusOr<std::unique_ptr<QueueRunner>> QueueRunner::New(
    const Scope& scope, const Output& queue,
    const std::vector<Operation>& enqueue_ops) {
  RETURN_IF_ERROR(scope.status());
  if (queue.node() == nullptr) {
    return errors::InvalidArgument("QueueRunner: the queue is a null Output");
  }
  if (queue.type() != DT_RESOURCE) {
    return errors::InvalidArgument("QueueRunner: '", queue.name(),
                                   "' is not a queue handle (it is ",
                                   DataTypeString(queue.type()), ")");
  }
  if (enqueue_ops.empty()) {
    return errors::InvalidArgument("QueueRunner for queue '", queue.name(),
                                   "' has no enqueue ops");
  }
  QueueRunnerDef def;
  def.queue_name = queue.node()->name();
  for (const Operation& op : enqueue_ops) {
    if (op.node() == nullptr) {
      return errors::InvalidArgument("QueueRunner for queue '", queue.name(),
                                     "': enqueue op ",
                                     def.enqueue_op_name.size(), " is null");
    }
    def.enqueue_op_name.push_back(op.name());
  }
  // TensorFlow's names: "<queue>_Close" and "<queue>_Close_1".
  std::string base = def.queue_name;
  base = base.substr(base.find_last_of('/') + 1);
  auto close = ops::QueueCloseV2(scope.WithOpName(base + "_Close"), queue);
  auto cancel =
      ops::QueueCloseV2(scope.WithOpName(base + "_Close_1"), queue,
                        ops::QueueCloseV2::CancelPendingEnqueues(true));
  RETURN_IF_ERROR(scope.status());
  def.close_op_name = close.operation.name();
  def.cancel_op_name = cancel.operation.name();
  std::unique_ptr<QueueRunner> runner(new QueueRunner(std::move(def)));
  runner->enqueue_ops_ = enqueue_ops;
  runner->close_op_ = close.operation;
  runner->cancel_op_ = cancel.operation;
  return runner;
}

QueueRunner::~QueueRunner() {
  bool running;
  {
    absl::MutexLock l(&mu_);
    running = running_ > 0;
  }
  // Threads still running need the session alive anyway; after they end
  // the session may be gone, so do not touch it.
  if (running) Stop();
  (void)Join();
}

Status QueueRunner::Start(ClientSession* session, Coordinator* coord) {
  if (session == nullptr) {
    return errors::InvalidArgument("QueueRunner::Start: null session");
  }
  return StartImpl(session, nullptr, coord);
}

Status QueueRunner::Start(Session* session, Coordinator* coord) {
  if (session == nullptr) {
    return errors::InvalidArgument("QueueRunner::Start: null session");
  }
  return StartImpl(nullptr, session, coord);
}

Status QueueRunner::StartImpl(ClientSession* client, Session* session,
                              Coordinator* coord) {
  absl::MutexLock join(&join_mu_);
  if (!threads_.empty()) {
    return errors::FailedPrecondition("QueueRunner for queue '",
                                      def_.queue_name,
                                      "' is already started; Join it first");
  }
  const int n = static_cast<int>(def_.enqueue_op_name.size());
  {
    absl::MutexLock l(&mu_);
    client_ = client;
    session_ = session;
    coord_ = coord;
    stop_ = false;
    cancelled_ = false;
    status_ = absl::OkStatus();
    running_ = n;
  }
  if (coord != nullptr) {
    // Runs Stop() at once if the coordinator has already stopped.
    const Coordinator::CallbackId id =
        coord->AddStopCallback([this] { Stop(); });
    absl::MutexLock l(&mu_);
    stop_callback_ = id;
  }
  for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { Loop(i); });
  return absl::OkStatus();
}

Status QueueRunner::RunNamed(const std::string& name, const Operation& op) {
  ClientSession* client;
  Session* session;
  {
    absl::MutexLock l(&mu_);
    client = client_;
    session = session_;
  }
  if (client != nullptr && op.node() != nullptr) {
    return client->Run(RunOptions(), {}, {}, {op}, nullptr, nullptr);
  }
  if (client != nullptr) session = client->session();
  if (session == nullptr) {
    return errors::FailedPrecondition("QueueRunner for queue '",
                                      def_.queue_name, "' has no session");
  }
  return session->Run({}, {}, {name}, nullptr);
}

Status QueueRunner::RunOp(int i) {
  if (i == kCloseOp) return RunNamed(def_.close_op_name, close_op_);
  if (i == kCancelOp) return RunNamed(def_.cancel_op_name, cancel_op_);
  return RunNamed(def_.enqueue_op_name[i],
                  i < static_cast<int>(enqueue_ops_.size()) ? enqueue_ops_[i]
                                                            : Operation());
}

bool QueueRunner::StopRequested() const {
  absl::MutexLock l(&mu_);
  return stop_ || (coord_ != nullptr && coord_->ShouldStop());
}

bool QueueRunner::IsQueueClosed(const Status& s) const {
  if (def_.queue_closed_exception_types.empty()) {
    return s.code() == absl::StatusCode::kOutOfRange;
  }
  return std::find(def_.queue_closed_exception_types.begin(),
                   def_.queue_closed_exception_types.end(),
                   s.code()) != def_.queue_closed_exception_types.end();
}

void QueueRunner::Loop(int i) {
  Status s;
  while (!StopRequested()) {
    s = RunOp(i);
    if (!s.ok()) break;
  }
  ThreadDone(s);
}

void QueueRunner::ThreadDone(const Status& s) {
  bool last;
  Coordinator* coord;
  {
    absl::MutexLock l(&mu_);
    last = --running_ == 0;
    coord = coord_;
  }
  // Ended by a stop request, or by the cancellations it caused.
  if (s.ok() || StopRequested()) return;
  if (IsQueueClosed(s)) {
    // The input ran out: once every thread has, close the queue so
    // consumers drain it and then see OutOfRange.
    if (last && !def_.close_op_name.empty()) UpdateStatus(RunOp(kCloseOp));
    return;
  }
  UpdateStatus(s);
  if (coord != nullptr) coord->RequestStop(s);
}

void QueueRunner::UpdateStatus(const Status& s) {
  absl::MutexLock l(&mu_);
  if (status_.ok() && !s.ok()) status_ = s;
}

void QueueRunner::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
    if (cancelled_ || (client_ == nullptr && session_ == nullptr)) return;
    cancelled_ = true;
  }
  // Errors are ignored (TensorFlow): the queue may be closed already or the
  // session gone.
  if (!def_.cancel_op_name.empty()) (void)RunOp(kCancelOp);
}

Status QueueRunner::Join() {
  {
    absl::MutexLock join(&join_mu_);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  Coordinator* coord;
  Coordinator::CallbackId id;
  {
    absl::MutexLock l(&mu_);
    coord = coord_;
    id = stop_callback_;
    stop_callback_ = -1;
  }
  if (coord != nullptr && id >= 0) coord->RemoveStopCallback(id);
  return GetStatus();
}

Status QueueRunner::GetStatus() const {
  absl::MutexLock l(&mu_);
  return status_;
}

bool QueueRunner::IsRunning() const {
  absl::MutexLock l(&mu_);
  return running_ > 0;
}

}  // namespace runnel
