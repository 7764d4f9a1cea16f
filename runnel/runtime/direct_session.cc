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
#include "runnel/framework/op.h"
#include "runnel/graph/function.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/prune.h"
#include "runnel/runtime/device_mgr.h"
#include "runnel/runtime/executor.h"
#include "runnel/runtime/graph_optimizer.h"
#include "runnel/runtime/partitioned_executor.h"
#include "runnel/runtime/placer.h"
#include "runnel/runtime/session.h"
#include "runnel/runtime/step_graph.h"

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

// Everything compiled for one (feeds, fetches, targets) signature.
struct ExecutorsAndKeys {
  // The pruned, placed graph, cut per device.
  std::unique_ptr<PartitionedExecutor> executor;
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
  Status CreateKernel(Device* device, const Node& node,
                      std::shared_ptr<OpKernel>* kernel);

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
        device_mgr_->devices()[0], keep, step_graph.get(), &stats));
    if (LogOptimizer()) {
      std::fprintf(stderr, "runnel: optimized step graph (%s): %s\n",
                   SignatureKey(feeds, outputs, targets).c_str(),
                   stats.ToString().c_str());
    }
  }

  PartitionedExecutor::Options popts;
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
