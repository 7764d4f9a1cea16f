// DirectSession: the in-process Session (DESIGN.md §3, steps 3–5).
#include <atomic>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "runnel/devices/cpu_device.h"
#include "runnel/framework/memory_types.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/partition.h"
#include "runnel/graph/prune.h"
#include "runnel/runtime/device_mgr.h"
#include "runnel/runtime/executor.h"
#include "runnel/runtime/graph_optimizer.h"
#include "runnel/runtime/local_rendezvous.h"
#include "runnel/runtime/placer.h"
#include "runnel/runtime/session.h"

namespace runnel {

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
  for (const NodeDef& n : graph.node()) {
    if (does_io(n) && !nodes.contains(n.name())) return refuse(n, "");
  }
  for (const FunctionDef& f : graph.library().function()) {
    for (const NodeDef& n : f.node_def()) {
      if (does_io(n)) {
        return refuse(
            n, absl::StrCat(" in function '", f.signature().name(), "'"));
      }
    }
  }
  return absl::OkStatus();
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

// One device's share of a step.
struct PartitionExec {
  Device* device = nullptr;
  std::unique_ptr<Graph> graph;  // Null when it is the whole pruned graph.
  std::unique_ptr<Executor> executor;
};

// Everything compiled for one (feeds, fetches, targets) signature.
struct ExecutorsAndKeys {
  std::unique_ptr<Graph> graph;  // The pruned, placed graph.
  // One per device the step uses; a step on one device runs `graph` itself.
  std::vector<PartitionExec> partitions;
  // What RunOptions.output_partition_graphs returns.
  std::vector<GraphDef> partition_graph_defs;
  PruneInfo info;
  // Expected shape of each feed (from Placeholder shape attrs), if known.
  std::vector<PartialTensorShape> feed_shapes;
};

class DirectSession : public Session {
 public:
  DirectSession(const SessionOptions& options,
                std::unique_ptr<DeviceMgr> device_mgr)
      : options_(options),
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
    has_graph_ = true;
    placed_ = false;
    return absl::OkStatus();
  }

  Status Run(const RunOptions& options,
             const std::vector<std::pair<std::string, Tensor>>& inputs,
             const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names,
             std::vector<Tensor>* outputs, RunMetadata* run_metadata) override;

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
      const std::vector<std::string>& targets)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(graph_mu_);
  Status PlaceNodes(Graph* g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(graph_mu_);
  Status PlaceStepNodes(Graph* g) const;
  Status Partition(ExecutorsAndKeys* ek) const;
  bool InHostMemory(const Node& n, int slot, bool output) const;
  Status CreateKernel(Device* device, const Node& node,
                      std::shared_ptr<OpKernel>* kernel);
  Status CheckFeeds(
      const ExecutorsAndKeys& ek,
      const std::vector<std::pair<std::string, Tensor>>& inputs) const;

  const SessionOptions options_;
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
    const std::vector<std::string>& targets) {
  const bool place_pruned =
      options_.config.graph_options().place_pruned_graph();
  if (!placed_ && !place_pruned) {
    RETURN_IF_ERROR(PlaceNodes(graph_.get()));
    placed_ = true;
  }
  auto ek = std::make_shared<ExecutorsAndKeys>();
  ek->graph = std::make_unique<Graph>();
  RETURN_IF_ERROR(PruneForFetches(*graph_, feeds, outputs, targets,
                                  ek->graph.get(), &ek->info));
  // Record each feed's declared shape, so a wrong-shaped feed is rejected
  // up front with the placeholder's name.
  for (const TensorId& id : ek->info.feeds) {
    PartialTensorShape shape;
    const Node* producer = graph_->FindNode(id.node);
    const std::string& op = producer->type_string();
    // Note [Feed shape checks]: TensorFlow's runtime never checks feeds
    // against a placeholder's shape, and real TF graphs declare scalar shapes
    // for placeholders fed with vectors (graphs/tf_addition: shape [] fed
    // [1]). We check declared shapes of rank >= 1 only, which catches the
    // common mistake (a wrong batch layout) without rejecting such graphs.
    if ((op == "Placeholder" || op == "PlaceholderV2" ||
         op == "PlaceholderWithDefault") &&
        GetAttr(producer->attrs(), "shape", &shape).ok() && shape.dims() >= 1) {
      ek->feed_shapes.push_back(shape);
    } else {
      ek->feed_shapes.push_back(PartialTensorShape());
    }
  }
  if (place_pruned) {
    // GraphOptions.place_pruned_graph: place only what this step runs (the
    // feeds and fetches included), as TF does with that option.
    RETURN_IF_ERROR(PlaceNodes(ek->graph.get()));
  }
  RETURN_IF_ERROR(PlaceStepNodes(ek->graph.get()));
  // Whitepaper §5.1: CSE, constant folding, dead-node removal
  // (GraphOptions.optimizer_options; on by default, as in TF).
  {
    absl::flat_hash_set<std::string> keep;
    for (const std::string& t : targets) {
      keep.insert(!t.empty() && t[0] == '^' ? t.substr(1) : t);
    }
    GraphOptimizationStats stats;
    RETURN_IF_ERROR(OptimizeGraphForStep(
        options_.config.graph_options().optimizer_options(),
        device_mgr_->devices()[0], keep, ek->graph.get(), &stats));
    if (LogOptimizer()) {
      std::fprintf(stderr, "runnel: optimized step graph (%s): %s\n",
                   SignatureKey(feeds, outputs, targets).c_str(),
                   stats.ToString().c_str());
    }
  }

  bool has_control_flow = false;
  absl::flat_hash_set<std::string> used;
  for (const Node* n : ek->graph->nodes()) {
    has_control_flow |= n->IsControlFlow();
    used.insert(n->assigned_device_name());
  }
  if (used.size() <= 1) {
    // One device: its executor runs the pruned graph itself.
    PartitionExec p;
    p.device = used.empty() ? device_mgr_->devices()[0]
                            : device_mgr_->FindDevice(*used.begin());
    if (p.device == nullptr) {
      return errors::Internal("node placed on unknown device '", *used.begin(),
                              "'");
    }
    ek->partitions.push_back(std::move(p));
  } else {
    RETURN_IF_ERROR(Partition(ek.get()));
  }
  for (PartitionExec& p : ek->partitions) {
    ExecutorParams params;
    params.device = p.device;
    params.pool = CpuThreadPool();
    params.dead_inputs_possible = has_control_flow;
    Device* device = p.device;
    // A partition's nodes were re-imported from its GraphDef; their kernels
    // are made from the step graph's node properties, so a stateful node
    // shares one kernel (and its state) across every signature.
    const Graph* step_graph = p.graph != nullptr ? ek->graph.get() : nullptr;
    params.create_kernel = [this, device, step_graph](
                               const Node& n, std::shared_ptr<OpKernel>* k) {
      const Node* orig =
          step_graph != nullptr ? step_graph->FindNode(n.name()) : nullptr;
      return CreateKernel(device, orig != nullptr ? *orig : n, k);
    };
    const Graph& g = p.graph != nullptr ? *p.graph : *ek->graph;
    ASSIGN_OR_RETURN(p.executor, Executor::Create(params, g));
  }
  if (ek->partition_graph_defs.empty()) {
    GraphDef def;
    ToGraphDef(*ek->graph, &def, ToGraphDefOptions{true});
    ek->partition_graph_defs.push_back(std::move(def));
  }
  return ek;
}

// Places every node of `g` (whitepaper §3.2.1; runtime/placer.h): the full
// graph once per Create/Extend (TF's default, place_pruned_graph = false), so
// a node keeps its device in every signature; or each step's pruned graph.
// Stateful nodes (variables, queues) keep the device they were first given,
// since their state lives there.
Status DirectSession::PlaceNodes(Graph* g) {
  for (Node* n : g->nodes()) {
    auto it = stateful_placements_.find(n->name());
    n->set_assigned_device_name(it != stateful_placements_.end() ? it->second
                                                                 : "");
  }
  PlacerOptions opts;
  opts.allow_soft_placement = options_.config.allow_soft_placement();
  opts.log_device_placement = options_.config.log_device_placement();
  std::vector<std::string> log;
  RETURN_IF_ERROR(PlaceGraph(opts, device_mgr_->devices(), g,
                             opts.log_device_placement ? &log : nullptr));
  for (const std::string& line : log) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  for (Node* n : g->nodes()) {
    if (n->IsStateful() && !n->IsArg() && !n->IsRetval())
      stateful_placements_[n->name()] = n->assigned_device_name();
  }
  return absl::OkStatus();
}

// The nodes pruning added (_Arg for feeds, _Retval for fetches) go where
// their tensor is: a feed to its first consumer's device, a fetch to its
// producer's. Every CPU device shares host memory, so neither copies.
Status DirectSession::PlaceStepNodes(Graph* g) const {
  const std::string& cpu0 = device_mgr_->devices()[0]->name();
  for (Node* n : g->nodes()) {
    if (!n->assigned_device_name().empty()) continue;
    std::string device = cpu0;
    if (n->IsRetval()) {
      for (const Edge* e : n->in_edges()) {
        if (!e->IsControlEdge()) device = e->src()->assigned_device_name();
      }
    } else {
      for (const Edge* e : n->out_edges()) {
        if (!e->IsControlEdge() && !e->dst()->assigned_device_name().empty()) {
          device = e->dst()->assigned_device_name();
          break;
        }
      }
    }
    if (device.empty()) device = cpu0;
    n->set_assigned_device_name(device);
  }
  return absl::OkStatus();
}

// Cuts the placed step graph into one graph per device, joined by
// _Send/_Recv pairs over the step's rendezvous (runnel/graph/partition.h).
Status DirectSession::Partition(ExecutorsAndKeys* ek) const {
  PartitionOptions popts;
  // Whitepaper §5.2: Recvs start as late as their consumers allow.
  popts.scheduling_for_recvs =
      options_.config.graph_options().enable_recv_scheduling();
  popts.get_incarnation = [this](const std::string& name) -> uint64_t {
    Device* d = device_mgr_->FindDevice(name);
    return d == nullptr ? 0 : d->incarnation();
  };
  // HostMemory args travel by _HostSend/_HostRecv (framework/memory_types.h).
  popts.output_in_host_memory = [this](const Node* n, int k) {
    return InHostMemory(*n, k, /*output=*/true);
  };
  popts.input_in_host_memory = [this](const Node* n, int k) {
    return InHostMemory(*n, k, /*output=*/false);
  };
  std::map<std::string, GraphDef> parts;
  RETURN_IF_ERROR(runnel::Partition(popts, *ek->graph, &parts));
  ImportGraphDefOptions iopts;
  iopts.allow_internal_ops = true;
  for (auto& [name, def] : parts) {
    PartitionExec p;
    p.device = device_mgr_->FindDevice(name);
    if (p.device == nullptr) {
      return errors::Internal("partition for unknown device '", name, "'");
    }
    p.graph = std::make_unique<Graph>();
    RETURN_IF_ERROR(ImportGraphDef(def, p.graph.get(), iopts));
    for (Node* n : p.graph->nodes()) n->set_assigned_device_name(name);
    ek->partition_graph_defs.push_back(std::move(def));
    ek->partitions.push_back(std::move(p));
  }
  return absl::OkStatus();
}

bool DirectSession::InHostMemory(const Node& n, int slot, bool output) const {
  Device* d = device_mgr_->FindDevice(n.assigned_device_name());
  if (d == nullptr || d->device_type() == kDeviceCpu) return false;
  std::vector<MemoryType> in, out;
  if (!MemoryTypesForNode(d->device_type(), n.props(), &in, &out).ok()) {
    return false;  // Executor::Create reports the missing kernel.
  }
  const std::vector<MemoryType>& v = output ? out : in;
  return slot >= 0 && slot < static_cast<int>(v.size()) &&
         v[slot] == MemoryType::kHostMemory;
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

Status DirectSession::CheckFeeds(
    const ExecutorsAndKeys& ek,
    const std::vector<std::pair<std::string, Tensor>>& inputs) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].second;
    const DataType want = ek.info.feed_types[i];
    if (t.dtype() != want) {
      return errors::InvalidArgument(
          "feed '", inputs[i].first, "' has dtype ", DataTypeString(t.dtype()),
          " but the graph expects ", DataTypeString(want));
    }
    if (!t.IsInitialized()) {
      return errors::InvalidArgument("feed '", inputs[i].first,
                                     "' is an uninitialized tensor");
    }
    if (!ek.feed_shapes[i].IsCompatibleWith(t.shape())) {
      return errors::InvalidArgument(
          "feed '", inputs[i].first, "' has shape ", t.shape().DebugString(),
          " but the placeholder's shape is ", ek.feed_shapes[i].DebugString());
    }
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
  RETURN_IF_ERROR(CheckFeeds(*ek, inputs));

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

  const size_t num_parts = ek->partitions.size();
  absl::InlinedVector<std::unique_ptr<StepStatsCollector>, 2> collectors;
  if (options.trace_level() != RunOptions::NO_TRACE &&
      run_metadata != nullptr) {
    for (const PartitionExec& p : ek->partitions) {
      collectors.push_back(
          std::make_unique<StepStatsCollector>(p.device->name()));
    }
  }
  // Partitions meet in a fresh rendezvous; cancelling the step (Close, a
  // timeout) aborts it, so no Recv waits for a Send that will never come.
  std::unique_ptr<LocalRendezvous> rendezvous;
  CancellationManager::Token abort_token = 0;
  bool abort_registered = false;
  if (num_parts > 1) {
    rendezvous = std::make_unique<LocalRendezvous>();
    abort_token = cm.NewToken();
    LocalRendezvous* r = rendezvous.get();
    abort_registered = cm.RegisterCallback(abort_token, [r] {
      r->StartAbort(errors::Cancelled("the step was cancelled"));
    });
    if (!abort_registered) {
      rendezvous->StartAbort(errors::Cancelled("the step was cancelled"));
    }
  }
  StepResources step_resources;  // TensorArrays and stacks die with the step.
  const int64_t step_id = next_step_id_.fetch_add(1);
  absl::InlinedVector<Executor::Args, 2> args(num_parts);
  for (size_t i = 0; i < num_parts; ++i) {
    Executor::Args& a = args[i];
    a.step_id = step_id;
    a.call_frame = &frame;
    a.cancellation_manager = &cm;
    a.resource_manager = ek->partitions[i].device->resource_manager();
    a.step_resources = &step_resources;
    a.stats = collectors.empty() ? nullptr : collectors[i].get();
    a.rendezvous = rendezvous.get();
  }

  int64_t timeout_ms = options.timeout_in_ms();
  if (timeout_ms <= 0) timeout_ms = options_.config.operation_timeout_in_ms();

  // Every partition reports once; the first error aborts the others (so they
  // stop waiting on Recvs) and is the step's result.
  // Every partition reports once; the first error aborts the others (so they
  // stop waiting on Recvs) and is the step's result. The callback captures
  // one pointer, so making it a DoneCallback allocates nothing.
  struct StepDone {
    absl::Notification done;
    absl::Mutex mu;
    Status status;
    std::atomic<size_t> pending;
    Rendezvous* rendezvous;
  } step{{}, {}, {}, {num_parts}, rendezvous.get()};
  auto on_done = [st = &step](const Status& s) {
    if (!s.ok()) {
      bool first = false;
      {
        absl::MutexLock l(&st->mu);
        // The first error wins, except that a partition's Cancelled or
        // Aborted caused by another's error (the abort below) gives way to
        // that error, whichever reports first.
        auto derived = [](const Status& x) {
          return x.code() == absl::StatusCode::kCancelled ||
                 x.code() == absl::StatusCode::kAborted;
        };
        if (st->status.ok()) {
          st->status = s;
          first = true;
        } else if (derived(st->status) && !derived(s)) {
          st->status = s;
        }
      }
      if (first && st->rendezvous != nullptr) st->rendezvous->StartAbort(s);
    }
    if (st->pending.fetch_sub(1) == 1) st->done.Notify();
  };
  // The executor runs cheap nodes inline on the thread that starts it: a
  // step that must be interruptible (an endless loop of cheap nodes) starts
  // on the pool while this thread keeps the clock, and every partition but
  // the first starts on the pool so the devices run concurrently.
  for (size_t i = 0; i < num_parts; ++i) {
    if (i > 0 || timeout_ms > 0) {
      Executor* e = ek->partitions[i].executor.get();
      Executor::Args* a = &args[i];
      CpuThreadPool()->Schedule([e, a, &on_done] { e->RunAsync(*a, on_done); });
    }
  }
  if (timeout_ms <= 0) ek->partitions[0].executor->RunAsync(args[0], on_done);
  bool timed_out = false;
  if (timeout_ms > 0) {
    if (!step.done.WaitForNotificationWithTimeout(
            absl::Milliseconds(timeout_ms))) {
      timed_out = true;
      cm.StartCancel();
      step.done.WaitForNotification();
    }
  } else {
    step.done.WaitForNotification();
  }
  if (abort_registered) cm.DeregisterCallback(abort_token);
  unregister();
  if (timed_out) {
    return errors::DeadlineExceeded("step timed out after ", timeout_ms, " ms");
  }
  if (!step.status.ok()) return step.status;

  if (run_metadata != nullptr) {
    for (auto& c : collectors) c->Finalize(run_metadata->mutable_step_stats());
    if (options.output_partition_graphs()) {
      for (const GraphDef& g : ek->partition_graph_defs) {
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

}  // namespace

StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceMgr> devices,
                   NewLocalDeviceMgr(options.config));
  return std::unique_ptr<Session>(
      new DirectSession(options, std::move(devices)));
}

}  // namespace runnel
