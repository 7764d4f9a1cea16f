#include "runnel/distributed/worker.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/partitioned_executor.h"
#include "runnel/runtime/session.h"

namespace runnel {

Status RecentRequestIds::TrackUnique(int64_t request_id,
                                     absl::string_view method) {
  if (request_id == 0) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  if (!ids_.insert(request_id).second) {
    return errors::Aborted("the ", method, " request with request_id ",
                           request_id,
                           " was already received (a retried request?)");
  }
  order_.push_back(request_id);
  if (order_.size() > capacity_) {
    ids_.erase(order_.front());
    order_.pop_front();
  }
  return absl::OkStatus();
}

struct Worker::GraphItem {
  std::unique_ptr<PartitionedExecutor> executor;
  // The dtype each client-terminated _Recv takes, by rendezvous key: a feed
  // of another dtype is the caller's error, named before the step runs.
  absl::flat_hash_map<std::string, DataType> feed_types;
};

struct Worker::PartialStep {
  // Shared with active_steps_, so CleanupGraph can cancel it outside mu_.
  std::shared_ptr<CancellationManager> cm =
      std::make_shared<CancellationManager>();
  StepResources step_resources;
  std::shared_ptr<GraphItem> item;
  std::shared_ptr<RemoteRendezvous> rendezvous;
  absl::Mutex mu;
  bool finished ABSL_GUARDED_BY(mu) = false;
  Status status ABSL_GUARDED_BY(mu);  // The executor's, once finished.
  // Run once the executor has finished.
  std::vector<std::function<void()>> on_finish ABSL_GUARDED_BY(mu);

  // Runs `fn` once the executor has finished (now if it has).
  void WhenFinished(std::function<void()> fn) {
    {
      absl::MutexLock l(&mu);
      if (!finished) {
        on_finish.push_back(std::move(fn));
        return;
      }
    }
    fn();
  }
};

struct Worker::WorkerSession {
  std::string handle;
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<GraphItem>> graphs
      ABSL_GUARDED_BY(mu);
  // Kernels of stateful nodes, by node name, shared by the session's graphs
  // (a random op's counter continues across signatures).
  absl::flat_hash_map<std::string, std::shared_ptr<OpKernel>> stateful_kernels
      ABSL_GUARDED_BY(mu);
};

Worker::Worker(std::string task, const DeviceMgr* devices,
               WorkerCacheInterface* workers, bool untrusted)
    : task_(std::move(task)),
      devices_(devices),
      untrusted_(untrusted),
      rendezvous_mgr_(std::make_unique<RendezvousMgr>(devices, workers)) {}

Worker::~Worker() {
  rendezvous_mgr_->CleanupAll(errors::Aborted("worker ", task_, " shut down"));
}

void Worker::set_worker_cache(WorkerCacheInterface* workers) {
  rendezvous_mgr_ = std::make_unique<RendezvousMgr>(devices_, workers);
}

StatusOr<std::shared_ptr<Worker::WorkerSession>> Worker::FindSession(
    const std::string& handle, bool create_worker_session_called) {
  absl::MutexLock l(&mu_);
  const std::string key = create_worker_session_called ? handle : "";
  auto it = sessions_.find(key);
  if (it != sessions_.end()) return it->second;
  if (!create_worker_session_called) {
    // TensorFlow's legacy path: one implicit session for old masters.
    auto s = std::make_shared<WorkerSession>();
    sessions_[""] = s;
    return s;
  }
  return errors::NotFound("worker ", task_, " has no session '", Clip(handle),
                          "' (it was never created or has been deleted)");
}

void Worker::GetStatusAsync(CallOptions*, const GetStatusRequest*,
                            GetStatusResponse* response, StatusCallback done) {
  for (const Device* d : devices_->devices()) {
    *response->add_device_attributes() = d->attributes();
  }
  done(absl::OkStatus());
}

void Worker::CreateWorkerSessionAsync(CallOptions*,
                                      const CreateWorkerSessionRequest* request,
                                      CreateWorkerSessionResponse*,
                                      StatusCallback done) {
  if (request->session_handle().empty()) {
    return done(errors::InvalidArgument(
        "CreateWorkerSession needs a non-empty session_handle"));
  }
  absl::MutexLock l(&mu_);
  if (sessions_.contains(request->session_handle())) {
    return done(errors::AlreadyExists("worker ", task_,
                                      " already has session '",
                                      Clip(request->session_handle()), "'"));
  }
  auto s = std::make_shared<WorkerSession>();
  s->handle = request->session_handle();
  sessions_[s->handle] = std::move(s);
  done(absl::OkStatus());
}

void Worker::DeleteWorkerSessionAsync(CallOptions*,
                                      const DeleteWorkerSessionRequest* request,
                                      DeleteWorkerSessionResponse*,
                                      StatusCallback done) {
  absl::MutexLock l(&mu_);
  if (sessions_.erase(request->session_handle()) == 0) {
    return done(errors::NotFound("worker ", task_, " has no session '",
                                 Clip(request->session_handle()), "'"));
  }
  done(absl::OkStatus());
}

Status Worker::RegisterGraphSync(const RegisterGraphRequest& request,
                                 RegisterGraphResponse* response) {
  ASSIGN_OR_RETURN(auto session,
                   FindSession(request.session_handle(),
                               request.create_worker_session_called()));
  if (untrusted_) {
    SessionOptions opts;
    opts.untrusted = true;
    RETURN_IF_ERROR(CheckUntrustedGraph(request.graph_def(), opts));
  }
  auto graph = std::make_unique<Graph>();
  ImportGraphDefOptions iopts;
  iopts.allow_internal_ops = true;
  Status s = ImportGraphDef(request.graph_def(), graph.get(), iopts);
  if (!s.ok()) {
    return Status(s.code(),
                  absl::StrCat("RegisterGraph on ", task_, ": ", s.message()));
  }
  auto item = std::make_shared<GraphItem>();
  // The master placed every node; the worker cuts per device.
  for (Node* n : graph->nodes()) {
    if (n->type_string() == "_Recv") {
      const AttrMap& a = n->attrs();
      auto attr = [&](const char* name) -> const AttrValue* {
        auto it = a.find(name);
        return it == a.end() ? nullptr : &it->second;
      };
      const AttrValue *client = attr("client_terminated"),
                      *send = attr("send_device"),
                      *inc = attr("send_device_incarnation"),
                      *recv = attr("recv_device"), *name = attr("tensor_name"),
                      *type = attr("tensor_type");
      if (client != nullptr && client->b() && send && inc && recv && name &&
          type) {
        item->feed_types[Rendezvous::CreateKey(
            send->s(), static_cast<uint64_t>(inc->i()), recv->s(), name->s(),
            {})] = type->type();
      }
    }
    if (n->requested_device().empty()) {
      return errors::InvalidArgument("RegisterGraph on ", task_, ": node '",
                                     n->name(), "' (", n->type_string(),
                                     ") has no device");
    }
    n->set_assigned_device_name(n->requested_device());
  }
  PartitionedExecutor::Options popts;
  popts.scheduling_for_recvs = request.graph_options().enable_recv_scheduling();
  std::weak_ptr<WorkerSession> weak = session;
  popts.create_kernel = [weak](Device* device, const Node& node,
                               std::shared_ptr<OpKernel>* kernel) -> Status {
    auto session = weak.lock();
    const bool share = session != nullptr && node.IsStateful() &&
                       !node.type_string().empty() &&
                       node.type_string()[0] != '_';
    const std::string key = absl::StrCat(node.name(), "/", node.type_string());
    if (share) {
      absl::MutexLock l(&session->mu);
      auto it = session->stateful_kernels.find(key);
      if (it != session->stateful_kernels.end()) {
        *kernel = it->second;
        return absl::OkStatus();
      }
    }
    std::unique_ptr<OpKernel> k;
    RETURN_IF_ERROR(
        CreateOpKernel(device->device_type(), device, node.props_shared(), &k));
    *kernel = std::shared_ptr<OpKernel>(std::move(k));
    if (share) {
      absl::MutexLock l(&session->mu);
      session->stateful_kernels[key] = *kernel;
    }
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(item->executor, PartitionedExecutor::Create(
                                       popts, *devices_, std::move(graph)));
  std::string handle;
  {
    absl::MutexLock l(&mu_);
    handle = absl::StrCat("graph_", ++next_graph_id_);
  }
  absl::MutexLock l(&session->mu);
  session->graphs[handle] = std::move(item);
  response->set_graph_handle(handle);
  return absl::OkStatus();
}

void Worker::RegisterGraphAsync(CallOptions*,
                                const RegisterGraphRequest* request,
                                RegisterGraphResponse* response,
                                StatusCallback done) {
  done(RegisterGraphSync(*request, response));
}

void Worker::DeregisterGraphAsync(CallOptions*,
                                  const DeregisterGraphRequest* request,
                                  DeregisterGraphResponse*,
                                  StatusCallback done) {
  StatusOr<std::shared_ptr<WorkerSession>> session = FindSession(
      request->session_handle(), request->create_worker_session_called());
  if (!session.ok()) return done(session.status());
  absl::MutexLock l(&(*session)->mu);
  if ((*session)->graphs.erase(request->graph_handle()) == 0) {
    return done(errors::NotFound("worker ", task_, " has no graph '",
                                 Clip(request->graph_handle()), "'"));
  }
  done(absl::OkStatus());
}

void Worker::RunGraphAsync(CallOptions* opts, const RunGraphRequest* request,
                           RunGraphResponse* response, StatusCallback done) {
  auto recv = std::make_shared<NamedTensorList>();
  static const NamedTensorList* const kNone = new NamedTensorList;
  RunGraphRawAsync(opts, request, kNone, response, recv.get(),
                   [recv, response, done = std::move(done)](const Status& s) {
                     if (s.ok()) {
                       for (const auto& [name, value] : *recv) {
                         NamedTensorProto* out = response->add_recv();
                         out->set_name(name);
                         value.AsProtoTensorContent(out->mutable_tensor());
                       }
                     }
                     done(s);
                   });
}

void Worker::RunGraphRawAsync(CallOptions* opts, const RunGraphRequest* request,
                              const NamedTensorList* send,
                              RunGraphResponse* response, NamedTensorList* recv,
                              StatusCallback done) {
  Status s = recent_request_ids_.TrackUnique(request->request_id(), "RunGraph");
  if (!s.ok()) return done(s);
  StatusOr<std::shared_ptr<WorkerSession>> session = FindSession(
      request->session_handle(), request->create_worker_session_called());
  if (!session.ok()) return done(session.status());
  std::shared_ptr<GraphItem> item;
  {
    absl::MutexLock l(&(*session)->mu);
    auto it = (*session)->graphs.find(request->graph_handle());
    if (it != (*session)->graphs.end()) item = it->second;
  }
  if (item == nullptr) {
    return done(errors::NotFound("worker ", task_, " has no graph '",
                                 request->graph_handle(), "' in session '",
                                 Clip(request->session_handle()), "'"));
  }
  const int64_t step_id = request->step_id();
  std::shared_ptr<RemoteRendezvous> rendezvous = rendezvous_mgr_->Find(step_id);
  if (request->exec_opts().runnel_float_transfer_as_bfloat16()) {
    rendezvous->SetFloatTransferAsBfloat16();
  }
  // The client's feeds, keyed by the rendezvous key of their _Recv.
  auto feed = [&](const std::string& name, const StatusOr<Tensor>& t) {
    Rendezvous::ParsedKey key;
    Status status = Rendezvous::ParseKey(name, &key);
    if (status.ok()) status = t.status();
    if (status.ok()) {
      auto it = item->feed_types.find(key.full_key);
      if (it != item->feed_types.end() && it->second != t->dtype()) {
        status = errors::InvalidArgument(
            "the value is ", DataTypeString(t->dtype()),
            " but the graph takes ", DataTypeString(it->second));
      }
    }
    if (status.ok()) {
      status = rendezvous->Send(key, Rendezvous::Args(), *t, false);
    }
    if (!status.ok()) {
      return errors::InvalidArgument("RunGraph on ", task_, ": feed '", name,
                                     "': ", status.message());
    }
    return absl::OkStatus();
  };
  for (const NamedTensorProto& proto : request->send()) {
    s = feed(proto.name(), Tensor::FromProto(proto.tensor()));
    if (!s.ok()) return done(s);
  }
  for (const auto& [name, value] : *send) {
    s = feed(name, value);
    if (!s.ok()) return done(s);
  }
  std::vector<Rendezvous::ParsedKey> recv_keys(request->recv_key_size());
  for (int i = 0; i < request->recv_key_size(); ++i) {
    s = Rendezvous::ParseKey(request->recv_key(i), &recv_keys[i]);
    if (!s.ok()) return done(s);
  }

  if (request->is_partial()) {
    return RunPartialGraph(*request, std::move(item), std::move(rendezvous),
                           std::move(recv_keys), recv, std::move(done));
  }

  struct RunState {
    // Shared with active_steps_, so CleanupGraph can cancel it outside mu_.
    std::shared_ptr<CancellationManager> cm =
        std::make_shared<CancellationManager>();
    StepResources step_resources;
    StepStats stats;
    std::shared_ptr<GraphItem> item;
    std::shared_ptr<RemoteRendezvous> rendezvous;
  };
  auto st = std::make_shared<RunState>();
  st->item = item;
  st->rendezvous = rendezvous;
  bool record;
  {
    absl::MutexLock l(&mu_);
    if (shutting_down_) {
      return done(errors::Aborted("worker ", task_, " is shutting down"));
    }
    active_steps_[step_id].insert(st->cm);
    record = rpc_logging_;
  }
  record |= request->exec_opts().record_timeline() ||
            request->exec_opts().record_costs();
  PartitionedExecutor::Args args;
  args.step_id = step_id;
  args.cancellation_manager = st->cm.get();
  args.step_resources = &st->step_resources;
  args.rendezvous = rendezvous.get();
  args.step_stats = record ? &st->stats : nullptr;
  // The calling thread is an RPC polling thread (or the master's): it runs
  // the cheap start of each partition (a variable read, a _Send, the
  // _Recvs' requests), which costs less than a hand-off; expensive nodes
  // go to the pool.
  args.start_cheap_roots_inline = true;
  // A caller that cancels the call or goes away (the master's process died,
  // its connection closed) ends the step here too: nobody waits for it.
  if (opts != nullptr) {
    opts->SetCancelCallback([cm = st->cm] { cm->StartCancel(); });
  }
  item->executor->RunAsync(
      args, [this, opts, st, step_id, record, response, recv,
             recv_keys = std::move(recv_keys),
             done = std::move(done)](const Status& run_status) {
        if (opts != nullptr) opts->ClearCancelCallback();
        bool last_run_of_step = false;
        {
          absl::MutexLock l(&mu_);
          auto it = active_steps_.find(step_id);
          if (it != active_steps_.end()) {
            it->second.erase(st->cm);
            if (it->second.empty()) {
              active_steps_.erase(it);
              last_run_of_step = true;
            }
          }
          if (rpc_logging_ && record) logged_steps_[step_id] = st->stats;
        }
        if (!run_status.ok()) return done(run_status);
        // Every _Send has run, so each fetched value is waiting.
        recv->clear();
        recv->reserve(recv_keys.size());  // `out` below stays valid.
        for (size_t i = 0; i < recv_keys.size(); ++i) {
          recv->emplace_back(recv_keys[i].full_key, Tensor());
          auto* out = &recv->back();
          struct Got {
            absl::Mutex mu;
            bool called = false;
            bool abandoned = false;
            Status status;
          };
          auto got = std::make_shared<Got>();
          st->rendezvous->RecvLocalAsync(
              recv_keys[i],
              [out, got](const Status& status, const Rendezvous::Args&,
                         const Rendezvous::Args&, const Tensor& value,
                         bool is_dead) {
                absl::MutexLock l(&got->mu);
                if (got->abandoned) return;
                got->called = true;
                if (!status.ok()) {
                  got->status = status;
                } else if (is_dead) {
                  got->status = errors::InvalidArgument(
                      "fetch '", out->first,
                      "' has no value: it is dead (computed only on a branch "
                      "of a conditional that was not taken)");
                } else {
                  out->second = value;
                }
              });
          absl::MutexLock l(&got->mu);
          if (!got->called) {
            // A value that is not there now never comes: stop the wait.
            got->abandoned = true;
            return done(errors::InvalidArgument(
                "RunGraph on ", task_, ": nothing in the graph sent recv_key '",
                recv_keys[i].full_key, "'"));
          }
          if (!got->status.ok()) return done(got->status);
        }
        if (record) *response->mutable_step_stats() = std::move(st->stats);
        // Note [Steps that clean up after themselves].
        if (last_run_of_step && st->rendezvous->Idle()) {
          rendezvous_mgr_->Cleanup(step_id);
          response->set_runnel_step_cleaned_up(true);
        }
        done(absl::OkStatus());
      });
}

// Note [Steps that clean up after themselves]
// TF's master sends CleanupGraph to every task after every step, so a
// task's rendezvous can keep what it sent until the receivers took it (a
// task's partition ends when its _Sends have run, often before other tasks
// have pulled the values). When a step's last partition here ends well and
// its rendezvous holds nothing (no value waiting to be pulled, no receiver
// waiting, no RecvTensor in flight: nothing of the step can arrive any
// more, since the values of this task's _Recvs have all come and its
// _Sends have all run), the worker cleans the step up itself and says so
// in its response (RunGraphResponse.runnel_step_cleaned_up), and the
// master sends no CleanupGraph to it: a PS task that serves reads and
// takes updates saves one RPC in four per step. A step that failed, or
// left values behind, is cleaned up by the master's CleanupGraph as in TF.

void Worker::RunPartialGraph(const RunGraphRequest& request,
                             std::shared_ptr<GraphItem> item,
                             std::shared_ptr<RemoteRendezvous> rendezvous,
                             std::vector<Rendezvous::ParsedKey> recv_keys,
                             NamedTensorList* recv, StatusCallback done) {
  const int64_t step_id = request.step_id();
  const std::string graph = request.graph_handle();
  std::shared_ptr<PartialStep> ps;
  bool start = false;
  {
    absl::MutexLock l(&mu_);
    if (shutting_down_) {
      return done(errors::Aborted("worker ", task_, " is shutting down"));
    }
    std::shared_ptr<PartialStep>& slot = partial_steps_[step_id][graph];
    if (slot == nullptr) {
      slot = std::make_shared<PartialStep>();
      slot->item = std::move(item);
      slot->rendezvous = std::move(rendezvous);
      active_steps_[step_id].insert(slot->cm);
      start = true;
    }
    ps = slot;
  }
  if (start) {
    PartitionedExecutor::Args args;
    args.step_id = step_id;
    args.cancellation_manager = ps->cm.get();
    args.step_resources = &ps->step_resources;
    args.rendezvous = ps->rendezvous.get();
    args.run_first_inline = false;
    ps->item->executor->RunAsync(args,
                                 [this, ps, step_id](const Status& run_status) {
                                   {
                                     absl::MutexLock l(&mu_);
                                     auto it = active_steps_.find(step_id);
                                     if (it != active_steps_.end()) {
                                       it->second.erase(ps->cm);
                                       if (it->second.empty())
                                         active_steps_.erase(it);
                                     }
                                   }
                                   // A failed partition fails the fetches still
                                   // waiting on it.
                                   if (!run_status.ok())
                                     ps->rendezvous->StartAbort(run_status);
                                   std::vector<std::function<void()>> waiting;
                                   {
                                     absl::MutexLock l(&ps->mu);
                                     ps->finished = true;
                                     ps->status = run_status;
                                     waiting.swap(ps->on_finish);
                                   }
                                   for (auto& fn : waiting) fn();
                                 });
  }

  // Waits for every fetch of this call; a fetch that fails because the
  // step failed reports the step's error, once the executor has ended.
  struct Gather {
    absl::Mutex mu;
    size_t pending = 0;
    Status status;           // The first fetch that failed.
    bool from_step = false;  // ... because the rendezvous was aborted.
  };
  auto g = std::make_shared<Gather>();
  g->pending = recv_keys.size();
  const bool last = request.is_last_partial_run();
  auto finish = std::make_shared<std::function<void()>>(
      [this, ps, g, last, step_id, graph, done = std::move(done)] {
        Status s;
        bool wait;
        {
          absl::MutexLock l(&g->mu);
          s = g->status;
          wait = last || g->from_step;
        }
        if (!wait) return done(s);
        ps->WhenFinished([this, ps, s, last, step_id, graph, done] {
          Status result = s;
          {
            absl::MutexLock l(&ps->mu);
            if (!ps->status.ok()) result = ps->status;
          }
          if (last) {
            absl::MutexLock l(&mu_);
            auto it = partial_steps_.find(step_id);
            if (it != partial_steps_.end()) {
              it->second.erase(graph);
              if (it->second.empty()) partial_steps_.erase(it);
            }
          }
          done(result);
        });
      });
  recv->clear();
  recv->reserve(recv_keys.size());  // The pointers below stay valid.
  for (const Rendezvous::ParsedKey& key : recv_keys) {
    recv->emplace_back(key.full_key, Tensor());
  }
  if (recv_keys.empty()) return (*finish)();
  for (size_t i = 0; i < recv_keys.size(); ++i) {
    auto* out = &(*recv)[i];
    ps->rendezvous->RecvLocalAsync(
        recv_keys[i],
        [out, g, finish](const Status& status, const Rendezvous::Args&,
                         const Rendezvous::Args&, const Tensor& value,
                         bool is_dead) {
          bool all;
          {
            absl::MutexLock l(&g->mu);
            if (!status.ok()) {
              if (g->status.ok()) {
                g->status = status;
                g->from_step = true;
              }
            } else if (is_dead) {
              if (g->status.ok()) {
                g->status = errors::InvalidArgument(
                    "fetch '", out->first,
                    "' has no value: it is dead (computed only on a branch "
                    "of a conditional that was not taken)");
              }
            } else {
              out->second = value;
            }
            all = --g->pending == 0;
          }
          if (all) (*finish)();
        });
  }
}

void Worker::CleanupGraphAsync(CallOptions*, const CleanupGraphRequest* request,
                               CleanupGraphResponse*, StatusCallback done) {
  const int64_t step_id = request->step_id();
  std::vector<std::shared_ptr<CancellationManager>> cms;
  {
    absl::MutexLock l(&mu_);
    auto it = active_steps_.find(step_id);
    if (it != active_steps_.end()) {
      cms.assign(it->second.begin(), it->second.end());
    }
  }
  // Outside mu_: cancelling can finish a step on this thread, and the
  // step's completion takes mu_.
  for (auto& cm : cms) cm->StartCancel();
  rendezvous_mgr_->Cleanup(step_id);
  {
    absl::MutexLock l(&mu_);
    partial_steps_.erase(step_id);
  }
  done(absl::OkStatus());
}

size_t Worker::NumActiveSteps() {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [_, cms] : active_steps_) n += cms.size();
  return n;
}

void Worker::Shutdown() {
  std::vector<std::shared_ptr<CancellationManager>> cms;
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
    for (auto& [_, set] : active_steps_)
      cms.insert(cms.end(), set.begin(), set.end());
  }
  for (auto& cm : cms) cm->StartCancel();
  rendezvous_mgr_->StopAll(
      errors::Aborted("worker ", task_, " is shutting down"));
}

void Worker::CleanupAllAsync(CallOptions*, const CleanupAllRequest* request,
                             CleanupAllResponse*, StatusCallback done) {
  Status status;
  for (Device* d : devices_->devices()) {
    ResourceMgr* rm = d->resource_manager();
    if (rm == nullptr) continue;
    if (request->container_size() == 0) {
      status.Update(rm->Cleanup(rm->default_container()));
    }
    for (const std::string& c : request->container()) {
      status.Update(rm->Cleanup(c));
    }
  }
  done(status);
}

void Worker::RecvTensorAsync(CallOptions* opts,
                             const RecvTensorRequest* request,
                             RecvTensorResponse* response,
                             StatusCallback done) {
  auto* raw = new TensorResponse;
  RecvTensorRawAsync(
      opts, request, raw,
      [raw, response, done = std::move(done)](const Status& s) {
        if (s.ok()) {
          response->set_is_dead(raw->is_dead);
          response->set_send_start_micros(raw->send_start_micros);
          response->set_runnel_float_as_bfloat16(raw->float_as_bfloat16);
          if (!raw->is_dead) {
            raw->tensor.AsProtoTensorContent(response->mutable_tensor());
          }
        }
        delete raw;
        done(s);
      });
}

void Worker::RecvTensorRawAsync(CallOptions* opts,
                                const RecvTensorRequest* request,
                                TensorResponse* response, StatusCallback done) {
  Status s =
      recent_request_ids_.TrackUnique(request->request_id(), "RecvTensor");
  if (!s.ok()) return done(s);
  Rendezvous::ParsedKey key;
  s = Rendezvous::ParseKey(request->rendezvous_key(), &key);
  if (!s.ok()) return done(s);
  const Device* src = devices_->FindDevice(key.src_device);
  if (src == nullptr) {
    return done(errors::InvalidArgument(
        "RecvTensor: the key's source device '", key.src_device,
        "' is not a device of task ", task_, " (key ", key.full_key, ")"));
  }
  if (key.src_incarnation != src->incarnation()) {
    return done(errors::Aborted(
        "RecvTensor: the key names incarnation ",
        absl::Hex(key.src_incarnation, absl::kZeroPad16), " of device '",
        key.src_device, "', which is now incarnation ",
        absl::Hex(src->incarnation(), absl::kZeroPad16), ": task ", task_,
        " was restarted since the step began"));
  }
  std::shared_ptr<RemoteRendezvous> r =
      rendezvous_mgr_->Find(request->step_id());
  const bool as_bfloat16 = request->runnel_float_as_bfloat16();
  // The receiving task gave up on the tensor (its step failed, or it went
  // away): its step cannot succeed, so end it here as TF's AbortStep does,
  // which also ends this wait.
  if (opts != nullptr) {
    opts->SetCancelCallback([r, step_id = request->step_id()] {
      r->StartAbort(errors::Aborted("step ", step_id,
                                    " was cancelled: a task receiving one of "
                                    "its tensors cancelled the RecvTensor"));
    });
  }
  r->RecvLocalAsync(
      key, [r, opts, response, as_bfloat16, done = std::move(done)](
               const Status& status, const Rendezvous::Args&,
               const Rendezvous::Args&, const Tensor& value, bool is_dead) {
        if (opts != nullptr) opts->ClearCancelCallback();
        if (!status.ok()) return done(status);
        response->is_dead = is_dead;
        response->send_start_micros = absl::ToUnixMicros(absl::Now());
        response->float_as_bfloat16 = false;
        if (is_dead) return done(absl::OkStatus());
        if (as_bfloat16 && value.dtype() == DT_FLOAT) {
          StatusOr<Tensor> t = FloatToBfloat16Truncated(value);
          if (!t.ok()) return done(t.status());
          response->tensor = *std::move(t);
          response->float_as_bfloat16 = true;
        } else {
          response->tensor = value;
        }
        done(absl::OkStatus());
      });
}

void Worker::LoggingAsync(CallOptions*, const LoggingRequest* request,
                          LoggingResponse* response, StatusCallback done) {
  absl::MutexLock l(&mu_);
  if (request->enable_rpc_logging()) rpc_logging_ = true;
  if (request->disable_rpc_logging()) rpc_logging_ = false;
  for (int64_t id : request->fetch_step_id()) {
    auto it = logged_steps_.find(id);
    if (it == logged_steps_.end()) continue;
    LabeledStepStats* out = response->add_step();
    out->set_step_id(id);
    *out->mutable_step_stats() = it->second;
  }
  if (request->clear()) logged_steps_.clear();
  done(absl::OkStatus());
}

void Worker::TracingAsync(CallOptions*, const TracingRequest*, TracingResponse*,
                          StatusCallback done) {
  done(errors::Unimplemented(
      "Tracing (the profiler service) is not supported; trace steps with "
      "RunOptions.trace_level, whose stats come back in RunMetadata"));
}

}  // namespace runnel
