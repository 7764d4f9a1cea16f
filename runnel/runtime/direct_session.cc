// DirectSession: the in-process Session (DESIGN.md §3, steps 3–5).
#include <algorithm>
#include <atomic>
#include <map>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "runnel/base/threadpool.h"
#include "runnel/devices/cpu_device.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/op.h"
#include "runnel/graph/function.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/prune.h"
#include "runnel/graph/tensor_id.h"
#include "runnel/runtime/device_mgr.h"
#include "runnel/runtime/executor.h"
#include "runnel/runtime/graph_optimizer.h"
#include "runnel/runtime/local_rendezvous.h"
#include "runnel/runtime/partitioned_executor.h"
#include "runnel/runtime/placer.h"
#include "runnel/runtime/session.h"
#include "runnel/runtime/step_graph.h"
#include "runnel/runtime/untrusted_paths.h"

namespace runnel {

int64_t StepMemoryLimitBytes(const ConfigProto& config) {
  const int64_t limit = config.runnel_step_memory_limit_bytes();
  if (limit < 0) return 0;
  return limit > 0 ? limit : PhysicalMemoryBytes() / 2;
}

Status CheckUntrustedGraph(const GraphDef& graph,
                           const SessionOptions& options) {
  const absl::flat_hash_set<std::string> ops(options.allowed_io_ops.begin(),
                                             options.allowed_io_ops.end());
  const absl::flat_hash_set<std::string> nodes(options.allowed_io_nodes.begin(),
                                               options.allowed_io_nodes.end());
  // Unknown ops are the import's to reject; here only marked ones count.
  auto does_io = [&](const NodeDef& n) {
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(n.op());
    return d != nullptr && d->does_io && !ops.contains(n.op());
  };
  auto refuse = [](const NodeDef& n, absl::string_view where) {
    return absl::PermissionDeniedError(absl::StrCat(
        "node '", n.name(), "' (", n.op(), ")", where,
        " touches the filesystem; refused in untrusted mode (allow it with "
        "SessionOptions::allowed_io_ops / allowed_io_nodes, or `runnel run "
        "--allow_io` for a trusted graph)"));
  };
  // Built on first need: most graphs have no I/O node at all.
  std::optional<DerivedPaths> derived;
  auto path_is_trusted = [&](const FunctionDef* f, const NodeDef& n) {
    const std::vector<int> paths = CheckpointPathInputs(n.op());
    if (paths.empty() || options.io_path_roots.empty()) return false;
    if (!derived) derived.emplace(graph, options.io_path_roots);
    for (int i : paths) {
      if (!derived->InputIsDerived(f, n, i)) return false;
    }
    return true;
  };
  for (const NodeDef& n : graph.node()) {
    if (does_io(n) && !nodes.contains(n.name()) &&
        !path_is_trusted(nullptr, n)) {
      return refuse(n, "");
    }
  }
  for (const FunctionDef& f : graph.library().function()) {
    for (const NodeDef& n : f.node_def()) {
      if (does_io(n) && !path_is_trusted(&f, n)) {
        return refuse(
            n, absl::StrCat(" in function '", f.signature().name(), "'"));
      }
    }
  }
  return absl::OkStatus();
}

Status Session::PRunSetup(const std::vector<std::string>&,
                          const std::vector<std::string>&,
                          const std::vector<std::string>&, std::string*) {
  return errors::Unimplemented("this session does not run partial steps");
}

Status Session::PRun(const std::string&,
                     const std::vector<std::pair<std::string, Tensor>>&,
                     const std::vector<std::string>&, std::vector<Tensor>*) {
  return errors::Unimplemented("this session does not run partial steps");
}

namespace {

// Feeds in, fetches out, for one step.
class StepCallFrame : public CallFrameInterface {
 public:
  StepCallFrame(const std::vector<std::pair<std::string, Tensor>>& inputs,
                int num_retvals)
      : inputs_(inputs), retvals_(num_retvals), set_(num_retvals, false) {}

  int num_args() const override { return static_cast<int>(inputs_.size()); }
  int num_retvals() const override { return static_cast<int>(retvals_.size()); }
  Status GetArg(int index, const Tensor** value) const override {
    if (index < 0 || index >= num_args()) {
      return errors::Internal("argument index ", index, " out of range");
    }
    *value = &inputs_[index].second;
    return absl::OkStatus();
  }
  Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || index >= num_retvals()) {
      return errors::Internal("return value index ", index, " out of range");
    }
    retvals_[index] = value;
    set_[index] = true;
    return absl::OkStatus();
  }
  std::vector<Tensor>& retvals() { return retvals_; }
  bool is_set(int i) const { return set_[i]; }

 private:
  const std::vector<std::pair<std::string, Tensor>>& inputs_;
  std::vector<Tensor> retvals_;
  // One byte per fetch (not vector<bool>): _Retval nodes on different
  // threads set different entries concurrently.
  std::vector<char> set_;
};

// Everything compiled for one (feeds, fetches, targets) signature.
struct ExecutorsAndKeys {
  // The pruned, placed graph, cut per device.
  std::unique_ptr<PartitionedExecutor> executor;
  PruneInfo info;
  // Expected shape of each feed (from Placeholder shape attrs), if known.
  std::vector<PartialTensorShape> feed_shapes;
};

// Note [Partial runs]. A partial step cannot read its feeds from a call
// frame: they arrive over several PRun calls while the step runs. So its
// pruned graph's _Arg nodes become _Recv nodes, and its _Retval nodes _Send
// nodes, of the step's own rendezvous (client_terminated, keyed by
// PartialRunKey); PRun sends feeds into it and receives fetches from it.
// The executor runs as soon as PRunSetup starts it: what has no unfed
// input runs at once, the rest when its feeds arrive.
std::string PartialRunKey(const std::string& device, bool feed,
                          const std::string& tensor) {
  return Rendezvous::CreateKey(device, 1, device,
                               absl::StrCat(feed ? "feed:" : "fetch:", tensor),
                               FrameAndIter{});
}

Status UseRendezvousForFeedsAndFetches(const PruneInfo& info, Graph* g) {
  for (size_t i = 0; i < info.arg_nodes.size(); ++i) {
    Node* arg = g->FindNode(info.arg_nodes[i]);
    if (arg == nullptr) continue;  // (An optimisation may have removed it.)
    const std::string device = arg->assigned_device_name();
    AttrMap attrs;
    attrs["tensor_type"] = MakeAttrValue(info.feed_types[i]);
    attrs["tensor_name"] =
        MakeAttrValue(absl::StrCat("feed:", info.feeds[i].ToString()));
    attrs["send_device"] = MakeAttrValue(device);
    attrs["send_device_incarnation"] = MakeAttrValue(int64_t{1});
    attrs["recv_device"] = MakeAttrValue(device);
    attrs["client_terminated"] = MakeAttrValue(true);
    ASSIGN_OR_RETURN(Node * recv, g->AddNode(g->NewName("_prun_feed"), "_Recv",
                                             std::move(attrs)));
    recv->set_assigned_device_name(device);
    const std::vector<const Edge*> out(arg->out_edges().begin(),
                                       arg->out_edges().end());
    for (const Edge* e : out) {
      if (e->IsControlEdge()) {
        g->AddControlEdge(recv, e->dst());
      } else {
        RETURN_IF_ERROR(g->AddEdge(recv, 0, e->dst(), e->dst_input()).status());
      }
    }
    g->RemoveNode(arg);
  }
  for (size_t i = 0; i < info.retval_nodes.size(); ++i) {
    Node* ret = g->FindNode(info.retval_nodes[i]);
    if (ret == nullptr) continue;
    const std::string device = ret->assigned_device_name();
    AttrMap attrs;
    attrs["T"] = MakeAttrValue(info.fetch_types[i]);
    attrs["tensor_name"] =
        MakeAttrValue(absl::StrCat("fetch:", info.fetches[i].ToString()));
    attrs["send_device"] = MakeAttrValue(device);
    attrs["send_device_incarnation"] = MakeAttrValue(int64_t{1});
    attrs["recv_device"] = MakeAttrValue(device);
    attrs["client_terminated"] = MakeAttrValue(true);
    ASSIGN_OR_RETURN(Node * send, g->AddNode(g->NewName("_prun_fetch"), "_Send",
                                             std::move(attrs)));
    send->set_assigned_device_name(device);
    const std::vector<const Edge*> in(ret->in_edges().begin(),
                                      ret->in_edges().end());
    for (const Edge* e : in) {
      if (e->IsControlEdge()) {
        g->AddControlEdge(e->src(), send);
      } else {
        RETURN_IF_ERROR(
            g->AddEdge(e->src(), e->src_output(), send, 0).status());
      }
    }
    g->RemoveNode(ret);
  }
  return absl::OkStatus();
}

// One partial step between PRunSetup and its last PRun.
struct PartialRun {
  std::shared_ptr<ExecutorsAndKeys> ek;
  LocalRendezvous rendezvous;
  CancellationManager cm;
  StepResources step_resources;
  std::vector<std::pair<std::string, Tensor>> no_inputs;
  std::unique_ptr<StepCallFrame> frame;
  absl::Notification done;
  // Canonical tensor name -> index into ek->info.feeds / fetches, and each
  // one's rendezvous key (Note [Partial runs]).
  absl::flat_hash_map<std::string, int> feed_index, fetch_index;
  std::vector<Rendezvous::ParsedKey> feed_keys, fetch_keys;

  absl::Mutex mu;
  PartialRunProgress progress ABSL_GUARDED_BY(mu);
  Status status ABSL_GUARDED_BY(mu);  // The step's, once it ended.
};

// Note [Inter-op threads]
// ConfigProto.inter_op_parallelism_threads > 0 gives the session a pool of
// that many threads for its expensive ops and async kernels (TensorFlow's
// per-session inter-op pool); kernels' own parallel loops still use the
// device's intra-op pool. With 1, every GEMM and convolution of a step
// starts on the same thread, so oneDNN's OpenMP work always goes to that
// thread's one team, whose worker is warm; with the shared 2-thread pool
// products started on either thread use two teams, and the idle team's
// worker spins against the busy one. W2 (mlp_step --inter_op 1): 1.48-1.56
// ms against 1.64-1.78 ms (4 alternating pairs). As in TensorFlow, one
// inter-op thread can deadlock a graph whose kernels block waiting for each
// other; Runnel's blocking kernels (queues, Recv) are asynchronous.

class DirectSession : public Session {
 public:
  DirectSession(const SessionOptions& options,
                std::unique_ptr<DeviceMgr> device_mgr)
      : options_(options),
        step_memory_limit_(StepMemoryLimitBytes(options.config)),
        inter_op_pool_(options.config.inter_op_parallelism_threads() > 0
                           ? std::make_unique<ThreadPool>(
                                 "runnel_inter_op",
                                 options.config.inter_op_parallelism_threads())
                           : nullptr),
        device_mgr_(std::move(device_mgr)),
        graph_(std::make_unique<Graph>()) {}

  ~DirectSession() override { (void)Close(); }

  Status Create(const GraphDef& graph) override {
    absl::MutexLock l(&graph_mu_);
    RETURN_IF_ERROR(CheckNotClosed());
    if (has_graph_) {
      return errors::AlreadyExists(
          "session already has a graph; use Extend to add nodes");
    }
    if (options_.untrusted)
      RETURN_IF_ERROR(CheckUntrustedGraph(graph, options_));
    RETURN_IF_ERROR(ImportGraphDef(graph, graph_.get()));
    // Function calls run as part of the graph (runnel/graph/function.h).
    if (Status s = InlineFunctionCalls(graph_.get()); !s.ok()) {
      graph_ = std::make_unique<Graph>();
      return s;
    }
    has_graph_ = true;
    placed_ = false;
    return absl::OkStatus();
  }

  Status Extend(const GraphDef& graph) override {
    absl::MutexLock l(&graph_mu_);
    RETURN_IF_ERROR(CheckNotClosed());
    if (options_.untrusted)
      RETURN_IF_ERROR(CheckUntrustedGraph(graph, options_));
    RETURN_IF_ERROR(ImportGraphDef(graph, graph_.get()));
    RETURN_IF_ERROR(InlineFunctionCalls(graph_.get()));
    has_graph_ = true;
    placed_ = false;
    return absl::OkStatus();
  }

  Status Run(const RunOptions& options,
             const std::vector<std::pair<std::string, Tensor>>& inputs,
             const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names,
             std::vector<Tensor>* outputs, RunMetadata* run_metadata) override;

  Status PRunSetup(const std::vector<std::string>& input_names,
                   const std::vector<std::string>& output_names,
                   const std::vector<std::string>& target_nodes,
                   std::string* handle) override;
  Status PRun(const std::string& handle,
              const std::vector<std::pair<std::string, Tensor>>& inputs,
              const std::vector<std::string>& output_names,
              std::vector<Tensor>* outputs) override;

  Status Close() override {
    std::vector<CancellationManager*> active;
    {
      absl::MutexLock l(&graph_mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
    }
    {
      absl::MutexLock l(&steps_mu_);
      active.assign(active_steps_.begin(), active_steps_.end());
      for (CancellationManager* cm : active) cm->StartCancel();
      // Wait for running steps to drain so kernels never outlive resources.
      steps_mu_.Await(absl::Condition(
          +[](absl::flat_hash_set<CancellationManager*>* s) {
            return s->empty();
          },
          &active_steps_));
    }
    // Partial runs wait for their clients, not for Close: cancel them (their
    // rendezvous aborts, so the executors finish) and wait for them.
    absl::flat_hash_map<std::string, std::shared_ptr<PartialRun>> runs;
    {
      absl::MutexLock l(&partial_mu_);
      partial_closed_ = true;
      runs.swap(partial_runs_);
    }
    for (auto& [handle, run] : runs) {
      run->cm.StartCancel();
      run->done.WaitForNotification();
    }
    return absl::OkStatus();
  }

  std::vector<std::string> ListDevices() const override {
    std::vector<std::string> names;
    for (DeviceBase* d : device_mgr_->devices()) names.push_back(d->name());
    return names;
  }

 private:
  Status CheckNotClosed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(graph_mu_) {
    if (closed_) return errors::Cancelled("session has been closed");
    return absl::OkStatus();
  }

  StatusOr<std::shared_ptr<ExecutorsAndKeys>> GetOrCreateExecutor(
      const std::vector<std::pair<std::string, Tensor>>& inputs,
      const std::vector<std::string>& outputs,
      const std::vector<std::string>& targets);
  StatusOr<std::shared_ptr<ExecutorsAndKeys>> BuildExecutor(
      const std::vector<std::string>& feeds,
      const std::vector<std::string>& outputs,
      const std::vector<std::string>& targets, bool partial_run = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(graph_mu_);
  Status PlaceNodes(Graph* g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(graph_mu_);
  Status CreateKernel(Device* device, const Node& node,
                      std::shared_ptr<OpKernel>* kernel);

  const SessionOptions options_;
  // Bytes a step may hold at once (0: no limit of its own; Note [Step
  // memory limits] in partitioned_executor.cc).
  const int64_t step_memory_limit_;
  // ConfigProto.inter_op_parallelism_threads > 0: the session's own pool
  // for its ops (Note [Inter-op threads]); null: the process's CPU pool.
  // Declared before everything that may schedule on it.
  const std::unique_ptr<ThreadPool> inter_op_pool_;
  std::unique_ptr<DeviceMgr> device_mgr_;

  absl::Mutex graph_mu_;
  std::unique_ptr<Graph> graph_ ABSL_GUARDED_BY(graph_mu_);
  bool has_graph_ ABSL_GUARDED_BY(graph_mu_) = false;
  // Whether every node of graph_ has its device (placement runs on the full
  // graph, as TF's default place_pruned_graph = false does, so a node keeps
  // its device across signatures; stateful nodes keep theirs across Extend).
  bool placed_ ABSL_GUARDED_BY(graph_mu_) = false;
  absl::flat_hash_map<std::string, std::string> stateful_placements_
      ABSL_GUARDED_BY(graph_mu_);
  bool closed_ ABSL_GUARDED_BY(graph_mu_) = false;

  absl::Mutex cache_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<ExecutorsAndKeys>> executors_
      ABSL_GUARDED_BY(cache_mu_);

  // Kernels of stateful nodes are shared by every executor of the session,
  // so state they hold (e.g. random generators' counters) is per node.
  absl::Mutex kernels_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<OpKernel>> stateful_kernels_
      ABSL_GUARDED_BY(kernels_mu_);

  absl::Mutex steps_mu_;
  absl::flat_hash_set<CancellationManager*> active_steps_
      ABSL_GUARDED_BY(steps_mu_);
  std::atomic<int64_t> next_step_id_{1};

  absl::Mutex partial_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<PartialRun>> partial_runs_
      ABSL_GUARDED_BY(partial_mu_);
  bool partial_closed_ ABSL_GUARDED_BY(partial_mu_) = false;
};

// RUNNEL_LOG_OPTIMIZER=1 prints what the graph passes did to each step.
bool LogOptimizer() {
  static const bool on = [] {
    const char* v = std::getenv("RUNNEL_LOG_OPTIMIZER");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

std::string SignatureKey(const std::vector<std::string>& feeds,
                         const std::vector<std::string>& outputs,
                         const std::vector<std::string>& targets) {
  return absl::StrCat(absl::StrJoin(feeds, ","), "->",
                      absl::StrJoin(outputs, ","), "/",
                      absl::StrJoin(targets, ","));
}

std::string SignatureKey(
    const std::vector<std::pair<std::string, Tensor>>& inputs,
    const std::vector<std::string>& outputs,
    const std::vector<std::string>& targets) {
  std::string key;
  for (const auto& [name, _] : inputs) absl::StrAppend(&key, name, ",");
  key += "->";
  for (const auto& name : outputs) absl::StrAppend(&key, name, ",");
  key += "/";
  for (const auto& name : targets) absl::StrAppend(&key, name, ",");
  return key;
}

StatusOr<std::shared_ptr<ExecutorsAndKeys>> DirectSession::GetOrCreateExecutor(
    const std::vector<std::pair<std::string, Tensor>>& inputs,
    const std::vector<std::string>& outputs,
    const std::vector<std::string>& targets) {
  const std::string key = SignatureKey(inputs, outputs, targets);
  {
    absl::ReaderMutexLock l(&cache_mu_);
    auto it = executors_.find(key);
    if (it != executors_.end()) return it->second;
  }
  absl::MutexLock gl(&graph_mu_);
  RETURN_IF_ERROR(CheckNotClosed());
  {
    absl::ReaderMutexLock l(&cache_mu_);
    auto it = executors_.find(key);
    if (it != executors_.end()) return it->second;
  }
  std::vector<std::string> feeds;
  for (const auto& [name, _] : inputs) feeds.push_back(name);
  ASSIGN_OR_RETURN(auto ek, BuildExecutor(feeds, outputs, targets));
  absl::MutexLock l(&cache_mu_);
  executors_[key] = ek;
  return ek;
}

StatusOr<std::shared_ptr<ExecutorsAndKeys>> DirectSession::BuildExecutor(
    const std::vector<std::string>& feeds,
    const std::vector<std::string>& outputs,
    const std::vector<std::string>& targets, bool partial_run) {
  const bool place_pruned =
      options_.config.graph_options().place_pruned_graph();
  if (!placed_ && !place_pruned) {
    RETURN_IF_ERROR(PlaceNodes(graph_.get()));
    placed_ = true;
  }
  auto ek = std::make_shared<ExecutorsAndKeys>();
  auto step_graph = std::make_unique<Graph>();
  RETURN_IF_ERROR(PruneForFetches(*graph_, feeds, outputs, targets,
                                  step_graph.get(), &ek->info));
  // Each feed's declared shape, so a wrong-shaped feed is rejected up
  // front with the placeholder's name.
  ek->feed_shapes = DeclaredFeedShapes(*graph_, ek->info);
  if (place_pruned) {
    // GraphOptions.place_pruned_graph: place only what this step runs (the
    // feeds and fetches included), as TF does with that option.
    RETURN_IF_ERROR(PlaceNodes(step_graph.get()));
  }
  PlaceFeedsAndFetches(device_mgr_->devices()[0]->name(), step_graph.get());
  if (partial_run) {
    RETURN_IF_ERROR(
        UseRendezvousForFeedsAndFetches(ek->info, step_graph.get()));
  }
  // Whitepaper §5.1: CSE, constant folding, dead-node removal
  // (GraphOptions.optimizer_options; on by default, as in TF), then
  // TF's remapper fusions (GraphOptions.rewrite_options.remapping).
  {
    absl::flat_hash_set<std::string> keep;
    for (const std::string& t : targets) {
      keep.insert(!t.empty() && t[0] == '^' ? t.substr(1) : t);
    }
    GraphOptimizationStats stats;
    RETURN_IF_ERROR(OptimizeGraphForStep(options_.config.graph_options(),
                                         device_mgr_->devices()[0], keep,
                                         step_graph.get(), &stats));
    if (LogOptimizer()) {
      std::fprintf(stderr, "runnel: optimized step graph (%s): %s\n",
                   SignatureKey(feeds, outputs, targets).c_str(),
                   stats.ToString().c_str());
    }
  }

  PartitionedExecutor::Options popts;
  popts.inter_op_pool = inter_op_pool_.get();
  popts.scheduling_for_recvs =
      options_.config.graph_options().enable_recv_scheduling();
  popts.create_kernel = [this](Device* device, const Node& node,
                               std::shared_ptr<OpKernel>* kernel) {
    return CreateKernel(device, node, kernel);
  };
  ASSIGN_OR_RETURN(
      ek->executor,
      PartitionedExecutor::Create(popts, *device_mgr_, std::move(step_graph)));
  return ek;
}

// Places every node of `g` (whitepaper §3.2.1; runtime/placer.h): the full
// graph once per Create/Extend (TF's default, place_pruned_graph = false), so
// a node keeps its device in every signature; or each step's pruned graph.
// Stateful nodes (variables, queues) keep the device they were first given,
// since their state lives there.
Status DirectSession::PlaceNodes(Graph* g) {
  ASSIGN_OR_RETURN(const PlacerOptions opts,
                   PlacerOptionsFromConfig(options_.config));
  return PlaceSessionGraph(opts, device_mgr_->devices(), g,
                           &stateful_placements_);
}

Status DirectSession::CreateKernel(Device* device, const Node& node,
                                   std::shared_ptr<OpKernel>* kernel) {
  const bool share = node.IsStateful() && !node.type_string().empty() &&
                     node.type_string()[0] != '_';
  if (share) {
    absl::MutexLock l(&kernels_mu_);
    auto it = stateful_kernels_.find(node.name());
    if (it != stateful_kernels_.end() &&
        &it->second->props() == &node.props()) {
      *kernel = it->second;
      return absl::OkStatus();
    }
  }
  std::unique_ptr<OpKernel> k;
  RETURN_IF_ERROR(
      CreateOpKernel(device->device_type(), device, node.props_shared(), &k));
  *kernel = std::shared_ptr<OpKernel>(std::move(k));
  if (share) {
    absl::MutexLock l(&kernels_mu_);
    stateful_kernels_[node.name()] = *kernel;
  }
  return absl::OkStatus();
}

Status DirectSession::Run(
    const RunOptions& options,
    const std::vector<std::pair<std::string, Tensor>>& inputs,
    const std::vector<std::string>& output_names,
    const std::vector<std::string>& target_names, std::vector<Tensor>* outputs,
    RunMetadata* run_metadata) {
  if (output_names.empty() && target_names.empty()) {
    return errors::InvalidArgument("Run needs at least one fetch or target");
  }
  if (outputs == nullptr && !output_names.empty()) {
    return errors::InvalidArgument(
        "Run was given fetches but a null outputs vector");
  }
  ASSIGN_OR_RETURN(auto ek,
                   GetOrCreateExecutor(inputs, output_names, target_names));
  RETURN_IF_ERROR(CheckFeedValues(ek->info, ek->feed_shapes, inputs));

  StepCallFrame frame(inputs, static_cast<int>(output_names.size()));
  CancellationManager cm;
  {
    absl::MutexLock l(&steps_mu_);
    active_steps_.insert(&cm);
  }
  // Re-check after registering, so Close cannot miss this step.
  bool closed;
  {
    absl::MutexLock l(&graph_mu_);
    closed = closed_;
  }
  auto unregister = [&] {
    absl::MutexLock l(&steps_mu_);
    active_steps_.erase(&cm);
  };
  if (closed) {
    unregister();
    return errors::Cancelled("session has been closed");
  }

  StepResources step_resources;  // TensorArrays and stacks die with the step.
  int64_t timeout_ms = options.timeout_in_ms();
  if (timeout_ms <= 0) timeout_ms = options_.config.operation_timeout_in_ms();
  PartitionedExecutor::Args args;
  args.step_id = next_step_id_.fetch_add(1);
  args.memory_limit_bytes = step_memory_limit_;
  args.call_frame = &frame;
  args.cancellation_manager = &cm;
  args.step_resources = &step_resources;
  const bool trace =
      options.trace_level() != RunOptions::NO_TRACE && run_metadata != nullptr;
  if (trace) args.step_stats = run_metadata->mutable_step_stats();
  // The executor runs cheap nodes inline on the thread that starts it: a
  // step that must be interruptible (an endless loop of cheap nodes) starts
  // on the pool while this thread keeps the clock.
  args.run_first_inline = timeout_ms <= 0;
  absl::Notification done;
  Status status;
  ek->executor->RunAsync(args, [&](const Status& s) {
    status = s;
    done.Notify();
  });
  bool timed_out = false;
  if (timeout_ms > 0) {
    if (!done.WaitForNotificationWithTimeout(absl::Milliseconds(timeout_ms))) {
      timed_out = true;
      cm.StartCancel();
      done.WaitForNotification();
    }
  } else {
    done.WaitForNotification();
  }
  unregister();
  if (timed_out) {
    return errors::DeadlineExceeded("step timed out after ", timeout_ms, " ms");
  }
  if (!status.ok()) return status;

  if (run_metadata != nullptr) {
    if (options.output_partition_graphs()) {
      for (const GraphDef& g : ek->executor->partition_graph_defs()) {
        *run_metadata->add_partition_graphs() = g;
      }
    }
  }
  if (outputs == nullptr) return absl::OkStatus();
  outputs->clear();
  outputs->reserve(output_names.size());
  for (size_t i = 0; i < output_names.size(); ++i) {
    if (!frame.is_set(static_cast<int>(i))) {
      // Only a dead tensor (of an untaken conditional branch) goes unset.
      return errors::InvalidArgument(
          "fetch '", output_names[i],
          "' has no value: it is dead (computed only on a branch of a "
          "conditional that was not taken)");
    }
    outputs->push_back(std::move(frame.retvals()[i]));
  }
  return absl::OkStatus();
}

// Canonical "node:k" of a user's tensor name, for matching PRun's names
// against PRunSetup's.
StatusOr<std::string> CanonicalTensorName(const std::string& name) {
  ASSIGN_OR_RETURN(TensorId id, ParseTensorName(name));
  return id.ToString();
}

Status DirectSession::PRunSetup(const std::vector<std::string>& input_names,
                                const std::vector<std::string>& output_names,
                                const std::vector<std::string>& target_nodes,
                                std::string* handle) {
  if (handle == nullptr) {
    return errors::InvalidArgument("PRunSetup: null handle");
  }
  if (output_names.empty() && target_nodes.empty()) {
    return errors::InvalidArgument(
        "PRunSetup needs at least one fetch or target");
  }
  auto run = std::make_shared<PartialRun>();
  // (PRunSetup after Close fails in BuildExecutor's closed check, or when
  // the run is registered below.)
  {
    absl::MutexLock gl(&graph_mu_);
    RETURN_IF_ERROR(CheckNotClosed());
    ASSIGN_OR_RETURN(run->ek,
                     BuildExecutor(input_names, output_names, target_nodes,
                                   /*partial_run=*/true));
  }
  const PruneInfo& info = run->ek->info;
  for (size_t i = 0; i < info.feeds.size(); ++i) {
    run->feed_index[info.feeds[i].ToString()] = static_cast<int>(i);
  }
  for (size_t i = 0; i < info.fetches.size(); ++i) {
    if (!run->fetch_index.emplace(info.fetches[i].ToString(), i).second) {
      return errors::InvalidArgument("PRunSetup: fetch '", output_names[i],
                                     "' is listed twice");
    }
  }
  // Each transfer node's device gives its key.
  absl::flat_hash_map<std::string, std::string> device_of;
  for (const Node* n : run->ek->executor->graph().nodes()) {
    std::string name;
    if ((n->type_string() == "_Recv" || n->type_string() == "_Send") &&
        GetAttr(n->attrs(), "tensor_name", &name).ok()) {
      device_of[name] = n->assigned_device_name();
    }
  }
  auto key_of = [&](bool feed, const TensorId& t,
                    Rendezvous::ParsedKey* key) -> Status {
    const std::string tensor = t.ToString();
    auto it = device_of.find(absl::StrCat(feed ? "feed:" : "fetch:", tensor));
    if (it == device_of.end()) {
      return errors::Internal("partial run: no transfer node for '", tensor,
                              "'");
    }
    return Rendezvous::ParseKey(PartialRunKey(it->second, feed, tensor), key);
  };
  run->feed_keys.resize(info.feeds.size());
  run->fetch_keys.resize(info.fetches.size());
  for (size_t i = 0; i < info.feeds.size(); ++i) {
    RETURN_IF_ERROR(key_of(true, info.feeds[i], &run->feed_keys[i]));
  }
  for (size_t i = 0; i < info.fetches.size(); ++i) {
    RETURN_IF_ERROR(key_of(false, info.fetches[i], &run->fetch_keys[i]));
  }
  {
    absl::MutexLock l(&run->mu);
    run->progress = PartialRunProgress(info.feeds.size(), info.fetches.size());
  }
  run->frame = std::make_unique<StepCallFrame>(run->no_inputs, 0);
  PartitionedExecutor::Args args;
  args.step_id = next_step_id_.fetch_add(1);
  args.memory_limit_bytes = step_memory_limit_;
  args.call_frame = run->frame.get();
  args.cancellation_manager = &run->cm;
  args.step_resources = &run->step_resources;
  args.rendezvous = &run->rendezvous;
  args.run_first_inline = false;  // The caller returns at once.
  *handle = absl::StrCat(args.step_id, ";partial");
  {
    // Registered before it starts, so Close (which cancels what is
    // registered and waits for it) cannot miss it.
    absl::MutexLock l(&partial_mu_);
    if (partial_closed_) return errors::Cancelled("session has been closed");
    partial_runs_[*handle] = run;
  }
  // The callback keeps the run alive until the executor is done with it.
  run->ek->executor->RunAsync(args, [run](const Status& s) {
    {
      absl::MutexLock l(&run->mu);
      run->status = s;
    }
    // A failed step fails the PRuns waiting on its rendezvous. (This may
    // run inside Close's StartCancel: it takes no session lock.)
    if (!s.ok()) run->rendezvous.StartAbort(s);
    run->done.Notify();
  });
  return absl::OkStatus();
}

Status DirectSession::PRun(
    const std::string& handle,
    const std::vector<std::pair<std::string, Tensor>>& inputs,
    const std::vector<std::string>& output_names,
    std::vector<Tensor>* outputs) {
  if (outputs == nullptr && !output_names.empty()) {
    return errors::InvalidArgument(
        "PRun was given fetches but a null outputs vector");
  }
  std::shared_ptr<PartialRun> run;
  {
    absl::MutexLock l(&partial_mu_);
    auto it = partial_runs_.find(handle);
    if (it == partial_runs_.end()) {
      return errors::InvalidArgument(
          "partial run handle '", handle,
          "' is unknown: never set up, finished, or failed earlier");
    }
    run = it->second;
  }
  const PruneInfo& info = run->ek->info;
  std::vector<int> feeds, fetches;
  for (const auto& [name, value] : inputs) {
    ASSIGN_OR_RETURN(std::string canonical, CanonicalTensorName(name));
    auto it = run->feed_index.find(canonical);
    if (it == run->feed_index.end()) {
      return errors::InvalidArgument(
          "The feed ", name, " was not specified in partial_run_setup.");
    }
    const int i = it->second;
    if (value.dtype() != info.feed_types[i]) {
      return errors::InvalidArgument(
          "feed '", name, "' is a ", DataTypeString(value.dtype()),
          " tensor but the graph expects ", DataTypeString(info.feed_types[i]));
    }
    const PartialTensorShape& want = run->ek->feed_shapes[i];
    if (!want.IsCompatibleWith(value.shape())) {
      return errors::InvalidArgument(
          "feed '", name, "' has shape ", value.shape().DebugString(),
          " but the placeholder's shape is ", want.DebugString());
    }
    feeds.push_back(i);
  }
  for (const std::string& name : output_names) {
    ASSIGN_OR_RETURN(std::string canonical, CanonicalTensorName(name));
    auto it = run->fetch_index.find(canonical);
    if (it == run->fetch_index.end()) {
      return errors::InvalidArgument(
          "The fetch ", name, " was not specified in partial_run_setup.");
    }
    fetches.push_back(it->second);
  }
  {
    absl::MutexLock l(&run->mu);
    if (!run->status.ok()) return run->status;
    std::vector<std::string> feed_names;
    for (const auto& [name, value] : inputs) feed_names.push_back(name);
    RETURN_IF_ERROR(
        run->progress.Mark(feeds, feed_names, fetches, output_names));
  }

  for (size_t k = 0; k < feeds.size(); ++k) {
    RETURN_IF_ERROR(run->rendezvous.Send(run->feed_keys[feeds[k]], {},
                                         inputs[k].second, false));
  }
  const int64_t timeout_ms = options_.config.operation_timeout_in_ms();
  std::vector<Tensor> got(fetches.size());
  for (size_t k = 0; k < fetches.size(); ++k) {
    bool is_dead = false;
    Status s = run->rendezvous.Recv(run->fetch_keys[fetches[k]], {}, &got[k],
                                    &is_dead, timeout_ms);
    if (absl::IsDeadlineExceeded(s)) {
      run->cm.StartCancel();
      return errors::DeadlineExceeded("partial run: fetch '", output_names[k],
                                      "' took longer than ", timeout_ms, " ms");
    }
    if (!s.ok()) {
      // The step's own error rather than the abort it caused. A failing
      // kernel cancels the step, which aborts the rendezvous before the
      // executor's callback records the error: wait (bounded) for it.
      run->done.WaitForNotificationWithTimeout(
          absl::Milliseconds(timeout_ms > 0 ? timeout_ms : 10000));
      absl::MutexLock l(&run->mu);
      return run->status.ok() ? s : run->status;
    }
    if (is_dead) {
      return errors::InvalidArgument(
          "fetch '", output_names[k],
          "' has no value: it is dead (computed only on a branch of a "
          "conditional that was not taken)");
    }
  }
  if (outputs != nullptr) *outputs = std::move(got);

  bool complete;
  {
    absl::MutexLock l(&run->mu);
    complete = run->progress.complete();
  }
  if (!complete) return absl::OkStatus();
  // Every feed is in and every fetch out: the step finishes on its own.
  if (timeout_ms > 0) {
    if (!run->done.WaitForNotificationWithTimeout(
            absl::Milliseconds(timeout_ms))) {
      run->cm.StartCancel();
      run->done.WaitForNotification();
    }
  } else {
    run->done.WaitForNotification();
  }
  {
    absl::MutexLock l(&partial_mu_);
    partial_runs_.erase(handle);
  }
  absl::MutexLock l(&run->mu);
  return run->status;
}

}  // namespace

namespace {

absl::Mutex factories_mu(absl::kConstInit);

absl::flat_hash_map<std::string, SessionFactory>& Factories()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(factories_mu) {
  static auto* f = new absl::flat_hash_map<std::string, SessionFactory>;
  return *f;
}

}  // namespace

void RegisterSessionFactory(const std::string& scheme, SessionFactory factory) {
  absl::MutexLock l(&factories_mu);
  Factories()[scheme] = std::move(factory);
}

StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  if (!options.target.empty() && options.target != "local") {
    const size_t colon = options.target.find("://");
    const std::string scheme = colon == std::string::npos
                                   ? options.target
                                   : options.target.substr(0, colon);
    SessionFactory factory;
    {
      absl::MutexLock l(&factories_mu);
      auto it = Factories().find(scheme);
      if (it != Factories().end()) factory = it->second;
    }
    if (!factory) {
      return errors::InvalidArgument(
          "no session factory for target '", options.target,
          "' (\"grpc://host:port\" needs the distributed runtime, "
          "runnel_distributed, linked in)");
    }
    return factory(options);
  }
  RETURN_IF_ERROR(PlacerOptionsFromConfig(options.config).status());
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceMgr> devices,
                   NewLocalDeviceMgr(options.config));
  return std::unique_ptr<Session>(
      new DirectSession(options, std::move(devices)));
}

}  // namespace runnel
