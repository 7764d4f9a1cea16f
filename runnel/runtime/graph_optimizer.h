// The step compiler's optimization stage (DESIGN.md §3 step c): the graph
// layer's passes (runnel/graph/optimizer.h) with a constant evaluator that
// runs folded subgraphs through an Executor on a CPU device.
//
//   GraphOptimizationStats stats;
//   RETURN_IF_ERROR(OptimizeGraphForStep(
//       options.config.graph_options(), cpu_device,
//       {"train"}, &pruned_graph, &stats));
//
// Thread safety: OptimizeGraphForStep mutates `g`, which must not be shared
// while it runs; concurrent calls on different graphs are safe.
#ifndef RUNNEL_RUNTIME_GRAPH_OPTIMIZER_H_
#define RUNNEL_RUNTIME_GRAPH_OPTIMIZER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "proto/config.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/device_base.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/graph.h"
#include "runnel/graph/optimizer.h"
#include "runnel/graph/tensor_id.h"

namespace runnel {

// A ConstantEvaluator that copies `subgraph`, adds one _Retval per output
// and runs it once with an Executor on `cpu` (kernels made for
// cpu->device_type(), the process's CPU thread pool, a fresh ResourceMgr
// and cancellation manager, no rendezvous). `cpu` is any CPU device (a
// CpuDevice, the session's Device for "CPU"); it is not owned and must
// outlive the evaluator. Errors are those of kernel creation or execution
// (the optimizer treats any of them as "do not fold").
ConstantEvaluator MakeExecutorConstantEvaluator(DeviceBase* cpu);

// Runs CSE, constant folding and dead-node removal, then the remapper's
// fusions, over the pruned (and usually placed) step graph `g`, as `opts`
// asks (see GraphOptimizerOptionsFromProto: opt_level L1, the default, turns
// CSE and folding on; remapping is on unless rewrite_options says OFF). `keep`
// names nodes that must survive (the step's targets). With `cpu` null nothing
// is folded. Errors: only a graph that cannot be sorted topologically, or an
// internal editing failure; a subgraph that fails to evaluate is simply not
// folded. `stats` may be null.
Status OptimizeGraphForStep(const GraphOptions& opts, DeviceBase* cpu,
                            const absl::flat_hash_set<std::string>& keep,
                            Graph* g, GraphOptimizationStats* stats = nullptr);

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_GRAPH_OPTIMIZER_H_
