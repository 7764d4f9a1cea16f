#include "runnel/distributed/master.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/rendezvous.h"
#include "runnel/graph/function.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/partition.h"
#include "runnel/graph/prune.h"
#include "runnel/graph/tensor_id.h"
#include "runnel/runtime/graph_optimizer.h"
#include "runnel/runtime/placer.h"
#include "runnel/runtime/session.h"
#include "runnel/runtime/step_graph.h"

namespace runnel {
namespace {

// Deadline of the calls that end steps and sessions.
constexpr int64_t kCloseTimeoutMs = 5000;

// A device of another task, known by its attributes (for placement only).
class RemoteDevice final : public Device {
 public:
  explicit RemoteDevice(const DeviceAttributes& attrs) : Device(attrs) {}
  Allocator* GetAllocator() override { return nullptr; }
  ThreadPool* intra_op_pool() override { return nullptr; }
  ResourceMgr* resource_manager() override { return nullptr; }
};

int64_t NewId(int bits) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen;
  absl::MutexLock l(&mu);
  return absl::Uniform<int64_t>(*gen, 1,
                                bits >= 63 ? INT64_MAX : int64_t{1} << bits);
}

std::string TaskOf(const std::string& device) {
  StatusOr<DeviceName> d = DeviceName::Parse(device);
  return d.ok() ? TaskName(*d) : device;
}

// Calls `fn(i, done)` for i in [0, n) at once and waits for every `done`;
// the first error (a Cancelled/Aborted it caused gives way to the cause).
Status ParallelCalls(size_t n,
                     const std::function<void(size_t, StatusCallback)>& fn) {
  // Shared with the callbacks, which may still be unlocking it when the
  // waiter wakes.
  struct State {
    absl::Mutex mu;
    Status status;
    size_t pending = 0;
  };
  auto st = std::make_shared<State>();
  st->pending = n;
  for (size_t i = 0; i < n; ++i) {
    fn(i, [st](const Status& s) {
      absl::MutexLock l(&st->mu);
      if (!s.ok() && st->status.ok()) st->status = s;
      --st->pending;
    });
  }
  absl::MutexLock l(&st->mu);
  st->mu.Await(absl::Condition(
      +[](size_t* p) { return *p == 0; }, &st->pending));
  return st->status;
}

// Cancelled and Aborted are what a step's other parts report once one
// part's failure ended it: the failure itself is the cause to report.
bool IsDerivedError(const Status& s) {
  return s.code() == absl::StatusCode::kCancelled ||
         s.code() == absl::StatusCode::kAborted;
}

}  // namespace

// What RunParts shares with its calls' callbacks, which may outlive it.
struct RunState {
  absl::Mutex mu;
  Status status;  // The first failure (a derived one gives way to its cause).
  size_t pending = 0;
  bool aborted = false;
  // Why to end the step before its parts answer: a failed health check.
  Status stop;

  // Ends the step for `why` (its status unless a cause came first).
  void Stop(const Status& why) {
    absl::MutexLock l(&mu);
    if (stop.ok()) stop = why;
    if (status.ok() || IsDerivedError(status)) status = why;
    aborted = true;
  }
};

// One GetStatus health check (Note [Health checks]) and its answer.
struct HealthPing {
  CallOptions opts;
  GetStatusRequest req;
  GetStatusResponse resp;
  absl::Notification answered;
};

// One task's share of a step signature.
struct PartPlan {
  std::string task;
  WorkerInterface* worker = nullptr;
  std::string graph_handle;
  // (feed index, rendezvous key of its _Recv) and (fetch index, key of its
  // _Send).
  std::vector<std::pair<int, std::string>> feeds;
  std::vector<std::pair<int, std::string>> fetches;
};

struct StepPlan {
  PruneInfo info;
  std::vector<PartialTensorShape> feed_shapes;
  std::vector<PartPlan> parts;
  std::vector<GraphDef> partition_graphs;
};

class MasterSession {
 public:
  MasterSession(std::string handle, const MasterEnv& env, ConfigProto config)
      : handle_(std::move(handle)), env_(env), config_(std::move(config)) {}

  const std::string& handle() const { return handle_; }

  // Finds the devices, opens the worker sessions, imports the graph.
  Status Create(const GraphDef& graph);
  Status Extend(const GraphDef& graph, int64_t current_version,
                int64_t* new_version);
  // `feeds` are (name, value); `fetch_out` receives one tensor per fetch,
  // in order. `caller` (may be null) is the client's call: its cancellation
  // ends the step on every task.
  Status Run(const RunOptions& options, const NamedTensorList& feeds,
             const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets,
             std::vector<Tensor>* fetch_out, RunMetadata* metadata,
             CallOptions* caller = nullptr);
  // Partial runs (Session::PRunSetup/PRun semantics, runtime/session.h):
  // the setup names every feed, fetch and target and returns a handle; each
  // PartialRun feeds some values and fetches some results of that one step,
  // whose partitions run on their tasks from the first PartialRun to the
  // last (RunGraph with is_partial). An error, a timeout or the last
  // PartialRun ends the step everywhere and releases the handle.
  Status PartialRunSetup(const std::vector<std::string>& feeds,
                         const std::vector<std::string>& fetches,
                         const std::vector<std::string>& targets,
                         std::string* handle);
  Status PartialRun(const std::string& handle, const RunOptions& options,
                    const NamedTensorList& feeds,
                    const std::vector<std::string>& fetches,
                    std::vector<Tensor>* fetch_out,
                    CallOptions* caller = nullptr);
  void Close();
  void ListDevices(ListDevicesResponse* response) const;

  int64_t MakeCallable(const CallableOptions& options) {
    absl::MutexLock l(&mu_);
    callables_[++next_callable_] = options;
    return next_callable_;
  }
  StatusOr<CallableOptions> GetCallable(int64_t handle) {
    absl::MutexLock l(&mu_);
    auto it = callables_.find(handle);
    if (it == callables_.end()) {
      return errors::InvalidArgument("session '", handle_, "' has no callable ",
                                     handle);
    }
    return it->second;
  }
  Status ReleaseCallable(int64_t handle) {
    absl::MutexLock l(&mu_);
    if (callables_.erase(handle) == 0) {
      return errors::InvalidArgument("session '", handle_, "' has no callable ",
                                     handle);
    }
    return absl::OkStatus();
  }

 private:
  Status FindDevices() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status CheckGraph(const GraphDef& graph) const {
    if (!env_.untrusted) return absl::OkStatus();
    SessionOptions opts;
    opts.untrusted = true;
    return CheckUntrustedGraph(graph, opts);
  }
  StatusOr<std::shared_ptr<StepPlan>> GetPlan(
      const std::vector<std::string>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);
  StatusOr<std::shared_ptr<StepPlan>> BuildPlan(
      const std::vector<std::string>& feeds,
      const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status PlaceNodes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks every task of `plan` to end step `step_id` (aborting what runs),
  // but for those whose response in `resps` (may be null) says they cleaned
  // it up themselves.
  void CleanupStep(const StepPlan& plan, int64_t step_id, bool wait,
                   const std::vector<RunGraphResponse>* resps = nullptr);
  // Sends reqs[i] (with sends[i] beside it) to the task of plan->parts[i]
  // and waits for every answer, bounded by `timeout_ms` when > 0. The first
  // failure (or the timeout, DeadlineExceeded, or a failed health check)
  // ends the step on every task and is returned; Close cancels the wait,
  // and so does cancelling `caller` (the client's call; may be null).
  Status RunParts(const std::shared_ptr<StepPlan>& plan, int64_t step_id,
                  int64_t timeout_ms, CallOptions* caller,
                  std::vector<RunGraphRequest>* reqs,
                  std::vector<NamedTensorList>* sends,
                  std::vector<RunGraphResponse>* resps,
                  std::vector<NamedTensorList>* recvs);
  // Sends a GetStatus to every other task of `plan` that has no question
  // pending (Note [Health checks]); a failed one stops `st`.
  void CheckHealth(const StepPlan& plan, int64_t step_id,
                   const std::shared_ptr<RunState>& st,
                   std::vector<std::shared_ptr<HealthPing>>* pings);
  // The fetches the tasks of `plan` returned (recvs[i] from part i), by
  // fetch index; the tensors share the received buffers.
  static void CollectFetches(const StepPlan& plan,
                             std::vector<NamedTensorList>* recvs,
                             absl::flat_hash_map<int, Tensor>* out);

  const std::string handle_;
  const MasterEnv& env_;
  const ConfigProto config_;

  // Close cancels the steps still running (TF's MasterSession does too): a
  // step blocked on a queue or an accumulator on some task would otherwise
  // never end.
  CancellationManager running_steps_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Tasks with a worker session, and the cluster's devices: this task's
  // first (the default for unconstrained nodes), then the others'.
  std::vector<std::string> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Device>> remote_devices_ ABSL_GUARDED_BY(mu_);
  std::vector<Device*> devices_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> incarnations_ ABSL_GUARDED_BY(mu_);
  Graph graph_ ABSL_GUARDED_BY(mu_);
  int64_t graph_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool placed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, std::string> stateful_placements_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<StepPlan>> plans_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<WorkerInterface*, std::string>> registered_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, CallableOptions> callables_ ABSL_GUARDED_BY(mu_);
  int64_t next_callable_ ABSL_GUARDED_BY(mu_) = 0;
  struct PartialStep;
  absl::flat_hash_map<std::string, std::shared_ptr<PartialStep>> partial_runs_
      ABSL_GUARDED_BY(mu_);
};

// A partial run's step: its plan, and which feeds and fetches are done.
struct MasterSession::PartialStep {
  std::shared_ptr<StepPlan> plan;
  int64_t step_id = 0;
  absl::flat_hash_map<std::string, int> feed_index, fetch_index;
  absl::Mutex mu;
  PartialRunProgress progress ABSL_GUARDED_BY(mu);
  // A PartialRun is in flight (they are serialised per step).
  bool busy ABSL_GUARDED_BY(mu) = false;
};

Status MasterSession::FindDevices() {
  std::vector<std::string> tasks;
  for (const std::string& task : env_.workers->ListWorkers()) {
    if (config_.device_filters_size() > 0) {
      // ConfigProto.device_filters: only tasks some filter matches.
      bool keep = false;
      StatusOr<DeviceName> t = DeviceName::Parse(task);
      for (const std::string& f : config_.device_filters()) {
        StatusOr<DeviceName> spec = DeviceName::Parse(f);
        if (!spec.ok()) {
          return errors::InvalidArgument("bad device filter '", f,
                                         "': ", spec.status().message());
        }
        DeviceName task_spec = *spec;
        task_spec.type.clear();
        task_spec.id = -1;
        keep |= t.ok() && t->Matches(task_spec);
      }
      if (!keep && task != env_.local_task) continue;
    }
    tasks.push_back(task);
  }
  // GetStatus on every task, waiting for late ones (TF's DeviceFinder):
  // each attempt waits up to 10 s, and the wait is logged.
  int64_t budget_ms = config_.operation_timeout_in_ms() > 0
                          ? config_.operation_timeout_in_ms()
                          : env_.wait_for_workers_ms;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(budget_ms);
  std::vector<GetStatusResponse> status(tasks.size());
  std::vector<char> answered(tasks.size(), 0);
  for (;;) {
    std::vector<Status> errs(tasks.size());
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    const int64_t attempt =
        std::max<int64_t>(1, std::min<int64_t>(10000, left));
    std::vector<std::unique_ptr<CallOptions>> opts(tasks.size());
    std::vector<GetStatusRequest> reqs(tasks.size());
    ParallelCalls(tasks.size(), [&](size_t i, StatusCallback done) {
      if (answered[i]) return done(absl::OkStatus());
      WorkerInterface* w = env_.workers->GetWorker(tasks[i]);
      if (w == nullptr) {
        errs[i] = errors::Internal("no worker for ", tasks[i]);
        return done(errs[i]);
      }
      opts[i] = std::make_unique<CallOptions>();
      opts[i]->SetTimeout(attempt);
      opts[i]->SetWaitForReady(true);
      status[i].Clear();
      w->GetStatusAsync(opts[i].get(), &reqs[i], &status[i],
                        [&, i, done](const Status& s) {
                          errs[i] = s;
                          if (s.ok()) answered[i] = 1;
                          done(s);
                        });
    }).IgnoreError();
    std::vector<std::string> waiting;
    Status last;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!answered[i]) {
        waiting.push_back(tasks[i]);
        last = errs[i];
      }
    }
    if (waiting.empty()) break;
    if (absl::Now() >= deadline) {
      return errors::Unavailable(
          "CreateSession: no response from ", absl::StrJoin(waiting, ", "),
          " within ", budget_ms, " ms (last error: ", last.message(), ")");
    }
    std::fprintf(stderr,
                 "runnel: CreateSession still waiting for response from "
                 "worker: %s\n",
                 absl::StrJoin(waiting, ", ").c_str());
  }
  // This task's devices first.
  for (Device* d : env_.local_devices->devices()) {
    devices_.push_back(d);
    incarnations_[d->name()] = d->incarnation();
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i] == env_.local_task) continue;
    for (const DeviceAttributes& a : status[i].device_attributes()) {
      if (TaskOf(a.name()) != tasks[i]) {
        return errors::Internal("task ", tasks[i], " reported device '",
                                a.name(), "', which is not one of its own");
      }
      remote_devices_.push_back(std::make_unique<RemoteDevice>(a));
      devices_.push_back(remote_devices_.back().get());
      incarnations_[a.name()] = a.incarnation();
    }
  }
  // A worker session on every task.
  std::vector<CreateWorkerSessionRequest> reqs(tasks.size());
  std::vector<CreateWorkerSessionResponse> resps(tasks.size());
  RETURN_IF_ERROR(
      ParallelCalls(tasks.size(), [&](size_t i, StatusCallback done) {
        reqs[i].set_session_handle(handle_);
        *reqs[i].mutable_server_def() = env_.server_def;
        reqs[i].set_isolate_session_state(config_.isolate_session_state());
        env_.workers->GetWorker(tasks[i])->CreateWorkerSessionAsync(
            nullptr, &reqs[i], &resps[i], done);
      }));
  tasks_ = std::move(tasks);
  return absl::OkStatus();
}

Status MasterSession::Create(const GraphDef& graph) {
  RETURN_IF_ERROR(CheckGraph(graph));
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(FindDevices());
  RETURN_IF_ERROR(ImportGraphDef(graph, &graph_));
  // Function calls run as part of the graph (runnel/graph/function.h).
  RETURN_IF_ERROR(InlineFunctionCalls(&graph_));
  ++graph_version_;
  return absl::OkStatus();
}

Status MasterSession::Extend(const GraphDef& graph, int64_t current_version,
                             int64_t* new_version) {
  RETURN_IF_ERROR(CheckGraph(graph));
  absl::MutexLock l(&mu_);
  if (closed_) return errors::Cancelled("session has been closed");
  if (current_version != graph_version_) {
    return errors::Aborted("ExtendSession: the graph is at version ",
                           graph_version_, ", the request says ",
                           current_version, " (another client extended it?)");
  }
  RETURN_IF_ERROR(ImportGraphDef(graph, &graph_));
  RETURN_IF_ERROR(InlineFunctionCalls(&graph_));
  placed_ = false;
  *new_version = ++graph_version_;
  return absl::OkStatus();
}

Status MasterSession::PlaceNodes() {
  ASSIGN_OR_RETURN(const PlacerOptions opts, PlacerOptionsFromConfig(config_));
  RETURN_IF_ERROR(
      PlaceSessionGraph(opts, devices_, &graph_, &stateful_placements_));
  placed_ = true;
  return absl::OkStatus();
}

namespace {

std::string PlanKey(const std::vector<std::string>& feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets) {
  return absl::StrCat(absl::StrJoin(feeds, ","), "->",
                      absl::StrJoin(fetches, ","), "/",
                      absl::StrJoin(targets, ","));
}

// Turns the _Arg/_Retval nodes of a task's partition into _Recv/_Send
// nodes whose other end is the client (client_terminated): each reads or
// writes the step's rendezvous under a key on its own device, which the
// master fills from RunGraphRequest.send and reads from
// RunGraphResponse.recv.
Status ConvertArgsAndRetvals(const PruneInfo& info,
                             const std::map<std::string, uint64_t>& inc,
                             GraphDef* def, PartPlan* part) {
  for (NodeDef& n : *def->mutable_node()) {
    const bool is_arg = n.op() == "_Arg";
    if (!is_arg && n.op() != "_Retval") continue;
    auto& attrs = *n.mutable_attr();
    const int64_t index = attrs["index"].i();
    const size_t count = is_arg ? info.feeds.size() : info.fetches.size();
    if (index < 0 || static_cast<size_t>(index) >= count) {
      return errors::Internal("node '", n.name(), "' has index ", index, " of ",
                              count);
    }
    auto it = inc.find(n.device());
    if (it == inc.end()) {
      return errors::Internal("node '", n.name(), "' is on unknown device '",
                              n.device(), "'");
    }
    const std::string name =
        absl::StrCat(is_arg ? "feed/" : "fetch/",
                     (is_arg ? info.feeds : info.fetches)[index].ToString());
    const DataType dtype = attrs["T"].type();
    attrs.erase("index");
    attrs.erase("T");
    attrs["tensor_name"] = MakeAttrValue(name);
    attrs["send_device"] = MakeAttrValue(n.device());
    attrs["send_device_incarnation"] =
        MakeAttrValue(static_cast<int64_t>(it->second));
    attrs["recv_device"] = MakeAttrValue(n.device());
    attrs["client_terminated"] = MakeAttrValue(true);
    const std::string key =
        Rendezvous::CreateKey(n.device(), it->second, n.device(), name, {});
    if (is_arg) {
      n.set_op("_Recv");
      attrs["tensor_type"] = MakeAttrValue(dtype);
      part->feeds.emplace_back(static_cast<int>(index), key);
    } else {
      n.set_op("_Send");
      attrs["T"] = MakeAttrValue(dtype);
      part->fetches.emplace_back(static_cast<int>(index), key);
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<StepPlan>> MasterSession::GetPlan(
    const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  const std::string key = PlanKey(feeds, fetches, targets);
  absl::MutexLock l(&mu_);
  if (closed_) return errors::Cancelled("session has been closed");
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  ASSIGN_OR_RETURN(auto plan, BuildPlan(feeds, fetches, targets));
  plans_[key] = plan;
  return plan;
}

StatusOr<std::shared_ptr<StepPlan>> MasterSession::BuildPlan(
    const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  if (!placed_) RETURN_IF_ERROR(PlaceNodes());
  auto plan = std::make_shared<StepPlan>();
  Graph step;
  RETURN_IF_ERROR(
      PruneForFetches(graph_, feeds, fetches, targets, &step, &plan->info));
  plan->feed_shapes = DeclaredFeedShapes(graph_, plan->info);
  PlaceFeedsAndFetches(devices_[0]->name(), &step);
  {
    absl::flat_hash_set<std::string> keep;
    for (const std::string& t : targets) {
      keep.insert(!t.empty() && t[0] == '^' ? t.substr(1) : t);
    }
    GraphOptimizationStats stats;
    RETURN_IF_ERROR(OptimizeGraphForStep(config_.graph_options(),
                                         env_.local_devices->devices()[0], keep,
                                         &step, &stats));
  }
  // One partition per task; each worker cuts its own per device.
  PartitionOptions popts;
  popts.node_to_loc = [](const Node* n) {
    return TaskOf(n->assigned_device_name());
  };
  popts.get_incarnation = [this](const std::string& name) -> uint64_t {
    mu_.AssertHeld();
    auto it = incarnations_.find(name);
    return it == incarnations_.end() ? 0 : it->second;
  };
  popts.scheduling_for_recvs = config_.graph_options().enable_recv_scheduling();
  std::map<std::string, GraphDef> parts;
  RETURN_IF_ERROR(Partition(popts, step, &parts));
  for (auto& [task, def] : parts) {
    PartPlan part;
    part.task = task;
    part.worker = env_.workers->GetWorker(task);
    if (part.worker == nullptr) {
      return errors::InvalidArgument("nodes are placed on task ", task,
                                     ", which is not in the cluster");
    }
    RETURN_IF_ERROR(
        ConvertArgsAndRetvals(plan->info, incarnations_, &def, &part));
    RegisterGraphRequest req;
    req.set_session_handle(handle_);
    req.set_create_worker_session_called(true);
    *req.mutable_graph_def() = def;
    *req.mutable_graph_options() = config_.graph_options();
    RegisterGraphResponse resp;
    RETURN_IF_ERROR(part.worker->RegisterGraph(req, &resp));
    part.graph_handle = resp.graph_handle();
    registered_.emplace_back(part.worker, part.graph_handle);
    plan->partition_graphs.push_back(std::move(def));
    plan->parts.push_back(std::move(part));
  }
  return plan;
}

void MasterSession::CleanupStep(const StepPlan& plan, int64_t step_id,
                                bool wait,
                                const std::vector<RunGraphResponse>* resps) {
  struct Call {
    CallOptions opts;
    CleanupGraphRequest req;
    CleanupGraphResponse resp;
  };
  auto notify = std::make_shared<absl::Notification>();
  // Tasks that cleaned the step up themselves need no CleanupGraph (Note
  // [Steps that clean up after themselves] in worker.cc).
  std::vector<const PartPlan*> parts;
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    if (resps != nullptr && (*resps)[i].runnel_step_cleaned_up()) continue;
    parts.push_back(&plan.parts[i]);
  }
  if (parts.empty()) return;
  auto pending = std::make_shared<std::atomic<size_t>>(parts.size());
  for (const PartPlan* p : parts) {
    const PartPlan& part = *p;
    auto* call = new Call;
    call->req.set_step_id(step_id);
    call->opts.SetTimeout(kCloseTimeoutMs);
    part.worker->CleanupGraphAsync(&call->opts, &call->req, &call->resp,
                                   [call, notify, pending](const Status&) {
                                     delete call;
                                     if (pending->fetch_sub(1) == 1) {
                                       notify->Notify();
                                     }
                                   });
  }
  if (wait) notify->WaitForNotification();
}

Status MasterSession::Run(const RunOptions& options,
                          const NamedTensorList& feeds,
                          const std::vector<std::string>& fetches,
                          const std::vector<std::string>& targets,
                          std::vector<Tensor>* fetch_out, RunMetadata* metadata,
                          CallOptions* caller) {
  if (fetches.empty() && targets.empty()) {
    return errors::InvalidArgument("Run needs at least one fetch or target");
  }
  std::vector<std::string> feed_names;
  for (const auto& [name, value] : feeds) feed_names.push_back(name);
  ASSIGN_OR_RETURN(auto plan, GetPlan(feed_names, fetches, targets));
  RETURN_IF_ERROR(CheckFeedValues(plan->info, plan->feed_shapes, feeds));

  const int64_t step_id = NewId(56);  // TF: a random 56-bit step id.
  int64_t timeout_ms = options.timeout_in_ms();
  if (timeout_ms <= 0) timeout_ms = config_.operation_timeout_in_ms();
  const bool trace = options.trace_level() != RunOptions::NO_TRACE;

  const size_t n = plan->parts.size();
  std::vector<RunGraphRequest> reqs(n);
  std::vector<RunGraphResponse> resps(n);
  std::vector<NamedTensorList> sends(n), recvs(n);
  for (size_t i = 0; i < n; ++i) {
    const PartPlan& part = plan->parts[i];
    RunGraphRequest& req = reqs[i];
    req.mutable_exec_opts()->set_record_timeline(trace);
    for (const auto& [index, key] : part.feeds) {
      sends[i].emplace_back(key, feeds[index].second);
    }
    for (const auto& [index, key] : part.fetches) req.add_recv_key(key);
  }
  Status status = RunParts(plan, step_id, timeout_ms, caller, &reqs, &sends,
                           &resps, &recvs);
  CleanupStep(*plan, step_id, /*wait=*/false, status.ok() ? &resps : nullptr);
  if (!status.ok()) return status;

  absl::flat_hash_map<int, Tensor> by_index;
  CollectFetches(*plan, &recvs, &by_index);
  fetch_out->assign(fetches.size(), Tensor());
  for (size_t k = 0; k < fetches.size(); ++k) {
    auto it = by_index.find(static_cast<int>(k));
    if (it == by_index.end()) {
      return errors::Internal("no task returned fetch '", fetches[k], "'");
    }
    (*fetch_out)[k] = std::move(it->second);
  }
  for (size_t i = 0; i < n; ++i) {
    if (metadata != nullptr && trace) {
      for (DeviceStepStats& d :
           *resps[i].mutable_step_stats()->mutable_dev_stats()) {
        metadata->mutable_step_stats()->add_dev_stats()->Swap(&d);
      }
    }
  }
  if (metadata != nullptr && options.output_partition_graphs()) {
    for (const GraphDef& g : plan->partition_graphs) {
      *metadata->add_partition_graphs() = g;
    }
  }
  return absl::OkStatus();
}

Status MasterSession::RunParts(const std::shared_ptr<StepPlan>& plan,
                               int64_t step_id, int64_t timeout_ms,
                               CallOptions* caller,
                               std::vector<RunGraphRequest>* reqs,
                               std::vector<NamedTensorList>* sends,
                               std::vector<RunGraphResponse>* resps,
                               std::vector<NamedTensorList>* recvs) {
  const size_t n = plan->parts.size();
  std::vector<CallOptions> opts(n);
  auto st = std::make_shared<RunState>();
  st->pending = n;
  const CancellationManager::Token token = running_steps_.NewToken();
  if (!running_steps_.RegisterCallback(token, [this, st, plan, step_id] {
        {
          absl::MutexLock l(&st->mu);
          if (st->status.ok()) {
            st->status =
                errors::Cancelled("session '", Clip(handle_),
                                  "' was closed while step ", step_id, " ran");
          }
          st->aborted = true;
        }
        CleanupStep(*plan, step_id, /*wait=*/false);
      })) {
    return errors::Cancelled("session '", Clip(handle_), "' is closed");
  }
  struct Deregister {
    CancellationManager* cm;
    CancellationManager::Token token;
    ~Deregister() { cm->DeregisterCallback(token); }
  } deregister{&running_steps_, token};
  // A client that cancels or goes away (its connection closes) ends the
  // step, as a failed health check does.
  if (caller != nullptr) {
    caller->SetCancelCallback([st, step_id] {
      st->Stop(errors::Cancelled("the client cancelled step ", step_id,
                                 " or went away"));
    });
  }
  struct ClearCaller {
    CallOptions* caller;
    ~ClearCaller() {
      if (caller != nullptr) caller->ClearCancelCallback();
    }
  } clear_caller{caller};
  for (size_t i = 0; i < n; ++i) {
    RunGraphRequest& req = (*reqs)[i];
    req.set_session_handle(handle_);
    req.set_create_worker_session_called(true);
    req.set_graph_handle(plan->parts[i].graph_handle);
    req.set_step_id(step_id);
    req.set_request_id(NewId(62));
    req.mutable_exec_opts()->set_runnel_float_transfer_as_bfloat16(
        config_.rpc_options().runnel_float_transfer_as_bfloat16());
    if (timeout_ms > 0) opts[i].SetTimeout(timeout_ms);
  }
  for (size_t i = 0; i < n; ++i) {
    plan->parts[i].worker->RunGraphRawAsync(
        &opts[i], &(*reqs)[i], &(*sends)[i], &(*resps)[i], &(*recvs)[i],
        [this, st, plan, step_id](const Status& s) {
          bool abort = false;
          {
            absl::MutexLock l(&st->mu);
            if (!s.ok()) {
              if (st->status.ok() ||
                  (IsDerivedError(st->status) && !IsDerivedError(s))) {
                st->status = s;
              }
              if (!st->aborted) abort = st->aborted = true;
            }
          }
          // One task failed: end the step everywhere, so no task waits on
          // a tensor that will never come.
          if (abort) CleanupStep(*plan, step_id, /*wait=*/false);
          absl::MutexLock l(&st->mu);
          --st->pending;
        });
  }
  auto done = [st] {
    st->mu.AssertHeld();
    return st->pending == 0;
  };
  // Waits for every part, the step's deadline or a failed health check
  // (Note [Health checks]), asking the other tasks for GetStatus meanwhile.
  const int64_t check_ms = env_.health_check_timeout_ms;
  const absl::Duration interval =
      absl::Milliseconds(std::clamp<int64_t>(check_ms / 2, 1, 1000));
  const absl::Time deadline = timeout_ms > 0
                                  ? absl::Now() + absl::Milliseconds(timeout_ms)
                                  : absl::InfiniteFuture();
  auto settled = [st] {
    st->mu.AssertHeld();
    return st->pending == 0 || !st->stop.ok();
  };
  std::vector<std::shared_ptr<HealthPing>> pings(n);
  bool timed_out = false;
  Status stop;
  {
    absl::MutexLock l(&st->mu);
    for (;;) {
      const absl::Time wake =
          check_ms > 0 ? std::min(deadline, absl::Now() + interval) : deadline;
      if (st->mu.AwaitWithDeadline(absl::Condition(&settled), wake)) break;
      if (absl::Now() >= deadline) {
        timed_out = true;
        break;
      }
      st->mu.Unlock();
      CheckHealth(*plan, step_id, st, &pings);
      st->mu.Lock();
    }
    stop = st->stop;
  }
  // Answers still on their way no longer matter.
  for (const auto& p : pings) {
    if (p != nullptr) p->opts.StartCancel();
  }
  if (timed_out || !stop.ok()) {
    CleanupStep(*plan, step_id, /*wait=*/false);
    for (CallOptions& o : opts) o.StartCancel();
  }
  absl::MutexLock l(&st->mu);
  st->mu.Await(absl::Condition(&done));
  return timed_out ? errors::DeadlineExceeded("step timed out after ",
                                              timeout_ms, " ms")
                   : st->status;
}

// Note [Health checks]
// A task whose process dies is noticed at once: its connections reset, and
// every call to it fails with Unavailable. A task that hangs (stopped,
// swapping, behind a network partition that drops packets) is not: its
// RunGraph never answers, nor do the RecvTensors other tasks wait on, and
// the step would last until its timeout, or forever without one (TF 1.x
// has the same hole). So while a step runs, the master asks every other
// task of the step for GetStatus every min(1 s, health_check_timeout_ms / 2)
// (one question at a time per task; a step that ends sooner asks nothing).
// An answer that does not come within health_check_timeout_ms, an error, or
// devices of another incarnation (the task restarted, and the step's
// partitions on it are gone) ends the step on every task with Unavailable
// naming the task. The master's own task runs the master: it needs no check.
void MasterSession::CheckHealth(
    const StepPlan& plan, int64_t step_id, const std::shared_ptr<RunState>& st,
    std::vector<std::shared_ptr<HealthPing>>* pings) {
  const int64_t check_ms = env_.health_check_timeout_ms;
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    const PartPlan& part = plan.parts[i];
    if (part.task == env_.local_task) continue;
    auto& p = (*pings)[i];
    if (p != nullptr && !p->answered.HasBeenNotified()) continue;  // Asked.
    p = std::make_shared<HealthPing>();
    p->opts.SetTimeout(check_ms);
    std::vector<std::pair<std::string, uint64_t>> expected;
    {
      absl::MutexLock l(&mu_);
      for (const auto& [device, incarnation] : incarnations_) {
        if (TaskOf(device) == part.task) {
          expected.emplace_back(device, incarnation);
        }
      }
    }
    part.worker->GetStatusAsync(
        &p->opts, &p->req, &p->resp,
        [st, p, task = part.task, step_id, check_ms,
         expected = std::move(expected)](const Status& s) {
          Status bad;
          if (s.code() == absl::StatusCode::kCancelled) {
            // The step ended first.
          } else if (!s.ok()) {
            bad = errors::Unavailable(
                "task ", task, " failed its health check while step ", step_id,
                " ran (no answer to GetStatus within ", check_ms,
                " ms): ", s.message());
          } else {
            absl::flat_hash_map<std::string, uint64_t> now;
            for (const DeviceAttributes& a : p->resp.device_attributes()) {
              now[a.name()] = a.incarnation();
            }
            for (const auto& [device, incarnation] : expected) {
              auto it = now.find(device);
              if (it == now.end() || it->second != incarnation) {
                bad = errors::Unavailable(
                    "task ", task, " restarted while step ", step_id,
                    " ran (device ", device, " is no longer incarnation ",
                    incarnation, "); the step's partitions on it are gone");
                break;
              }
            }
          }
          if (!bad.ok()) st->Stop(bad);
          p->answered.Notify();
        });
  }
}

void MasterSession::CollectFetches(const StepPlan& plan,
                                   std::vector<NamedTensorList>* recvs,
                                   absl::flat_hash_map<int, Tensor>* out) {
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    absl::flat_hash_map<std::string, Tensor*> by_key;
    for (auto& [key, value] : (*recvs)[i]) by_key[key] = &value;
    for (const auto& [index, key] : plan.parts[i].fetches) {
      auto it = by_key.find(key);
      if (it != by_key.end()) (*out)[index] = *it->second;  // Shares.
    }
  }
}

namespace {

StatusOr<std::string> CanonicalTensorName(const std::string& name) {
  ASSIGN_OR_RETURN(TensorId id, ParseTensorName(name));
  return id.ToString();
}

}  // namespace

Status MasterSession::PartialRunSetup(const std::vector<std::string>& feeds,
                                      const std::vector<std::string>& fetches,
                                      const std::vector<std::string>& targets,
                                      std::string* handle) {
  if (fetches.empty() && targets.empty()) {
    return errors::InvalidArgument(
        "PartialRunSetup needs at least one fetch or target");
  }
  // Duplicates are refused before the plan is built: a request naming one
  // tensor 100,000 times would otherwise compile a step for every copy.
  auto run = std::make_shared<PartialStep>();
  for (size_t i = 0; i < fetches.size(); ++i) {
    ASSIGN_OR_RETURN(std::string canonical, CanonicalTensorName(fetches[i]));
    if (!run->fetch_index.emplace(canonical, static_cast<int>(i)).second) {
      return errors::InvalidArgument("PartialRunSetup: fetch '",
                                     Clip(fetches[i]), "' is listed twice");
    }
  }
  ASSIGN_OR_RETURN(auto plan, GetPlan(feeds, fetches, targets));
  run->plan = plan;
  run->step_id = NewId(56);
  for (size_t i = 0; i < plan->info.feeds.size(); ++i) {
    run->feed_index[plan->info.feeds[i].ToString()] = static_cast<int>(i);
  }
  {
    absl::MutexLock l(&run->mu);
    run->progress =
        PartialRunProgress(plan->info.feeds.size(), plan->info.fetches.size());
  }
  *handle = absl::StrCat(run->step_id, ";partial");
  absl::MutexLock l(&mu_);
  if (closed_) return errors::Cancelled("session has been closed");
  partial_runs_[*handle] = run;
  return absl::OkStatus();
}

Status MasterSession::PartialRun(const std::string& handle,
                                 const RunOptions& options,
                                 const NamedTensorList& feeds,
                                 const std::vector<std::string>& fetches,
                                 std::vector<Tensor>* fetch_out,
                                 CallOptions* caller) {
  std::shared_ptr<PartialStep> run;
  {
    absl::MutexLock l(&mu_);
    auto it = partial_runs_.find(handle);
    if (it == partial_runs_.end()) {
      return errors::InvalidArgument(
          "partial run handle '", Clip(handle),
          "' is unknown: never set up, finished, or failed earlier");
    }
    run = it->second;
  }
  const StepPlan& plan = *run->plan;
  std::vector<int> feed_ids, fetch_ids;
  for (const auto& [name, value] : feeds) {
    ASSIGN_OR_RETURN(std::string canonical, CanonicalTensorName(name));
    auto it = run->feed_index.find(canonical);
    if (it == run->feed_index.end()) {
      return errors::InvalidArgument(
          "The feed ", name, " was not specified in partial_run_setup.");
    }
    const int i = it->second;
    RETURN_IF_ERROR(CheckFeedValue(name, value, plan.info.feed_types[i],
                                   plan.feed_shapes[i]));
    feed_ids.push_back(i);
  }
  for (const std::string& name : fetches) {
    ASSIGN_OR_RETURN(std::string canonical, CanonicalTensorName(name));
    auto it = run->fetch_index.find(canonical);
    if (it == run->fetch_index.end()) {
      return errors::InvalidArgument(
          "The fetch ", name, " was not specified in partial_run_setup.");
    }
    fetch_ids.push_back(it->second);
  }
  bool last;
  {
    absl::MutexLock l(&run->mu);
    if (run->busy) {
      return errors::FailedPrecondition(
          "partial run '", Clip(handle),
          "' is already running a PartialRun: call them one at a time");
    }
    std::vector<std::string> feed_names;
    for (const auto& [name, value] : feeds) feed_names.push_back(name);
    RETURN_IF_ERROR(
        run->progress.Mark(feed_ids, feed_names, fetch_ids, fetches));
    last = run->progress.complete();
    run->busy = true;
  }

  // Every task gets a call (the first starts its partition), with the
  // values it takes and the keys it gives.
  absl::flat_hash_map<int, int> feed_slot, fetch_slot;  // id -> k.
  for (size_t k = 0; k < feed_ids.size(); ++k) feed_slot[feed_ids[k]] = k;
  for (size_t k = 0; k < fetch_ids.size(); ++k) fetch_slot[fetch_ids[k]] = k;
  const size_t n = plan.parts.size();
  std::vector<RunGraphRequest> reqs(n);
  std::vector<RunGraphResponse> resps(n);
  std::vector<NamedTensorList> sends(n), recvs(n);
  for (size_t i = 0; i < n; ++i) {
    const PartPlan& part = plan.parts[i];
    reqs[i].set_is_partial(true);
    reqs[i].set_is_last_partial_run(last);
    for (const auto& [index, key] : part.feeds) {
      auto it = feed_slot.find(index);
      if (it != feed_slot.end()) {
        sends[i].emplace_back(key, feeds[it->second].second);
      }
    }
    for (const auto& [index, key] : part.fetches) {
      if (fetch_slot.contains(index)) reqs[i].add_recv_key(key);
    }
  }
  int64_t timeout_ms = options.timeout_in_ms();
  if (timeout_ms <= 0) timeout_ms = config_.operation_timeout_in_ms();
  Status status = RunParts(run->plan, run->step_id, timeout_ms, caller, &reqs,
                           &sends, &resps, &recvs);
  if (!status.ok() || last) {
    // The step is over on every task: release its rendezvous and handle.
    CleanupStep(plan, run->step_id, /*wait=*/false);
    absl::MutexLock l(&mu_);
    partial_runs_.erase(handle);
  }
  {
    absl::MutexLock l(&run->mu);
    run->busy = false;
  }
  RETURN_IF_ERROR(status);
  absl::flat_hash_map<int, Tensor> by_index;
  CollectFetches(plan, &recvs, &by_index);
  fetch_out->assign(fetches.size(), Tensor());
  for (size_t k = 0; k < fetch_ids.size(); ++k) {
    auto it = by_index.find(fetch_ids[k]);
    if (it == by_index.end()) {
      return errors::Internal("no task returned fetch '", fetches[k], "'");
    }
    (*fetch_out)[k] = it->second;
  }
  return absl::OkStatus();
}

void MasterSession::Close() {
  std::vector<std::pair<WorkerInterface*, std::string>> registered;
  std::vector<std::string> tasks;
  {
    absl::MutexLock l(&mu_);
    if (closed_) return;
    closed_ = true;
  }
  running_steps_.StartCancel();
  absl::flat_hash_map<std::string, std::shared_ptr<PartialStep>> partial;
  {
    absl::MutexLock l(&mu_);
    registered.swap(registered_);
    tasks = tasks_;
    plans_.clear();
    partial.swap(partial_runs_);
  }
  // Partial runs between two PartialRuns still run on their tasks.
  for (auto& [handle, run] : partial) {
    CleanupStep(*run->plan, run->step_id, /*wait=*/true);
  }
  // Bounded: a task that is gone must not hold up closing.
  CallOptions opts;
  opts.SetTimeout(kCloseTimeoutMs);
  std::vector<DeregisterGraphRequest> dreqs(registered.size());
  std::vector<DeregisterGraphResponse> dresps(registered.size());
  ParallelCalls(registered.size(), [&](size_t i, StatusCallback done) {
    dreqs[i].set_session_handle(handle_);
    dreqs[i].set_create_worker_session_called(true);
    dreqs[i].set_graph_handle(registered[i].second);
    registered[i].first->DeregisterGraphAsync(&opts, &dreqs[i], &dresps[i],
                                              done);
  }).IgnoreError();
  std::vector<DeleteWorkerSessionRequest> reqs(tasks.size());
  std::vector<DeleteWorkerSessionResponse> resps(tasks.size());
  ParallelCalls(tasks.size(), [&](size_t i, StatusCallback done) {
    reqs[i].set_session_handle(handle_);
    WorkerInterface* w = env_.workers->GetWorker(tasks[i]);
    if (w == nullptr) return done(absl::OkStatus());
    w->DeleteWorkerSessionAsync(&opts, &reqs[i], &resps[i], done);
  }).IgnoreError();
}

void MasterSession::ListDevices(ListDevicesResponse* response) const {
  absl::MutexLock l(const_cast<absl::Mutex*>(&mu_));
  for (const Device* d : devices_) {
    if (TaskOf(d->name()) == env_.local_task) {
      *response->add_local_device() = d->attributes();
    } else {
      *response->add_remote_device() = d->attributes();
    }
  }
}

Master::Master(MasterEnv env) : env_(std::move(env)) {}

Master::~Master() {
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    absl::MutexLock l(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [_, s] : sessions) s->Close();
}

StatusOr<std::shared_ptr<MasterSession>> Master::Find(
    const std::string& handle) {
  absl::MutexLock l(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return errors::Aborted("session '", Clip(handle),
                           "' is not found (it was closed, reset, or never "
                           "created on this master)");
  }
  return it->second;
}

Status Master::CreateSession(const CreateSessionRequest& request,
                             CreateSessionResponse* response) {
  ConfigProto config = env_.server_def.default_session_config();
  config.MergeFrom(request.config());
  RETURN_IF_ERROR(PlacerOptionsFromConfig(config).status());
  const std::string handle = absl::StrCat(absl::Hex(NewId(63)));
  auto session = std::make_shared<MasterSession>(handle, env_, config);
  Status s = session->Create(request.graph_def());
  if (!s.ok()) {
    session->Close();
    return s;
  }
  {
    absl::MutexLock l(&mu_);
    sessions_[handle] = session;
  }
  response->set_session_handle(handle);
  response->set_graph_version(1);
  return absl::OkStatus();
}

Status Master::ExtendSession(const ExtendSessionRequest& request,
                             ExtendSessionResponse* response) {
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  int64_t version = 0;
  RETURN_IF_ERROR(session->Extend(request.graph_def(),
                                  request.current_graph_version(), &version));
  response->set_new_graph_version(version);
  return absl::OkStatus();
}

Status Master::PartialRunSetup(const PartialRunSetupRequest& request,
                               PartialRunSetupResponse* response) {
  RETURN_IF_ERROR(
      recent_request_ids_.TrackUnique(request.request_id(), "PartialRunSetup"));
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  std::vector<std::string> feeds(request.feed().begin(), request.feed().end());
  std::vector<std::string> fetches(request.fetch().begin(),
                                   request.fetch().end());
  std::vector<std::string> targets(request.target().begin(),
                                   request.target().end());
  std::string handle;
  RETURN_IF_ERROR(session->PartialRunSetup(feeds, fetches, targets, &handle));
  response->set_partial_run_handle(handle);
  return absl::OkStatus();
}

namespace {

// The feeds of a RunStep request in its protos, decoded and named.
Status AddFeeds(const google::protobuf::RepeatedPtrField<NamedTensorProto>& in,
                NamedTensorList* out) {
  for (const NamedTensorProto& f : in) {
    StatusOr<Tensor> t = Tensor::FromProto(f.tensor());
    if (!t.ok()) {
      return errors::InvalidArgument("feed '", f.name(),
                                     "': ", t.status().message());
    }
    out->emplace_back(f.name(), *std::move(t));
  }
  return absl::OkStatus();
}

}  // namespace

Status Master::RunStep(const RunStepRequest& request,
                       const NamedTensorList& feeds, RunStepResponse* response,
                       NamedTensorList* fetched, CallOptions* caller) {
  RETURN_IF_ERROR(
      recent_request_ids_.TrackUnique(request.request_id(), "RunStep"));
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  NamedTensorList all_feeds;
  RETURN_IF_ERROR(AddFeeds(request.feed(), &all_feeds));
  all_feeds.insert(all_feeds.end(), feeds.begin(), feeds.end());
  std::vector<std::string> fetches(request.fetch().begin(),
                                   request.fetch().end());
  std::vector<std::string> targets(request.target().begin(),
                                   request.target().end());
  std::vector<Tensor> out;
  if (!request.partial_run_handle().empty()) {
    if (!targets.empty()) {
      return errors::InvalidArgument(
          "a partial run's targets are given to PartialRunSetup, not RunStep");
    }
    RETURN_IF_ERROR(session->PartialRun(request.partial_run_handle(),
                                        request.options(), all_feeds, fetches,
                                        &out, caller));
  } else {
    RETURN_IF_ERROR(session->Run(request.options(), all_feeds, fetches, targets,
                                 &out, response->mutable_metadata(), caller));
  }
  fetched->clear();
  for (size_t i = 0; i < out.size(); ++i) {
    fetched->emplace_back(fetches[i], std::move(out[i]));
  }
  return absl::OkStatus();
}

Status Master::CloseSession(const CloseSessionRequest& request,
                            CloseSessionResponse*) {
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock l(&mu_);
    auto it = sessions_.find(request.session_handle());
    if (it == sessions_.end()) {
      return errors::Aborted("session '", Clip(request.session_handle()),
                             "' is not found");
    }
    session = std::move(it->second);
    sessions_.erase(it);
  }
  session->Close();
  return absl::OkStatus();
}

Status Master::ListDevices(const ListDevicesRequest& request,
                           ListDevicesResponse* response) {
  if (!request.session_handle().empty()) {
    ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
    session->ListDevices(response);
    return absl::OkStatus();
  }
  // No session: every task's devices, as GetStatus reports them.
  for (const std::string& task : env_.workers->ListWorkers()) {
    WorkerInterface* w = env_.workers->GetWorker(task);
    if (w == nullptr) continue;
    GetStatusResponse status;
    RETURN_IF_ERROR(w->GetStatus(GetStatusRequest(), &status, 10000));
    for (const DeviceAttributes& a : status.device_attributes()) {
      *(task == env_.local_task ? response->add_local_device()
                                : response->add_remote_device()) = a;
    }
  }
  return absl::OkStatus();
}

Status Master::Reset(const ResetRequest& request, ResetResponse*) {
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    absl::MutexLock l(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [_, s] : sessions) s->Close();
  const std::vector<std::string> tasks = env_.workers->ListWorkers();
  std::vector<CleanupAllRequest> reqs(tasks.size());
  std::vector<CleanupAllResponse> resps(tasks.size());
  return ParallelCalls(tasks.size(), [&](size_t i, StatusCallback done) {
    WorkerInterface* w = env_.workers->GetWorker(tasks[i]);
    if (w == nullptr) return done(absl::OkStatus());
    for (const std::string& c : request.container()) reqs[i].add_container(c);
    w->CleanupAllAsync(nullptr, &reqs[i], &resps[i], done);
  });
}

Status Master::MakeCallable(const MakeCallableRequest& request,
                            MakeCallableResponse* response) {
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  if (request.options().fetch_size() == 0 &&
      request.options().target_size() == 0) {
    return errors::InvalidArgument("a callable needs a fetch or a target");
  }
  response->set_handle(session->MakeCallable(request.options()));
  return absl::OkStatus();
}

Status Master::RunCallable(const RunCallableRequest& request,
                           RunCallableResponse* response) {
  RETURN_IF_ERROR(
      recent_request_ids_.TrackUnique(request.request_id(), "RunCallable"));
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  ASSIGN_OR_RETURN(CallableOptions c, session->GetCallable(request.handle()));
  if (request.feed_size() != c.feed_size()) {
    return errors::InvalidArgument("callable ", request.handle(), " takes ",
                                   c.feed_size(), " feeds, the request has ",
                                   request.feed_size());
  }
  NamedTensorList feeds;
  for (int i = 0; i < c.feed_size(); ++i) {
    StatusOr<Tensor> t = Tensor::FromProto(request.feed(i));
    if (!t.ok()) {
      return errors::InvalidArgument("feed '", c.feed(i),
                                     "': ", t.status().message());
    }
    feeds.emplace_back(c.feed(i), *std::move(t));
  }
  std::vector<std::string> fetches(c.fetch().begin(), c.fetch().end());
  std::vector<std::string> targets(c.target().begin(), c.target().end());
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run(c.run_options(), feeds, fetches, targets, &out,
                               response->mutable_metadata()));
  for (const Tensor& t : out) t.AsProtoTensorContent(response->add_fetch());
  return absl::OkStatus();
}

Status Master::ReleaseCallable(const ReleaseCallableRequest& request,
                               ReleaseCallableResponse*) {
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  return session->ReleaseCallable(request.handle());
}

}  // namespace runnel
