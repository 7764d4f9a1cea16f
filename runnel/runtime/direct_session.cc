// DirectSession: the in-process Session (DESIGN.md §3, steps 3–5).
#include <atomic>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "runnel/devices/cpu_device.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/prune.h"
#include "runnel/runtime/device_mgr.h"
#include "runnel/runtime/executor.h"
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

// Everything compiled for one (feeds, fetches, targets) signature.
struct ExecutorsAndKeys {
  std::unique_ptr<Graph> graph;  // The pruned, placed graph.
  std::unique_ptr<Executor> executor;
  PruneInfo info;
  // Expected shape of each feed (from Placeholder shape attrs), if known.
  std::vector<PartialTensorShape> feed_shapes;
};

class DirectSession : public Session {
 public:
  explicit DirectSession(const SessionOptions& options)
      : options_(options),
        resource_mgr_(std::make_unique<ResourceMgr>()),
        device_mgr_(NewLocalDeviceMgr(resource_mgr_.get())),
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
    return absl::OkStatus();
  }

  Status Extend(const GraphDef& graph) override {
    absl::MutexLock l(&graph_mu_);
    RETURN_IF_ERROR(CheckNotClosed());
    if (options_.untrusted)
      RETURN_IF_ERROR(CheckUntrustedGraph(graph, options_));
    RETURN_IF_ERROR(ImportGraphDef(graph, graph_.get()));
    has_graph_ = true;
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
  Status PlaceNodes(Graph* g) const;
  Status CreateKernel(const Node& node, std::shared_ptr<OpKernel>* kernel);
  Status CheckFeeds(
      const ExecutorsAndKeys& ek,
      const std::vector<std::pair<std::string, Tensor>>& inputs) const;

  const SessionOptions options_;
  std::unique_ptr<ResourceMgr> resource_mgr_;
  std::unique_ptr<DeviceMgr> device_mgr_;

  absl::Mutex graph_mu_;
  std::unique_ptr<Graph> graph_ ABSL_GUARDED_BY(graph_mu_);
  bool has_graph_ ABSL_GUARDED_BY(graph_mu_) = false;
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
  RETURN_IF_ERROR(PlaceNodes(ek->graph.get()));
  ExecutorParams params;
  params.device = device_mgr_->devices()[0];
  params.pool = CpuThreadPool();
  params.create_kernel = [this](const Node& n, std::shared_ptr<OpKernel>* k) {
    return CreateKernel(n, k);
  };
  ASSIGN_OR_RETURN(ek->executor, Executor::Create(params, *ek->graph));
  return ek;
}

// Single-device placement: every node goes to the CPU. A node that asks for
// a device this process lacks fails, unless soft placement is allowed.
Status DirectSession::PlaceNodes(Graph* g) const {
  DeviceBase* cpu = device_mgr_->devices()[0];
  for (Node* n : g->nodes()) {
    const std::string& requested = n->requested_device();
    if (!requested.empty()) {
      auto spec = DeviceName::Parse(requested);
      if (!spec.ok()) {
        return errors::InvalidArgument("node '", n->name(),
                                       "': ", spec.status().message());
      }
      if (device_mgr_->FindMatching(*spec) == nullptr &&
          !options_.config.allow_soft_placement()) {
        return errors::InvalidArgument(
            "cannot assign a device for node '", n->name(),
            "': requested device '", requested,
            "' does not exist; available: ", cpu->name(),
            " (set allow_soft_placement to place it on the CPU)");
      }
    }
    n->set_assigned_device_name(cpu->name());
  }
  return absl::OkStatus();
}

Status DirectSession::CreateKernel(const Node& node,
                                   std::shared_ptr<OpKernel>* kernel) {
  DeviceBase* device = device_mgr_->devices()[0];
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

  std::unique_ptr<StepStatsCollector> collector;
  if (options.trace_level() != RunOptions::NO_TRACE &&
      run_metadata != nullptr) {
    collector =
        std::make_unique<StepStatsCollector>(device_mgr_->devices()[0]->name());
  }
  Executor::Args args;
  args.step_id = next_step_id_.fetch_add(1);
  args.call_frame = &frame;
  args.cancellation_manager = &cm;
  args.resource_manager = resource_mgr_.get();
  StepResources step_resources;  // TensorArrays and stacks die with the step.
  args.step_resources = &step_resources;
  args.stats = collector.get();

  int64_t timeout_ms = options.timeout_in_ms();
  if (timeout_ms <= 0) timeout_ms = options_.config.operation_timeout_in_ms();

  absl::Notification done;
  Status run_status;
  auto on_done = [&](const Status& s) {
    run_status = s;
    done.Notify();
  };
  if (timeout_ms > 0) {
    // The executor runs cheap nodes inline on the thread that starts it,
    // so a step that must be interruptible (an endless loop of cheap nodes)
    // starts on the pool while this thread keeps the clock.
    CpuThreadPool()->Schedule(
        [&ek, &args, &on_done] { ek->executor->RunAsync(args, on_done); });
  } else {
    ek->executor->RunAsync(args, on_done);
  }
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
  if (!run_status.ok()) return run_status;

  if (outputs == nullptr) {
    if (collector) collector->Finalize(run_metadata->mutable_step_stats());
    return absl::OkStatus();
  }
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
  if (collector) collector->Finalize(run_metadata->mutable_step_stats());
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  return std::unique_ptr<Session>(new DirectSession(options));
}

}  // namespace runnel
