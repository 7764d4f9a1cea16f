#include "runnel/runtime/graph_optimizer.h"

#include <memory>
#include <utility>

#include "runnel/devices/cpu_device.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_mgr.h"
#include "runnel/runtime/executor.h"

namespace runnel {
namespace {

// Collects the _Retval values of one evaluation.
class FoldCallFrame : public CallFrameInterface {
 public:
  explicit FoldCallFrame(int num_retvals)
      : retvals_(num_retvals), set_(num_retvals, 0) {}

  int num_args() const override { return 0; }
  int num_retvals() const override { return static_cast<int>(retvals_.size()); }
  Status GetArg(int index, const Tensor**) const override {
    return errors::Internal("constant folding subgraph has no argument ",
                            index);
  }
  Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || index >= num_retvals()) {
      return errors::Internal("return value index ", index, " out of range");
    }
    retvals_[index] = value;
    set_[index] = 1;
    return absl::OkStatus();
  }
  bool is_set(int i) const { return set_[i] != 0; }
  std::vector<Tensor>& retvals() { return retvals_; }

 private:
  std::vector<Tensor> retvals_;
  std::vector<char> set_;  // Not vector<bool>: set from several threads.
};

Status EvaluateOnCpu(DeviceBase* cpu, const Graph& subgraph,
                     const std::vector<TensorId>& outputs,
                     std::vector<Tensor>* values) {
  Graph g;
  RETURN_IF_ERROR(g.CopyFrom(subgraph));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Node* src = g.FindNode(outputs[i].node);
    if (src == nullptr || outputs[i].index < 0 ||
        outputs[i].index >= src->num_outputs()) {
      return errors::InvalidArgument("constant folding output '",
                                     outputs[i].ToString(),
                                     "' is not in the subgraph");
    }
    AttrMap attrs;
    attrs["T"] = MakeAttrValue(src->output_type(outputs[i].index));
    attrs["index"] = MakeAttrValue(static_cast<int64_t>(i));
    ASSIGN_OR_RETURN(Node * ret, g.AddNode(g.NewName("_fold_retval"), "_Retval",
                                           std::move(attrs)));
    RETURN_IF_ERROR(g.AddEdge(src, outputs[i].index, ret, 0).status());
  }

  ExecutorParams params;
  params.device = cpu;
  params.pool = CpuThreadPool();
  params.create_kernel = [cpu](const Node& n, std::shared_ptr<OpKernel>* k) {
    std::unique_ptr<OpKernel> kernel;
    RETURN_IF_ERROR(
        CreateOpKernel(cpu->device_type(), cpu, n.props_shared(), &kernel));
    *k = std::shared_ptr<OpKernel>(std::move(kernel));
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                   Executor::Create(params, g));

  // Foldable nodes are stateless; a private ResourceMgr keeps anything a
  // kernel might still create out of the session's containers.
  FoldCallFrame frame(static_cast<int>(outputs.size()));
  CancellationManager cancellation;
  ResourceMgr resources;
  StepResources step_resources;
  Executor::Args args;
  args.call_frame = &frame;
  args.cancellation_manager = &cancellation;
  args.resource_manager = &resources;
  args.step_resources = &step_resources;
  RETURN_IF_ERROR(executor->Run(args));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!frame.is_set(static_cast<int>(i))) {
      return errors::Internal("constant folding output '",
                              outputs[i].ToString(), "' was not computed");
    }
  }
  *values = std::move(frame.retvals());
  return absl::OkStatus();
}

}  // namespace

ConstantEvaluator MakeExecutorConstantEvaluator(DeviceBase* cpu) {
  return [cpu](const Graph& subgraph, const std::vector<TensorId>& outputs,
               std::vector<Tensor>* values) {
    return EvaluateOnCpu(cpu, subgraph, outputs, values);
  };
}

Status OptimizeGraphForStep(const GraphOptions& opts, DeviceBase* cpu,
                            const absl::flat_hash_set<std::string>& keep,
                            Graph* g, GraphOptimizationStats* stats) {
  GraphOptimizerOptions options = GraphOptimizerOptionsFromProto(opts);
  options.keep = keep;
  if (cpu != nullptr) options.evaluator = MakeExecutorConstantEvaluator(cpu);
  return OptimizeGraph(options, g, stats);
}

}  // namespace runnel
